"""``action.expandPlaceholders`` through the real senders: the HTTP sender against a real server on 127.0.0.1
(query values percent-encoded, JSON and form bodies escaped, header values as is, UTF-8 for what Latin-1
cannot hold), the Storage queue sender against Azurite and the Service Bus sender against the AMQP test
broker; and off by default, so a body holding ``@{`` is sent as written."""

from __future__ import annotations

import base64
import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import pytest

from scheduler_core.actions import ActionContext
from scheduler_core.actions.http import HttpSender
from scheduler_core.actions.placeholders import expand, expand_body, expand_uri, history_url, placeholder_values
from scheduler_core.actions.service_bus import ServiceBusSender
from scheduler_core.actions.storage_queue import StorageQueueSender
from scheduler_core.model.actions import (
    PLACEHOLDERS,
    HttpAction,
    Secret,
    ServiceBusQueueAction,
    SharedAccessKeyAuthentication,
    StorageQueueAction,
)
from tests.actions.conftest import AzuriteQueue
from tests.support.amqp_broker import AmqpBroker
from tests.support.http_target import http_target

SCHEDULED = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
STARTED = datetime(2030, 1, 2, 3, 4, 6, 250000, tzinfo=UTC)
#: Names the name rule allows (docs/names.md) that a careless expansion would break: query and form syntax,
#: JSON syntax, a space, a non-Latin-1 script.
COLLECTION_NAME = 'ops & co=1+2 "x"\\y'
JOB_NAME = "nightly 日本"
SUB = "/subscriptions/sub1/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections"
ALL = "s=@{scheduledTime} a=@{actualTime} e=@{executionId} n=@{attempt} j=@{jobName} c=@{collectionName}"


def context(expand_placeholders: bool = True, attempt: int = 2) -> ActionContext:
    return ActionContext(
        f"{SUB}/{COLLECTION_NAME}/jobs/{JOB_NAME}",
        f"{SUB}/{COLLECTION_NAME}",
        SCHEDULED,
        "5f0c3a2e9b1d4c7a8e6f0a1b2c3d4e5f",
        attempt,
        started_at=STARTED,
        expand_placeholders=expand_placeholders,
    )


EXPECTED = {
    "scheduledTime": "2030-01-02T03:04:05Z",
    "actualTime": "2030-01-02T03:04:06.25Z",
    "executionId": "5f0c3a2e9b1d4c7a8e6f0a1b2c3d4e5f",
    "attempt": "2",
    "jobName": JOB_NAME,
    "collectionName": COLLECTION_NAME,
    "historyUrl": "",  # the app's host is not known to this context
    # Known to an error action only: empty where no failure is known.
    "failure.status": "",
    "failure.reason": "",
    "failure.body": "",
    "failure.executionId": "",
    "failure.attempts": "",
}


def test_each_placeholder_stands_for_what_the_call_knows() -> None:
    values = placeholder_values(context())
    assert values == EXPECTED
    assert set(values) == set(PLACEHOLDERS)  # every placeholder the definitions accept has a value


def test_names_are_read_in_any_casing_and_unknown_references_are_left_alone() -> None:
    values = placeholder_values(context())
    text = "@{JOBNAME}|@{ attempt }|@{scheduledtime}|@{nope}|@{|@{}|plain"
    assert expand(text, values) == f"{JOB_NAME}|2|2030-01-02T03:04:05Z|@{{nope}}|@{{|@{{}}|plain"


def test_only_the_query_of_a_uri_is_expanded_each_value_percent_encoded() -> None:
    values = placeholder_values(context())
    uri = "https://h.example/p/@{jobName}?c=@{collectionName}&t=@{scheduledTime}#@{attempt}"
    assert expand_uri(uri, values) == (
        "https://h.example/p/@{jobName}?c=ops%20%26%20co%3D1%2B2%20%22x%22%5Cy&t=2030-01-02T03%3A04%3A05Z#@{attempt}"
    )


@pytest.mark.parametrize(
    ("content_type", "body", "parse"),
    [
        ("application/json; charset=utf-8", '{"c": "@{collectionName}", "n": @{attempt}}', json.loads),
        ("application/cloudevents+json", '{"c": "@{collectionName}", "n": @{attempt}}', json.loads),
        ("application/x-www-form-urlencoded", "c=@{collectionName}&n=@{attempt}", parse_qs),
    ],
)
def test_a_json_or_form_body_stays_valid_whatever_the_names_hold(content_type: str, body: str, parse: object) -> None:
    expanded = expand_body(body, placeholder_values(context()), {"Content-Type": content_type})
    if parse is json.loads:
        assert json.loads(expanded) == {"c": COLLECTION_NAME, "n": 2}
    else:
        assert parse_qs(expanded) == {"c": [COLLECTION_NAME], "n": ["2"]}


def test_any_other_body_gets_the_values_as_they_are() -> None:
    assert expand_body("c=@{collectionName}", placeholder_values(context()), {"Content-Type": "text/plain"}) == (
        f"c={COLLECTION_NAME}"
    )


