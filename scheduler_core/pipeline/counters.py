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

**The backfill ledger.** A backfill's occurrences count towards their plan's limits
(:class:`~scheduler_core.pipeline.policies.BackfillLimits`) from the moment it is accepted until their
attempts are over. Each occurrence is one row of its collection's ledger (:func:`ledger_row`): a partition of
the due-index table of its own (``backfills|<collection>``, which no scan reads), one row per occurrence
plus one *tail* per backfill (the job's pace after it, for the rate). The service writes a backfill's rows
before it sends a message (:mod:`scheduler_core.service.jobs`), and the executor deletes an occurrence's row
when its attempts are over (:func:`backfill_ended`): a delete, so a repeated one does nothing. A row whose
occurrence will never end that way (its message dropped as stale, or as poison, a worker lost for good) stops
counting by itself (:func:`~scheduler_core.pipeline.policies.live_backfills`); the service removes such rows
when it next accepts a backfill of the collection.
"""

from __future__ import annotations

import functools
import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from scheduler_core.errors import ContentionError, EtagMismatchError
from scheduler_core.model import CLAIM_LEASE, DueEntry, Job, JobState
from scheduler_core.pipeline import policies
from scheduler_core.pipeline.attempts import EARLY_MARGIN_SECONDS
from scheduler_core.pipeline.durable import durably
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.pipeline.policies import LedgerEntry
from scheduler_core.ports import DueIndex, JobStore
from scheduler_core.storage.keys import SEPARATOR, format_due

log = logging.getLogger("scheduler_core.execute")

#: Tries of the overlap decision's guarded write of a job (``overlap.OverlapGate.admit``) before its message is
#: looked at again a second later. The counters write is bounded in time instead (:data:`COUNTER_BUDGET`).
COUNTER_ATTEMPTS = 10
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


class Backoff:
    """The waits between lost races of one guarded write: after the ``n``-th lost race a random time up to
    ``first * 2**n`` seconds, at most ``cap`` ("full jitter", so that racers spread instead of meeting again),
    for ``budget`` seconds in all from the first try (defaults: :data:`COUNTER_BUDGET`,
    :data:`COUNTER_BACKOFF`, :data:`COUNTER_BACKOFF_CAP`, read when it is made). ``sleep``, ``timer`` and
    ``jitter`` are seams for tests."""

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
        self.budget = COUNTER_BUDGET if budget is None else budget
        self.sleep = sleep or time.sleep
        self.timer = timer or time.monotonic
        self.first = COUNTER_BACKOFF if first is None else first
        self.cap = COUNTER_BACKOFF_CAP if cap is None else cap
        self.jitter = jitter or random.uniform
        #: Races lost so far.
        self.lost = 0
        self.started = self.timer()

    @property
    def elapsed(self) -> float:
        """Seconds since the first try."""
        return self.timer() - self.started

    def wait(self) -> bool:
        """After a lost race: wait, and say whether to try again (False: the budget is spent; no wait)."""
        bound = min(self.cap, self.first * 2 ** min(self.lost, 30))
        self.lost += 1
        pause = self.jitter(0, bound)
        if self.elapsed + pause > self.budget:
            return False
        self.sleep(pause)
        return True


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
    main = message.is_main
    key = message.attempt_key
    waits = backoff or Backoff()
    current: Job | None = job
    while True:
        if current is None:
            return None
        if key in current.counted:
            return None  # this attempt's counters are in (a write whose answer was lost, or a lost worker's)
        changes: dict[str, Any] = {}
        if main:
            changes["execution_count"] = current.execution_count + 1
            changes["failure_count"] = current.failure_count + (0 if succeeded else 1)
            changes["last_execution_time"] = now
        if faulted:
            changes["faulted_count"] = current.faulted_count + 1
        if final_state and current.generation == job.generation and current.state == JobState.ENABLED:
            changes.update(
                state=final_state,
                ended_at=now,
                next_execution_time=None,
            )
        if adjust is not None:
            changes.update(adjust(current))
        if not changes:
            return None
        updated = replace(current, **changes, counted=(*current.counted, key)[-COUNTED_KEEP:])
        try:
            written = durably("counters", functools.partial(jobs.save, updated, create=False, etag=current.etag))
        except EtagMismatchError:
            pass  # changed meanwhile (or by this write, whose answer was lost): read and decide again
        else:
            if waits.lost:
                log.debug("job %s: counters written after %d lost race(s)", job.ref.identity, waits.lost)
            return written
        if not waits.wait():
            log.error(
                "job %s: counters of attempt %s not written: %d races lost in %.1f s; the message is retried",
                job.ref.identity,
                key,
                waits.lost,
                waits.elapsed,
            )
            raise ContentionError(
                f"job {job.ref.identity}: counters not written after {waits.lost} lost races in "
                f"{waits.elapsed:.1f} s (other attempts of the job kept changing it)"
            )
        current = durably("job read", lambda: jobs.get_by_keys(job.ref.partition_key, job.ref.row_key))


# --------------------------------------------------------------------------------------- backfill ledger

#: The due-index partition of a collection's backfill ledger: this, the separator, the collection's identity.
LEDGER = "backfills"
#: The kind of an occurrence row of the ledger, and of a backfill's tail row.
OCCURRENCE_KIND = "backfill"
TAIL_KIND = "backfill-tail"
#: Every ledger row key starts with this and the separator (so the partition is one key range whatever the
#: names: ``b|<job row key>|<backfill id>|<occurrence, sortable; "~" for the tail>``).
_KEY_START = "b"


def ledger_partition(collection_identity: str) -> str:
    """The due-index partition of the ledger of the collection whose identity (its jobs' partition) is given."""
    return f"{LEDGER}{SEPARATOR}{collection_identity}"


def ledger_key(job_row: str, backfill: str, occurrence: datetime | None) -> str:
    """The ledger row key of one occurrence of a backfill of a job (``occurrence`` None: the backfill's tail)."""
    return SEPARATOR.join((_KEY_START, job_row, backfill, "~" if occurrence is None else format_due(occurrence)))


def _range(prefix: str) -> tuple[str, str]:
    """The ``(after, before)`` bounds of :meth:`DueIndex.due_before` that hold exactly the keys starting with
    ``prefix`` (which ends with the separator: no key part holds one)."""
    return prefix, prefix[:-1] + chr(ord(SEPARATOR) + 1)


def ledger_row(job_partition: str, entry: LedgerEntry) -> DueEntry:
    """The due-index row of a ledger entry of a job of the collection ``job_partition`` names."""
    data: dict[str, Any] = {"backfill": entry.backfill, "deadline": format_due(entry.deadline)}
    if entry.occurrence is not None:
        data["occurrence"] = format_due(entry.occurrence)
    if entry.chain:
        data.update(chain=True, gap=entry.gap.total_seconds())
    return DueEntry(
        shard=ledger_partition(job_partition),
        row_key=ledger_key(entry.job_row, entry.backfill, entry.occurrence),
        job_partition=job_partition,
        job_row=entry.job_row,
        generation=entry.generation,
        due=entry.slot,
        message=json.dumps(data, separators=(",", ":")),
        kind=OCCURRENCE_KIND if entry.occurrence is not None else TAIL_KIND,
    )


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def ledger_entry(row: DueEntry) -> LedgerEntry | None:
    """The ledger entry a due-index row of a ledger partition holds (None: not one, or unreadable)."""
    if row.kind not in (OCCURRENCE_KIND, TAIL_KIND) or not row.message:
        return None
    try:
        data = json.loads(row.message)
        occurrence = data.get("occurrence")
        return LedgerEntry(
            job_row=row.job_row,
            backfill=str(data.get("backfill") or ""),
            occurrence=_instant(occurrence) if occurrence and row.kind == OCCURRENCE_KIND else None,
            generation=row.generation,
            slot=row.due,
            deadline=_instant(str(data["deadline"])),
            chain=bool(data.get("chain")),
            gap=timedelta(seconds=float(data.get("gap") or 0)),
            key=row.row_key,
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def read_ledger(due: DueIndex, collection_identity: str, job_row: str | None = None) -> list[LedgerEntry]:
    """The ledger rows of a collection (of one of its jobs when ``job_row`` is given), in key order."""
    after, before = _range(SEPARATOR.join((_KEY_START, job_row, "")) if job_row else _KEY_START + SEPARATOR)
    partition = ledger_partition(collection_identity)
    entries = (ledger_entry(row) for row in due.due_before(partition, before, after=after))
    return [entry for entry in entries if entry is not None and (job_row is None or entry.job_row == job_row)]


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
    if following is None or following > _instant(message.until):
        return None
    _, before = _range(SEPARATOR.join((_KEY_START, message.job_row, backfill, "")))
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
