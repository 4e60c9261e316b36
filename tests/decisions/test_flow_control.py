"""Flow control (``action.flowControl``, api-version 2026-12-01-preview): the calls of every job of a subscription
that names one key keep to its ``ratePerSecond`` (evenly spaced) and ``parallelism``; work over a limit waits
(re-sent, never dropped), a job's attempts keep their order, the wait is recorded apart from lateness, a slot
whose worker died comes back a lease later, and a job without ``flowControl`` touches no flow state.

Simulated time on the memory adapter (:class:`tests.support.harness.Deployment`), real HTTP servers on
127.0.0.1."""

from __future__ import annotations

import itertools
import threading
from datetime import timedelta
from typing import Any

import pytest

from scheduler_core.definitions import Wire
from scheduler_core.errors import StorageError
from scheduler_core.model import CLAIM_LEASE, ActionName, HistoryStatus
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.pipeline.flow import WAIT_NOTE
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import CollectionRef, JobRef, flow_partition
from tests.support.harness import STANDARD, START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, http_action, job_body

DUE = START + timedelta(seconds=20)


def limited(target: HttpTarget, flow: dict[str, Any], path: str = "/hook", **extra: Any) -> dict[str, Any]:
    action = http_action(target.base_url + path, **{"retryPolicy": NO_RETRY, **extra})
    action["flowControl"] = flow
    return job_body(DUE, action)


def put(deployment: Deployment, name: str, body: dict[str, Any]) -> None:
    deployment.service.put_job(deployment.ref(name), body, wire=Wire.PREVIEW)


def key_of(deployment: Deployment, key: str) -> str:
    return flow_partition(deployment.collection.subscription, key)


def test_a_rate_spaces_the_calls_of_every_job_naming_the_key_in_the_order_they_came(
    deployment: Deployment, target: HttpTarget
) -> None:
    names = [f"j{i}" for i in range(5)]
    for name in names:  # five jobs due at one second, one key (the target's host): one call every 5 s
        put(deployment, name, limited(target, {"ratePerSecond": 0.2}, path=f"/{name}"))
    reports = deployment.run_until(DUE + timedelta(seconds=40), tick=timedelta(seconds=10))

    assert sum(report.outcome is Outcome.SUCCEEDED for report in reports) == 5
    assert any(report.outcome is Outcome.THROTTLED for report in reports)  # re-sent, not waited for in a worker
    rows = sorted((deployment.history(name)[0] for name in names), key=lambda row: row.start_time)
    starts = [row.start_time for row in rows]
    assert starts[0] == DUE
    assert all(later - earlier >= timedelta(seconds=5) for earlier, later in itertools.pairwise(starts))
    assert starts[-1] - starts[0] < timedelta(seconds=20, milliseconds=500)  # no more than the rate holds back
    assert len(target.received) == 5
    # the wait is the flow control's, apart from lateness: start = due + wait (to the millisecond)
    assert rows[0].flow_wait is None
    for row in rows[1:]:
        assert row.flow_wait is not None and row.flow_wait >= timedelta(seconds=1)
        assert abs(row.start_time - DUE - row.flow_wait) < timedelta(milliseconds=50)


