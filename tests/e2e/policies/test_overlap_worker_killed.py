"""overlapPolicy BufferOne when the worker of the occurrence ahead is killed mid-call: the occurrence that waits
behind it runs once the watchdog has run that one again, as it does behind one that ends normally; the job
then completes, with the killed attempt's "worker lost" entry beside the two completed ones.

Real host processes (the function app on the local host, timer and queue triggers, ``tests/e2e/fault_host.py``)
over the session's Azurite, a real HTTP target on 127.0.0.1 that holds the calls it is told to, and SIGKILL.
The claim lease is the deployed one (15 s, renewed every 5 s while its worker lives: the first occurrence is
still running, not taken over, when the second one comes a minute later); the dispatch timer ticks every 2 s."""

from __future__ import annotations

import signal
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core import wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.definitions import Wire
from scheduler_core.model import CLAIM_LEASE
from scheduler_core.pipeline.execute import WORKER_LOST
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e import fault_host
from tests.support.http_target import HttpTarget
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e, pytest.mark.long(95)]

LEASE_SECONDS = CLAIM_LEASE.total_seconds()
EXPECTED = "x-ms-scheduler-expected-execution-time"


def test_the_occurrence_waiting_behind_a_killed_worker_runs_after_the_watchdog_reruns_it(
    storage_env: Settings, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCHEDULER_DISPATCH_SCHEDULE", "*/2 * * * * *")
    provision(storage_env)
    services = wiring.build(storage_env, claim_lease=timedelta(seconds=LEASE_SECONDS))
    collection = CollectionRef("sub1", "rg", "jc")
    services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    ref = JobRef(collection, "buffered")
    target.answer([200], delay=600)  # the first call is held until its worker is gone
    doomed = fault_host.spawn(LEASE_SECONDS)
    # Its start is set once the host serves (a host slow to start would otherwise find the job late).
    first_due = (datetime.now(UTC) + timedelta(seconds=6)).replace(microsecond=0)
    second_due = first_due + timedelta(minutes=1)
    body = {
        "properties": {
            "startTime": format_instant(first_due),
            "action": {"type": "Http", "request": {"uri": target.base_url + "/hook", "method": "POST"}},
            "recurrence": {"frequency": "Minute", "count": 2},
            "overlapPolicy": "BufferOne",
        }
    }
    successor = None
    try:
        services.service.put_job(ref, body, wire=Wire.PREVIEW)
        [first] = target.wait_for(1, timeout=30)
        assert first.headers[EXPECTED] == format_instant(first_due)

        def waits() -> bool:  # the second occurrence came to the living worker and waits for the first
            job = services.stores.jobs.get(ref)
            return job is not None and format_instant(second_due) in job.waiting

        wait_until(waits, 90, "the second occurrence waiting for the first")
        assert len(target.received) == 1
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
        target.answer([200], delay=0)
        successor = fault_host.spawn(LEASE_SECONDS)
        # the watchdog runs the first again after its lease; that re-run releases the second
        calls = target.wait_for(3, timeout=LEASE_SECONDS + 60)

        def completed() -> bool:
            job = services.service.get_job(ref)
            return job.state == "Completed" and len(services.service.list_history(ref)) == 3

        wait_until(completed, 30, "the second occurrence recorded and the job completed")
    finally:
        doomed.kill()
        if successor is not None:
            fault_host.stop(successor)
    assert [call.headers[EXPECTED] for call in calls] == [format_instant(first_due)] * 2 + [format_instant(second_due)]
    assert calls[1].at <= calls[2].at  # released by the re-run, not before it
    history = sorted(services.service.list_history(ref), key=lambda h: (h.expected_execution_time, h.start_time))
    assert [(h.expected_execution_time, h.status, h.message.startswith(WORKER_LOST)) for h in history] == [
        (first_due, "Failed", True),
        (first_due, "Completed", False),
        (second_due, "Completed", False),
    ]
    job = services.stores.jobs.get(ref)
    assert job is not None and (job.running, job.waiting) == ("", "")
