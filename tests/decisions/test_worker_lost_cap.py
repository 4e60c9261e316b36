"""A cap on "worker lost" takeovers of one attempt: an action that reliably kills the worker running it (a
native crash, memory exhausted) is run :data:`~scheduler_core.model.claim.MAX_TAKEOVERS` times at most. The
worker that takes the attempt over the ``MAX_TAKEOVERS``-th time records it as failed, once, naming the
crash, and the occurrence goes on to its retries (a new attempt, with a count of its own) or its error
action, counted once, as any failed attempt does. Simulated time on the memory adapter; the dispatcher's
scans (the watchdog) every minute; each delivery on a fresh worker, which the crash kills."""

from __future__ import annotations

import contextlib
import itertools
from datetime import datetime, timedelta
from typing import Any

import pytest

from scheduler_core.actions import ActionContext
from scheduler_core.model import ActionName, HistoryStatus, JobState, claim_key
from scheduler_core.model.claim import CLAIM_LEASE, MAX_TAKEOVERS
from scheduler_core.pipeline.execute import GIVEN_UP, WORKER_LOST, Outcome
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.recurrence import format_instant
from tests.decisions.workers import CrashingRunner, WorkerDied, executor
from tests.support.harness import START, Deployment
from tests.support.jobs import NO_RETRY, fixed_retries, http_action, job_body

DUE = START + timedelta(seconds=20)  # inside the lookahead window: dispatched as the job is written
TICK = timedelta(seconds=60)


def run_on_fresh_workers(deployment: Deployment, runner: CrashingRunner, end: datetime) -> list[Outcome]:
    """Let simulated time pass up to ``end``: a scan of every shard each minute, and each message, when it
    shows, run by a new worker (the last one died) with ``runner``. The outcomes of the deliveries that
    returned (a worker killed by its call returns none)."""
    names = (f"worker-{n}" for n in itertools.count(1))
    outcomes: list[Outcome] = []
    next_tick = deployment.clock.now
    while deployment.clock.now < end:
        visible = deployment.storage.executions.next_visible_at()
        instants = [t for t in (visible, next_tick, end) if t is not None]
        deployment.clock.set(max(deployment.clock.now, min(instants)))
        if deployment.clock.now >= next_tick:
            deployment.scan()
            next_tick += TICK
        for message in deployment.take():
            with contextlib.suppress(WorkerDied):  # a worker killed by its call returns nothing
                outcomes.append(executor(deployment, runner, next(names)).execute(message).outcome)
    return outcomes


def rows_of(deployment: Deployment, name: str, retry_count: int = 0) -> list[Any]:
    """The job's history entries of one attempt (main action), oldest first."""
    rows = [
        row for row in deployment.history(name) if row.retry_count == retry_count and row.action_name is ActionName.MAIN
    ]
    return sorted(rows, key=lambda row: (row.start_time, row.end_time))


def counters(deployment: Deployment, name: str) -> tuple[int, int, int]:
    job = deployment.job(name)
    return job.execution_count, job.failure_count, job.faulted_count


def test_an_attempt_whose_worker_is_lost_three_times_is_recorded_failed_once_and_not_run_again(
    deployment: Deployment,
) -> None:
    deployment.put_job("crash", job_body(DUE, http_action("http://target.example/main", retryPolicy=NO_RETRY)))
    runner = CrashingRunner(lambda context: True)

    outcomes = run_on_fresh_workers(deployment, runner, START + timedelta(minutes=30))

    assert len(runner.calls) == MAX_TAKEOVERS == 3  # called 3 times, each time its worker died; then no more
    assert outcomes == [Outcome.FAILED]  # the 4th delivery (the 3rd takeover) gave it up, recorded as failed
    assert len({call.execution_id for call in runner.calls}) == 1  # one attempt: every call with its id
    rows = rows_of(deployment, "crash")
    assert [row.status for row in rows] == [HistoryStatus.FAILED] * 4
    assert [row.message.startswith(WORKER_LOST) for row in rows] == [True, True, True, False]
    assert [row.message.endswith("; run again)") for row in rows] == [True, True, False, False]
    assert rows[2].message.endswith(f"; not run again: its workers were lost {MAX_TAKEOVERS} times)")
    final = rows[-1]
    assert final.message.startswith(f"{GIVEN_UP} {MAX_TAKEOVERS} times; not run again")
    assert len({row.execution_id for row in rows}) == 1  # one attempt: its lost runs and its final record
    assert counters(deployment, "crash") == (1, 1, 1)  # counted once
    job = deployment.job("crash")
    assert job.state is JobState.FAULTED  # its last (only) occurrence faulted: no retry, no error action
    state = deployment.storage.claims.state(job.ref.identity, claim_key(DUE, "main", 0, "schedule"))
    assert state is not None and state.done
    assert deployment.queued() == [] and deployment.watch_entries() == []  # nothing more comes


