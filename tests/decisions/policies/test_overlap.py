"""overlapPolicy (api-version 2026-12-01-preview): what an occurrence does while the one before it is unfinished.

AllowAll runs it; Skip records it as ``Skipped`` with the reason; BufferOne lets one occurrence wait, runs it
as soon as the one ahead ends, and skips a later one meanwhile. An occurrence never overlaps itself (a
redelivery of the running one's own message), and an unfinished one counts only until its longest chain of
attempts could have ended. Nothing holds an occurrence back for good: when the one ahead loses its worker or
its whole chain, the waiting one runs once the watchdog, a redelivery or its deadline copy has brought the
lost one back or taken it as lost; a late copy of a finished attempt neither runs nor marks its occurrence
running again.

The rule (``scheduler_core.policies.on_overlap``, pure) case by case, then in simulated time on the memory
adapter (:class:`tests.support.harness.Deployment`) with a real HTTP target. A worker "dies" there the way a
process does mid-call: the action (or the send after the counters write) raises an exception no code catches,
so the claim stays ``Running`` with its lease, and nothing after that point is written. The queue's message is
gone with the worker (as it is once the queue's copy is poisoned or its redelivery is lost); what brings the
occurrence back is the watchdog or a redelivery, as named in each test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core import policies
from scheduler_core.adapters.memory import SimulatedClock
from scheduler_core.definitions import Wire
from scheduler_core.model import CLAIM_LEASE, HistoryStatus, JobState
from scheduler_core.model.job import OverlapPolicy
from scheduler_core.model.retry import Duration, RetryPolicy, RetryType
from scheduler_core.pipeline import overlap
from scheduler_core.pipeline.execute import WORKER_LOST, Outcome
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.pipeline.overlap import OverlapGate
from scheduler_core.pipeline.watchdog import WATCH_RECHECK
from scheduler_core.policies import Start
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, fixed_retries, http_action

#: The instant the rule is shown at (its messages name it).
AT = datetime(2030, 5, 1, 6, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
#: The first occurrence of the jobs run in simulated time.
T0 = START + timedelta(hours=1)
MINUTE = timedelta(minutes=1)


# ------------------------------------------------------------------------------------------- the rule


def test_allow_all_and_no_unfinished_occurrence_run() -> None:
    for policy in OverlapPolicy:
        assert policies.on_overlap(policy, AT + HOUR, None).start is Start.RUN
    assert policies.on_overlap(OverlapPolicy.ALLOW_ALL, AT + HOUR, AT, AT + HOUR).start is Start.RUN


def test_an_occurrence_never_overlaps_itself() -> None:
    # a redelivery of the running occurrence's own message
    assert policies.on_overlap(OverlapPolicy.SKIP, AT, AT).start is Start.RUN


def test_skip_skips_with_the_reason() -> None:
    verdict = policies.on_overlap(OverlapPolicy.SKIP, AT + HOUR, AT)
    assert verdict.start is Start.SKIP
    assert "2030-05-01T06:00:00Z was still running" in verdict.reason and "overlapPolicy Skip" in verdict.reason


def test_buffer_one_lets_one_wait_and_skips_a_later_one() -> None:
    first = policies.on_overlap(OverlapPolicy.BUFFER_ONE, AT + HOUR, AT)
    assert first.start is Start.WAIT
    again = policies.on_overlap(OverlapPolicy.BUFFER_ONE, AT + HOUR, AT, AT + HOUR)  # the waiting one, redelivered
    assert again.start is Start.WAIT
    later = policies.on_overlap(OverlapPolicy.BUFFER_ONE, AT + 2 * HOUR, AT, AT + HOUR)
    assert later.start is Start.SKIP and "already waits" in later.reason and "BufferOne" in later.reason


def test_an_unfinished_occurrence_is_taken_as_lost_after_its_longest_chain() -> None:
    lease = timedelta(minutes=2)
    none = RetryPolicy(RetryType.NONE, retry_count=0)
    # one try of the main action and one of the error action, each a lease, then ten leases of slack
    assert policies.unfinished_until(AT, none, lease) == AT + 2 * lease + 10 * lease
    fixed = RetryPolicy(RetryType.FIXED, retry_count=3, retry_interval=Duration(timedelta(minutes=5)))
    assert policies.unfinished_until(AT, fixed, lease) == AT + 2 * (3 * timedelta(minutes=5) + 4 * lease) + 10 * lease
    exponential = RetryPolicy(RetryType.EXPONENTIAL, retry_count=2, retry_interval=Duration(timedelta(minutes=1)))
    longest = policies.unfinished_until(AT, exponential, lease)
    assert longest >= AT + 2 * (timedelta(minutes=3) + 3 * lease) + 10 * lease


# ---------------------------------------------------------------------- the occurrence ahead is lost


class WorkerDied(BaseException):
    """The process stopped: nothing catches it (it is not an ``Exception``)."""


def put(deployment: Deployment, target: HttpTarget, retry: Any, count: int | None = 2) -> None:
    recurrence: dict[str, Any] = {"frequency": "Minute"}
    if count is not None:
        recurrence["count"] = count
    body = {
        "properties": {
            "startTime": format_instant(T0),
            "action": http_action(f"{target.base_url}/hook", retryPolicy=retry),
            "recurrence": recurrence,
            "overlapPolicy": "BufferOne",
        }
    }
    deployment.service.put_job(deployment.ref("j"), body, wire=Wire.PREVIEW)


def outcomes(deployment: Deployment) -> dict[str, list[str]]:
    """Each occurrence's history as 'status/retry' items, oldest first (its minute after T0 as the key)."""
    out: dict[str, list[str]] = {}
    for row in sorted(deployment.history("j"), key=lambda r: (r.start_time, r.retry_count)):
        assert row.expected_execution_time is not None
        minute = int((row.expected_execution_time - T0) / MINUTE)
        out.setdefault(f"T0+{minute}m", []).append(f"{row.status}/{row.retry_count}")
    return out


