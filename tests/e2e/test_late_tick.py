"""How late the dispatch tick can be when its instance dies, and what a late tick fires.

The dispatch timer is a singleton (``local_host/leases.py``, as in Azure): one instance holds its blob lease
and ticks. When that instance dies, the others take the lease only once it has expired and at their next poll,
and the new holder ticks at once (``run_on_startup``, or a past-due run from the schedule monitor). So after
the last tick of the instance that died, the next tick comes at most

    tick interval + listenerLockPeriod + listenerLockRecoveryPollingInterval

later: with the WebJobs SDK's defaults (60 s, 60 s) a tick is up to **two minutes late**; with 15 s and 15 s
(the shortest allowed) up to 30 s. The tick before it sent every occurrence due within the lookahead (75 s);
the late tick sends the rest. These tests run the real function app's ``dispatch_tick`` and ``scan_shard``
(through the app's index, as a host calls them) in simulated time and show what each lateness fires:

* 30 s late (15 s lease, 15 s polling, as host.json sets them): every occurrence of a minutely job fires, each
  once, none more than 15 s late (the late tick's lateness less the 15 s the lookahead covers beyond a tick
  interval), whatever the second of the minute it is due at.
* two minutes late (the defaults), default ``missedRunPolicy`` (RunOnce, the classic wire's behaviour): no
  occurrence fires twice, but the gap (the 105 s after the last tick's lookahead) can hold two occurrences of a
  minutely job; the first is then more than a minute overdue with the next one due, and the two are
  **coalesced** into one late run that says how many it stands for (``Dispatcher._fire``): the second does not
  fire on its own. (A job due at :00, with ticks at :45, has one occurrence there, which fires 45 s late.)
* two minutes late, ``missedRunPolicy`` RunAll (api-version 2026-12-01-preview): each occurrence of the gap
  fires once, when the late tick comes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import azure.functions as func
import pytest
from azure.functions.timer import TimerRequest

import function_app
from local_host.app_index import index_app
from scheduler_core.definitions import Wire
from scheduler_core.recurrence import format_instant
from tests.support.harness import Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import every, http_action, job_body

pytestmark = [pytest.mark.e2e, pytest.mark.backend("memory")]

INDEX = index_app(function_app.app)
DISPATCH_TICK = next(timer for timer in INDEX.timers if timer.name == "dispatch_tick")
SCAN_SHARD = next(queue for queue in INDEX.queues if queue.name == "scan_shard")
TICK_SECOND = 45  # SCHEDULER_DISPATCH_SCHEDULE of the sample settings: "45 * * * * *"
LOOKAHEAD = 75  # SCHEDULER_LOOKAHEAD_SECONDS of the sample settings


@dataclass(frozen=True)
class Fired:
    occurrence: str  # x-ms-scheduler-expected-execution-time
    at: datetime  # simulated instant its message was run

    @property
    def lateness(self) -> timedelta:
        return self.at - instant(self.occurrence)


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def tick(pipeline: Deployment, past_due: bool) -> None:
    """The function app's dispatch tick, then its scans of every shard (handed-on scans included)."""
    assert pipeline.memory is not None
    DISPATCH_TICK.handler(TimerRequest(past_due=past_due))
    while messages := pipeline.memory.scans.receive():
        for message in messages:
            SCAN_SHARD.handler(func.QueueMessage(body=message.text.encode()))


def run(pipeline: Deployment, target: HttpTarget, ticks: list[datetime], end: datetime) -> list[Fired]:
    """Simulate time to ``end``: the dispatch tick at each of ``ticks`` (a tick later than the schedule's
    second is past due), executions run when their messages become visible. What fired, and when."""
    pending = sorted(ticks)
    fired: list[Fired] = []
    while pipeline.clock() < end:
        visible = pipeline.executions.next_visible_at()
        upcoming = [t for t in (visible, pending[0] if pending else None) if t is not None]
        pipeline.clock.set(max(min(*upcoming, end), pipeline.clock()))
        if pending and pipeline.clock() >= pending[0]:
            due = pending.pop(0)
            tick(pipeline, past_due=due.second != TICK_SECOND)
        before = len(target.received)
        pipeline.deliver()
        now = pipeline.clock()
        for request in target.received[before:]:
            fired.append(Fired(request.headers["x-ms-scheduler-expected-execution-time"], now))
    return fired


def minutely_job(
    pipeline: Deployment, target: HttpTarget, first: datetime, wire: Wire = Wire.CLASSIC, **extra: object
) -> None:
    body = job_body(first, http_action(target.base_url), every("Minute"), **extra)
    pipeline.services.service.put_job(pipeline.ref("minutely"), body, wire=wire)


