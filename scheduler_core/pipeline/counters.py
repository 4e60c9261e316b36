"""Counters: each attempt counted once in its job, and the backfill occurrences each collection has outstanding.

**The job's counters.** ``executionCount``, ``failureCount`` and ``lastExecutionTime`` move with each attempt
of the main action, ``faultedCount`` with each occurrence that faulted, and the final state with the last
occurrence. The write is guarded by the job's ETag and records the attempt in the job (``counted``, the last
:data:`COUNTED_KEEP` attempts), so a counters write retried after its answer was lost, or repeated by a
worker that took over a dead one's attempt, never counts an attempt twice.

Many attempts of one job finishing at once (a backfill, runs on demand) race for that one row: each lost race
reads the job again and decides again, after a random wait (:class:`Backoff`: "full jitter", up to
:data:`COUNTER_BACKOFF` doubled per lost race, at most :data:`COUNTER_BACKOFF_CAP`), for as long as
:data:`COUNTER_BUDGET` allows, not for a fixed number of tries (it gave up after ten, with no wait: of 300
attempts at once on Azurite, a third were counted). The waits spread the racers out, so that fewer tries
collide; 300 attempts of one job at once are all counted in about 15 s on Azurite, and a backfill's pace (10
starts a second per job at most) keeps such pile-ups rare. Past the budget :func:`count_attempt` raises
:class:`~scheduler_core.errors.ContentionError` rather than lose the count: the attempt's message fails and
is retried by the queue, and the attempt, taken over after its claim's lease like a lost worker's (run
again, its target may see it twice), is counted once through ``counted``. (Counts sharded over several rows
and folded later would take the contention off the row, but every read of a job would have to fold them,
and the ``counted`` key that makes a count idempotent could no longer be written in the same guarded write
as the count.)

The backfill ledger's rows are :mod:`scheduler_core.ledger`'s; :func:`backfill_ended` is where an attempt ends its
occurrence's row.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from scheduler_core import policies, races
from scheduler_core.errors import ContentionError, EtagMismatchError
from scheduler_core.ledger import backfill_range, instant, ledger_entry, ledger_key, ledger_partition, ledger_row
from scheduler_core.model import CLAIM_LEASE, HistoryStatus, Job, JobState
from scheduler_core.pipeline.attempts import EARLY_MARGIN_SECONDS
from scheduler_core.pipeline.durable import durably
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.ports import DueIndex, JobStore

log = logging.getLogger("scheduler_core.execute")

#: How many counted attempts a job remembers (far more than can be in flight, retrying, at once).
COUNTED_KEEP = 16
#: How long (seconds) one attempt's counters write may go on losing races before it gives up (raises): the
#: attempt holds its claim meanwhile (its lease renewed, :mod:`scheduler_core.pipeline.leases`).
COUNTER_BUDGET = 30.0
#: The first wait (seconds) after a lost race is random up to this; the bound doubles with each lost race...
COUNTER_BACKOFF = 0.05
#: ...up to this (seconds). With 300 attempts of one job racing on Azurite, 2 s lost fewest races (about 6
#: per attempt, all counted in about 14 s; 0.5 s lost 10 per attempt and took 18 s).
COUNTER_BACKOFF_CAP = 2.0


class Backoff(races.Backoff):
    """The waits between the lost races of one counters write (:class:`scheduler_core.races.Backoff`): for
    ``budget`` seconds in all, full jitter from ``first`` up to ``cap`` (defaults: :data:`COUNTER_BUDGET`,
    :data:`COUNTER_BACKOFF`, :data:`COUNTER_BACKOFF_CAP`, read when it is made)."""

    def __init__(
        self,
        budget: float | None = None,
        *,
        sleep: Callable[[float], None] | None = None,
        timer: Callable[[], float] | None = None,
        first: float | None = None,
        cap: float | None = None,
        jitter: Callable[[float, float], float] | None = None,
    ) -> None:
        bound = races.Bound(
            budget=COUNTER_BUDGET if budget is None else budget,
            first=COUNTER_BACKOFF if first is None else first,
            cap=COUNTER_BACKOFF_CAP if cap is None else cap,
        )
        super().__init__(bound, sleep=sleep, timer=timer, jitter=jitter)


def count_attempt(
    jobs: JobStore,
    job: Job,
    message: ExecutionMessage,
    succeeded: bool,
    faulted: bool,
    final_state: JobState | None,
    now: datetime,
    adjust: Callable[[Job], dict[str, Any]] | None = None,
    *,
    backoff: Backoff | None = None,
) -> Job | None:
    """Apply an attempt to the job's counters (and final state), once. The first try writes over the job
    as read before the action (``job``): no second read when nothing changed it meanwhile. ``adjust`` adds
    the changes the job's policies make (decided over the job as it is read for each try, in the same
    write). Returns the job as written (None: nothing written: the job is gone, the attempt was counted
    already, or there is nothing to change).

    A lost race (the job changed since it was read) is tried again after a wait (``backoff``, by default a
    :class:`Backoff` of :data:`COUNTER_BUDGET`) from a fresh read, until it is written. When the budget is
    spent first, the attempt is not counted and :class:`~scheduler_core.errors.ContentionError` is raised,
    never swallowed: its caller fails the queue message, whose retry counts the attempt once."""
    key = message.attempt_key
    waits = backoff or Backoff()
    unread = [job]  # the first try writes over the job as read before the action

    def attempt() -> Job | None:
        current = (
            unread.pop()
            if unread
            else durably("job read", lambda: jobs.get_by_keys(job.ref.partition_key, job.ref.row_key))
        )
        if current is None or key in current.counted:
            return None  # gone, or counted already (a write whose answer was lost, or a lost worker's)
        changes = _counts(current, job.generation, message.is_main, succeeded, faulted, final_state, now)
        if adjust is not None:
            changes.update(adjust(current))
        if not changes:
            return None
        updated = replace(current, **changes, counted=(*current.counted, key)[-COUNTED_KEEP:])
        return durably("counters", functools.partial(jobs.save, updated, create=False, etag=current.etag))

    try:
        written = races.race(attempt, waits, lambda error: isinstance(error, EtagMismatchError))
    except races.RacesLost as spent:
        log.error(
            "job %s: counters of attempt %s not written: %d races lost in %.1f s; the message is retried",
            job.ref.identity,
            key,
            spent.lost,
            spent.elapsed,
        )
        raise ContentionError(
            f"job {job.ref.identity}: counters not written after {spent.lost} lost races in "
            f"{spent.elapsed:.1f} s (other attempts of the job kept changing it)"
        ) from None
    if waits.lost and written is not None:
        log.debug("job %s: counters written after %d lost race(s)", job.ref.identity, waits.lost)
    return written


def _counts(
    current: Job,
    generation: int,
    main: bool,
    succeeded: bool,
    faulted: bool,
    final_state: JobState | None,
    now: datetime,
) -> dict[str, Any]:
    """The changes an attempt makes to the job's counters (and final state, when the job as read is still the
    generation it ran under and enabled)."""
    changes: dict[str, Any] = {}
    if main:
        changes["execution_count"] = current.execution_count + 1
        changes["failure_count"] = current.failure_count + (0 if succeeded else 1)
        changes["last_execution_time"] = now
        changes["last_outcome"] = HistoryStatus.COMPLETED.value if succeeded else HistoryStatus.FAILED.value
    if faulted:
        changes["faulted_count"] = current.faulted_count + 1
    if final_state and current.generation == generation and current.state == JobState.ENABLED:
        changes.update(state=final_state, ended_at=now, next_execution_time=None)
    return changes


# --------------------------------------------------------------------------------------- backfill ledger


def send_due(start: datetime, now: datetime) -> datetime | None:
    """The instant to hand to :meth:`~scheduler_core.pipeline.attempts.Attempts.send_at` (which shows a message a
    second or two before the instant it is given) so that a message sent at ``now`` shows no earlier than
    ``start``, at most a second after it (None: ``start`` has come: send it at once)."""
    if start <= now:
        return None
    return now + timedelta(seconds=policies.start_delay(start, now) + EARLY_MARGIN_SECONDS)


def backfill_ended(due: DueIndex, job: Job, message: ExecutionMessage, now: datetime) -> datetime | None:
    """A backfill occurrence's attempts are over (``message``'s attempt ended its occurrence, at ``now``): its
    ledger row is deleted, so it no longer counts towards the backfill limits (a repeated delete does nothing).

    For a backfill run one after another (``message.until``) the next occurrence's row (when the ledger holds
    it) gets a fresh deadline, a lifetime after that occurrence starts, and the answer is when to send it
    (:func:`send_due`; None: at once): at its slot and, when the plan's gap is a second or more (Free: a
    minute), at least that gap after now, so that a chain running behind its slots still keeps the pace. (A
    chain has one call in flight at most; one behind its slots on a plan of a sub-second gap goes on as soon as
    each occurrence ends.) Call this before sending that occurrence, so that its row is renewed before it
    can end."""
    partition = ledger_partition(message.job_partition)
    occurrence = message.occurrence_time
    backfill = message.backfill or ""
    due.delete(partition, ledger_key(message.job_row, backfill, occurrence))
    if not message.until:
        return None
    following = policies.past_schedule(job, occurrence).after(occurrence)
    if following is None or following > instant(message.until):
        return None
    _, before = backfill_range(message.job_row, backfill)
    rows = list(due.due_before(partition, before, after=ledger_key(message.job_row, backfill, occurrence), limit=1))
    entry = ledger_entry(rows[0]) if rows else None
    if entry is None or entry.occurrence != following:
        return None  # a backfill sent before the ledger, or whose row is gone: the next one at once, as before
    start = entry.slot
    if entry.gap >= timedelta(seconds=1):  # a pace a queue's delay can keep (in whole seconds): the Free plan's
        start = max(start, now + entry.gap)  # at most one start per gap, however late the chain runs
    lifetime = policies.backfill_lifetime(job.definition.action.retry_policy, CLAIM_LEASE)
    due.put(ledger_row(message.job_partition, replace(entry, deadline=max(start, now) + lifetime)))
    return send_due(start, now)
