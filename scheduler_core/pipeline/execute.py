"""Execute: run one attempt of one occurrence, record it once, and never lose it.

The executor reloads the job the message names (messages never carry definitions or secrets), drops the
message when the job is gone, was changed (generation) or disabled since dispatch, claims the attempt
(the lease rule of :mod:`scheduler_core.model.claim`), runs the action, writes a history row, and updates the
job's counters with an ETag-guarded write. A failed attempt with retries left is re-sent with a delay;
after the last retry the error action runs under the same policy and the occurrence counts as faulted.
A job whose last occurrence completes ends ``Completed``; one whose last occurrence faults ends ``Faulted``.

Delivery: each attempt has one execution id (:meth:`ExecutionMessage.stable_execution_id`), the same on
every delivery. Its action runs at least once, and more than once only when a worker or storage dies
mid-call: a worker that takes over an expired claim records the lost holder's attempt in history ("worker
lost; the call may have been delivered") next to its own run. The writes after the action (history,
follow-up messages, counters, claim) retry through a storage outage of a minute
(:mod:`scheduler_core.pipeline.durable`) and are idempotent: the history row's key is fixed by the claim
(its holder and claim time) and the execution id; the counters write records the attempt in the job in
the same ETag-guarded write (:mod:`scheduler_core.pipeline.counters`), so a retried or repeated counters
write never counts an attempt twice.
"""

from __future__ import annotations

import logging
import math
import re
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import Enum

from scheduler_core import telemetry
from scheduler_core.actions import ActionContext, ActionResult, ActionRunner
from scheduler_core.model import (
    CLAIM_LEASE,
    ActionName,
    ClaimOutcome,
    HistoryEntry,
    HistoryStatus,
    Job,
    JobState,
    LostAttempt,
    claim_key,
)
from scheduler_core.model.actions import Action, HttpAction, JobAction, ServiceBusAction, StorageQueueAction
from scheduler_core.pipeline.counters import count_attempt
from scheduler_core.pipeline.dispatch import Dispatcher, Send, delay_message
from scheduler_core.pipeline.durable import durably
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.ports import Claims, Stores
from scheduler_core.recurrence import format_instant
from scheduler_core.schedules import schedule_of
from scheduler_core.storage.keys import SEPARATOR, history_row_key

log = logging.getLogger("scheduler_core.execute")

#: A message that appears before its occurrence (queues count whole seconds) is held this long at most.
MAX_EARLY_WAIT = timedelta(seconds=3)
#: The result of an error-action attempt whose job no longer has an error action.
NO_ERROR_ACTION = ActionResult(False, "Unknown Action - this action type is not supported here")
#: The history message of an attempt whose worker died (or lost storage) before recording it.
WORKER_LOST = "worker lost; the call may have been delivered"

Clock = Callable[[], datetime]


