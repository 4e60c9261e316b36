"""What an attempt came to (:class:`Outcome`, :class:`ExecutionReport`), and the facts its records carry: the
action it runs, its ordinal in the series, its trigger."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from scheduler_core import policies
from scheduler_core.model import Job
from scheduler_core.model.actions import Action
from scheduler_core.model.history import Trigger
from scheduler_core.pipeline import reporting
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.pipeline.reporting import Stale
from scheduler_core.schedules import schedule_of


class Outcome(Enum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DUPLICATE = "duplicate"  # already ran
    BUSY = "busy"  # another worker runs it; re-sent for later
    STALE = "stale"  # job changed, disabled or deleted since dispatch
    SKIPPED = "skipped"  # overlapPolicy: the previous occurrence was unfinished (recorded in history)
    WAITING = "waiting"  # overlapPolicy BufferOne: runs when the previous occurrence finishes
    POLLING = "polling"  # asyncPolling: the operation a 202 started still runs; polled again later
    THROTTLED = "throttled"  # flowControl: over its key's limits; re-sent for when it may run


@dataclass(frozen=True)
class ExecutionReport:
    outcome: Outcome
    message: str = ""
    execution_id: str = ""
    #: What happens next (:class:`NextStep`), for a succeeded or failed attempt.
    next_step: str = ""


def action_of(job: Job, message: ExecutionMessage) -> Action | None:
    """The action a message's attempt runs (None: an error action or a notification removed since the attempt
    was sent)."""
    job_action = job.definition.action
    kind = message.notification
    if kind is not None:
        notifications = job.definition.notifications
        notification = notifications.of(kind) if notifications is not None else None
        return notification.action if notification is not None else None
    return job_action.main if message.is_main else job_action.error


def repeat_of(job: Job, message: ExecutionMessage) -> int:
    """The ordinal of the message's occurrence in the job's series (0 for a run on demand)."""
    if message.cause == Cause.MANUAL:
        return 0
    try:
        if message.cause in (Cause.BACKFILL, Cause.REPLAY):  # a past occurrence: of the schedule as it was then
            return policies.past_schedule(job, message.occurrence_time).ordinal(message.occurrence_time)
        return schedule_of(job).ordinal(message.occurrence_time)
    except Exception:  # ordinal is informational; never lose a history row over it
        return 0


def trigger_of(message: ExecutionMessage) -> Trigger:
    """The history trigger of a message's attempt: a backfill's or a run on demand's (their retries and error
    actions too), else the schedule's (a retry or error action of a scheduled occurrence is ``Scheduled``)."""
    if message.cause == Cause.BACKFILL:
        return Trigger.BACKFILL
    if message.cause == Cause.MANUAL:
        return Trigger.MANUAL
    if message.cause == Cause.REPLAY:
        return Trigger.REPLAY
    return Trigger.SCHEDULED


def stale(message: ExecutionMessage, reason: Stale, text: str) -> ExecutionReport:
    """Drop a stale message, saying why (one INFO line)."""
    reporting.attempt_stale(message, Outcome.STALE.value, reason, text)
    return ExecutionReport(Outcome.STALE, text)


def log_skip(job: Job, message: ExecutionMessage, outcome: Outcome, why: str) -> None:
    """Say why an attempt did not run (one INFO line)."""
    reporting.attempt_skipped(job, message, action_of(job, message), outcome.value, why)
