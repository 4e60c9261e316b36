"""What the pipeline reports: its log lines (each with the same facts as ``scheduler_*`` fields), its
OpenTelemetry metrics and the span of each attempt (:mod:`scheduler_core.telemetry`). The dispatcher, the
watchdog and the executor decide; they call one function here per fact they report, with plain values.
Nothing here decides, reads or writes storage, or logs a secret (an action's target is
``scheme://host[:port]`` or ``account/queue``).

The log lines of dispatch and the watchdog go to ``scheduler_core.dispatch``, those of attempts to
``scheduler_core.execute`` (the ``logger`` of a JSON line).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING

from scheduler_core import telemetry
from scheduler_core.actions import ActionResult
from scheduler_core.actions.outcome import reason
from scheduler_core.model import Job, JobState, OccurrenceEntry
from scheduler_core.model.actions import Action, HttpAction, NotificationKind, ServiceBusAction, StorageQueueAction
from scheduler_core.model.retry import RetryPolicy
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import SEPARATOR

if TYPE_CHECKING:
    from opentelemetry.trace import Span

dispatch_log = logging.getLogger("scheduler_core.dispatch")
execute_log = logging.getLogger("scheduler_core.execute")


class Stale(Enum):
    """Why a message is stale (the ``scheduler_reason`` of its log line)."""

    DELETED = "deleted"  # the job is gone
    EDITED = "edited"  # the job was changed (PUT, PATCH, enable, disable) since dispatch: a new generation
    DISABLED = "disabled"  # the job is disabled
    FINISHED = "finished"  # the job ended (Completed or Faulted)
    MET = "met"  # a deadline notification's occurrence succeeded in time


class NextStep(Enum):
    """What follows an attempt (the ``scheduler_next`` of its log line)."""

    RETRY = "retry"  # retried at ``scheduler_retry_at``
    ERROR_ACTION = "error_action"  # the last retry failed: the error action is sent
    COMPLETED = "completed"  # the job ended Completed
    FAULTED = "faulted"  # the job ended Faulted
    CONTINUE = "continue"  # the schedule goes on (or, for a run on demand, nothing follows)
    POLL = "poll"  # the operation a 202 started still runs: polled at ``scheduler_retry_at``


# ------------------------------------------------------------------------------------------ dispatch


def tick(shards: int, executions: int | None, poison: int | None) -> None:
    """The dispatch timer ticked: ``shards`` scan messages sent; the queue depths it sampled (None: not read)."""
    telemetry.instruments().dispatch_ticks.add(1)
    dispatch_log.info(
        "dispatch tick: %d scans sent; execution queue %s, poison queue %s",
        shards,
        "?" if executions is None else executions,
        "?" if poison is None else poison,
        extra={
            "scheduler_shards": shards,
            "scheduler_execution_queue_depth": executions,
            "scheduler_poison_queue_length": poison,
        },
    )


def queue_depths(executions: int | None, poison: int | None) -> None:
    """Record the sampled queue depths on the gauges (a depth not read is not recorded)."""
    meters = telemetry.instruments()
    if executions is not None:
        meters.execution_queue_depth.set(executions)
    if poison is not None:
        meters.poison_queue_length.set(poison)


def scan(
    shard: str, duration: float, rows: int, fired: int, coalesced: int, retries: int, stale: int, rescued: int
) -> None:
    """A shard was scanned: its duration and row count as metrics, one line (DEBUG when nothing happened)."""
    meters = telemetry.instruments()
    meters.scan_duration.record(duration, {"shard": shard})
    meters.scan_rows.add(rows, {"shard": shard})
    busy = fired or coalesced or retries or stale or rescued
    dispatch_log.log(
        logging.INFO if busy else logging.DEBUG,  # an empty scan (33 of 34 lines when idle) is DEBUG
        "shard %s scanned in %.3f s: rows=%d fired=%d coalesced=%d retries=%d stale=%d rescued=%d",
        shard,
        duration,
        rows,
        fired,
        coalesced,
        retries,
        stale,
        rescued,
        extra={
            "scheduler_shard": shard,
            "scheduler_scan_duration_s": round(duration, 3),
            "scheduler_rows": rows,
            "scheduler_fired": fired,
            "scheduler_coalesced": coalesced,
            "scheduler_retries": retries,
            "scheduler_stale": stale,
            "scheduler_rescued": rescued,
        },
    )


def row_dropped(row: OccurrenceEntry, reason: str, job: Job | None = None) -> None:
    """A due-index row dropped without firing, and why (deleted, edited, disabled, abandoned write)."""
    collection = job.ref.collection.name if job is not None else row.job_partition
    name = job.ref.name if job is not None else row.job_row
    dispatch_log.info(
        "%s/%s: due entry for %s dropped: job %s",
        collection,
        name,
        format_instant(row.due),
        reason,
        extra={
            "scheduler_collection": collection,
            "scheduler_job": name,
            "scheduler_occurrence": format_instant(row.due),
            "scheduler_outcome": "stale",
            "scheduler_reason": reason,
        },
    )


def coalesced(job: Job, occurrence: datetime, missed: int, resume: datetime | None) -> None:
    """Occurrences missed from ``occurrence`` on became one late run standing for ``missed`` of them."""
    telemetry.instruments().coalesced.add(max(missed, 1))
    dispatch_log.info(
        "%s/%s: occurrences from %s up to now were missed; one late run stands for %d; next %s",
        job.ref.collection.name,
        job.ref.name,
        format_instant(occurrence),
        missed,
        format_instant(resume) if resume is not None else "none (the schedule ended)",
        extra={
            "scheduler_collection": job.ref.collection.name,
            "scheduler_job": job.ref.name,
            "scheduler_occurrence": format_instant(occurrence),
            "scheduler_missed": missed,
            "scheduler_next_occurrence": format_instant(resume) if resume is not None else None,
        },
    )


def resent_unclaimed(job: Job, message: ExecutionMessage, looked: datetime) -> None:
    """The watchdog sends an attempt again: nobody had claimed it a lease (and the grace) after it was due (its
    message was lost on its way to a worker, or waits behind a backlog)."""
    _sent_again(
        job,
        message,
        f"not claimed by {format_instant(looked)} (its message lost on its way to a worker, or behind a backlog)",
    )


def rescued(job: Job, message: ExecutionMessage, lease_until: datetime | None) -> None:
    """The watchdog sends an attempt again: its worker died mid-call (its claim's lease ended, not done)."""
    ended = format_instant(lease_until) if lease_until is not None else "?"
    _sent_again(job, message, f"lost with its worker (lease ended {ended})")


def look_not_sent(shard: str, slot: datetime) -> None:
    """A watch look could not be sent: the entries of its slot wait for the tick's scan (a minute at most)."""
    dispatch_log.warning(
        "shard %s: the watch look of %s not sent; the next tick's scan looks at its entries",
        shard,
        format_instant(slot),
        exc_info=True,
        extra={"scheduler_shard": shard},
    )


def _sent_again(job: Job, message: ExecutionMessage, why: str) -> None:
    """One WARNING line for an attempt the watchdog sends again, saying ``why``."""
    dispatch_log.warning(
        "%s/%s: %s attempt %d of occurrence %s %s; sent again",
        job.ref.collection.name,
        job.ref.name,
        message.action,
        message.attempt + 1,
        message.occurrence,
        why,
        extra={
            "scheduler_collection": job.ref.collection.name,
            "scheduler_job": job.ref.name,
            "scheduler_occurrence": message.occurrence,
            "scheduler_action": message.action,
            "scheduler_attempt": message.attempt + 1,
            "scheduler_outcome": "rescued",
            "scheduler_next": "sent again",
        },
    )


# ------------------------------------------------------------------------------------------ attempts


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


def attempt_stale(message: ExecutionMessage, outcome: str, reason: Stale, text: str) -> None:
    """A stale message dropped, and why (one INFO line)."""
    fields = message_fields(message)
    execute_log.info(
        "%s/%s: %s attempt %d of occurrence %s dropped: %s (%s)",
        fields["scheduler_collection"],
        fields["scheduler_job"],
        message.action,
        message.attempt + 1,
        message.occurrence,
        text,
        reason.value,
        extra={**fields, "scheduler_outcome": outcome, "scheduler_reason": reason.value},
    )
    telemetry.instruments().attempts.add(1, {"outcome": outcome, "action_type": "unknown"})


def attempt_skipped(job: Job, message: ExecutionMessage, action: Action | None, outcome: str, why: str) -> None:
    """An attempt not run by this delivery (it already ran, or another worker runs it), and why."""
    fields = message_fields(message, job)
    execute_log.info(
        "%s/%s: %s attempt %d of occurrence %s not run: %s",
        job.ref.collection.name,
        job.ref.name,
        message.action,
        message.attempt + 1,
        message.occurrence,
        why,
        extra={**fields, "scheduler_outcome": outcome, "scheduler_reason": why},
    )
    action_type, _ = describe_action(action)
    telemetry.instruments().attempts.add(1, {"outcome": outcome, "action_type": action_type})


def _next_text(step: NextStep, retry_at: datetime | None, cause: Cause) -> str:
    if step is NextStep.RETRY and retry_at is not None:
        return f"retry at {format_instant(retry_at)}"
    return {
        NextStep.RETRY: "retry",
        NextStep.POLL: "poll",
        NextStep.ERROR_ACTION: "error action sent",
        NextStep.COMPLETED: "job Completed",
        NextStep.FAULTED: "job Faulted",
        NextStep.CONTINUE: f"{'run on demand' if cause == Cause.MANUAL else 'replay'} done"
        if cause.on_request
        else "schedule continues",
    }[step]


def _lateness(
    message: ExecutionMessage, started: datetime, flow_wait: timedelta | None = None
) -> tuple[float, float | None, str]:
    """Seconds from the occurrence to the attempt's start; the scheduler's lateness: seconds from the
    attempt's own due time (:attr:`~ExecutionMessage.due_time`: a retry's retry time, an error action's
    send) to its start, less the time it waited for its flow control key's limits (``flow_wait``, shown
    apart), for the attempts of a scheduled occurrence only (None for a run on demand or a backfill, whose
    start delay is shown apart, and for an attempt whose due time is unknown); and the log line's words for
    them."""
    since = _seconds(started - message.occurrence_time)
    due = message.due_time
    delay = None if due is None else max(0.0, _seconds(started - due - (flow_wait or timedelta(0))))
    if message.cause.on_request or message.cause == Cause.BACKFILL:
        started_after = f", {delay:.3f} s after it was due" if message.due and delay is not None else ""
        return since, None, f"{since:.3f} s after its occurrence{started_after} (not lateness)"
    if delay is None:
        return since, None, f"{since:.3f} s after its occurrence (due time unknown: not lateness)"
    waited = f", after {_seconds(flow_wait):.3f} s waiting for flow control" if flow_wait is not None else ""
    if message.due:
        return since, delay, f"{delay:.3f} s late ({since:.3f} s after its occurrence{waited})"
    return since, delay, f"{delay:.3f} s late{waited}"


def attempt_ran(
    job: Job,
    message: ExecutionMessage,
    action: Action | None,
    policy: RetryPolicy,
    outcome: str,
    execution_id: str,
    result: ActionResult,
    started: datetime,
    ended: datetime,
    step: NextStep,
    retry_at: datetime | None,
    flow_wait: timedelta | None = None,
) -> None:
    """One INFO line per attempt run with every fact an operator acts on, also as ``scheduler_*`` fields; the
    attempt counted by outcome and action type, the lateness of a scheduled occurrence's attempt, and the time
    it waited for its flow control key's limits (``flow_wait``: apart from the lateness). A failed attempt's
    line ends with its reason (``scheduler_reason``: :func:`~scheduler_core.actions.outcome.reason`)."""
    action_type, target = describe_action(action)
    why = None if result.succeeded else reason(result.message)
    attempts = policy.retry_count + 1 if policy.has_retry_after(0) else 1
    duration = _seconds(ended - started)
    since, lateness, after = _lateness(message, started, flow_wait)
    coalesced = f" (late run standing for {message.missed} occurrences)" if message.missed > 1 else ""
    fields = {
        **message_fields(message, job),
        "scheduler_attempts": attempts,
        "scheduler_action_type": action_type,
        "scheduler_target": target,
        "scheduler_outcome": outcome,
        "scheduler_status_code": result.status_code,
        "scheduler_duration_s": duration,
        "scheduler_lateness_s": lateness,
        "scheduler_since_occurrence_s": since,
        "scheduler_next": step.value,
        "scheduler_retry_at": format_instant(retry_at) if retry_at is not None else None,
        "scheduler_execution_id": execution_id,
        "scheduler_reason": why,
        "scheduler_flow_wait_s": _seconds(flow_wait) if flow_wait is not None else None,
    }
    execute_log.info(
        "%s/%s: occurrence %s%s %s attempt %d/%d %s %s -> %s%s in %.3f s, %s; next: %s%s",
        job.ref.collection.name,
        job.ref.name,
        message.occurrence,
        coalesced,
        message.action,
        message.attempt + 1,
        attempts,
        action_type,
        target,
        outcome,
        f" ({result.status_code})" if result.status_code is not None else "",
        duration,
        after,
        _next_text(step, retry_at, message.cause),
        f"; reason: {why}" if why is not None else "",
        extra=fields,
    )
    _count_attempt(outcome, action_type, lateness, flow_wait)


def _count_attempt(outcome: str, action_type: str, lateness: float | None, flow_wait: timedelta | None) -> None:
    """An attempt run, in the metrics: counted by outcome, its lateness and its wait for flow control recorded."""
    meters = telemetry.instruments()
    meters.attempts.add(1, {"outcome": outcome, "action_type": action_type})
    if lateness is not None:
        meters.lateness.record(max(0.0, lateness), {"action_type": action_type})
    if flow_wait is not None:
        meters.flow_wait.record(_seconds(flow_wait), {"action_type": action_type})


def attempt_throttled(job: Job, message: ExecutionMessage, why: str) -> None:
    """An attempt over its flow control key's limits, re-sent for later (``why``)."""
    level = logging.INFO if message.flow is None else logging.DEBUG  # its first wait, then quietly
    execute_log.log(
        level,
        "%s/%s: %s attempt %d of occurrence %s waits: %s",
        job.ref.collection.name,
        job.ref.name,
        message.action,
        message.attempt + 1,
        message.occurrence,
        why,
        extra={**message_fields(message, job), "scheduler_outcome": "throttled", "scheduler_reason": why},
    )


@dataclass(frozen=True)
class AttemptSpan:
    """The span of an attempt being run (:func:`attempt_span`)."""

    span: Span

    def record(self, result: ActionResult) -> ActionResult:
        """Put the attempt's result on its span (outcome, status code; an error status when it failed) and
        return ``result``."""
        from opentelemetry.trace import StatusCode

        self.span.set_attribute("scheduler.outcome", "succeeded" if result.succeeded else "failed")
        if result.status_code is not None:
            self.span.set_attribute("scheduler.status_code", result.status_code)
        if not result.succeeded:
            self.span.set_status(StatusCode.ERROR, "the action failed")
        return result


@contextmanager
def attempt_span(job: Job, message: ExecutionMessage, action: Action | None) -> Iterator[AttemptSpan]:
    """One span per attempt run (``scheduler.attempt``, kind consumer: it consumes an execution message),
    current while the action runs, so that an HTTP call is its child and sends its context to the target
    (``traceparent``). Attributes: ``scheduler.subscription``, ``scheduler.resource_group``,
    ``scheduler.collection``, ``scheduler.job``, ``scheduler.occurrence``, ``scheduler.action`` (main|error),
    ``scheduler.attempt`` (from 1), ``scheduler.cause``, ``scheduler.action_type``, ``scheduler.target``
    (``scheme://host[:port]``, never a path, query or secret), ``scheduler.execution_id`` (the
    ``x-ms-scheduler-execution-id`` the target receives), and from :meth:`AttemptSpan.record`
    ``scheduler.outcome`` and ``scheduler.status_code``. The executor runs the action inside it::

        with reporting.attempt_span(job, message, action) as span:
            outcome = span.record(self.runner.run(action, context))
    """
    from opentelemetry.trace import SpanKind

    action_type, target = describe_action(action)
    ref = job.ref
    attributes: dict[str, str | int] = {
        "scheduler.subscription": ref.collection.subscription,
        "scheduler.resource_group": ref.collection.resource_group,
        "scheduler.collection": ref.collection.name,
        "scheduler.job": ref.name,
        "scheduler.occurrence": message.occurrence,
        "scheduler.action": message.action,
        "scheduler.attempt": message.attempt + 1,
        "scheduler.cause": str(message.cause),
        "scheduler.action_type": action_type,
        "scheduler.target": target,
        "scheduler.execution_id": message.stable_execution_id(),
    }
    with telemetry.tracer().start_as_current_span(
        "scheduler.attempt", kind=SpanKind.CONSUMER, attributes=attributes
    ) as span:
        yield AttemptSpan(span)


def worker_lost(job: Job, message: ExecutionMessage, execution_id: str, worker: str, again: bool = True) -> None:
    """An attempt whose worker died before recording it was recorded by the worker that took it over (and is
    run again, unless ``again`` is False: counted by the lost worker, or given up)."""
    execute_log.warning(
        "job %s: attempt %s of %s lost with worker %s; %s",
        job.ref.identity,
        execution_id,
        message.occurrence,
        worker,
        "run again" if again else "not run again",
    )


def attempt_given_up(job: Job, message: ExecutionMessage, execution_id: str, takeovers: int) -> None:
    """An attempt whose workers were lost ``takeovers`` times is recorded as failed instead of run again."""
    execute_log.warning(
        "job %s: attempt %s of %s given up: the worker running it was lost %d times (its action most likely "
        "stops its worker); recorded as failed",
        job.ref.identity,
        execution_id,
        message.occurrence,
        takeovers,
    )


def retry_sent(action: str) -> None:
    """A failed attempt of ``action`` (``main`` or ``error``) was sent again to retry."""
    telemetry.instruments().retries.add(1, {"action": action})


def error_action_sent() -> None:
    """The main action's last retry failed: the error action was sent."""
    telemetry.instruments().error_actions.add(1)


def notification_sent(kind: NotificationKind) -> None:
    """An occurrence's end sent the job's ``kind`` notification (one INFO line)."""
    execute_log.info("notification sent: %s", kind)


def job_finished(state: JobState) -> None:
    """The job ended (``Completed`` or ``Faulted``)."""
    telemetry.instruments().jobs_finished.add(1, {"state": str(state)})