class Outcome(Enum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DUPLICATE = "duplicate"  # already ran
    BUSY = "busy"  # another worker runs it; re-sent for later
    STALE = "stale"  # job changed, disabled or deleted since dispatch


class Stale(Enum):
    """Why a message is stale (the ``scheduler_reason`` of its log line)."""

    DELETED = "deleted"  # the job is gone
    EDITED = "edited"  # the job was changed (PUT, PATCH, enable, disable) since dispatch: a new generation
    DISABLED = "disabled"  # the job is disabled
    FINISHED = "finished"  # the job ended (Completed or Faulted)


@dataclass(frozen=True)
class ExecutionReport:
    outcome: Outcome
    message: str = ""
    execution_id: str = ""
    #: What happens next (:class:`NextStep`), for a succeeded or failed attempt.
    next_step: str = ""


class NextStep(Enum):
    """What follows an attempt (the ``scheduler_next`` of its log line)."""

    RETRY = "retry"  # retried at ``scheduler_retry_at``
    ERROR_ACTION = "error_action"  # the last retry failed: the error action is sent
    COMPLETED = "completed"  # the job ended Completed
    FAULTED = "faulted"  # the job ended Faulted
    CONTINUE = "continue"  # the schedule goes on (or, for a run on demand, nothing follows)


#: The status code in an HTTP action's history message ("Response from host '...': '200 OK' ...").
_HTTP_STATUS = re.compile(r"Response from host '[^']*': '(\d{3})\b")


def status_code_of(result: ActionResult) -> int | None:
    """The HTTP status code of an attempt's answer, if it got one."""
    found = _HTTP_STATUS.search(result.message)
    return int(found.group(1)) if found else None


def describe_action(action: Action | None) -> tuple[str, str]:
    """An action's type and its target, safe to log: ``scheme://host[:port]`` of a URL (no path, query or
    user info), ``account/queue`` of a Storage queue, ``namespace/queue`` or ``namespace/topic`` of Service
    Bus. Never a secret."""
    match action:
        case HttpAction():
            return action.type_name, telemetry.target_of(action.uri)
        case StorageQueueAction():
            return "StorageQueue", f"{action.storage_account}/{action.queue_name}"
        case ServiceBusAction():
            return action.type_name, f"{action.namespace}/{action.entity}"
        case _:
            return "None", ""


def _seconds(delta: timedelta) -> float:
    return round(delta.total_seconds(), 3)


def message_fields(message: ExecutionMessage, job: Job | None = None) -> dict[str, object]:
    """The log fields naming a message's attempt: the job's names (as stored when the job is gone)."""
    if job is not None:
        ref = job.ref
        subscription, group, collection, name = (
            ref.collection.subscription,
            ref.collection.resource_group,
            ref.collection.name,
            ref.name,
        )
    else:
        parts = message.job_partition.split(SEPARATOR)
        if len(parts) == 3:
            subscription, group, collection = parts
        else:
            subscription, group, collection = "", "", message.job_partition
        name = message.job_row
    return {
        "scheduler_subscription": subscription,
        "scheduler_resource_group": group,
        "scheduler_collection": collection,
        "scheduler_job": name,
        "scheduler_occurrence": message.occurrence,
        "scheduler_action": message.action,
        "scheduler_attempt": message.attempt + 1,
        "scheduler_cause": str(message.cause),
        "scheduler_missed": message.missed,
    }


class Executor:
    def __init__(
        self,
        stores: Stores,
        claims: Claims,
        runner: ActionRunner,
        send: Send,
        dispatcher: Dispatcher,
        clock: Clock,
        worker: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        lease: timedelta = CLAIM_LEASE,
    ) -> None:
        self.stores = stores
        self.claims = claims
        self.runner = runner
        self.send = send
        self.dispatcher = dispatcher
        self.clock = clock
        self.worker = worker or f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}"
        self.sleep = sleep
        self.lease = lease

    def _live_job(self, message: ExecutionMessage) -> Job | ExecutionReport:
        """The job the message names, or why the message is stale (deleted, changed, not enabled). Storage
        errors are waited out here too: a message that failed would stay hidden for the queue's processing
        lease (10 minutes), its occurrence that much late."""
        job = durably("job read", lambda: self.stores.jobs.get_by_keys(message.job_partition, message.job_row))
        if job is None:
            return self._stale(message, Stale.DELETED, "job deleted")
        if message.cause != Cause.MANUAL:
            # The state first: disabling a job also bumps its generation, and "disabled" is the better reason.
            if job.state != JobState.ENABLED:
                reason = Stale.DISABLED if job.state == JobState.DISABLED else Stale.FINISHED
                return self._stale(message, reason, f"job is {job.state}")
            if job.generation != message.generation:
                return self._stale(message, Stale.EDITED, "job changed since dispatch")
        return job

    def _stale(self, message: ExecutionMessage, reason: Stale, text: str) -> ExecutionReport:
        """Drop a stale message, saying why (one INFO line)."""
        fields = message_fields(message)
        log.info(
            "%s/%s: %s attempt %d of occurrence %s dropped: %s (%s)",
            fields["scheduler_collection"],
            fields["scheduler_job"],
            message.action,
            message.attempt + 1,
            message.occurrence,
            text,
            reason.value,
            extra={**fields, "scheduler_outcome": Outcome.STALE.value, "scheduler_reason": reason.value},
        )
        telemetry.instruments().attempts.add(1, {"outcome": Outcome.STALE.value, "action_type": "unknown"})
        return ExecutionReport(Outcome.STALE, text)

    def execute(self, message: ExecutionMessage) -> ExecutionReport:
        """Run one attempt (see the module's docstring)."""
        live = self._live_job(message)
        if isinstance(live, ExecutionReport):
            return live
        job = live
        occurrence = message.occurrence_time
        execution_id = message.stable_execution_id()
        claim_row = claim_key(occurrence, message.action, message.attempt, message.cause)
        claimed_at, token = self.clock(), uuid.uuid4().hex
        result = durably(
            "claim",
            lambda: self.claims.claim(job.ref.identity, claim_row, self.worker, claimed_at, self.lease, token),
        )
        if result.outcome is ClaimOutcome.DONE:
            self._log_skip(job, message, Outcome.DUPLICATE, "already ran")
            return ExecutionReport(Outcome.DUPLICATE, execution_id=execution_id)
        claim = result.claim
        if result.outcome is ClaimOutcome.BUSY or claim is None:
            # Look again once the holder's lease has ended (it may die): then this delivery takes over.
            wait = (result.lease_until or claimed_at + self.lease) - self.clock()
            delay = max(1, math.ceil(wait.total_seconds()) + 1)
            self.send(message.to_json(), delay)
            self._log_skip(job, message, Outcome.BUSY, f"another worker runs it; looked at again in {delay} s")
            return ExecutionReport(Outcome.BUSY, execution_id=execution_id)
        if result.lost is not None:
            if message.attempt_key in job.counted:
                # The lost holder ran the attempt and recorded it; only its claim was left open.
                durably("claim completion", lambda: self.claims.complete(claim, self.clock()))
                self._log_skip(job, message, Outcome.DUPLICATE, "recorded by a worker lost after it")
                return ExecutionReport(Outcome.DUPLICATE, "recorded by a worker lost after it", execution_id)
            self._record_lost(job, message, execution_id, result.lost)

        early = occurrence - self.clock()
        if timedelta(0) < early <= MAX_EARLY_WAIT and message.attempt == 0 and message.action == "main":
            self.sleep(early.total_seconds())  # fire at the due instant, not at the queue's whole second
        job_action = job.definition.action
        action = job_action.main if message.action == "main" else job_action.error
        context = ActionContext(
            job_id=job.ref.resource_id,
            collection_id=job.ref.collection.resource_id,
            expected_time=occurrence,
            execution_id=execution_id,
            retry_count=message.attempt,
        )
        started = self.clock()
        # An error action removed since its attempt was sent (only an on-demand run gets here) fails as before.
        outcome = self.runner.run(action, context) if action is not None else NO_ERROR_ACTION
        ended = self.clock()
        # From here on the call may have been delivered: every write retries through an outage.
        record = self._history(job, message, execution_id, outcome, claim.claimed_at, started, ended)
        durably("history", lambda: self.stores.history.add(job.ref, record))
        step, retry_at = self._follow_up(job, message, outcome, job_action, ended)
        durably("claim completion", lambda: self.claims.complete(claim, ended))
        report = ExecutionReport(
            Outcome.SUCCEEDED if outcome.succeeded else Outcome.FAILED, outcome.message, execution_id, step.value
        )
        self._log_attempt(job, message, action, job_action, report, outcome, started, ended, step, retry_at)
        return report

    # ------------------------------------------------------------------------------------------ logs

    def _log_skip(self, job: Job, message: ExecutionMessage, outcome: Outcome, why: str) -> None:
        fields = message_fields(message, job)
        log.info(
            "%s/%s: %s attempt %d of occurrence %s not run: %s",
            job.ref.collection.name,
            job.ref.name,
            message.action,
            message.attempt + 1,
            message.occurrence,
            why,
            extra={**fields, "scheduler_outcome": outcome.value, "scheduler_reason": why},
        )
        action_type, _ = describe_action(self._action_of(job, message))
        telemetry.instruments().attempts.add(1, {"outcome": outcome.value, "action_type": action_type})

    @staticmethod
    def _action_of(job: Job, message: ExecutionMessage) -> Action | None:
        job_action = job.definition.action
        return job_action.main if message.action == "main" else job_action.error

    def _log_attempt(
        self,
        job: Job,
        message: ExecutionMessage,
        action: Action | None,
        job_action: JobAction,
        report: ExecutionReport,
        result: ActionResult,
        started: datetime,
        ended: datetime,
        step: NextStep,
        retry_at: datetime | None,
    ) -> None:
        """One INFO line per attempt with every fact an operator acts on, also as ``scheduler_*`` fields
        (never a secret: the target is ``scheme://host[:port]`` or ``account/queue``)."""
        action_type, target = describe_action(action)
        policy = job_action.retry_policy
        attempts = policy.retry_count + 1 if policy.has_retry_after(0) else 1
        status = status_code_of(result)
        duration = _seconds(ended - started)
        lateness = _seconds(started - message.occurrence_time)
        if step is NextStep.RETRY and retry_at is not None:
            next_text = f"retry at {format_instant(retry_at)}"
        else:
            next_text = {
                NextStep.RETRY: "retry",
                NextStep.ERROR_ACTION: "error action sent",
                NextStep.COMPLETED: "job Completed",
                NextStep.FAULTED: "job Faulted",
                NextStep.CONTINUE: "run on demand done" if message.cause == Cause.MANUAL else "schedule continues",
            }[step]
        coalesced = f" (late run standing for {message.missed} occurrences)" if message.missed > 1 else ""
        fields = {
            **message_fields(message, job),
            "scheduler_attempts": attempts,
            "scheduler_action_type": action_type,
            "scheduler_target": target,
            "scheduler_outcome": report.outcome.value,
            "scheduler_status_code": status,
            "scheduler_duration_s": duration,
            "scheduler_lateness_s": lateness,
            "scheduler_next": step.value,
            "scheduler_retry_at": format_instant(retry_at) if retry_at is not None else None,
            "scheduler_execution_id": report.execution_id,
        }
        log.info(
            "%s/%s: occurrence %s%s %s attempt %d/%d %s %s -> %s%s in %.3f s, %.3f s late; next: %s",
            job.ref.collection.name,
            job.ref.name,
            message.occurrence,
            coalesced,
            message.action,
            message.attempt + 1,
            attempts,
            action_type,
            target,
            report.outcome.value,
            f" ({status})" if status is not None else "",
            duration,
            lateness,
            next_text,
            extra=fields,
        )
        meters = telemetry.instruments()
        meters.attempts.add(1, {"outcome": report.outcome.value, "action_type": action_type})
        if message.attempt == 0 and message.action == "main" and message.cause == Cause.SCHEDULE:
            meters.lateness.record(max(0.0, lateness), {"action_type": action_type})

    # ------------------------------------------------------------------------------------------ history

    def _repeat(self, job: Job, message: ExecutionMessage) -> int:
        if message.cause == Cause.MANUAL:
            return 0
        try:
            return schedule_of(job).ordinal(message.occurrence_time)
        except Exception:  # ordinal is informational; never lose a history row over it
            return 0

    def _history(
        self,
        job: Job,
        message: ExecutionMessage,
        execution_id: str,
        result: ActionResult,
        claimed_at: datetime,
        started: datetime,
        ended: datetime,
    ) -> HistoryEntry:
        text = result.message
        if message.missed > 1:
            text += f" (late run standing for {message.missed} occurrences missed while the service was down)"
        elif message.cause == Cause.MANUAL:
            text += " (run on demand)"
        return HistoryEntry(
            execution_id=execution_id,
            row_key=history_row_key(claimed_at, execution_id),  # fixed per holder: a retried write is one row
            start_time=started,
            end_time=ended,
            expected_execution_time=message.occurrence_time,
            action_name=ActionName.MAIN if message.action == "main" else ActionName.ERROR,
            status=HistoryStatus.COMPLETED if result.succeeded else HistoryStatus.FAILED,
            message=text,
            retry_count=message.attempt,
            repeat_count=self._repeat(job, message),
        )

    def _record_lost(self, job: Job, message: ExecutionMessage, execution_id: str, lost: LostAttempt) -> None:
        """Record the attempt of a holder that died mid-call, unless it recorded it itself before dying."""
        record = HistoryEntry(
            execution_id=execution_id,
            row_key=history_row_key(lost.claimed_at, execution_id),  # the row the lost holder would have written
            start_time=lost.claimed_at,
            end_time=self.clock(),
            expected_execution_time=message.occurrence_time,
            action_name=ActionName.MAIN if message.action == "main" else ActionName.ERROR,
            status=HistoryStatus.FAILED,
            message=f"{WORKER_LOST} (worker {lost.worker} stopped before recording it; run again)",
            retry_count=message.attempt,
            repeat_count=self._repeat(job, message),
        )
        durably("history of a lost attempt", lambda: self.stores.history.add_if_absent(job.ref, record))
        log.warning(
            "job %s: attempt %s of %s lost with worker %s; run again",
            job.ref.identity,
            execution_id,
            message.occurrence,
            lost.worker,
        )

    # -------------------------------------------------------------------------------------- follow-ups

    def _follow_up(
        self,
        job: Job,
        message: ExecutionMessage,
        result: ActionResult,
        action: JobAction,
        now: datetime,
    ) -> tuple[NextStep, datetime | None]:
        """Send what follows the attempt and count it; returns what follows (and when a retry runs)."""
        policy = action.retry_policy  # the main action's: its error action is retried under it too
        final_state: JobState | None = None
        faulted = False
        step, retry_at = NextStep.CONTINUE, None
        meters = telemetry.instruments()
        if not result.succeeded and policy.has_retry_after(message.attempt):
            retry = replace(
                message,
                attempt=message.attempt + 1,
                cause=Cause.RETRY if message.cause == Cause.SCHEDULE else message.cause,
            )
            due = now + policy.delay(message.attempt)
            self._send_watched(job, retry, due, now)
            step, retry_at = NextStep.RETRY, due
            meters.retries.add(1, {"action": message.action})
        elif message.action == "main":
            if not result.succeeded:
                faulted = True
                if action.error is not None:
                    error = replace(message, action="error", attempt=0)
                    self._send_watched(job, error, now, now)
                    step = NextStep.ERROR_ACTION
                    meters.error_actions.add(1)
                elif message.last:
                    final_state = JobState.FAULTED
            elif message.last:
                final_state = JobState.COMPLETED
        elif message.last:  # the error action's chain ended: the occurrence faulted
            final_state = JobState.FAULTED
        if message.cause == Cause.MANUAL:
            final_state = None  # an on-demand run never ends the job's schedule
        count_attempt(self.stores.jobs, job, message, result.succeeded, faulted, final_state, now)
        if final_state is not None:
            step = NextStep.COMPLETED if final_state == JobState.COMPLETED else NextStep.FAULTED
            meters.jobs_finished.add(1, {"state": str(final_state)})
        return step, retry_at

    def _send_watched(self, job: Job, follow: ExecutionMessage, due: datetime, now: datetime) -> None:
        """Send a follow-up attempt to run at ``due``, watched like a dispatched one (a repeated send is
        harmless: its claim runs it once)."""
        text = follow.to_json()
        durably(
            "follow-up message",
            lambda: delay_message(self.send, lambda at: self.dispatcher.park_retry(job, follow, at), text, due, now),
        )
        durably("follow-up watchdog", lambda: self.dispatcher.watch(job, follow, due))
