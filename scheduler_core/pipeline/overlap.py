"""``overlapPolicy`` before a claim: whether the first attempt of a scheduled occurrence runs, waits for the
unfinished one before it (BufferOne) or is skipped (Skip), decided over the job as read and written with its
ETag; and what keeps a waiting occurrence from waiting for ever (its deadline copy, a released one sent again).
Every attempt it sends goes through :class:`~scheduler_core.pipeline.attempts.Attempts`."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from scheduler_core import policies, races
from scheduler_core.errors import EtagMismatchError
from scheduler_core.model import ActionName, HistoryEntry, HistoryStatus, Job, JobState
from scheduler_core.model.job import OverlapPolicy
from scheduler_core.pipeline import attempts
from scheduler_core.pipeline.attempts import Attempts
from scheduler_core.pipeline.counters import COUNTED_KEEP
from scheduler_core.pipeline.durable import durably
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.pipeline.outcomes import ExecutionReport, Outcome, log_skip, repeat_of, stale, trigger_of
from scheduler_core.pipeline.reporting import Stale
from scheduler_core.policies import Start
from scheduler_core.ports import Claims, Stores
from scheduler_core.recurrence import format_instant
from scheduler_core.schedules import schedule_of
from scheduler_core.storage.keys import history_row_key

log = logging.getLogger("scheduler_core.execute")

#: A waiting occurrence's deadline copy is due this long after the one it waits for would be taken as lost (a
#: message shows a second or two before its instant).
DEADLINE_MARGIN = timedelta(seconds=5)
#: Tries of the overlap decision's guarded write of a job before its message is looked at again a second later.
OVERLAP_TRIES = 10


def gated(job: Job, message: ExecutionMessage) -> bool:
    """Whether ``overlapPolicy`` decides on this attempt: the first attempt of a scheduled occurrence of a
    job whose policy is not ``AllowAll`` (the default: no read or write of its own)."""
    return (
        job.definition.overlap_policy is not OverlapPolicy.ALLOW_ALL
        and message.cause == Cause.SCHEDULE
        and message.attempt == 0
        and message.is_main
    )


@dataclass(frozen=True)
class Slot:
    """A job's ``overlapPolicy`` state: the occurrence it names unfinished (of its generation; None: none) and
    the message of the occurrence that waits for it (BufferOne; None: none)."""

    running: datetime | None
    waiting: ExecutionMessage | None

    @classmethod
    def of(cls, job: Job) -> Slot:
        """The slot as ``job`` stores it (a waiting message of an older generation is no longer waiting)."""
        waiting = ExecutionMessage.from_json(job.waiting) if job.waiting else None
        if waiting is not None and waiting.generation != job.generation:
            waiting = None
        return cls(job.running_occurrence(), waiting)

    def waits(self, occurrence: datetime) -> bool:
        """Whether the occurrence ``occurrence`` is the one waiting."""
        return self.waiting is not None and self.waiting.occurrence_time == occurrence


@dataclass(frozen=True)
class Decision:
    """What :func:`decide` decided for one attempt.

    ``hold`` set: nothing is written, the attempt does not run now (``Outcome.DUPLICATE``, ``WAITING``), or
    runs as the job already names it running (``None`` with ``write`` None). Otherwise ``write`` is the job's
    new ``running`` and ``waiting`` (their stored spelling; None: unchanged) and whether the attempt is counted
    (skipped); after the write, the skipped ``displaced`` occurrence is recorded, ``released`` is sent, and a
    deadline copy of the waiting attempt is sent for ``deadline`` (the occurrence it waits for)."""

    verdict: policies.OverlapVerdict
    hold: Outcome | None = None
    write: tuple[str | None, str | None, bool] | None = None
    released: ExecutionMessage | None = None
    displaced: ExecutionMessage | None = None
    deadline: datetime | None = None


def decide(policy: OverlapPolicy, slot: Slot, message: ExecutionMessage, lost: bool) -> Decision:
    """``overlapPolicy`` for ``message``'s occurrence over the job's ``slot``; ``lost``: the unfinished
    occurrence is taken as lost (:func:`policies.unfinished_until` has passed): it overlaps nothing any more,
    and the one waiting for it (if not this one) is released. A last occurrence of the series is never
    skipped: it waits in the place of the one waiting (which is skipped), so the job ends."""
    occurrence = message.occurrence_time
    if message.waits_for and slot.running != occurrence and not slot.waits(occurrence):
        why = "no longer waiting: its turn came, or it was skipped"
        return Decision(policies.OverlapVerdict(Start.SKIP, why), hold=Outcome.DUPLICATE)
    running, waiting, released = slot.running, slot.waiting, None
    if lost:
        running = None
        if waiting is not None and waiting.occurrence_time != occurrence:
            released, running, waiting = waiting, waiting.occurrence_time, None
    verdict = policies.on_overlap(policy, occurrence, running, waiting.occurrence_time if waiting else None)
    displaced = None
    if verdict.start is Start.SKIP and message.last:
        displaced = waiting
        verdict = policies.OverlapVerdict(Start.WAIT, "waits: the last occurrence of the series")
    new_running, new_waiting = (released.running_key, "") if released is not None else (None, None)
    if verdict.start is Start.RUN:
        if running == occurrence and slot.running == occurrence:
            return Decision(verdict)  # it runs as the job names it running (a redelivery)
        new_running = message.running_key
        if waiting is not None and waiting.occurrence_time == occurrence:
            new_waiting = ""  # it waited (its deadline copy or a redelivery runs it now)
    elif verdict.start is Start.WAIT:
        if waiting is not None and waiting.occurrence_time == occurrence:  # it waits already
            early_deadline = running if message.waits_for else None  # its deadline copy, early: come again
            return Decision(verdict, hold=Outcome.WAITING, deadline=early_deadline)
        new_waiting = attempts.waiting(message).to_json()
    deadline = running if verdict.start is Start.WAIT else None
    write = (new_running, new_waiting, verdict.start is Start.SKIP)
    return Decision(verdict, write=write, released=released, displaced=displaced, deadline=deadline)


class OverlapGate:
    """Decides ``overlapPolicy`` for the attempts of one executor (its stores, claims, attempts, clock and
    claim lease)."""

    def __init__(
        self, stores: Stores, claims: Claims, attempts: Attempts, clock: Callable[[], datetime], lease: timedelta
    ) -> None:
        self.stores = stores
        self.claims = claims
        self.attempts = attempts
        self.clock = clock
        self.lease = lease

    def admit(self, job: Job, message: ExecutionMessage) -> Job | ExecutionReport:
        """``overlapPolicy`` Skip or BufferOne, at the first attempt of a scheduled occurrence: run it (the
        job then names it as its unfinished occurrence), let it wait, or skip it (a ``Skipped`` history
        entry with the reason), as :func:`decide` says over the job as read; written with its ETag (read
        again on a lost race)."""
        unread = [job]

        def attempt() -> Job | ExecutionReport:
            current = unread.pop() if unread else self._read(message)
            return self._decide(current, message)

        try:
            return races.race(
                attempt, races.Bound(tries=OVERLAP_TRIES), lambda error: isinstance(error, EtagMismatchError)
            )
        except races.RacesLost:
            return self.held(job, message, Outcome.BUSY, "the job was changed too often meanwhile; looked at again")

    def _read(self, message: ExecutionMessage) -> Job | None:
        return durably("job read", lambda: self.stores.jobs.get_by_keys(message.job_partition, message.job_row))

    def _decide(self, current: Job | None, message: ExecutionMessage) -> Job | ExecutionReport:
        """One try of :meth:`admit` over the job as read (None: gone); a lost write race is raised."""
        if current is None or current.state != JobState.ENABLED or current.generation != message.generation:
            return stale(message, Stale.EDITED, "job changed since dispatch")
        if message.attempt_key in current.counted:
            # A late copy (a redelivery, the watchdog's resend of an unclaimed attempt) of an occurrence
            # that ran or was skipped: it must not name itself running again. Its claim decides: a holder
            # lost after counting it is taken over there; done or never claimed (skipped), it is dropped.
            ref = current.ref
            state = durably("claim read", functools.partial(self.claims.state, ref.identity, message.claim_row))
            if state is not None and not state.done:
                return current
            return self.held(current, message, Outcome.DUPLICATE, "already ran, or was skipped")
        slot = Slot.of(current)
        retry = current.definition.action.retry_policy
        lost = slot.running is not None and self.clock() > policies.unfinished_until(slot.running, retry, self.lease)
        decision = decide(current.definition.overlap_policy, slot, message, lost)
        if lost and slot.running is not None and decision.hold is not Outcome.DUPLICATE:
            log.warning(
                "job %s: the occurrence of %s taken as lost", current.ref.identity, format_instant(slot.running)
            )
        if decision.write is None:
            if decision.hold is None:
                return current
            if decision.deadline is not None:
                self.send_deadline(current, message, decision.deadline)
            return self.held(current, message, decision.hold, decision.verdict.reason)
        return self._after(self._write(current, message, decision.write), message, decision)

    def _write(self, current: Job, message: ExecutionMessage, write: tuple[str | None, str | None, bool]) -> Job:
        """Write the decided slot over the job as read (ETag-guarded: a lost race raises
        :class:`~scheduler_core.errors.EtagMismatchError`)."""
        running, waiting, counted = write
        changes: dict[str, Any] = {}
        if running is not None:
            changes["running"] = running
        if waiting is not None:
            changes["waiting"] = waiting
        if counted:
            changes["counted"] = (*current.counted, message.attempt_key)[-COUNTED_KEEP:]
        save = functools.partial(self.stores.jobs.save, replace(current, **changes), create=False, etag=current.etag)
        return durably("overlap", save)

    def _after(self, saved: Job, message: ExecutionMessage, decision: Decision) -> Job | ExecutionReport:
        """What follows a written decision: the skipped entries, the released occurrence sent, the waiting
        one's deadline copy; the job to run with (it runs), or why it does not."""
        verdict = decision.verdict
        if verdict.start is Start.SKIP:
            self.record_skip(saved, message, verdict.reason)
        if decision.displaced is not None:
            self.record_skip(saved, decision.displaced, "Skipped: the last occurrence of the series waits in its place")
        if decision.released is not None:  # its turn came: it runs now (and decides again, finding itself running)
            self.send_watched(saved, decision.released, self.clock(), self.clock())
        if decision.deadline is not None:
            self.send_deadline(saved, message, decision.deadline)
        if verdict.start is Start.RUN:
            return saved
        outcome = Outcome.WAITING if verdict.start is Start.WAIT else Outcome.SKIPPED
        return self.held(saved, message, outcome, verdict.reason)

    def send_deadline(self, job: Job, message: ExecutionMessage, running: datetime) -> None:
        """BufferOne: a copy of the waiting occurrence's message, due just after ``running`` (the occurrence it
        waits for) would be taken as lost (:func:`policies.unfinished_until`). Normally the one that waits is
        released (and sent) when ``running`` ends, and the copy then does nothing; when that chain was lost
        (its message dropped as poison, its worker lost after it released the waiting one but before sending
        it), the copy runs the waiting one, so it never waits for a later occurrence or a write of the job."""
        deadline = policies.unfinished_until(running, job.definition.action.retry_policy, self.lease)
        due = deadline + DEADLINE_MARGIN
        copy = attempts.deadline_copy(message, job.generation, running)
        now = self.clock()
        durably("deadline of a waiting occurrence", lambda: self.attempts.send_at(job, copy, due, now))

    def resend_released(self, job: Job, message: ExecutionMessage) -> None:
        """A holder lost after its counters write (the attempt counted, its record not written) may have
        released the occurrence waiting for its own (BufferOne) and died before sending it: send that
        occurrence, which the job now names unfinished, again (its claim runs it once; a copy that finds it
        run or running does nothing)."""
        running = job.running_occurrence()
        if job.definition.overlap_policy is not OverlapPolicy.BUFFER_ONE or running is None:
            return
        if running <= message.occurrence_time or message.cause not in (Cause.SCHEDULE, Cause.RETRY):
            return
        released = attempts.released(job, running, last=schedule_of(job).after(running) is None)
        now = self.clock()
        self.send_watched(job, released, now, now)

    def held(self, job: Job, message: ExecutionMessage, outcome: Outcome, why: str) -> ExecutionReport:
        if outcome is Outcome.BUSY:
            self.attempts.later(message, 1)
        log_skip(job, message, outcome, why)
        return ExecutionReport(outcome, why, message.stable_execution_id())

    def record_skip(self, job: Job, message: ExecutionMessage, reason: str) -> None:
        """The ``Skipped`` history entry of an occurrence (its key fixed by the occurrence: written once)."""
        execution_id = message.stable_execution_id()
        now = self.clock()
        record = HistoryEntry(
            execution_id=execution_id,
            row_key=history_row_key(message.occurrence_time, execution_id),
            start_time=now,
            end_time=now,
            expected_execution_time=message.occurrence_time,
            action_name=ActionName.MAIN,
            status=HistoryStatus.SKIPPED,
            message=reason,
            retry_count=0,
            repeat_count=repeat_of(job, message),
            trigger=trigger_of(message),
        )
        durably("history of a skipped occurrence", lambda: self.stores.history.add_if_absent(job.ref, record))

    def send_watched(self, job: Job, follow: ExecutionMessage, due: datetime, now: datetime) -> None:
        """Send a follow-up attempt to run at ``due``, watched like a dispatched one (a repeated send is
        harmless: its claim runs it once). The message says when it is due (:func:`~attempts.due_at`)."""
        follow = attempts.due_at(follow, due)
        durably("follow-up message", lambda: self.attempts.send_at(job, follow, due, now))
        durably("follow-up watchdog", lambda: self.attempts.watch(job, follow, due, now))
