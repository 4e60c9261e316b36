"""The scheduling pipeline with simulated time (:class:`tests.support.harness.Deployment`): dispatch,
execution, retries, error actions, exactly-once under duplicates and races, coalescing after downtime, stale
definitions never firing. On the memory adapter (held to the Azure adapter's rules by ``tests/contract``),
except where a second process shares the storage (Azurite)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scheduler_core.model import claim_key
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.support.harness import Deployment, near_now
from tests.support.http_target import HttpTarget, http_target
from tests.support.jobs import http_action, job_body

pytestmark = [pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def pipeline(memory_env: Settings) -> Deployment:
    """The pipeline on the memory adapter, in simulated time from just past a whole minute of the real clock."""
    return near_now(memory_env)


def shared_with_a_worker(storage_env: Settings) -> Deployment:
    """The pipeline on Azurite, for a test whose executor in another process reads the real clock: simulated
    time starts 30 s before the real time, so that the test can move it on to the real time."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=30)
    return near_now(storage_env, azurite=True, start=start)


def expected_times(target: HttpTarget) -> list[str]:
    return [r.headers["x-ms-scheduler-expected-execution-time"] for r in target.received]


def fire_one_shot(pipeline: Deployment, target: HttpTarget, name: str) -> tuple[datetime, ExecutionMessage]:
    """Create a one-shot job due in 20 s, reach its due time and take its execution message from the queue."""
    due = pipeline.clock.now + timedelta(seconds=20)
    pipeline.put_job(name, job_body(due, http_action(target.base_url)))
    pipeline.clock.set(due)
    [message] = pipeline.take()
    return due, message


def test_every_minute_job_fires_at_its_seconds(pipeline: Deployment, target: HttpTarget) -> None:
    first = pipeline.clock.now + timedelta(seconds=30)
    pipeline.put_job(
        "minutely",
        job_body(first, http_action(target.base_url + "/hook"), {"frequency": "Minute", "interval": 1}),
    )
    pipeline.run_until(first + timedelta(minutes=4, seconds=1))
    assert expected_times(target) == [format_instant(first + timedelta(minutes=i)) for i in range(5)]
    job = pipeline.services.service.get_job(pipeline.ref("minutely"))
    assert (job.execution_count, job.failure_count) == (5, 0)
    assert job.next_execution_time == first + timedelta(minutes=5)
    history = pipeline.services.service.list_history(pipeline.ref("minutely"))
    assert [h.expected_execution_time for h in history] == [first + timedelta(minutes=i) for i in range(4, -1, -1)]
    assert all(h.status == "Completed" and h.action_name == "MainAction" for h in history)
    assert history[0].message.startswith("200 OK"), history[0].message  # the outcome first
    assert "| Http Action - Response from host '127.0.0.1' |" in history[0].message
    headers = target.received[0].headers
    assert headers["x-ms-scheduler-jobid"].endswith("/jobCollections/jc/jobs/minutely")
    assert headers["x-ms-scheduler-retry-count"] == "0"
    assert target.received[0].body == b"ping"


def test_duplicate_delivery_fires_once(pipeline: Deployment, target: HttpTarget) -> None:
    due = pipeline.clock.now + timedelta(seconds=20)
    hourly = {"frequency": "Hour", "interval": 1}
    pipeline.put_job("dup", job_body(due, http_action(target.base_url), hourly))
    pipeline.clock.set(due)
    [message] = pipeline.take()
    first = pipeline.services.executor.execute(message)
    second = pipeline.services.executor.execute(message)
    assert (first.outcome, second.outcome) == (Outcome.SUCCEEDED, Outcome.DUPLICATE)
    assert len(target.received) == 1
    job = pipeline.services.service.get_job(pipeline.ref("dup"))
    assert job.execution_count == 1
    assert job.next_execution_time == due + timedelta(hours=1)


def test_one_shot_job_completes_and_a_late_duplicate_does_not_fire(pipeline: Deployment, target: HttpTarget) -> None:
    _, message = fire_one_shot(pipeline, target, "once")
    assert pipeline.services.executor.execute(message).outcome is Outcome.SUCCEEDED
    job = pipeline.services.service.get_job(pipeline.ref("once"))
    assert (job.state, job.execution_count, job.next_execution_time) == ("Completed", 1, None)
    assert pipeline.services.executor.execute(message).outcome is Outcome.STALE  # the job has ended
    assert len(target.received) == 1


