"""Faults: a worker process killed in the middle of a call, with a short claim lease: it is replaced within 3
minutes of its lease's end (the watchdog), the lost attempt is recorded next to the re-run, and nothing more
runs. Every delivery of the occurrence carries the same ``x-ms-scheduler-execution-id`` and expected time,
and the occurrence is counted once.

The set-up of ``tests/e2e/test_faults_worker.py`` (its :func:`~tests.e2e.test_faults_worker.held_job`): real
host processes (the function app on the local host, timer and queue triggers) over the session's Azurite, a
real HTTP target on 127.0.0.1 that holds the first request, and SIGKILL. The claim lease is short (6 s, a
constructor parameter of the services) so the test waits seconds, not minutes; the dispatch timer ticks every
2 s instead of every minute. A module of its own, so that it runs beside the deployed lease's test.
"""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core.pipeline.execute import WORKER_LOST
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.e2e import fault_host
from tests.e2e.test_faults_worker import held_job, soon
from tests.support.http_target import HttpTarget
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

LEASE_SECONDS = 6
#: The bound the watchdog keeps: a dead worker's attempt runs again within this long after its lease ends.
RERUN_BOUND = timedelta(minutes=3)


def test_a_worker_killed_mid_call_is_replaced_within_the_bound_and_both_attempts_are_recorded(
    storage_env: Settings, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCHEDULER_DISPATCH_SCHEDULE", "*/2 * * * * *")
    services, ref, _, _ = held_job(storage_env, target, "jc", "held", timedelta(seconds=LEASE_SECONDS))
    doomed = fault_host.spawn(LEASE_SECONDS)
    due, body = soon(target)
    successor = None
    try:
        services.service.put_job(ref, body)
        [first] = target.wait_for(1, timeout=30)
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
        lease_end = datetime.fromtimestamp(first.at, UTC) + timedelta(seconds=LEASE_SECONDS)
        target.answer([200], delay=0)
        successor = fault_host.spawn(LEASE_SECONDS)
        # The dead worker's queue message stays hidden for 10 minutes: only the watchdog can bring it back.
        second = target.wait_for(2, timeout=LEASE_SECONDS + 90)[1]
        assert datetime.fromtimestamp(second.at, UTC) - lease_end < RERUN_BOUND

        def recorded() -> bool:
            job = services.service.get_job(ref)
            return job.state == "Completed" and len(services.service.list_history(ref)) == 2

        wait_until(recorded, 30, "the re-run recorded and the job completed")
        time.sleep(LEASE_SECONDS + 5)  # a further lease and some ticks: nothing more may run
    finally:
        doomed.kill()
        if successor is not None:
            fault_host.stop(successor)
    assert len(target.received) == 2
    assert first.headers["x-ms-scheduler-execution-id"] == second.headers["x-ms-scheduler-execution-id"]
    expected = "x-ms-scheduler-expected-execution-time"
    assert first.headers[expected] == second.headers[expected] == format_instant(due)
    history = services.service.list_history(ref)
    assert [(h.status, h.message.startswith(WORKER_LOST)) for h in history] == [("Completed", False), ("Failed", True)]
    assert {h.execution_id for h in history} == {first.headers["x-ms-scheduler-execution-id"]}
    assert {h.expected_execution_time for h in history} == {due}
    job = services.service.get_job(ref)
    assert (job.execution_count, job.failure_count, job.faulted_count, job.state) == (1, 0, 0, "Completed")