def test_a_given_up_attempt_goes_on_to_its_retry_a_new_attempt_with_a_count_of_its_own(
    deployment: Deployment,
) -> None:
    action = http_action("http://target.example/main", retryPolicy=fixed_retries(1, "PT30S"))
    deployment.put_job("retried", job_body(DUE, action))
    runner = CrashingRunner(lambda context: context.retry_count == 0)  # only the first attempt kills its worker

    outcomes = run_on_fresh_workers(deployment, runner, START + timedelta(minutes=30))

    assert [call.retry_count for call in runner.calls] == [0, 0, 0, 1]
    assert outcomes == [Outcome.FAILED, Outcome.SUCCEEDED]  # given up, then its retry ran
    first, retry = rows_of(deployment, "retried", 0), rows_of(deployment, "retried", 1)
    assert [row.message.startswith(GIVEN_UP) for row in first] == [False, False, False, True]
    assert [row.status for row in retry] == [HistoryStatus.COMPLETED]
    assert counters(deployment, "retried") == (2, 1, 0)  # two attempts, each counted once; not faulted
    assert deployment.job("retried").state is JobState.COMPLETED


def test_a_given_up_attempt_of_the_last_retry_goes_on_to_the_error_action(deployment: Deployment) -> None:
    error = {"type": "Http", "request": {"uri": "http://target.example/error", "method": "POST"}}
    action = http_action("http://target.example/main", retryPolicy=NO_RETRY, errorAction=error)
    deployment.put_job("handled", job_body(DUE, action))
    calls: list[str] = []

    def crashes(context: ActionContext) -> bool:
        main = len(calls) < MAX_TAKEOVERS  # the main action's 3 calls crash; the error action's call does not
        calls.append("main" if main else "error")
        return main

    runner = CrashingRunner(crashes)

    outcomes = run_on_fresh_workers(deployment, runner, START + timedelta(minutes=30))

    assert calls == ["main"] * MAX_TAKEOVERS + ["error"]
    assert outcomes == [Outcome.FAILED, Outcome.SUCCEEDED]  # given up; the error action ran
    history = deployment.history("handled")
    assert [row.status for row in history if row.action_name is ActionName.ERROR] == [HistoryStatus.COMPLETED]
    assert counters(deployment, "handled") == (1, 1, 1)  # the occurrence faulted, counted once
    assert deployment.job("handled").state is JobState.FAULTED


def test_a_worker_lost_after_counting_an_attempt_it_gave_up_leaves_its_record_to_the_next(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker that gives the attempt up counts it, then dies before its record: the next worker writes
    the entry it would have written (at its key), completes the claim, and calls nothing."""
    action = http_action("http://target.example/main", retryPolicy=NO_RETRY)
    deployment.put_job("late", job_body(DUE, action, {"frequency": "Hour", "interval": 1}))
    runner = CrashingRunner(lambda context: True)
    claims = deployment.storage.claims
    record = claims.record
    died: list[Any] = []

    def record_or_die(claim: Any, job: Any, entry: Any, now: Any) -> None:
        if entry.message.startswith(GIVEN_UP) and not died:
            died.append(entry)
            raise WorkerDied
        record(claim, job, entry, now)

    monkeypatch.setattr(claims, "record", record_or_die)

    run_on_fresh_workers(deployment, runner, START + timedelta(minutes=20))
    [entry] = died
    job = deployment.job("late")
    assert counters(deployment, "late") == (1, 1, 1)  # counted, not recorded
    assert not deployment.storage.claims.state(job.ref.identity, claim_key(DUE, "main", 0, "schedule")).done  # type: ignore[union-attr]
    # The dead worker's message shows again (the queue's processing lease, 10 minutes), to a live worker.
    message = ExecutionMessage(job.ref.partition_key, job.ref.row_key, job.generation, format_instant(DUE))
    monkeypatch.setattr(claims, "record", record)
    report = executor(deployment, runner, "successor").execute(message)

    assert len(runner.calls) == MAX_TAKEOVERS
    assert report.outcome is Outcome.DUPLICATE  # it only wrote the entry and completed the claim
    rows = rows_of(deployment, "late")
    assert [row.message.startswith(GIVEN_UP) for row in rows] == [False, False, False, True]
    assert rows[-1].row_key == entry.row_key  # the given-up entry, at the key its worker gave it
    assert counters(deployment, "late") == (1, 1, 1)
    assert deployment.storage.claims.state(job.ref.identity, claim_key(DUE, "main", 0, "schedule")).done  # type: ignore[union-attr]


def test_each_run_of_a_crash_loop_comes_a_lease_a_tick_and_a_pause_after_the_last(deployment: Deployment) -> None:
    """The crash loop's pace: each run is sent again by the watchdog at the first scan after its lease (and
    the watch's grace) has ended, and taken over after the pause; three runs, then nothing."""
    deployment.put_job("paced", job_body(DUE, http_action("http://target.example/main", retryPolicy=NO_RETRY)))
    starts: list[datetime] = []

    def crashes(context: ActionContext) -> bool:
        starts.append(deployment.clock.now)
        return True

    runner = CrashingRunner(crashes)

    run_on_fresh_workers(deployment, runner, START + timedelta(minutes=30))

    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert len(starts) == MAX_TAKEOVERS
    assert all(CLAIM_LEASE < gap <= CLAIM_LEASE + timedelta(seconds=5) + TICK + timedelta(seconds=10) for gap in gaps)
