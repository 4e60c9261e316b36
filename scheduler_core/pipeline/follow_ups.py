"""What follows an attempt: the attempt that comes next (a retry, the error action, a backfill's next
occurrence, an occurrence released by ``BufferOne``, the next poll of an operation still running), the job's
counters and final state, the policies an occurrence's end decides (``pauseAfterFailures``,
``deleteAfterCompletion``, the job's ``notifications``).

Whether a failed attempt is retried, and when, is :func:`retry_due`'s (the retry count, ``retryOn``,
``Retry-After``, ``maxRetryDuration``); a notification's attempt is followed only by its own retry.

Every message goes out through the overlap gate's :meth:`~scheduler_core.pipeline.overlap.OverlapGate.send_watched`
(so each has its watch entry) before the attempt is counted; the counters write
(:func:`~scheduler_core.pipeline.counters.count_attempt`) records the attempt in the job, so what follows is
sent again, never counted again, when a worker lost after it repeats it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from scheduler_core import policies
from scheduler_core.actions import ActionResult
from scheduler_core.actions.outcome import CUT, outcome_message, reason, shown
from scheduler_core.definitions import format_duration
from scheduler_core.job_slots import JobSlots
from scheduler_core.model import Job, JobState
from scheduler_core.model.actions import HttpAction, JobAction, NotificationKind
from scheduler_core.model.retry import MAX_FAILURE_BODY, Failure, FailureFacts, RetryPolicy
from scheduler_core.pipeline import attempts, reporting
from scheduler_core.pipeline.counters import backfill_ended, count_attempt
from scheduler_core.pipeline.durable import durably
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.pipeline.outcomes import action_of
from scheduler_core.pipeline.overlap import OverlapGate, Slot
from scheduler_core.pipeline.reporting import NextStep
from scheduler_core.ports import Stores

log = logging.getLogger("scheduler_core.execute")

#: The wait between two polls of an operation (``request.asyncPolling``) whose answer gives no ``Retry-After``...
POLL_INTERVAL = timedelta(seconds=10)
#: ...and the bounds of one it gives (a poll a second later would only load the target; one a quarter of an
#: hour later would leave the operation's end unseen for that long).
MIN_POLL_INTERVAL = timedelta(seconds=1)
MAX_POLL_INTERVAL = timedelta(minutes=15)


@dataclass(frozen=True)
class Next:
    """What an attempt sent after it and decided: the next step (and when a retry runs), the job's final state
    (None: it goes on), whether the occurrence faulted, and how the occurrence ended (None: it goes on)."""

    step: NextStep
    retry_at: datetime | None
    final_state: JobState | None
    faulted: bool
    end: policies.End | None
    #: Why a failed attempt that the retry count allowed was not retried (``retryOn``, ``maxRetryDuration``).
    not_retried: str = ""


@dataclass(frozen=True)
class FollowUp:
    """What follows an attempt: the next step (and when a retry runs), a note for its history entry (the
    job paused), and the job to remove once the entry is written (``deleteAfterCompletion``)."""

    step: NextStep
    retry_at: datetime | None = None
    note: str = ""
    delete: Job | None = None
    #: The attempt's operation still runs (``request.asyncPolling``): its poll was sent; nothing is counted or
    #: recorded for this step (the operation's outcome is, when it ends).
    polling: bool = False
    #: The attempt's outcome where the follow-ups decided it (an operation polled past ``maxDuration``); None:
    #: the sender's.
    outcome: ActionResult | None = None


def _slot_changes(
    current: Job, message: ExecutionMessage, end: policies.End | None, pause: str, released: list[ExecutionMessage]
) -> dict[str, Any]:
    """The changes of the job's overlap slot (and state) that the attempt's end makes, over the job as read:
    the occurrence that ended leaves the slot, and one that waited (``BufferOne``) takes it (appended to
    ``released``: it is sent once the write is in), unless the job is paused now (``pause``)."""
    changes: dict[str, Any] = {}
    if end is not None and current.running == message.running_key:
        changes["running"] = ""
        waiting = Slot.of(current).waiting  # its turn comes now (BufferOne)
        if waiting is not None and not pause:
            changes.update(running=waiting.running_key, waiting="")
            released.append(waiting)
    if pause and current.state == JobState.ENABLED and current.generation == message.generation:
        changes.update(state=JobState.DISABLED, paused=pause, next_execution_time=None, running="", waiting="")
    return changes


def retry_due(
    policy: RetryPolicy, message: ExecutionMessage, result: ActionResult, first: datetime, now: datetime
) -> datetime | str | None:
    """When the retry of a failed attempt is due (the policy's delay, or the target's ``Retry-After`` when
    longer: :meth:`~scheduler_core.model.retry.RetryPolicy.wait_after`); None when the attempt succeeded or the
    retry count is spent; else why a retry that the count allowed does not follow (a failure ``retryOn`` does
    not name, or ``maxRetryDuration`` after ``first`` passed by then), for the attempt's history entry."""
    if result.succeeded or not policy.has_retry_after(message.attempt):
        return None
    if not policy.retries_failure(result.failure, result.failure_status):
        named = result.failure_status if result.failure_status is not None else result.failure
        return f"not retried: retryOn does not name {named} ({', '.join(policy.retry_on or ())})"
    due = now + policy.wait_after(message.attempt, result.retry_after)
    if not policy.in_budget(first, due):
        budget = policy.max_retry_duration
        assert budget is not None  # in_budget is always True without one
        return f"not retried: maxRetryDuration ({format_duration(budget.value, budget.style)}) would pass first"
    return due