def scenario(pipeline: Deployment, late_by: timedelta, second: int = 0) -> tuple[datetime, list[datetime], datetime]:
    """The job's first occurrence (at ``second`` past a minute), the ticks and the end: two ticks on time, then
    the holder dies just before its next tick, which comes ``late_by`` late (the new holder's), then ticks on
    time again."""
    minute = pipeline.clock.now.replace(second=0, microsecond=0) + timedelta(minutes=2)
    first = minute + timedelta(seconds=second)
    marks = [minute - timedelta(seconds=60 - TICK_SECOND) + timedelta(minutes=i) for i in range(12)]
    late_tick = marks[2] + late_by
    ticks = [marks[0], marks[1], late_tick, *(mark for mark in marks[3:] if mark > late_tick)]
    return first, ticks, marks[-1]


def occurrences(first: datetime, end: datetime) -> list[str]:
    count = int((end - first).total_seconds() // 60) + 1
    return [format_instant(first + timedelta(minutes=i)) for i in range(count)]


def in_gap(ticks: list[datetime], occurrence: str) -> bool:
    """Whether ``occurrence`` is one the last tick before the gap did not send (it sends those due within the
    lookahead) and the late tick did: due after the one, by the other."""
    return ticks[1] + timedelta(seconds=LOOKAHEAD) < instant(occurrence) <= ticks[2]


@pytest.mark.parametrize("second", [0, 1, 30])
def test_a_tick_late_by_15_s_lease_and_15_s_polling_fires_every_occurrence_once(
    pipeline: Deployment, target: HttpTarget, second: int
) -> None:
    first, ticks, end = scenario(pipeline, timedelta(seconds=15 + 15), second)
    minutely_job(pipeline, target, first)
    fired = run(pipeline, target, ticks, end)
    times = [f.occurrence for f in fired]
    assert times == occurrences(first, max(instant(t) for t in times))
    assert max(f.lateness for f in fired) <= timedelta(seconds=15, milliseconds=500), fired


def test_a_tick_two_minutes_late_coalesces_the_gap_by_default_and_fires_nothing_twice(
    pipeline: Deployment, target: HttpTarget
) -> None:
    # Occurrences at :30: the gap after the last tick (hh:00:45 sends up to hh:02:00) holds two of them when
    # the late tick comes at hh:03:45 (hh:02:30, 75 s overdue, and hh:03:30).
    first, ticks, end = scenario(pipeline, timedelta(minutes=2), second=30)
    minutely_job(pipeline, target, first)
    fired = run(pipeline, target, ticks, end)
    times = [f.occurrence for f in fired]
    assert len(times) == len(set(times)), "an occurrence fired twice"
    every = occurrences(first, instant(times[-1]))
    gap = [t for t in every if in_gap(ticks, t)]
    assert len(gap) == 2
    # The first of the gap fired late, standing for the second, which did not fire on its own.
    assert [t for t in every if t not in times] == gap[1:]
    history = pipeline.services.service.list_history(pipeline.ref("minutely"))
    [standing] = [h for h in history if h.expected_execution_time == instant(gap[0])]
    assert "late run standing for 2 occurrences" in standing.message


def test_a_tick_two_minutes_late_fires_the_one_occurrence_of_a_gap_late_once(
    pipeline: Deployment, target: HttpTarget
) -> None:
    # Occurrences at :00, ticks at :45: the gap (hh:01:00, hh:02:45] holds hh:02:00 only.
    first, ticks, end = scenario(pipeline, timedelta(minutes=2), second=0)
    minutely_job(pipeline, target, first)
    fired = run(pipeline, target, ticks, end)
    assert [f.occurrence for f in fired] == occurrences(first, instant(fired[-1].occurrence))
    [late] = [f for f in fired if in_gap(ticks, f.occurrence)]
    assert timedelta(seconds=44) < late.lateness < timedelta(seconds=46)
    assert all(f.lateness < timedelta(seconds=1) for f in fired if f != late)


def test_a_tick_two_minutes_late_fires_each_occurrence_of_the_gap_once_with_missed_run_policy_run_all(
    pipeline: Deployment, target: HttpTarget
) -> None:
    first, ticks, end = scenario(pipeline, timedelta(minutes=2), second=30)
    minutely_job(pipeline, target, first, Wire.PREVIEW, missedRunPolicy={"mode": "RunAll"})
    fired = run(pipeline, target, ticks, end)
    times = [f.occurrence for f in fired]
    assert times == occurrences(first, instant(times[-1]))
    gap = [f for f in fired if in_gap(ticks, f.occurrence)]
    assert len(gap) == 2 and all(abs(f.at - ticks[2]) < timedelta(seconds=1) for f in gap)  # sent by the late tick
    assert all(f.lateness < timedelta(seconds=1) for f in fired if f not in gap)