def test_two_scans_of_one_shard_fire_each_occurrence_once(pipeline: Deployment, target: HttpTarget) -> None:
    due = pipeline.clock.now + timedelta(minutes=3)
    for index in range(6):
        pipeline.put_job(
            f"j{index}",
            job_body(due, http_action(target.base_url), {"frequency": "Hour", "interval": 1}),
        )
    pipeline.clock.set(due - timedelta(seconds=30))
    shards = [f"{s:04d}" for s in range(pipeline.services.settings.due_shards)]
    barrier = threading.Barrier(2)

    def scan() -> None:
        barrier.wait()
        for shard in shards:
            pipeline.services.dispatcher.scan(shard, pipeline.clock())

    threads = [threading.Thread(target=scan) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    pipeline.clock.set(due)
    pipeline.deliver()
    assert sorted(r.headers["x-ms-scheduler-jobid"].rsplit("/", 1)[1] for r in target.received) == [
        f"j{i}" for i in range(6)
    ]
    assert set(expected_times(target)) == {format_instant(due)}


def test_downtime_is_coalesced_into_one_late_run_then_the_schedule_resumes(
    pipeline: Deployment, target: HttpTarget
) -> None:
    first = pipeline.clock.now + timedelta(seconds=25)
    pipeline.put_job(
        "m",
        job_body(first, http_action(target.base_url), {"frequency": "Minute", "interval": 1}),
    )
    pipeline.run_until(first + timedelta(seconds=1))
    assert len(target.received) == 1
    # Ten minutes with no ticks and no deliveries (the host is stopped), then it comes back.
    pipeline.clock.set(first + timedelta(minutes=10, seconds=30))
    pipeline.drop_queued()  # the message dispatched before the stop was lost with the host's memory
    pipeline.scan()
    pipeline.deliver()
    assert len(target.received) == 2  # one late run for the nine missed occurrences
    history = pipeline.services.service.list_history(pipeline.ref("m"))
    assert "missed" in history[0].message
    job = pipeline.services.service.get_job(pipeline.ref("m"))
    assert job.next_execution_time == first + timedelta(minutes=11)
    pipeline.run_until(first + timedelta(minutes=12, seconds=1))
    assert expected_times(target)[-2:] == [format_instant(first + timedelta(minutes=m)) for m in (11, 12)]


def test_failure_then_success_shows_the_retry_in_history(pipeline: Deployment, target: HttpTarget) -> None:
    target.answer([500, 200])
    due = pipeline.clock.now + timedelta(seconds=15)
    pipeline.put_job(
        "r",
        job_body(
            due,
            http_action(target.base_url, retryPolicy={"retryType": "Fixed", "retryInterval": "PT20S", "retryCount": 3}),
        ),
    )
    pipeline.run_until(due + timedelta(seconds=25))
    assert len(target.received) == 2
    assert target.received[1].at >= target.received[0].at
    assert [r.headers["x-ms-scheduler-retry-count"] for r in target.received] == ["0", "1"]
    assert set(expected_times(target)) == {format_instant(due)}
    history = pipeline.services.service.list_history(pipeline.ref("r"))
    assert [(h.status, h.retry_count) for h in history] == [("Completed", 1), ("Failed", 0)]
    assert history[1].message.startswith("500 Internal Server Error"), history[1].message
    job = pipeline.services.service.get_job(pipeline.ref("r"))
    assert (job.execution_count, job.failure_count, job.faulted_count, job.state) == (2, 1, 0, "Completed")


def test_always_failing_target_runs_the_error_action_and_faults(pipeline: Deployment, target: HttpTarget) -> None:
    target.answer([503])
    due = pipeline.clock.now + timedelta(seconds=15)
    with http_target() as fallback:
        pipeline.put_job(
            "f",
            job_body(
                due,
                http_action(
                    target.base_url + "/main",
                    retryPolicy={"retryType": "Fixed", "retryInterval": "PT15S", "retryCount": 2},
                    errorAction={"type": "Http", "request": {"uri": fallback.base_url + "/error", "method": "POST"}},
                ),
            ),
        )
        pipeline.run_until(due + timedelta(minutes=2))
        assert len(target.received) == 3  # first try and two retries
        assert [r.path for r in fallback.received] == ["/error"]
    job = pipeline.services.service.get_job(pipeline.ref("f"))
    assert (job.execution_count, job.failure_count, job.faulted_count) == (3, 3, 1)
    assert job.state == "Faulted"
    history = pipeline.services.service.list_history(pipeline.ref("f"))
    assert [h.action_name for h in history] == ["ErrorAction", "MainAction", "MainAction", "MainAction"]


def test_update_or_disable_between_dispatch_and_firing_never_fires_the_stale_definition(
    pipeline: Deployment, target: HttpTarget
) -> None:
    due = pipeline.clock.now + timedelta(seconds=20)
    action = http_action(target.base_url + "/old")
    recurrence = {"frequency": "Hour", "interval": 1}
    pipeline.put_job("u", job_body(due, action, recurrence))
    pipeline.put_job("d", job_body(due, action, recurrence))
    assert len(pipeline.queued()) == 2  # dispatched at once: due inside the lookahead window
    later = due + timedelta(minutes=30)
    pipeline.put_job(
        "u",
        job_body(later, http_action(target.base_url + "/new"), recurrence),
    )
    pipeline.services.service.patch_job(pipeline.ref("d"), {"properties": {"state": "Disabled"}})
    pipeline.clock.set(due)
    reports = pipeline.deliver()
    assert [r.outcome for r in reports] == [Outcome.STALE, Outcome.STALE]
    assert target.received == []
    pipeline.run_until(later + timedelta(seconds=1))
    assert [r.path for r in target.received] == ["/new"]


@pytest.mark.azurite
def test_worker_killed_mid_action_is_run_again_once_and_both_attempts_are_in_history(
    storage_env: Settings, target: HttpTarget
) -> None:
    pipeline = shared_with_a_worker(storage_env)  # the killed worker is another process: it shares Azurite
    _, message = fire_one_shot(pipeline, target, "k")
    target.answer([200], delay=60)  # the first worker hangs inside the action
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.executor_worker", message.to_json()],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        target.wait_for(1, timeout=30)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    target.answer([200], delay=0)
    real_now = datetime.now(UTC)
    # Redelivered while the dead worker's lease is still live: left alone and re-sent for later.
    pipeline.clock.set(real_now + timedelta(seconds=5))
    assert pipeline.services.executor.execute(message).outcome is Outcome.BUSY
    # Redelivered after the lease expired: taken over, run once, completed.
    pipeline.clock.set(real_now + timedelta(minutes=3))
    assert pipeline.services.executor.execute(message).outcome is Outcome.SUCCEEDED
    assert pipeline.services.executor.execute(message).outcome is Outcome.STALE  # the one-shot job has completed
    history = pipeline.services.service.list_history(pipeline.ref("k"))
    assert [(h.status, h.action_name) for h in history] == [("Completed", "MainAction"), ("Failed", "MainAction")]
    assert history[1].message.startswith("worker lost; the call may have been delivered")
    assert len(target.received) == 2  # the dead worker's call reached the target; the occurrence completed once
    ids = {r.headers["x-ms-scheduler-execution-id"] for r in target.received}
    assert ids == {history[0].execution_id} == {history[1].execution_id}
    job = pipeline.services.service.get_job(pipeline.ref("k"))
    assert (job.execution_count, job.failure_count, job.state) == (1, 0, "Completed")


def due_rows(pipeline: Deployment) -> list[str]:
    shards = range(pipeline.services.settings.due_shards)
    return [row.row_key for s in shards for row in pipeline.services.stores.due.due_before(f"{s:04d}", "~")]


def test_the_watch_row_of_a_completed_attempt_is_gone_after_its_lease(pipeline: Deployment, target: HttpTarget) -> None:
    due = pipeline.clock.now + timedelta(seconds=20)
    hourly = {"frequency": "Hour", "interval": 1}
    pipeline.put_job("w", job_body(due, http_action(target.base_url), hourly))
    assert sum("|watch|" in key for key in due_rows(pipeline)) == 1  # written with the dispatch, same batch
    pipeline.run_until(due + timedelta(minutes=4))
    assert len(target.received) == 1
    keys = due_rows(pipeline)
    assert len(keys) == 1 and "|watch|" not in keys[0]  # only the next occurrence's row is left


def test_an_attempt_whose_worker_died_is_sent_again_by_the_watchdog_after_its_lease(
    pipeline: Deployment, target: HttpTarget
) -> None:
    due, message = fire_one_shot(pipeline, target, "d")  # received by a worker that claims it, then dies
    job = pipeline.services.service.get_job(pipeline.ref("d"))
    claim_row = claim_key(due, "main", 0, "schedule")
    lease = timedelta(seconds=120)
    pipeline.services.executor.claims.claim(job.ref.identity, claim_row, "dead-worker", pipeline.clock(), lease)
    pipeline.run_until(due + lease + timedelta(seconds=90))  # the dead worker's message never comes back
    assert len(target.received) == 1
    rerun_at = datetime.fromisoformat(target.received[0].headers["x-ms-scheduler-expected-execution-time"])
    assert rerun_at == due
    assert target.received[0].headers["x-ms-scheduler-execution-id"] == message.stable_execution_id()
    history = pipeline.services.service.list_history(pipeline.ref("d"))
    assert [h.status for h in history] == ["Completed", "Failed"]
    assert "worker dead-worker" in history[1].message
    assert pipeline.services.service.get_job(pipeline.ref("d")).state == "Completed"
