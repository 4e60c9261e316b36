"""Faults while an operation is polled (``request.asyncPolling``): the host process killed in the middle of a
poll. Real host processes (the function app on the local host, ``tests/e2e/fault_host.py``) over the session's
Azurite, a real HTTP target on 127.0.0.1 that answers the POST with ``202 Accepted`` and a ``Location``, holds
the first poll until the host is gone, and answers the next with 200, and SIGKILL.

The poll's claim outlives its dead worker; once its lease is over, the poll's watch sends it again and a new
host takes it over and polls again (a poll is a read: made again, not recorded). The operation is started
once (one POST), recorded once (one history entry, Completed), and counted once."""

from __future__ import annotations

import signal
import threading
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core import wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.definitions import Wire
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e import fault_host
from tests.support.http_target import HttpTarget
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

#: A short claim lease for both hosts (the deployed one is 15 s): the dead worker's poll is taken over sooner.
LEASE = timedelta(seconds=5)


def test_a_host_killed_mid_poll_leaves_one_operation_started_recorded_and_counted(
    storage_env: Settings, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    provision(storage_env)
    services = wiring.build(storage_env, claim_lease=LEASE)
    collection = CollectionRef("sub1", "rg", "polls")
    services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    ref = JobRef(collection, "long-running")
    release = threading.Event()
    real_status = target._next_status

    def next_status() -> int:  # the POST: 202; the first poll: held until the host is dead; then 200
        with target.lock:
            received = list(target.received)
        if received[-1].method == "POST":
            return 202
        if sum(1 for r in received if r.method == "GET") == 1:
            release.wait(120)
            return 202
        return real_status()

    monkeypatch.setattr(target, "_next_status", next_status)
    target.answer([200], headers={"Location": "/operations/1", "Retry-After": "1"})
    doomed = fault_host.spawn(LEASE.total_seconds())
    successor = None
    try:
        due = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
        request = {"uri": target.base_url + "/start", "method": "POST", "asyncPolling": {"maxDuration": "PT5M"}}
        action = {"type": "Http", "request": request, "retryPolicy": {"retryType": "None"}}
        services.service.put_job(
            ref, {"properties": {"startTime": format_instant(due), "action": action}}, wire=Wire.PREVIEW
        )
        target.wait_for(2, timeout=30)  # the POST, then the first poll, held
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
        release.set()
        successor = fault_host.spawn(LEASE.total_seconds())

        def recorded() -> bool:
            job = services.service.get_job(ref)
            return job.state == "Completed" and len(services.service.list_history(ref)) >= 1

        wait_until(recorded, 90, "the operation polled again by the new host and recorded")
    finally:
        release.set()
        doomed.kill()
        if successor is not None:
            fault_host.stop(successor)
    methods = [r.method for r in target.received]
    assert methods.count("POST") == 1 and methods.count("GET") >= 2, methods
    [row] = services.service.list_history(ref)
    assert row.status == "Completed" and row.message.endswith("poll(s))"), row.message
    job = services.stores.jobs.get(ref)
    assert job is not None and (job.execution_count, job.failure_count) == (1, 0)
