"""The claim's lease, renewed while its attempt runs: a live call is never taken over, however long it runs
or storage stays away; a dead worker's attempt runs again a lease after its last renewal (at the watchdog's
next watch look, and a pause), not a fixed 2 minutes after its claim; renewals cost one write per 5 s of an
attempt that runs longer than that. Simulated time on the memory adapter: the holder's call is held in a
thread of its own while the test moves time on; its lease keeper waits in the same simulated time
(:class:`~tests.decisions.workers.SimulatedWaits`)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from scheduler_core.errors import StorageError
from scheduler_core.model import ClaimState, HistoryStatus, claim_key
from scheduler_core.model.claim import CLAIM_LEASE, heartbeat_every, takeover_pause
from scheduler_core.pipeline.execute import WORKER_LOST, ExecutionReport, Executor, Outcome
from scheduler_core.pipeline.leases import LeaseKeeper
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.pipeline.watches import WATCH_GRACE, WATCH_SLOT
from tests.decisions.workers import REAL_TIMEOUT, CountingRunner, HeldRunner, SimulatedWaits, WorkerDied, executor
from tests.support.harness import START, Deployment
from tests.support.jobs import NO_RETRY, http_action, job_body

DUE = START + timedelta(seconds=20)  # inside the lookahead window: dispatched as the job is written
TICK = timedelta(seconds=60)
SECOND = timedelta(seconds=1)


@dataclass
class Holder:
    """A worker running one attempt in a thread of its own, its call held by :attr:`runner`."""

    runner: HeldRunner
    thread: threading.Thread
    results: list[ExecutionReport | BaseException] = field(default_factory=list)

    def end(self, *, die: bool = False) -> ExecutionReport | BaseException:
        """Let the call end (answered, or with the worker's death) and the attempt finish; what it returned."""
        self.runner.end(die=die)
        self.thread.join(REAL_TIMEOUT)
        assert not self.thread.is_alive()
        [result] = self.results
        return result


@pytest.fixture
def waits(deployment: Deployment) -> SimulatedWaits:
    return SimulatedWaits(deployment.clock)


@pytest.fixture
def message(deployment: Deployment) -> ExecutionMessage:
    """A one-shot job's attempt, due (and taken from the queue) at :data:`DUE`."""
    deployment.put_job("long", job_body(DUE, http_action("http://target.example/hook", retryPolicy=NO_RETRY)))
    return deployment.fire_at(DUE)


@pytest.fixture
def renewals(deployment: Deployment, monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    """The instants of the claims' renewals (tries that landed or failed)."""
    claims = deployment.storage.claims
    renew = claims.renew
    seen: list[datetime] = []

    def counted(claim: Any, now: datetime, lease: timedelta) -> Any:
        seen.append(now)
        return renew(claim, now, lease)

    monkeypatch.setattr(claims, "renew", counted)
    return seen


def hold(deployment: Deployment, waits: SimulatedWaits, message: ExecutionMessage, name: str = "holder") -> Holder:
    """Start ``message``'s attempt on a worker whose call is held; returns once the call is in flight (and its
    claim's keeper waits for its first renewal)."""
    runner = HeldRunner()
    worker = executor(deployment, runner, name, waits)
    holder = Holder(runner, threading.Thread(target=lambda: None))

    def run() -> None:
        try:
            holder.results.append(worker.execute(message))
        except BaseException as error:
            holder.results.append(error)

    holder.thread = threading.Thread(target=run, daemon=True)
    holder.thread.start()
    assert runner.started.wait(REAL_TIMEOUT)
    waits.until_waiting(1)
    return holder


def claim_state(deployment: Deployment, message: ExecutionMessage) -> ClaimState | None:
    return deployment.storage.claims.state(deployment.job("long").ref.identity, message.claim_row)


def counters(deployment: Deployment) -> tuple[int, int, int]:
    job = deployment.job("long")
    return job.execution_count, job.failure_count, job.faulted_count


def taker(deployment: Deployment, waits: SimulatedWaits) -> tuple[Executor, CountingRunner]:
    runner = CountingRunner()
    return executor(deployment, runner, "taker", waits), runner


# ------------------------------------------------------------------------------------------ a live call


def test_a_call_longer_than_the_old_two_minute_lease_is_never_taken_over_while_its_worker_lives(
    deployment: Deployment, waits: SimulatedWaits, message: ExecutionMessage, renewals: list[datetime]
) -> None:
    holder = hold(deployment, waits, message)
    other, other_runner = taker(deployment, waits)
    for _ in range(12):  # a redelivery every 15 s for 3 minutes (a call may last up to 10 minutes)
        waits.advance(15)
        assert other.execute(message).outcome is Outcome.BUSY
    assert renewals == [DUE + n * heartbeat_every(CLAIM_LEASE) for n in range(1, 37)]  # every 5 s
    assert claim_state(deployment, message) == ClaimState(False, DUE + timedelta(seconds=180) + CLAIM_LEASE)

    report = holder.end()

    assert isinstance(report, ExecutionReport) and report.outcome is Outcome.SUCCEEDED
    assert len(holder.runner.calls) == 1 and other_runner.calls == []
    assert [row.status for row in deployment.history("long")] == [HistoryStatus.COMPLETED]
    assert counters(deployment) == (1, 0, 0)
    assert claim_state(deployment, message).done  # type: ignore[union-attr]


def test_a_storage_outage_of_more_than_a_minute_that_stops_renewals_does_not_let_a_live_call_be_taken_over(
    deployment: Deployment,
    waits: SimulatedWaits,
    message: ExecutionMessage,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Storage is down for everyone from DUE+100 s to DUE+170 s: the holder's renewals fail (tried again every
    second) and its lease, last renewed at DUE+100 s, ends at DUE+115 s while its call is still in flight. A
    redelivery that comes the moment storage answers again finds the lease over, but looks again only after
    the pause, by when the holder has renewed: it leaves the attempt alone."""
    claims = deployment.storage.claims
    down = [False]
    failed: list[datetime] = []
    for name in ("renew", "claim", "state"):
        real = getattr(claims, name)

        def unless_down(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            if down[0]:
                failed.append(deployment.clock.now)
                raise StorageError("storage unreachable")
            return _real(*args, **kwargs)

        monkeypatch.setattr(claims, name, unless_down)
    holder = hold(deployment, waits, message)
    waits.set(DUE + timedelta(seconds=100))
    assert claim_state(deployment, message) == ClaimState(False, DUE + timedelta(seconds=100) + CLAIM_LEASE)
    down[0] = True
    waits.set(DUE + timedelta(seconds=170))
    down[0] = False
    assert len(failed) >= 50  # the holder's renewal, tried again every second

    other, other_runner = taker(deployment, waits)
    late = other.execute(message)  # the lease ended 55 s ago: a first look, the pause, a second look

    assert late.outcome is Outcome.BUSY and other_runner.calls == []
    assert deployment.clock.now == DUE + timedelta(seconds=170) + takeover_pause(CLAIM_LEASE)
    state = claim_state(deployment, message)
    assert state is not None and state.lease_until == DUE + timedelta(seconds=171) + CLAIM_LEASE  # renewed first
    report = holder.end()
    assert isinstance(report, ExecutionReport) and report.outcome is Outcome.SUCCEEDED
    assert len(holder.runner.calls) == 1
    assert [row.status for row in deployment.history("long")] == [HistoryStatus.COMPLETED]
    assert counters(deployment) == (1, 0, 0)


# ------------------------------------------------------------------------------------------ a dead worker


@pytest.mark.parametrize(
    ("death", "last_renewal"),
    [
        (timedelta(seconds=3), timedelta(0)),  # early in its call: never renewed (the claim is its lease's start)
        (timedelta(seconds=91), timedelta(seconds=90)),  # in a long call, 1 s after a renewal
        (timedelta(seconds=119), timedelta(seconds=115)),  # 4 s after a renewal: the latest death of a heartbeat
    ],
)
def test_a_dead_workers_attempt_runs_again_within_34_s_of_its_death_by_the_watch_look_after_its_lease(
    deployment: Deployment, waits: SimulatedWaits, message: ExecutionMessage, death: timedelta, last_renewal: timedelta
) -> None:
    """Ticks come every minute (at DUE+13 s, +73 s, ...: off the watch slots); the watch looks run when the
    scan queue shows them (at the end of their 5-s slot). The attempt is sent again by the first look that
    finds its lease over (a lease and the watch's grace after the last renewal, rounded up to a slot), and the
    worker that gets it takes it over after the pause: within a lease, the grace, a slot and the pause of the
    death (34 s). It was the first tick after the lease: up to 2¼ minutes."""
    holder = hold(deployment, waits, message)
    other, other_runner = taker(deployment, waits)
    ticks = {DUE + timedelta(seconds=13) + n * TICK for n in range(4)}
    looks: list[datetime] = []
    instant = DUE
    while not other_runner.calls and instant < DUE + timedelta(minutes=4):
        instant += SECOND
        waits.set(instant)
        if instant == DUE + death:
            assert isinstance(holder.end(die=True), WorkerDied)
        if instant in ticks:
            deployment.scan()
        if deployment.look().rescued:
            looks.append(instant)
        for copy in deployment.take():
            other.execute(copy)

    [rerun] = other_runner.calls
    over = DUE + last_renewal + CLAIM_LEASE + WATCH_GRACE  # when its watch finds the lease over, at the earliest
    [look] = looks  # one look sent it again: the first at or after ``over``, at the end of its slot
    assert over <= look < over + WATCH_SLOT and look not in ticks
    assert look == deployment.dispatcher.watches.slot_of(look)
    assert rerun.started_at == look + takeover_pause(CLAIM_LEASE)
    assert rerun.started_at - (DUE + death) <= CLAIM_LEASE + WATCH_GRACE + WATCH_SLOT + takeover_pause(CLAIM_LEASE)
    assert rerun.execution_id == message.stable_execution_id()
    completed, lost = deployment.history("long")
    assert (completed.status, lost.status) == (HistoryStatus.COMPLETED, HistoryStatus.FAILED)
    assert lost.message.startswith(WORKER_LOST) and "worker holder" in lost.message
    assert counters(deployment) == (1, 0, 0)


# -------------------------------------------------------------------------------------------- the limit


def test_a_holder_cut_off_from_storage_alone_beyond_its_lease_and_the_pause_may_be_taken_over_and_both_calls_count_once(
    deployment: Deployment,
    waits: SimulatedWaits,
    message: ExecutionMessage,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The limit of the rule: a holder that cannot reach storage while other workers can (a partition of its
    instance) is indistinguishable from a dead one. Cut off from DUE+100 s (just after a renewal), its lease
    ends at DUE+115 s; a redelivery at DUE+120 s takes the attempt over after the pause, and the call is made
    twice (the same execution id) while the holder's own call still runs. Both are recorded, the attempt
    counted once. Only a call still running a lease and the pause (25 s) after its worker's last renewal, cut
    off from storage alone, can be made twice this way."""
    claims = deployment.storage.claims
    renew = claims.renew
    cut_off = [False]

    def renew_unless_cut_off(*args: Any) -> Any:
        if cut_off[0]:
            raise StorageError("connection refused")
        return renew(*args)

    monkeypatch.setattr(claims, "renew", renew_unless_cut_off)
    holder = hold(deployment, waits, message)
    waits.set(DUE + timedelta(seconds=100))
    cut_off[0] = True
    waits.set(DUE + timedelta(seconds=120))
    other, other_runner = taker(deployment, waits)

    assert other.execute(message).outcome is Outcome.SUCCEEDED  # taken over at DUE+130 s
    cut_off[0] = False
    waits.advance(5)  # the holder reaches storage again: its claim is the taker's now
    report = holder.end()

    assert isinstance(report, ExecutionReport) and report.outcome is Outcome.SUCCEEDED
    assert len(holder.runner.calls) == len(other_runner.calls) == 1
    assert other_runner.calls[0].execution_id == holder.runner.calls[0].execution_id
    assert [row.status for row in deployment.history("long")] == [HistoryStatus.COMPLETED] * 2
    assert counters(deployment) == (1, 0, 0)
    assert claim_state(deployment, message).done  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------------------- cost


def test_renewals_cost_one_write_per_5_s_beyond_an_attempts_first_5_s(
    deployment: Deployment, waits: SimulatedWaits, renewals: list[datetime]
) -> None:
    minutely = {"frequency": "Minute", "interval": 1}
    deployment.put_job("long", job_body(DUE, http_action("http://target.example/hook"), minutely))
    first = deployment.fire_at(DUE)
    quick = executor(deployment, CountingRunner(), "quick", waits)
    assert quick.execute(first).outcome is Outcome.SUCCEEDED
    assert renewals == []  # an attempt that ends within 5 s (nearly all do) renews nothing

    deployment.scan()  # the next occurrence, a minute later, is inside the window
    waits.set(DUE + TICK)
    [following] = deployment.take()
    holder = hold(deployment, waits, following)
    waits.advance(17)  # a call of 17 s
    report = holder.end()

    assert isinstance(report, ExecutionReport) and report.outcome is Outcome.SUCCEEDED
    assert renewals == [DUE + TICK + n * timedelta(seconds=5) for n in (1, 2, 3)]  # 17 s: three renewals
    row = claim_key(DUE + TICK, "main", 0, "schedule")
    assert deployment.storage.claims.state(deployment.job("long").ref.identity, row).done  # type: ignore[union-attr]


# --------------------------------------------------------------------------- real time: the keeper's thread


def lease_threads(name: str) -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == f"lease {name}"]


def real_keeper(deployment: Deployment, name: str, every: timedelta) -> LeaseKeeper:
    """A keeper of a claimed attempt in real time (the default wait), renewing every ``every``."""
    claims, now = deployment.storage.claims, deployment.clock()
    result = claims.claim("partition", name, "worker-1", now, CLAIM_LEASE, "token")
    assert result.claim is not None
    return LeaseKeeper(claims, result.claim, CLAIM_LEASE, deployment.clock, every=every, name=name).start()


def test_a_keeper_stopped_before_its_first_renewal_starts_no_thread_and_renews_nothing(
    deployment: Deployment,
) -> None:
    keeper = real_keeper(deployment, "quick", every=timedelta(milliseconds=200))
    assert lease_threads("quick") == []  # nothing started with the attempt
    claim = keeper.stop()
    time.sleep(0.5)  # past the first renewal's time: the alarm finds the keeper stopped
    assert keeper.renewals == 0 and lease_threads("quick") == []
    assert claim == keeper.claim


def test_a_keeper_running_past_its_first_renewal_renews_from_a_thread_of_its_own_until_stopped(
    deployment: Deployment,
) -> None:
    keeper = real_keeper(deployment, "long", every=timedelta(milliseconds=100))
    deadline = time.monotonic() + REAL_TIMEOUT
    while keeper.renewals < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert keeper.renewals >= 3 and len(lease_threads("long")) == 1
    claim = keeper.stop()
    renewed = keeper.renewals
    assert lease_threads("long") == []  # stop waits for the thread
    time.sleep(0.3)
    assert keeper.renewals == renewed and claim == keeper.claim
