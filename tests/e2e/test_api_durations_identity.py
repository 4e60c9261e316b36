"""Raw HTTP against the management API: durations that are too large, negative or malformed, and actions
that would send the app's identity to a host outside the configured endpoints, are 400 ARM errors naming the
field and the rule, and store nothing. Hosts are judged, never looked up (a guard records every lookup)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core import wiring
from tests.e2e.conftest import Api
from tests.support.jobs import http_action, job_body
from tests.support.loopback_guard import resolved

__all__ = ["resolved"]  # a fixture

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

JC = "subscriptions/sub1/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"


@pytest.fixture
def collection(api: Api) -> str:
    response = api.call("PUT", JC, {"location": "westus", "properties": {"sku": {"name": "standard"}}})
    assert response.status_code == 201, response.text
    return JC


def start() -> str:
    return (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def http_job(policy: dict[str, Any]) -> dict[str, Any]:
    return job_body(start(), http_action("http://example.org/x", method="GET", body=None, retryPolicy=policy))


def sb_job(namespace: str, key: str | None = None, ttl: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"namespace": namespace, "queueName": "q1", "message": "m"}
    if key is not None:
        message["authentication"] = {"type": "SharedAccessKey", "sasKeyName": "send", "sasKey": key}
    if ttl is not None:
        message["brokeredMessageProperties"] = {"timeToLive": ttl}
    return {
        "properties": {"startTime": start(), "action": {"type": "ServiceBusQueue", "serviceBusQueueMessage": message}}
    }


def assert_refused(api: Api, response: Any, field: str, *words: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "BadRequest"
    assert error["message"].startswith(field + ":"), error["message"]
    for word in words:
        assert word in error["message"]


@pytest.mark.parametrize(
    ("policy", "field", "words"),
    [
        ({"retryInterval": "PT99999999999999999999S"}, "retryInterval", ("at most",)),
        ({"retryInterval": "99999999.00:00:00"}, "retryInterval", ("at most",)),
        ({"retryInterval": "P" + "9" * 3000 + "W"}, "retryInterval", ("at most",)),
        ({"retryInterval": "-PT30S"}, "retryInterval", ("negative",)),
        ({"retryInterval": "NaN"}, "retryInterval", ("ISO 8601", "TimeSpan")),
        ({"retryType": "Exponential", "maxRetryInterval": "P99999999999999D"}, "maxRetryInterval", ("at most",)),
    ],
)
def test_a_bad_retry_duration_is_a_400_naming_the_field(
    api: Api, collection: str, policy: dict[str, Any], field: str, words: tuple[str, ...]
) -> None:
    response = api.call("PUT", f"{collection}/jobs/bad", http_job(policy))
    assert_refused(api, response, f"properties.action.retryPolicy.{field}", *words)
    assert api.call("GET", f"{collection}/jobs/bad").status_code == 404


@pytest.mark.parametrize("ttl", ["PT99999999999999999999S", "99999999.00:00:00", "-00:00:01"])
def test_a_bad_time_to_live_is_a_400_naming_the_field(api: Api, collection: str, ttl: str) -> None:
    response = api.call("PUT", f"{collection}/jobs/bad", sb_job("contoso", ttl=ttl))
    assert_refused(api, response, "properties.action.serviceBusQueueMessage.brokeredMessageProperties.timeToLive")
    assert api.call("GET", f"{collection}/jobs/bad").status_code == 404


def test_a_patch_with_a_huge_duration_changes_nothing(api: Api, collection: str) -> None:
    assert api.call("PUT", f"{collection}/jobs/j", http_job({"retryInterval": "00:00:20"})).status_code == 201
    before = api.call("GET", f"{collection}/jobs/j").json()
    patch = {"properties": {"action": {"retryPolicy": {"retryInterval": "99999999999999.00:00:00"}}}}
    response = api.call("PATCH", f"{collection}/jobs/j", patch)
    assert_refused(api, response, "properties.action.retryPolicy.retryInterval", "at most")
    after = api.call("GET", f"{collection}/jobs/j").json()
    assert after == before
    assert after["properties"]["action"]["retryPolicy"]["retryInterval"] == "00:00:20"


@pytest.mark.parametrize("namespace", ["evil.example.com", "169.254.169.254", "10.0.0.4", "127.0.0.1"])
def test_a_keyless_service_bus_job_naming_another_host_is_refused(
    api: Api, collection: str, namespace: str, resolved: list[str]
) -> None:
    response = api.call("PUT", f"{collection}/jobs/sb", sb_job(namespace))
    assert_refused(api, response, "properties.action.serviceBusQueueMessage.namespace", "identity", "sasKey")
    assert api.call("GET", f"{collection}/jobs/sb").status_code == 404
    assert set(resolved) <= {"127.0.0.1"}  # the API's own address only: the namespace was judged, not looked up
    # with its own key, the job may name that host (the outbound policy decides at run time)
    assert api.call("PUT", f"{collection}/jobs/sb", sb_job(namespace, key="sb-key")).status_code == 201


def test_a_host_listed_in_the_setting_may_receive_the_identity(
    api: Api, collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert api.call("PUT", f"{collection}/jobs/local", sb_job("127.0.0.1")).status_code == 400
    monkeypatch.setenv("SCHEDULER_IDENTITY_ALLOWED_HOSTS", "127.0.0.1")
    wiring.reset()  # settings are read once, when the app builds its services (as after a restart)
    response = api.call("PUT", f"{collection}/jobs/local", sb_job("127.0.0.1"))
    assert response.status_code == 201, response.text
    assert api.call("PUT", f"{collection}/jobs/ns", sb_job("contoso")).status_code == 201  # *.servicebus.windows.net
