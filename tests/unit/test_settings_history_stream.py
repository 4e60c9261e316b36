"""The history stream's settings: off unless ``SchedulerHistoryStream`` (a connection string) or its identity form
``SchedulerHistoryStream__queueServiceUri`` is set; its queue named by ``SCHEDULER_HISTORY_STREAM_QUEUE``; every bad
value a clear error naming the setting, never repeating a value that may hold a key; and the local host does not
take the stream's queue for a trigger binding."""

from __future__ import annotations

import pytest

from local_host.local_settings import binding_defaults
from scheduler_core import settings
from scheduler_core.errors import ConfigurationError

BASE = {"AzureWebJobsStorage": "UseDevelopmentStorage=true"}
KEYED = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=c2VjcmV0LWtleS1kby1ub3QtZWNobw==;"


def test_the_stream_is_off_by_default_and_on_with_either_form() -> None:
    plain = settings.load(BASE)
    assert plain.history_stream is None and plain.history_stream_queue == "scheduler-history"
    keyed = settings.load({**BASE, "SchedulerHistoryStream": KEYED, "SCHEDULER_HISTORY_STREAM_QUEUE": "audit-q"})
    assert keyed.history_stream is not None and keyed.history_stream.connection_string == KEYED
    assert keyed.history_stream_queue == "audit-q"
    uri = "https://acct.queue.core.windows.net"
    identity = settings.load({**BASE, "SchedulerHistoryStream__queueServiceUri": uri + "/"})
    assert identity.history_stream is not None and identity.history_stream.endpoint == uri
    assert identity.history_stream.connection_string is None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SchedulerHistoryStream__queueServiceUri", "http://acct.queue.core.windows.net"),
        ("SchedulerHistoryStream__queueServiceUri", "https://acct.queue.core.windows.net/audit"),
        ("SchedulerHistoryStream__queueServiceUri", "https://acct.queue.core.windows.net?sig=s3cr3t"),
        ("SchedulerHistoryStream__queueServiceUri", " https://acct.queue.core.windows.net"),
        ("SchedulerHistoryStream", "AccountKey=s3cr3t "),
        ("SchedulerHistoryStream", "not a connection string"),
    ],
)
def test_a_bad_stream_account_is_a_clear_error_that_repeats_no_value(name: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=name) as caught:
        settings.load({**BASE, name: value})
    assert "s3cr3t" not in str(caught.value) and value.strip() not in str(caught.value)


@pytest.mark.parametrize("value", ["Audit", "ab", "audit--q", "q" * 64, "audit_q", "audit\nq"])
def test_a_stream_queue_name_storage_refuses_is_a_clear_error(value: str) -> None:
    with pytest.raises(ConfigurationError, match="SCHEDULER_HISTORY_STREAM_QUEUE"):
        settings.load({**BASE, "SCHEDULER_HISTORY_STREAM_QUEUE": value})


def test_the_stream_queue_is_not_a_trigger_binding() -> None:
    assert "SCHEDULER_HISTORY_STREAM_QUEUE" not in binding_defaults({})