def test_the_http_sender_expands_query_headers_and_body_at_send_time() -> None:
    with http_target() as target:
        action = HttpAction(
            f"{target.base_url}/hook?job=@{{jobName}}&c=@{{collectionName}}&n=@{{attempt}}",
            "POST",
            headers={"Content-Type": "application/json", "X-Run": "@{executionId}/@{attempt}", "X-Job": "@{jobName}"},
            body='{"scheduled": "@{scheduledTime}", "actual": "@{actualTime}", "collection": "@{collectionName}"}',
        )
        result = HttpSender(timeout=5).send(action, context())
        assert result.succeeded, result.message
        [received] = target.received
    query = parse_qs(urlsplit(received.path).query)
    assert query == {"job": [JOB_NAME], "c": [COLLECTION_NAME], "n": ["2"]}
    assert urlsplit(received.path).path == "/hook"
    assert json.loads(received.body) == {
        "scheduled": "2030-01-02T03:04:05Z",
        "actual": "2030-01-02T03:04:06.25Z",
        "collection": COLLECTION_NAME,
    }
    assert received.headers["X-Run"] == "5f0c3a2e9b1d4c7a8e6f0a1b2c3d4e5f/2"
    # http.server reads header bytes as Latin-1: the value went as its UTF-8 bytes
    assert received.headers["X-Job"].encode("latin-1").decode("utf-8") == JOB_NAME
    job_id = received.headers["x-ms-scheduler-jobid"].encode("latin-1").decode("utf-8")
    assert job_id.endswith(f"/jobs/{JOB_NAME}")


def test_off_by_default_so_texts_holding_placeholders_are_sent_as_written() -> None:
    assert ActionContext("j", "c", SCHEDULED, "e", 0).expand_placeholders is False
    with http_target() as target:
        action = HttpAction(f"{target.base_url}/hook?x=@{{jobName}}", "POST", headers={"X-Job": "@{jobName}"}, body=ALL)
        assert HttpSender(timeout=5).send(action, context(expand_placeholders=False)).succeeded
        [received] = target.received
    assert received.body == ALL.encode()
    assert received.headers["X-Job"] == "@{jobName}"
    assert parse_qs(urlsplit(received.path).query) == {"x": ["@{jobName}"]}


@pytest.mark.azurite
@pytest.mark.parametrize("message_format", ["text", "envelope"])
def test_a_storage_queue_message_is_expanded(azurite_queue: AzuriteQueue, message_format: str) -> None:
    sender = StorageQueueSender(endpoint=azurite_queue.endpoint, message_format=message_format)
    action = StorageQueueAction("devstoreaccount1", azurite_queue.name, ALL, Secret(azurite_queue.sas()))
    assert sender.send(action, context()).succeeded
    [content] = azurite_queue.messages()
    if message_format == "envelope":
        xml = base64.b64decode(content).decode("utf-8")
        fields = {child.tag: child.text for child in ET.fromstring(xml.split("?>", 1)[1])}
        content = fields["Message"] or ""
        assert fields["SchedulerJobId"] == JOB_NAME
    assert content == (
        "s=2030-01-02T03:04:05Z a=2030-01-02T03:04:06.25Z e=5f0c3a2e9b1d4c7a8e6f0a1b2c3d4e5f n=2 "
        f"j={JOB_NAME} c={COLLECTION_NAME}"
    )


@pytest.mark.azurite
def test_a_storage_queue_message_is_untouched_when_off(azurite_queue: AzuriteQueue) -> None:
    sender = StorageQueueSender(endpoint=azurite_queue.endpoint, message_format="text")
    action = StorageQueueAction("devstoreaccount1", azurite_queue.name, ALL, Secret(azurite_queue.sas()))
    assert sender.send(action, context(expand_placeholders=False)).succeeded
    assert azurite_queue.messages() == [ALL]


@pytest.mark.parametrize("expand_placeholders", [True, False])
def test_a_service_bus_message_is_expanded_only_when_on(broker: AmqpBroker, expand_placeholders: bool) -> None:
    sender = ServiceBusSender(endpoint=broker.endpoint, timeout=10)
    auth = SharedAccessKeyAuthentication("RootManageSharedAccessKey", Secret("c2VjcmV0LXNhcy1rZXktdmFsdWU="))
    action = ServiceBusQueueAction("contoso", "orders", '{"job": "@{jobName}", "attempt": @{attempt}}', None, auth)
    try:
        assert sender.send(action, context(expand_placeholders)).succeeded
    finally:
        sender.close()
    [message] = broker.wait_for(1, "orders")
    expected = f'{{"job": "{JOB_NAME}", "attempt": 2}}' if expand_placeholders else action.message
    assert message.body.decode("utf-8") == expected


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("myapp.azurewebsites.net", "https://myapp.azurewebsites.net/dashboard/#/job/rg1/jc%20one/night%20%26%20day"),
        ("localhost:7071", "http://localhost:7071/dashboard/#/job/rg1/jc%20one/night%20%26%20day"),
        ("127.0.0.1:7071", "http://127.0.0.1:7071/dashboard/#/job/rg1/jc%20one/night%20%26%20day"),
        ("", ""),
    ],
)
def test_history_url_links_the_jobs_page_on_the_apps_host(host: str, url: str) -> None:
    job_id = "/subscriptions/s1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc one/jobs/night & day"
    assert history_url(host, job_id) == url