@pytest.fixture(name="dying")
def dying_fixture(deployment: Deployment, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """While the list holds True, the deployment's worker dies in the middle of its next call."""
    return dying(deployment, monkeypatch)


def dying(deployment: Deployment, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """While the list holds True, the deployment's worker dies in the middle of its next call."""
    switch = [False]
    runner = deployment.executor.runner
    real = runner.run

    def run(*args: Any) -> Any:
        if switch[0]:
            switch[0] = False
            raise WorkerDied
        return real(*args)

    monkeypatch.setattr(runner, "run", run)
    return switch


def dispatched_at(deployment: Deployment, instant: Any) -> ExecutionMessage:
    deployment.run_until(instant - timedelta(seconds=5))
    deployment.clock.set(instant)
    deployment.scan()
    [message] = deployment.take()
    return message


#: A claim lease long enough that the occurrence after a dead one comes (and waits) before the watchdog
#: finds the dead one's lease over: as when its worker dies after renewing a while (the default lease, 15 s,
#: has T0 run again before T0+1m is due).
LONG_LEASE = timedelta(seconds=90)


@pytest.fixture
def long_lease(memory_env: Settings, clock: SimulatedClock) -> Deployment:
    """The decision tests' deployment, with claims of :data:`LONG_LEASE`."""
    return Deployment.on_memory(memory_env, clock, claim_lease=LONG_LEASE)


def test_the_waiting_occurrence_runs_when_the_watchdog_reruns_the_one_whose_worker_died(
    long_lease: Deployment, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment = long_lease
    die = dying(deployment, monkeypatch)
    put(deployment, target, NO_RETRY)
    first = dispatched_at(deployment, T0)
    die[0] = True
    with pytest.raises(WorkerDied):
        deployment.executor.execute(first)
    deployment.run_until(T0 + MINUTE + timedelta(seconds=25))
    assert '"occurrence":"' + format_instant(T0 + MINUTE) in deployment.job("j").waiting  # it waits
    assert outcomes(deployment) == {}
    # the watchdog finds T0's lease over (T0 + lease + grace) and sends it again; its re-run releases T0+1m
    deployment.run_until(T0 + LONG_LEASE + timedelta(seconds=90))
    history = outcomes(deployment)
    assert history["T0+0m"] == ["Completed/0", "Failed/0"] or history["T0+0m"] == ["Failed/0", "Completed/0"]
    assert history["T0+1m"] == ["Completed/0"]
    assert any(WORKER_LOST in row.message for row in deployment.history("j"))
    job = deployment.job("j")
    assert job.state == JobState.COMPLETED and (job.running, job.waiting) == ("", "")


def test_the_waiting_occurrence_runs_when_a_worker_lost_after_releasing_it_never_sent_it(
    deployment: Deployment, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T0 fails, T0+1m waits for its retry (at T0+90s), the retry succeeds and its counters write releases
    T0+1m; the worker dies before sending it. The retry's message comes back (the queue shows it again
    after the lease) to another worker, which finds the attempt counted: it records the lost holder and
    sends the released occurrence, which runs. (The watch of T0+1m's dispatch would send it too, once it
    is a lease past its instant unclaimed: shown by the next test; here that watch is lost as well, so the
    take-over alone must bring it.)"""
    target.answer([500, 200])
    put(deployment, target, fixed_retries(1, "PT90S"))
    deployment.run_until(T0 + timedelta(seconds=80))
    assert '"occurrence":"' + format_instant(T0 + MINUTE) in deployment.job("j").waiting
    retry = dispatched_retry(deployment, T0 + timedelta(seconds=90))
    die_before_sending_the_released(deployment, retry, monkeypatch)
    job = deployment.job("j")
    assert job.running.endswith(format_instant(T0 + MINUTE)) and job.waiting == ""  # released, never sent
    drop_watches_of(deployment, T0 + MINUTE)
    deployment.run_until(T0 + timedelta(seconds=90) + CLAIM_LEASE)
    assert "T0+1m" not in outcomes(deployment)  # the watchdog dropped the retry's watch: it was counted

    report = deployment.executor_named("successor").execute(retry)  # the queue shows the message again
    assert report.outcome is Outcome.DUPLICATE
    deployment.run_until(deployment.clock.now + timedelta(seconds=10))
    assert outcomes(deployment)["T0+1m"] == ["Completed/0"]
    assert deployment.job("j").state == JobState.COMPLETED


def die_before_sending_the_released(
    deployment: Deployment, retry: ExecutionMessage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run ``retry`` on a worker that dies after its occurrence ended and released T0+1m, before sending it."""
    send = OverlapGate.send_watched

    def die(self: OverlapGate, job: Any, follow: ExecutionMessage, *args: Any) -> None:
        if follow.occurrence == format_instant(T0 + MINUTE):
            raise WorkerDied
        send(self, job, follow, *args)

    monkeypatch.setattr(OverlapGate, "send_watched", die)
    with pytest.raises(WorkerDied):
        deployment.executor.execute(retry)
    monkeypatch.setattr(OverlapGate, "send_watched", send)


def drop_watches_of(deployment: Deployment, occurrence: Any) -> None:
    """Lose the watchdog's entries of an occurrence's attempts (as a due-index write lost with its worker)."""
    for entry in deployment.watch_entries():
        if entry.message and ExecutionMessage.from_json(entry.message).occurrence_time == occurrence:
            deployment.storage.due.delete(entry.shard, entry.row_key)


def test_a_released_occurrence_never_sent_is_sent_by_the_watch_of_its_dispatch(
    deployment: Deployment, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, with the watch of T0+1m's dispatch kept: it finds T0+1m waiting its turn at its first look,
    then released and unclaimed at the next, and sends it, before the retry's message comes back; the
    take-over's copy then runs nothing again."""
    target.answer([500, 200])
    put(deployment, target, fixed_retries(1, "PT90S"))
    deployment.run_until(T0 + timedelta(seconds=80))
    retry = dispatched_retry(deployment, T0 + timedelta(seconds=90))
    die_before_sending_the_released(deployment, retry, monkeypatch)
    # T0+1m's watch looked at it at T0+1m + lease + grace, rounded up to its slot (T0+80s): waiting its turn,
    # it kept the resend it owes for its next look, WATCH_RECHECK later, which finds it released and unclaimed
    deployment.run_until(T0 + timedelta(seconds=80) + WATCH_RECHECK + timedelta(seconds=5))
    assert outcomes(deployment)["T0+1m"] == ["Completed/0"]  # sent by the watch, before any take-over
    assert deployment.job("j").state == JobState.COMPLETED  # the last occurrence ran: the job ended
    late = deployment.executor_named("successor").execute(retry)  # the retry's message shown again
    assert (late.outcome, late.message) == (Outcome.STALE, "job is Completed")
    deployment.run_until(deployment.clock.now + timedelta(seconds=10))
    assert outcomes(deployment)["T0+1m"] == ["Completed/0"]  # once
    assert deployment.job("j").state == JobState.COMPLETED


def dispatched_retry(deployment: Deployment, due: Any) -> ExecutionMessage:
    """Move to ``due`` and take the retry visible then (without running it)."""
    deployment.clock.set(due)
    [message] = deployment.take()
    assert message.attempt == 1
    return message


def test_a_last_occurrence_waiting_behind_a_lost_chain_runs_when_that_one_is_taken_as_lost(
    deployment: Deployment, target: HttpTarget, dying: list[bool]
) -> None:
    """T0's worker dies and its chain is lost with it (its watch entry gone too: its message dropped as
    poison, the watchdog given up). T0+1m, the last occurrence, waits for it; at the instant T0 is taken as
    lost (policies.unfinished_until, plus a margin) its deadline copy runs it, and the job completes (it
    used to wait until the job was written again)."""
    put(deployment, target, NO_RETRY)
    first = dispatched_at(deployment, T0)
    dying[0] = True
    with pytest.raises(WorkerDied):
        deployment.executor.execute(first)
    for entry in deployment.watch_entries():  # the chain is lost: nothing will send T0 again
        deployment.storage.due.delete(entry.shard, entry.row_key)
    lost_at = policies.unfinished_until(T0, deployment.job("j").definition.action.retry_policy, CLAIM_LEASE)
    deployment.run_until(lost_at - MINUTE)
    assert outcomes(deployment) == {}
    assert '"occurrence":"' + format_instant(T0 + MINUTE) in deployment.job("j").waiting
    deployment.run_until(lost_at + MINUTE)
    [row] = [r for r in deployment.history("j") if r.expected_execution_time == T0 + MINUTE]
    assert row.status == HistoryStatus.COMPLETED
    assert lost_at < row.start_time <= lost_at + overlap.DEADLINE_MARGIN + timedelta(seconds=2)
    job = deployment.job("j")
    assert job.state == JobState.COMPLETED and (job.running, job.waiting) == ("", "")


def test_a_deadline_copy_does_nothing_when_the_waiting_occurrence_had_its_turn(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([500, 200])
    put(deployment, target, fixed_retries(1, "PT90S"), count=None)
    lost_at = policies.unfinished_until(T0, deployment.job("j").definition.action.retry_policy, CLAIM_LEASE)
    reports = deployment.run_until(lost_at + MINUTE)
    copies = [report for report in reports if report.message.startswith("no longer waiting")]
    assert [report.outcome for report in copies] == [Outcome.DUPLICATE]
    history = outcomes(deployment)
    assert history["T0+0m"] == ["Failed/0", "Completed/1"]
    assert history["T0+1m"] == ["Completed/0"]  # ran once: released when T0's retry ended
    assert all(items == ["Completed/0"] for key, items in history.items() if key != "T0+0m")
    assert deployment.job("j").waiting == ""


# -------------------------------------------------------------------------------------- late copies


def test_a_late_copy_of_a_finished_attempt_neither_runs_nor_holds_the_next_occurrence_back(
    deployment: Deployment, target: HttpTarget
) -> None:
    body: dict[str, Any] = {
        "properties": {
            "startTime": format_instant(T0),
            "action": http_action(f"{target.base_url}/hook", retryPolicy=NO_RETRY),
            "recurrence": {"frequency": "Minute", "interval": 2},
            "overlapPolicy": "Skip",
        }
    }
    deployment.service.put_job(deployment.ref("j"), body, wire=Wire.PREVIEW)
    deployment.run_until(T0 - timedelta(seconds=5))
    deployment.clock.set(T0)
    deployment.scan()
    [first] = deployment.take()
    assert deployment.executor.execute(first).outcome is Outcome.SUCCEEDED
    assert not deployment.job("j").running  # nothing running

    deployment.clock.set(T0 + timedelta(seconds=30))  # the copy, delivered late
    assert deployment.executor.execute(first).outcome is Outcome.DUPLICATE
    assert not deployment.job("j").running  # nothing running
    deployment.run_until(T0 + 2 * MINUTE + timedelta(seconds=30))

    rows = deployment.history("j")
    assert [r.status for r in rows if r.status == HistoryStatus.SKIPPED] == []
    assert sorted(r.expected_execution_time for r in rows) == [T0, T0 + 2 * MINUTE]
    assert len(target.received) == 2
