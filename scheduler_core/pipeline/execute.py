"""Execute: run one attempt of one occurrence, exactly once, and record it.

The executor reloads the job the message names (messages never carry definitions or secrets), drops the
message when the job is gone, was changed (generation) or disabled since dispatch, claims the attempt
(see :mod:`scheduler_core.pipeline.claims`), runs the action, writes a history row, and updates the
job's counters with an ETag-guarded merge. A failed attempt with retries left is re-sent with a delay;
after the last retry the error action runs under the same policy and the occurrence counts as faulted.
A job whose last occurrence completes ends ``Completed``; one whose last occurrence faults ends ``Faulted``.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from scheduler_core.actions import ActionContext, ActionResult, ActionRunner
from scheduler_core.definitions import restore_secrets
from scheduler_core.errors import ConflictError, PreconditionFailedError
from scheduler_core.pipeline.claims import ClaimOutcome, ClaimStore
from scheduler_core.pipeline.dispatch import Dispatcher, Send, delay_message
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.pipeline.retry import RetryPolicy
from scheduler_core.schedules import schedule_of
from scheduler_core.storage.keys import history_row_key
from scheduler_core.storage.tables import HistoryRecord, JobRecord, Stores

log = logging.getLogger("scheduler_core.execute")

#: How long a claim protects a running attempt: the action timeout plus a margin.
CLAIM_LEASE = timedelta(seconds=120)
#: Attempts of one job's counters update before giving up (other executors race on the same row).
COUNTER_ATTEMPTS = 10
#: A message that appears before its occurrence (queues count whole seconds) is held this long at most.
MAX_EARLY_WAIT = timedelta(seconds=3)

Clock = Callable[[], datetime]


class Outcome(Enum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DUPLICATE = "duplicate"  # already ran
    BUSY = "busy"  # another worker runs it; re-sent for later
    STALE = "stale"  # job changed, disabled or deleted since dispatch


@dataclass(frozen=True)
class ExecutionReport:
    outcome: Outcome
    message: str = ""


class Executor:
    def __init__(
        self,
        stores: Stores,
        claims: ClaimStore,
        runner: ActionRunner,
        send: Send,
        dispatcher: Dispatcher,
        clock: Clock,
        worker: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.stores = stores
        self.claims = claims
        self.runner = runner
        self.send = send
        self.dispatcher = dispatcher
        self.clock = clock
        self.worker = worker or f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}"
        self.sleep = sleep

    def execute(self, message: ExecutionMessage) -> ExecutionReport:
        job = self.stores.jobs.get_by_keys(message.job_partition, message.job_row)
        if job is None:
            return ExecutionReport(Outcome.STALE, "job deleted")
        if message.trigger != "manual":
            if job.generation != message.generation:
                return ExecutionReport(Outcome.STALE, "job changed since dispatch")
            if job.state != "Enabled":
                return ExecutionReport(Outcome.STALE, f"job is {job.state}")
        occurrence = message.occurrence_time
        claim_row = ClaimStore.row_key(occurrence, message.action, message.attempt, message.trigger)
        outcome, claim = self.claims.claim(job.ref.identity, claim_row, self.worker, self.clock(), CLAIM_LEASE)
        if outcome is ClaimOutcome.DONE:
            return ExecutionReport(Outcome.DUPLICATE)
        if outcome is ClaimOutcome.BUSY or claim is None:
            self.send(message.to_json(), int(CLAIM_LEASE.total_seconds()))
            return ExecutionReport(Outcome.BUSY)

        early = occurrence - self.clock()
        if timedelta(0) < early <= MAX_EARLY_WAIT and message.attempt == 0 and message.action == "main":
            self.sleep(early.total_seconds())  # fire at the due instant, not at the queue's whole second
        definition = restore_secrets(job.properties, job.secrets)
        main_action: dict[str, Any] = definition["action"]
        action = main_action if message.action == "main" else main_action.get("errorAction") or {}
        context = ActionContext(
            job_id=job.ref.resource_id,
            collection_id=job.ref.collection.resource_id,
            expected_time=occurrence,
            execution_id=message.execution_id or uuid.uuid4().hex,
            retry_count=message.attempt,
        )
        started = self.clock()
        result = self.runner.run(action, context)
        ended = self.clock()
        self._record(job, message, context, result, started, ended)
        self.claims.complete(claim, ended)
        self._follow_up(job, message, result, RetryPolicy.from_action(main_action), ended)
        return ExecutionReport(Outcome.SUCCEEDED if result.succeeded else Outcome.FAILED, result.message)

    # ------------------------------------------------------------------------------------------ history

    def _record(
        self,
        job: JobRecord,
        message: ExecutionMessage,
        context: ActionContext,
        result: ActionResult,
        started: datetime,
        ended: datetime,
    ) -> None:
        text = result.message
        if message.missed > 1:
            text += f" (late run standing for {message.missed} occurrences missed while the service was down)"
        elif message.trigger == "manual":
            text += " (run on demand)"
        repeat = 0
        if message.trigger != "manual":
            try:
                repeat = schedule_of(job).ordinal(message.occurrence_time)
            except Exception:  # ordinal is informational; never lose a history row over it
                repeat = 0
        self.stores.history.add(
            job.ref,
            HistoryRecord(
                execution_id=context.execution_id,
                row_key=history_row_key(started, context.execution_id),
                start_time=started,
                end_time=ended,
                expected_execution_time=message.occurrence_time,
                action_name="MainAction" if message.action == "main" else "ErrorAction",
                status="Completed" if result.succeeded else "Failed",
                message=text,
                retry_count=message.attempt,
                repeat_count=repeat,
            ),
        )

    # -------------------------------------------------------------------------------------- follow-ups

    def _follow_up(
        self,
        job: JobRecord,
        message: ExecutionMessage,
        result: ActionResult,
        policy: RetryPolicy,
        now: datetime,
    ) -> None:
        final_state: str | None = None
        faulted = False
        if not result.succeeded and policy.has_retry_after(message.attempt):
            retry = replace(
                message,
                attempt=message.attempt + 1,
                execution_id=uuid.uuid4().hex,
                trigger="retry" if message.trigger == "schedule" else message.trigger,
            )
            due = now + policy.delay(message.attempt)
            delay_message(self.send, lambda at: self.dispatcher.park_retry(job, retry, at), retry.to_json(), due, now)
        elif message.action == "main":
            if not result.succeeded:
                faulted = True
                if job.properties.get("action", {}).get("errorAction"):
                    error = replace(message, action="error", attempt=0, execution_id=uuid.uuid4().hex)
                    self.send(error.to_json(), 0)
                elif message.last:
                    final_state = "Faulted"
            elif message.last:
                final_state = "Completed"
        elif message.last:  # the error action's chain ended: the occurrence faulted
            final_state = "Faulted"
        if message.trigger == "manual":
            final_state = None  # an on-demand run never ends the job's schedule
        self._update_counters(job, message, result, faulted, final_state, now)

    def _update_counters(
        self,
        job: JobRecord,
        message: ExecutionMessage,
        result: ActionResult,
        faulted: bool,
        final_state: str | None,
        now: datetime,
    ) -> None:
        counted = message.action == "main"
        for _ in range(COUNTER_ATTEMPTS):
            current = self.stores.jobs.get_by_keys(job.ref.partition_key, job.ref.row_key)
            if current is None:
                return
            changes: dict[str, Any] = {}
            if counted:
                changes["execution_count"] = current.execution_count + 1
                changes["failure_count"] = current.failure_count + (0 if result.succeeded else 1)
                changes["last_execution_time"] = now
            if faulted:
                changes["faulted_count"] = current.faulted_count + 1
            if final_state and current.generation == job.generation and current.state == "Enabled":
                changes.update(
                    state=final_state,
                    properties={**current.properties, "state": final_state},
                    ended_at=now,
                    next_execution_time=None,
                )
            if not changes:
                return
            try:
                self.stores.jobs.save(replace(current, **changes), create=False, etag=current.etag)
                return
            except (PreconditionFailedError, ConflictError):
                continue
        log.error("job %s: counters not updated after %d attempts", job.ref.identity, COUNTER_ATTEMPTS)
