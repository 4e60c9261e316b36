"""The job's counters when their guarded write keeps losing races (``pipeline/counters.py``), on the memory
adapter in simulated time with the real executor and a real HTTP target.

Many concurrent attempts of one job are counted exactly (on Azurite: ``tests/integration/
test_counters_contention.py``); here, the rules of the waits and what happens past the time budget: the
count is not lost, the attempt's message fails and its retry counts it once.

"Another writer" is a real second write of the job row between the counters' read and their write (the
memory store's own ``save``, unconditional), as a racing executor's would be."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.adapters.memory.catalog import MemoryJobs
from scheduler_core.errors import ContentionError
from scheduler_core.model import CLAIM_LEASE, HistoryStatus, Job
from scheduler_core.pipeline import counters
from scheduler_core.pipeline.counters import Backoff, count_attempt
from scheduler_core.pipeline.execute import WORKER_LOST, Outcome
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.pipeline.watches import WATCH_GRACE
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, http_action, job_body
from tests.support.waiting import FakeTime


def interfering(jobs: MemoryJobs, rewrites: Callable[[], bool]) -> Callable[..., Job]:
    """``jobs.save`` with another writer before each guarded write while ``rewrites()`` says so: it writes the
    stored row again (a new ETag), so the guarded write that follows loses its race."""
    real = jobs.save

    def save(record: Job, *, create: bool, etag: str | None = None) -> Job:
        if etag is not None and rewrites():
            current = jobs.get_by_keys(record.ref.partition_key, record.ref.row_key)
            assert current is not None
            real(current, create=False, etag=None)
        return real(record, create=create, etag=etag)

    return save


def test_the_waits_are_jittered_doubling_capped_and_bounded_in_time() -> None:
    clock = FakeTime()
    bounds: list[float] = []

    def highest(low: float, high: float) -> float:
        bounds.append(high)
        return high

    backoff = Backoff(10.0, sleep=clock.sleep, timer=clock.timer, first=0.05, cap=2.0, jitter=highest)
    tries = 1
    while backoff.wait():
        tries += 1
    assert bounds[:7] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0]  # doubling, then capped
    assert all(bound == 2.0 for bound in bounds[6:])
    assert sum(clock.slept) <= 10.0 < sum(clock.slept) + bounds[-1]  # stops before the budget, not after
    assert backoff.lost == len(bounds) == tries
    # full jitter: the wait is drawn between 0 and the bound
    drawn: list[tuple[float, float]] = []

    def lowest(low: float, high: float) -> float:
        drawn.append((low, high))
        return low

    Backoff(10.0, sleep=clock.sleep, timer=clock.timer, jitter=lowest).wait()
    assert drawn == [(0, counters.COUNTER_BACKOFF)]


def test_counters_that_keep_losing_races_raise_and_leave_the_count_to_a_retry(
    deployment: Deployment, caplog: pytest.LogCaptureFixture
) -> None:
    deployment.put_job("j", job_body(START, http_action("http://127.0.0.1:9/hook", retryPolicy=NO_RETRY)))
    jobs = deployment.storage.jobs
    job = deployment.job("j")
    message = ExecutionMessage(job.ref.partition_key, job.ref.row_key, job.generation, "2030-01-01T00:00:00Z")
    racing = [True]
    store: Any = type("Racing", (), {})()
    store.save = interfering(jobs, lambda: racing[0])
    store.get_by_keys = jobs.get_by_keys
    clock = FakeTime()
    now = datetime.now(UTC)
    with caplog.at_level(logging.ERROR, "scheduler_core.execute"), pytest.raises(ContentionError) as raised:
        count_attempt(
            store, job, message, True, False, None, now, backoff=Backoff(5.0, sleep=clock.sleep, timer=clock.timer)
        )
    assert "counters not written" in str(raised.value) and "lost races" in str(raised.value)
    assert "not written" in caplog.text and "retried" in caplog.text
    assert clock.now <= 5.0 and len(clock.slept) > 3  # waited, within the budget
    assert deployment.job("j").execution_count == 0  # not counted, not lost: the message's retry counts it
    racing[0] = False
    written = count_attempt(store, deployment.job("j"), message, True, False, None, now)
    assert written is not None and written.execution_count == 1
    assert count_attempt(store, deployment.job("j"), message, True, False, None, now) is None  # once
    assert deployment.job("j").execution_count == 1


def test_a_few_lost_races_are_waited_out_and_counted(deployment: Deployment) -> None:
    deployment.put_job("j", job_body(START, http_action("http://127.0.0.1:9/hook", retryPolicy=NO_RETRY)))
    jobs = deployment.storage.jobs
    job = deployment.job("j")
    message = ExecutionMessage(job.ref.partition_key, job.ref.row_key, job.generation, "2030-01-01T00:00:00Z")
    left = [12]  # more than the ten tries the counters once gave up after

    def racing() -> bool:
        left[0] -= 1
        return left[0] >= 0

    store: Any = type("Racing", (), {})()
    store.save = interfering(jobs, racing)
    store.get_by_keys = jobs.get_by_keys
    clock = FakeTime()
    backoff = Backoff(sleep=clock.sleep, timer=clock.timer)
    written = count_attempt(store, job, message, False, False, None, datetime.now(UTC), backoff=backoff)
    assert written is not None and (written.execution_count, written.failure_count) == (1, 1)
    assert backoff.lost == 12 and len(clock.slept) == 12


def test_an_attempt_whose_counters_gave_up_is_run_by_its_retry_and_counted_once(
    deployment: Deployment, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The executor lets :class:`ContentionError` fail the message (the host retries it): the retry finds the
    attempt's claim held, looks again after its lease, takes it over as a lost worker's and counts it once.
    The target sees the call twice (at least once, as for a worker lost mid-call), history says so."""
    due = START + timedelta(seconds=20)  # within the lookahead: dispatched as it is written
    deployment.put_job("j", job_body(due, http_action(f"{target.base_url}/hook", retryPolicy=NO_RETRY)))
    message = deployment.fire_at(due)
    jobs = deployment.storage.jobs
    racing = [True]
    monkeypatch.setattr(jobs, "save", interfering(jobs, lambda: racing[0]))
    monkeypatch.setattr(counters, "COUNTER_BUDGET", 0.2)  # real waits: a short budget
    with pytest.raises(ContentionError):
        deployment.executor.execute(message)
    assert deployment.job("j").execution_count == 0 and len(target.received) == 1
    racing[0] = False
    report = deployment.executor.execute(message)  # the host's retry of the failed message
    assert report.outcome is Outcome.BUSY  # the claim's lease is live: looked at again after it
    deployment.clock.advance(CLAIM_LEASE + WATCH_GRACE)
    reports = deployment.deliver()
    assert [r.outcome for r in reports] == [Outcome.SUCCEEDED]
    job = deployment.job("j")
    assert (job.execution_count, job.failure_count) == (1, 0)  # counted once
    statuses = sorted((row.status.value, row.message.startswith(WORKER_LOST)) for row in deployment.history("j"))
    assert statuses == [(HistoryStatus.COMPLETED.value, False), (HistoryStatus.FAILED.value, True)]
    assert len(target.received) == 2
