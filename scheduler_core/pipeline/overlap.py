"""``overlapPolicy`` before a claim: whether the first attempt of a scheduled occurrence runs, waits for the
unfinished one before it (BufferOne) or is skipped (Skip), decided over the job as read and written with its
ETag; and what keeps a waiting occurrence from waiting for ever (its deadline copy, a released one sent again).
Every attempt it sends goes through :class:`~scheduler_core.pipeline.attempts.Attempts`."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from scheduler_core.errors import EtagMismatchError
from scheduler_core.model import ActionName, HistoryEntry, HistoryStatus, Job, JobState
from scheduler_core.model.job import OverlapPolicy
from scheduler_core.pipeline import attempts, policies
from scheduler_core.pipeline.attempts import Attempts
from scheduler_core.pipeline.counters import COUNTED_KEEP, COUNTER_ATTEMPTS
from scheduler_core.pipeline.durable import durably
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.pipeline.outcomes import ExecutionReport, Outcome, log_skip, repeat_of, stale, trigger_of
from scheduler_core.pipeline.policies import Start
from scheduler_core.pipeline.reporting import Stale
from scheduler_core.ports import Claims, Stores
from scheduler_core.recurrence import format_instant
from scheduler_core.schedules import schedule_of
from scheduler_core.storage.keys import history_row_key

log = logging.getLogger("scheduler_core.execute")

#: A waiting occurrence's deadline copy is due this long after the one it waits for would be taken as lost (a
#: message shows a second or two before its instant).
DEADLINE_MARGIN = timedelta(seconds=5)


def gated(job: Job, message: ExecutionMessage) -> bool:
    """Whether ``overlapPolicy`` decides on this attempt: the first attempt of a scheduled occurrence of a
    job whose policy is not ``AllowAll`` (the default: no read or write of its own)."""
    return (
        job.definition.overlap_policy is not OverlapPolicy.ALLOW_ALL
        and message.cause == Cause.SCHEDULE
        and message.attempt == 0
        and message.is_main
    )


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
        entry with the reason). A last occurrence of the series is never skipped: it waits (so the job
        ends). Decided over the job as read and written with its ETag (read again on a lost race)."""
        occurrence = message.occurrence_time
        current: Job | None = job
        for _ in range(COUNTER_ATTEMPTS):
            if current is None or current.state != JobState.ENABLED or current.generation != message.generation:
                return stale(message, Stale.EDITED, "job changed since dispatch")
            if message.attempt_key in current.counted:
                # A late copy (a redelivery, the watchdog's resend of an unclaimed attempt) of an occurrence
                # that ran or was skipped: it must not name itself running again. Its claim decides: a holder
                # lost after counting it is taken over there; done or never claimed (skipped), it is dropped.
                state = durably("claim read", functools.partial(self.claims.state, job.ref.identity, message.claim_row))
                if state is not None and not state.done:
                    return current
                return self.held(current, message, Outcome.DUPLICATE, "already ran, or was skipped")
            running = current.running_occurrence()
            waiting = ExecutionMessage.from_json(current.waiting) if current.waiting else None
            if waiting is not None and waiting.generation != current.generation:
                waiting = None
            if (
                message.waits_for
                and running != occurrence
                and (waiting is None or waiting.occurrence_time != occurrence)
            ):
                # A waiting occurrence's deadline copy, come after its turn: released (and run) already.
                return self.held(
                    current, message, Outcome.DUPLICATE, "no longer waiting: its turn came, or it was skipped"
                )
            released = None  # the waiting occurrence whose turn came (the unfinished one was lost)
            retry = current.definition.action.retry_policy
            if running is not None and self.clock() > policies.unfinished_until(running, retry, self.lease):
                log.warning("job %s: the occurrence of %s taken as lost", job.ref.identity, format_instant(running))
                running = None  # its chain was lost (a message dropped as poison): it overlaps nothing any more
                if waiting is not None and waiting.occurrence_time != occurrence:
                    released, running, waiting = waiting, waiting.occurrence_time, None
            verdict = policies.on_overlap(
                current.definition.overlap_policy,
                occurrence,
                running,
                waiting.occurrence_time if waiting is not None else None,
            )
            displaced = None
            if verdict.start is Start.SKIP and message.last:
                displaced = waiting
                verdict = policies.OverlapVerdict(Start.WAIT, "waits: the last occurrence of the series")
            changes: dict[str, Any] = {}
            if released is not None:
                changes.update(running=released.running_key, waiting="")
            if verdict.start is Start.RUN:
                if running == occurrence and current.running_occurrence() == occurrence:
                    return current
                changes["running"] = message.running_key
                if waiting is not None and waiting.occurrence_time == occurrence:
                    changes["waiting"] = ""  # it waited (its deadline copy or a redelivery runs it now)
            elif verdict.start is Start.WAIT:
                if waiting is not None and waiting.occurrence_time == occurrence:
                    if message.waits_for and running is not None:  # its deadline copy, early: come again
                        self.send_deadline(current, message, running)
                    return self.held(current, message, Outcome.WAITING, verdict.reason)
                changes["waiting"] = attempts.waiting(message).to_json()
            else:
                changes["counted"] = (*current.counted, message.attempt_key)[-COUNTED_KEEP:]
            try:
                saved = durably(
                    "overlap",
                    functools.partial(
                        self.stores.jobs.save, replace(current, **changes), create=False, etag=current.etag
                    ),
                )
            except EtagMismatchError:
                current = durably(
                    "job read", lambda: self.stores.jobs.get_by_keys(message.job_partition, message.job_row)
                )
                continue
            if verdict.start is Start.SKIP:
                self.record_skip(saved, message, verdict.reason)
            if displaced is not None:
                self.record_skip(saved, displaced, "Skipped: the last occurrence of the series waits in its place")
            if released is not None:  # its turn came: it runs now (and decides again, finding itself running)
                self.send_watched(saved, released, self.clock(), self.clock())
            if verdict.start is Start.WAIT and running is not None:
                self.send_deadline(saved, message, running)
            if verdict.start is Start.RUN:
                return saved
            return self.held(
                saved, message, Outcome.WAITING if verdict.start is Start.WAIT else Outcome.SKIPPED, verdict.reason
            )
        return self.held(job, message, Outcome.BUSY, "the job was changed too often meanwhile; looked at again")

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
        released = attempts.released(job, message, running, last=schedule_of(job).after(running) is None)
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
        harmless: its claim runs it once)."""
        durably("follow-up message", lambda: self.attempts.send_at(job, follow, due, now))
        durably("follow-up watchdog", lambda: self.attempts.watch(job, follow, due, now))
