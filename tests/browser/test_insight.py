"""What the dashboard's job API computes (``scheduler_core.dashboard.insight``), on the memory adapter in
simulated time: the next occurrences follow the job's runs and end with its series, and every kind of
write-only field is listed, set or not, without its value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core import wiring
from scheduler_core.adapters.memory import memory_storage
from scheduler_core.adapters.memory.clock import SimulatedClock
from scheduler_core.dashboard.insight import job_insight, write_only_fields
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef

#: Simulated time starts at the current hour (a definition may start at most 18 months after the real now).
START = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
COLLECTION = CollectionRef("sub", "rg", "jc")


@pytest.fixture
def service(memory_env: Settings) -> tuple[Any, SimulatedClock]:
    clock = SimulatedClock(START)
    services = wiring.build(memory_env, clock=clock, sleep=clock.advance, storage=memory_storage(clock))
    services.service.put_collection(COLLECTION, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    return services.service, clock


def http(**request: Any) -> dict[str, Any]:
    return {"type": "Https", "request": {"uri": "https://example.invalid/", "method": "GET", **request}}


def test_occurrences_start_at_the_first_unrun_and_end_with_the_series(service: tuple[Any, SimulatedClock]) -> None:
    svc, clock = service
    ref = JobRef(COLLECTION, "count3")
    start = START + timedelta(minutes=10)
    body = {
        "startTime": format_instant(start),
        "action": http(),
        "recurrence": {"frequency": "Hour", "interval": 1, "count": 3},
    }
    svc.put_job(ref, {"properties": body})
    job = svc.get_job(ref)
    insight = job_insight(job, clock(), 10)
    assert [o["utc"] for o in insight["occurrences"]] == [format_instant(start + timedelta(hours=n)) for n in range(3)]
    assert insight["timeZone"] is None
    assert job_insight(job, clock(), 2)["occurrences"] == insight["occurrences"][:2]
    clock.set(start + timedelta(hours=1, minutes=30))  # two have passed: one is left
    assert [o["utc"] for o in job_insight(svc.get_job(ref), clock(), 10)["occurrences"]] == [
        format_instant(start + timedelta(hours=2))
    ]
    clock.set(start + timedelta(hours=3))  # the series is over
    assert job_insight(svc.get_job(ref), clock(), 10)["occurrences"] == []


def test_a_disabled_job_shows_when_its_schedule_would_run(service: tuple[Any, SimulatedClock]) -> None:
    svc, clock = service
    ref = JobRef(COLLECTION, "off")
    body = {"action": http(), "recurrence": {"frequency": "Minute", "interval": 5}, "state": "Disabled"}
    svc.put_job(ref, {"properties": body})
    insight = job_insight(svc.get_job(ref), clock(), 3)
    assert insight["state"] == "Disabled"
    assert [o["utc"] for o in insight["occurrences"]] == [
        format_instant(START + timedelta(minutes=5 * n)) for n in range(3)
    ]


def test_the_write_only_fields_of_every_action_kind() -> None:
    def fields(action: dict[str, Any]) -> list[str]:
        return write_only_fields({"action": action})

    assert fields(http()) == []
    assert fields(http(authentication={"type": "Basic", "username": "u"})) == ["action.request.authentication.password"]
    assert fields(http(authentication={"type": "ClientCertificate", "certificateThumbprint": "AB"})) == [
        "action.request.authentication.pfx",
        "action.request.authentication.password",
    ]
    assert fields(http(authentication={"type": "ActiveDirectoryOAuth", "tenant": "t"})) == [
        "action.request.authentication.secret"
    ]
    assert fields({"type": "StorageQueue", "queueMessage": {"storageAccount": "a", "queueName": "q"}}) == [
        "action.queueMessage.sasToken"
    ]
    for kind, payload in (("ServiceBusQueue", "serviceBusQueueMessage"), ("ServiceBusTopic", "serviceBusTopicMessage")):
        assert fields({"type": kind, payload: {"namespace": "n", "authentication": {"type": "SharedAccessKey"}}}) == [
            f"action.{payload}.authentication.sasKey"
        ]
    with_error = {**http(), "errorAction": {"type": "StorageQueue", "queueMessage": {"queueName": "q"}}}
    assert fields(with_error) == ["action.errorAction.queueMessage.sasToken"]


def test_set_and_unset_write_only_fields_without_their_values(service: tuple[Any, SimulatedClock]) -> None:
    svc, clock = service
    ref = JobRef(COLLECTION, "secrets")
    password = "the-password-itself"
    body = {"action": http(authentication={"type": "Basic", "username": "u", "password": password})}
    svc.put_job(ref, {"properties": body})
    insight = job_insight(svc.get_job(ref), clock(), 1)
    assert insight["writeOnly"] == [{"path": "action.request.authentication.password", "set": True, "meaning": "set"}]
    assert password not in repr(insight)