def first_started(message: ExecutionMessage, started: datetime) -> datetime:
    """When the first attempt of ``message``'s action at its occurrence started (``maxRetryDuration`` counts
    from it): ``started`` for the first attempt itself, else what the message says (one sent before messages
    said it: its occurrence)."""
    return message.first_time or (started if message.attempt == 0 else message.occurrence_time)


def failure_facts(message: ExecutionMessage, result: ActionResult) -> FailureFacts:
    """What the error action of ``message``'s occurrence knows of the failure of ``message``'s attempt."""
    body = shown(result.body, one_line=True)
    if len(body) > MAX_FAILURE_BODY:
        body = body[: MAX_FAILURE_BODY - len(CUT)] + CUT
    return FailureFacts(
        reason=str(result.failure or Failure.ERROR),
        status=result.failure_status,
        body=body,
        execution_id=message.stable_execution_id(),
        attempts=message.attempt + 1,
    )


class FollowUps:
    """Sends and writes what follows the attempts of one executor (its stores, overlap gate and clock)."""

    def __init__(self, stores: Stores, gate: OverlapGate, clock: Callable[[], datetime]) -> None:
        self.stores = stores
        self.gate = gate
        self.clock = clock

    def after(
        self,
        job: Job,
        message: ExecutionMessage,
        result: ActionResult,
        action: JobAction,
        started: datetime,
        now: datetime,
    ) -> FollowUp:
        """Send what follows the attempt (which started at ``started``) and count it (with what the job's
        policies decide when the attempt ends its occurrence); returns what follows (and when a retry runs)."""
        if message.notification is not None:
            return self._after_notification(job, message, result, started, now)
        decided = None
        if result.poll is not None:
            polled = self._next_poll(job, message, result, started, now)
            if isinstance(polled, FollowUp):
                return polled
            result = decided = polled  # polled for as long as it may be: a timeout, what follows a failure follows
        after = self._send_next(job, message, result, action, started, now)
        step, final_state, end = after.step, after.final_state, after.end
        before = self._faults_before(job, message, end)
        pause = self._pause(job, end, before) if final_state is None else ""
        self._notify(job, message, result, end, before, now)
        released: list[ExecutionMessage] = []

        def adjust(current: Job) -> dict[str, Any]:
            released.clear()
            return _slot_changes(current, message, end, pause, released)

        if end is not None and message.cause == Cause.BACKFILL:
            # Before the count, as every follow-up: a worker lost after counting must not end the backfill
            # (the watchdog drops a counted attempt's watch; a copy sent twice runs once, by its claim). The
            # occurrence leaves the backfill limits' count; the next one starts at its slot (the plan's rate).
            next_due = durably("backfill ledger", lambda: backfill_ended(self.stores.due, job, message, now))
            if message.until:
                self._next_backfill(job, message, now, next_due)
        written = count_attempt(
            self.stores.jobs, job, message, result.succeeded, after.faulted, final_state, now, adjust
        )
        for waiting in released:  # BufferOne: the occurrence that waited for this one runs now
            self.gate.send_watched(job, waiting, now, now)
        if final_state is not None:
            step = NextStep.COMPLETED if final_state == JobState.COMPLETED else NextStep.FAULTED
            reporting.job_finished(final_state)
        delete = None
        if (
            written is not None
            and written.state == JobState.COMPLETED
            and policies.deletes(job.definition.delete_after_completion, final_state)
        ):
            delete = written
        paused = written is not None and written.paused == pause and written.state == JobState.DISABLED
        note = "; ".join(part for part in (after.not_retried, pause if pause and paused else "") if part)
        return FollowUp(step, after.retry_at, note, delete, outcome=decided)

    def _send_next(
        self,
        job: Job,
        message: ExecutionMessage,
        result: ActionResult,
        action: JobAction,
        started: datetime,
        now: datetime,
    ) -> Next:
        """Send the attempt that follows this one (a retry, or the error action) and decide whether the job ends
        (its last occurrence completed or faulted; never for a run on demand or a backfill)."""
        policy = action.retry_policy  # the main action's: its error action is retried under it too
        final_state: JobState | None = None
        faulted = False
        step, retry_at = NextStep.CONTINUE, None
        first = first_started(message, started)
        retry = retry_due(policy, message, result, first, now)
        retry_follows = isinstance(retry, datetime)
        error_follows = not retry_follows and message.is_main and not result.succeeded and action.error is not None
        if isinstance(retry, datetime):
            self.gate.send_watched(job, attempts.retry_of(message, first), retry, now)
            step, retry_at = NextStep.RETRY, retry
            reporting.retry_sent(message.action)
        elif message.is_main:
            if not result.succeeded:
                faulted = True
                if action.error is not None:
                    failure = failure_facts(message, result)
                    self.gate.send_watched(job, attempts.error_action_of(message, failure), now, now)
                    step = NextStep.ERROR_ACTION
                    reporting.error_action_sent()
                elif message.last:
                    final_state = JobState.FAULTED
            elif message.last:
                final_state = JobState.COMPLETED
        elif message.last:  # the error action's chain ended: the occurrence faulted
            final_state = JobState.FAULTED
        if message.cause.on_request or message.cause == Cause.BACKFILL:
            final_state = None  # an on-demand run, a replay or a backfill never ends the job's schedule
        end = policies.occurrence_end(message.is_main, result.succeeded, retry_follows, error_follows)
        return Next(step, retry_at, final_state, faulted, end, retry if isinstance(retry, str) else "")

    def _faults_before(self, job: Job, message: ExecutionMessage, end: policies.End | None) -> int | None:
        """How many scheduled occurrences in a row before ``message``'s faulted (one read of the job's history),
        when its end decides something (``pauseAfterFailures``, ``notifications``); None: it does not (the
        occurrence goes on, it is not a scheduled one, or the job has neither)."""
        decides = job.definition.pause_after_failures is not None or job.definition.notifications is not None
        if end is None or not decides or message.cause not in (Cause.SCHEDULE, Cause.RETRY):
            return None
        rows = durably("history read", lambda: list(self.stores.history.list(job.ref)))
        return policies.consecutive_faults(rows, before=message.occurrence_time)

    def _pause(self, job: Job, end: policies.End | None, before: int | None) -> str:
        """The reason the job is paused now (``pauseAfterFailures``), or "" (only a scheduled occurrence that
        ended faulted counts, with the ``before`` it)."""
        limit = job.definition.pause_after_failures
        if limit is None or before is None:
            return ""
        return policies.pause_reason(limit) if policies.pauses(limit, end, before) else ""

    def _notify(
        self,
        job: Job,
        message: ExecutionMessage,
        result: ActionResult,
        end: policies.End | None,
        before: int | None,
        now: datetime,
    ) -> None:
        """Send the notification the occurrence's end calls for (:func:`~scheduler_core.policies.notice`), if the
        job has it: ``onFailure`` knowing how the main action failed (an error action's message carries it)."""
        notifications = job.definition.notifications
        kind = policies.notice(end, before) if before is not None else None
        if notifications is None or kind is None or notifications.of(kind) is None:
            return
        facts = None
        if kind is NotificationKind.ON_FAILURE:
            facts = message.failure if not message.is_main and message.failure else failure_facts(message, result)
        self.gate.send_watched(job, attempts.notification_of(message, kind, facts), now, now)
        reporting.notification_sent(kind)

    def _next_poll(
        self, job: Job, message: ExecutionMessage, result: ActionResult, started: datetime, now: datetime
    ) -> FollowUp | ActionResult:
        """The operation the attempt started (or polled) still runs: send its next poll, ``Retry-After`` (of
        :data:`MIN_POLL_INTERVAL` to :data:`MAX_POLL_INTERVAL`; :data:`POLL_INTERVAL` without one) from now, and
        no later than ``asyncPolling.maxDuration`` after the operation began. When that instant has come, the
        attempt failed instead: a ``Timeout`` result, returned for the follow-ups of a failure."""
        assert result.poll is not None
        since = message.poll.since_time if message.poll is not None else started
        ran = action_of(job, message)
        limit = ran.async_polling if isinstance(ran, HttpAction) else None
        asked = POLL_INTERVAL if result.retry_after is None else result.retry_after
        wait = min(max(asked, MIN_POLL_INTERVAL), MAX_POLL_INTERVAL)
        due = min(now + wait, since + limit.value) if limit is not None else now
        if due <= now:
            polls = message.poll.number if message.poll is not None else 0
            written = format_duration(limit.value, limit.style) if limit is not None else "its limit"
            detail = f"still running after {polls} poll(s); the last answer: {reason(result.message)}"
            text = outcome_message("Http", f"Operation not finished within asyncPolling's {written}", detail)
            return ActionResult(False, text, failure=Failure.TIMEOUT)
        self.gate.send_watched(job, attempts.poll_of(message, result.poll, since), due, now)
        return FollowUp(NextStep.POLL, due, polling=True)

    def _after_notification(
        self, job: Job, message: ExecutionMessage, result: ActionResult, started: datetime, now: datetime
    ) -> FollowUp:
        """What follows a notification's attempt: its retry under its own policy, nothing else (it never changes
        the job's counters, state or overlap slot, and never fails the job)."""
        notifications, kind = job.definition.notifications, message.notification
        notification = notifications.of(kind) if notifications is not None and kind is not None else None
        policy = notification.retry_policy if notification is not None else RetryPolicy.never()
        first = first_started(message, started)
        retry = retry_due(policy, message, result, first, now)
        if isinstance(retry, datetime):
            self.gate.send_watched(job, attempts.retry_of(message, first), retry, now)
            return FollowUp(NextStep.RETRY, retry)
        return FollowUp(NextStep.CONTINUE, note=retry or "")

    def _next_backfill(self, job: Job, message: ExecutionMessage, now: datetime, due: datetime | None = None) -> None:
        """A backfill run one occurrence after another: send the next occurrence of its window (for ``due``:
        its start slot, :func:`~scheduler_core.pipeline.counters.backfill_ended`; None: now)."""
        occurrence = message.occurrence_time
        following = policies.past_schedule(job, occurrence).after(occurrence)
        until = datetime.fromisoformat(message.until.replace("Z", "+00:00"))
        if following is None or following > until:
            return
        follow = attempts.next_backfill_run(message, following)
        self.gate.send_watched(job, follow, due or now, now)

    def delete_completed(self, job: Job) -> None:
        """``deleteAfterCompletion``: remove the job that just completed (unless written again meanwhile)
        and give its place under the collection's ``maxJobCount`` back."""
        if durably("job removal", lambda: self.stores.remove_job(job)):
            JobSlots(self.stores, self.clock).release(job.ref.collection)
            log.info("job %s: completed and removed (deleteAfterCompletion)", job.ref.identity)