def test_a_worker_that_wakes_late_for_its_start_takes_a_new_one_rather_than_call_close_to_the_next(
    deployment: Deployment, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's wait for the second call's start ends 0.3 s late (a busy instance): a call may start at most
    100 ms past its reserved start, so that call takes a new start (after the third's) and waits again."""
    late = iter([0.0, 0.3])  # the first wait is the first call's for its due second

    def oversleep(seconds: float) -> None:
        deployment.clock.advance(seconds + next(late, 0.0))

    monkeypatch.setattr(deployment.executor, "sleep", oversleep)
    names = [f"j{i}" for i in range(3)]
    for name in names:
        put(deployment, name, limited(target, {"ratePerSecond": 0.2}, path=f"/{name}"))
    deployment.run_until(DUE + timedelta(seconds=40), tick=timedelta(seconds=10))

    starts = sorted(deployment.history(name)[0].start_time for name in names)
    assert len(target.received) == 3
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert all(gap >= timedelta(seconds=5) - timedelta(milliseconds=100) for gap in gaps), (starts, gaps)


def test_the_wait_is_shown_by_the_preview_history_and_not_by_the_classic_one(
    deployment: Deployment, target: HttpTarget
) -> None:
    for name in ("a", "b", "c"):
        put(deployment, name, limited(target, {"key": "Payments-API", "ratePerSecond": 0.2}))
    deployment.run_until(DUE + timedelta(seconds=20), tick=timedelta(seconds=10))
    waited = [deployment.ref(name) for name in ("a", "b", "c") if deployment.history(name)[0].flow_wait]
    assert len(waited) == 2
    from scheduler_core.api import views

    [row] = deployment.service.list_history(waited[-1])
    assert views.history(waited[-1], row, Wire.PREVIEW)["properties"]["flowWait"] in ("PT10S", "PT5S")
    assert "flowWait" not in views.history(waited[-1], row, Wire.CLASSIC)["properties"]


def test_parallelism_holds_a_call_back_while_the_keys_slots_are_taken_and_lets_it_run_after(
    deployment: Deployment, target: HttpTarget
) -> None:
    flow = {"key": "api", "parallelism": 1}
    put(deployment, "first", limited(target, flow, path="/first"))
    put(deployment, "second", limited(target, flow, path="/second"))
    deployment.clock.set(DUE)
    first, second = sorted(deployment.take(), key=lambda m: m.job_row)
    release = threading.Event()
    answered: list[Any] = []

    def hold() -> None:
        target.answer([200], delay=0)
        answered.append(deployment.executor.execute(first))

    target.delay = 0
    holding = threading.Thread(target=hold)
    real_next = target._next_status
    target._next_status = lambda: (release.wait(30), real_next())[1]  # type: ignore[method-assign]
    holding.start()
    target.wait_for(1)
    try:
        report = deployment.executor.execute(second)
        assert report.outcome is Outcome.THROTTLED  # the key's one slot is taken: re-sent, not run
        assert [r.path for r in target.received] == ["/first"]
    finally:
        release.set()
        holding.join(30)
    target._next_status = real_next  # type: ignore[method-assign]
    assert answered[0].outcome is Outcome.SUCCEEDED
    deployment.run_until(DUE + timedelta(seconds=10), tick=timedelta(seconds=5))
    assert [r.path for r in target.received] == ["/first", "/second"]
    [row] = deployment.history("second")
    assert row.status is HistoryStatus.COMPLETED and row.flow_wait is not None
    assert deployment.storage.flow.in_flight(key_of(deployment, "api"), deployment.clock()) == 0  # given back


def test_a_slot_whose_worker_died_comes_back_a_lease_later(deployment: Deployment, target: HttpTarget) -> None:
    put(deployment, "j", limited(target, {"key": "api", "parallelism": 1}))
    key = key_of(deployment, "api")
    # a worker took the one slot and died: it renews nothing, so the slot is free once its lease ran out
    assert deployment.storage.flow.acquire(key, 1, "dead worker", DUE + CLAIM_LEASE, DUE)
    deployment.clock.set(DUE)
    [message] = deployment.take()
    assert deployment.executor.execute(message).outcome is Outcome.THROTTLED
    reports = deployment.run_until(DUE + CLAIM_LEASE + timedelta(seconds=5), tick=timedelta(seconds=5))
    assert [report.outcome for report in reports if report.outcome is not Outcome.THROTTLED] == [Outcome.SUCCEEDED]
    [row] = deployment.history("j")
    assert DUE + CLAIM_LEASE <= row.start_time <= DUE + CLAIM_LEASE + timedelta(seconds=3)
    assert row.flow_wait is not None and row.flow_wait >= CLAIM_LEASE


def test_a_long_call_keeps_its_slot_with_its_claims_lease(deployment: Deployment, target: HttpTarget) -> None:
    """A call that outlasts the lease keeps its slot: it is renewed with the claim (the lease keeper)."""
    key = key_of(deployment, "api")
    put(deployment, "long", limited(target, {"key": "api", "parallelism": 1}))
    deployment.clock.set(DUE)
    [message] = deployment.take()
    renewals: list[Any] = []
    flow = deployment.storage.flow
    real_acquire = flow.acquire

    def counting(*args: Any, **kwargs: Any) -> bool:
        renewals.append(args)
        return real_acquire(*args, **kwargs)

    flow.acquire = counting  # type: ignore[method-assign]
    from scheduler_core.pipeline import leases

    keeper_started = threading.Event()
    real_init = leases.LeaseKeeper.__init__

    def fast(self: Any, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **{**kwargs, "every": timedelta(milliseconds=50)})
        keeper_started.set()

    leases.LeaseKeeper.__init__ = fast  # type: ignore[method-assign]
    try:
        target.answer([200], delay=0.5)
        assert deployment.executor.execute(message).outcome is Outcome.SUCCEEDED
    finally:
        leases.LeaseKeeper.__init__ = real_init  # type: ignore[method-assign]
        flow.acquire = real_acquire  # type: ignore[method-assign]
    holders = {args[2] for args in renewals}
    assert len(renewals) >= 3 and len(holders) == 1  # taken once, then renewed by its one holder
    assert flow.in_flight(key, deployment.clock()) == 0


def test_a_jobs_attempts_keep_their_order_while_they_wait_for_a_slot(
    deployment: Deployment, target: HttpTarget
) -> None:
    action = http_action(target.base_url + "/hook", retryPolicy=NO_RETRY)
    action["flowControl"] = {"key": "api", "parallelism": 1}
    put(deployment, "minutely", job_body(DUE, action, {"frequency": "Minute", "interval": 1, "count": 2}))
    key = key_of(deployment, "api")
    flow = deployment.storage.flow
    assert flow.acquire(key, 1, "another job's long call", DUE + timedelta(minutes=1), DUE)
    # the first occurrence waits a minute for the slot, looking again every few seconds; the second comes
    reports = deployment.run_until(DUE + timedelta(seconds=59, milliseconds=500), tick=timedelta(minutes=1))
    assert {report.outcome for report in reports} == {Outcome.THROTTLED} and len(reports) > 10
    assert target.received == []
    flow.release(key, "another job's long call")  # the slot is free
    deployment.clock.set(DUE + timedelta(minutes=1, seconds=31))  # both have come back by now
    waiting = sorted(deployment.take(), key=lambda m: m.occurrence, reverse=True)  # the later occurrence first
    assert [m.occurrence_time for m in waiting] == [DUE + timedelta(minutes=1), DUE]  # one copy of each
    later, earlier = (deployment.executor.execute(m).outcome for m in waiting)
    assert (later, earlier) == (Outcome.THROTTLED, Outcome.SUCCEEDED)  # the earlier one's turn first
    deployment.run_until(DUE + timedelta(minutes=2, seconds=20), tick=timedelta(minutes=1))
    expected = [r.headers["x-ms-scheduler-expected-execution-time"] for r in target.received]
    assert expected == [format_instant(DUE + timedelta(minutes=m)) for m in (0, 1)]  # in order, each once
    first_row, second_row = sorted(deployment.history("minutely"), key=lambda row: row.start_time)
    assert first_row.flow_wait is not None and first_row.flow_wait >= timedelta(minutes=1)
    assert second_row.flow_wait is not None  # it waited for the earlier one


def test_the_watchdog_does_not_take_a_waiting_attempt_for_lost(deployment: Deployment, target: HttpTarget) -> None:
    put(deployment, "j", limited(target, {"key": "api", "parallelism": 1}))
    key = key_of(deployment, "api")
    assert deployment.storage.flow.acquire(key, 1, "another job's long call", DUE + timedelta(minutes=3), DUE)
    reports = deployment.run_until(DUE + timedelta(minutes=2), tick=timedelta(seconds=30))
    assert {report.outcome for report in reports} == {Outcome.THROTTLED}
    copies = [ExecutionMessage.from_json(q.text) for q in deployment.queued()]
    assert len(copies) == 1 and copies[0].flow is not None  # one message cycles: no copy sent by the watchdog
    assert copies[0].flow.since_time == DUE
    deployment.run_until(DUE + timedelta(minutes=3, seconds=40), tick=timedelta(seconds=30))
    [row] = deployment.history("j")
    assert row.flow_wait is not None and row.flow_wait >= timedelta(minutes=3)
    assert len(target.received) == 1


def test_a_long_wait_looks_less_often_so_many_waiters_cost_a_few_looks_a_second(
    deployment: Deployment, target: HttpTarget
) -> None:
    names = [f"w{i}" for i in range(8)]  # the collection's quota
    for name in names:
        put(deployment, name, limited(target, {"key": "api", "parallelism": 1}))
    key = key_of(deployment, "api")
    assert deployment.storage.flow.acquire(key, 1, "a ten-minute call", DUE + timedelta(minutes=10), DUE)
    reports = deployment.run_until(DUE + timedelta(minutes=9), tick=timedelta(minutes=1))
    looks = sum(report.outcome is Outcome.THROTTLED for report in reports)
    # 8 attempts for 9 minutes: every 2 s would be 2,160 looks; a quarter of the wait, at most 30 s apart, ~250
    assert 8 * 18 <= looks <= 8 * 40, looks
    assert target.received == []  # none ran while the slot was taken
    deployment.run_until(DUE + timedelta(minutes=14), tick=timedelta(minutes=1))
    assert len(target.received) == 8  # and every one ran once it was free


def test_a_dead_waiters_note_holds_its_jobs_later_attempts_back_only_a_while(deployment: Deployment) -> None:
    flow = deployment.storage.flow
    flow.wait("k", "job", "2030-01-01T00:00:00Z|schedule|main|000", DUE + WAIT_NOTE)
    assert flow.first_waiting("k", "job", DUE) == "2030-01-01T00:00:00Z|schedule|main|000"
    assert flow.first_waiting("k", "job", DUE + WAIT_NOTE) is None  # its note ran out
    assert flow.first_waiting("k", "another job", DUE) is None  # notes are per job


def test_keys_are_shared_across_collections_of_a_subscription_but_not_across_subscriptions(
    deployment: Deployment, target: HttpTarget
) -> None:
    other_collection = CollectionRef(deployment.collection.subscription, "rg2", "jc2")
    other_subscription = CollectionRef("sub-other", "rg1", "jc1")
    for ref in (other_collection, other_subscription):
        deployment.service.put_collection(ref, STANDARD)
    body = limited(target, {"key": "shared", "ratePerSecond": 0.1})
    put(deployment, "here", body)
    deployment.service.put_job(JobRef(other_collection, "there"), body, wire=Wire.PREVIEW)
    deployment.service.put_job(JobRef(other_subscription, "elsewhere"), body, wire=Wire.PREVIEW)
    deployment.run_until(DUE + timedelta(seconds=5), tick=timedelta(seconds=5))
    started = {r.at for r in target.received}
    assert len(target.received) == 2  # one of the subscription's two waits 10 s; the other subscription's ran
    deployment.run_until(DUE + timedelta(seconds=15), tick=timedelta(seconds=5))
    assert len(target.received) == 3 and len(started) == 2


def test_a_job_without_flow_control_touches_no_flow_state(deployment: Deployment, target: HttpTarget) -> None:
    flow = deployment.storage.flow
    for method in ("reserve", "acquire", "release", "wait", "first_waiting", "done_waiting"):
        flow.fail_next(method, AssertionError(f"flow.{method} called for a job without flowControl"), times=9)
    deployment.service.put_job(deployment.ref("plain"), job_body(DUE, http_action(target.base_url)), wire=Wire.PREVIEW)
    reports = deployment.run_until(DUE + timedelta(seconds=5), tick=timedelta(seconds=5))
    assert [report.outcome for report in reports] == [Outcome.SUCCEEDED]
    flow.clear_faults()


def test_the_error_action_and_notifications_are_not_held_back(deployment: Deployment, target: HttpTarget) -> None:
    body = limited(target, {"key": "api", "parallelism": 1}, path="/main")
    body["properties"]["action"]["errorAction"] = http_action(target.base_url + "/error", retryPolicy=NO_RETRY)
    put(deployment, "j", body)
    flow = deployment.storage.flow
    key = key_of(deployment, "api")
    target.answer([500, 200])
    deployment.clock.set(DUE)
    [main] = deployment.take()
    assert deployment.executor.execute(main).outcome is Outcome.FAILED
    assert flow.acquire(key, 1, "a long call of another job", DUE + timedelta(minutes=5), DUE)
    reports = deployment.run_until(DUE + timedelta(seconds=10), tick=timedelta(seconds=5))
    assert [r.path for r in target.received] == ["/main", "/error"]  # the slot is taken: the error action runs
    assert Outcome.THROTTLED not in [report.outcome for report in reports]
    assert sorted(row.action_name for row in deployment.history("j")) == [ActionName.ERROR, ActionName.MAIN]


def test_storage_lost_at_the_gate_fails_the_delivery_and_its_redelivery_runs_once(
    deployment: Deployment, target: HttpTarget
) -> None:
    put(deployment, "j", limited(target, {"key": "api", "ratePerSecond": 1, "parallelism": 2}))
    deployment.clock.set(DUE)
    [message] = deployment.take()
    flow = deployment.storage.flow
    flow.fail_next("acquire", StorageError("storage could not be reached (ConnectionError)"))
    with pytest.raises(StorageError):  # the host returns the message to its queue
        deployment.executor.execute(message)
    assert target.received == [] and deployment.history("j") == []
    again = ExecutionMessage.from_json(message.to_json())
    assert deployment.executor.execute(again).outcome is Outcome.SUCCEEDED
    assert deployment.executor.execute(again).outcome is Outcome.STALE  # ran: the one-shot job is Completed
    assert len(target.received) == 1 and len(deployment.history("j")) == 1
    assert flow.in_flight(key_of(deployment, "api"), deployment.clock()) == 0
