"""Due-index entries: what fires when, one type per kind.

:class:`DueEntry` is an entry as stored: every column of the due-index table, whatever its kind (the
:class:`~scheduler_core.ports.DueIndex` port reads and writes it). The pipeline works with the typed kinds,
converted once where an entry is read (:func:`typed`) and written (``entry()``):

- :class:`OccurrenceEntry`: a job's next occurrence (kind "", no message);
- :class:`ParkedEntry`: an attempt due later than a queue can hold it, parked until it is near (kind "",
  with its message);
- :class:`WatchEntry`: the watch over a dispatched attempt (kind :data:`WATCH`, with its message);
- :class:`HeartbeatEntry` and :class:`ShardsEntry`: the dispatch tick's heartbeat and its record of the most
  shards scanned, in a shard of their own.

The backfill ledger's entries live in partitions of their own and have their own type
(:class:`~scheduler_core.policies.LedgerEntry`, :mod:`scheduler_core.ledger`). Every shape written by an
earlier version reads as its kind: a parked retry was written with kind "" and its message before kinds
existed, and still is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from scheduler_core.storage.keys import JobRef, due_row_key

#: The kind of a due-index entry that watches a dispatched attempt (see ``pipeline/watches.py``).
WATCH = "watch"
#: The kind of the dispatch tick's heartbeat entry.
HEARTBEAT = "heartbeat"
#: The kind of the entry that records the most shards a tick has scanned.
SHARDS = "shards"


@dataclass(frozen=True)
class DueEntry:
    """A due-index entry as stored: ``shard`` and ``row_key`` place it in the index (``row_key`` sorts by
    ``due``); ``kind`` says which of the typed entries it is (:func:`typed`), and the other columns are those
    of its kind (unused ones empty)."""

    shard: str
    row_key: str
    job_partition: str
    job_row: str
    generation: int
    due: datetime
    message: str | None = None
    written_at: datetime | None = None
    kind: str = ""
    checks: int = 0  # watches: how many times the watchdog found the attempt not yet claimed
    #: Watches: the resend of an attempt nobody claimed was held back (its queue was behind): still owed.
    held: bool = False
    #: The shards entry only: the most due-index shards a tick has scanned.
    shards: int = 0


@dataclass(frozen=True)
class _JobEntry:
    """The columns every entry of a job has: where it is, whose it is (the job's keys and generation), when it
    is due, and when it was last written (as read; None: not read from the index)."""

    shard: str
    row_key: str
    job_partition: str
    job_row: str
    generation: int
    due: datetime
    written_at: datetime | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class OccurrenceEntry(_JobEntry):
    """A job's next occurrence: a scan fires it when it is due and replaces it by the following one."""

    @classmethod
    def of(cls, shard: str, job: JobRef, generation: int, due: datetime) -> OccurrenceEntry:
        """The entry of ``job``'s ``generation`` due at ``due`` in ``shard`` (its row key: :func:`due_row_key`)."""
        return cls(shard, due_row_key(due, job.identity, generation), job.partition_key, job.row_key, generation, due)

    def entry(self) -> DueEntry:
        return DueEntry(self.shard, self.row_key, self.job_partition, self.job_row, self.generation, self.due)


@dataclass(frozen=True)
class ParkedEntry(_JobEntry):
    """An attempt (a retry) due later than a queue can hold a message: a scan sends ``message`` when it is
    near."""

    message: str

    def entry(self) -> DueEntry:
        return DueEntry(
            self.shard, self.row_key, self.job_partition, self.job_row, self.generation, self.due, self.message
        )


@dataclass(frozen=True)
class WatchEntry(_JobEntry):
    """The watch over a dispatched attempt (``message``): due when its claim's lease would end; ``checks``
    counts the looks that found it not yet claimed, ``held`` a resend still owed (held back while its queue
    was behind, or while it waited its turn)."""

    message: str
    checks: int = 0
    held: bool = False

    def entry(self) -> DueEntry:
        return DueEntry(
            self.shard,
            self.row_key,
            self.job_partition,
            self.job_row,
            self.generation,
            self.due,
            self.message,
            kind=WATCH,
            checks=self.checks,
            held=self.held,
        )


@dataclass(frozen=True)
class HeartbeatEntry:
    """The dispatch tick's heartbeat: ``due`` is when the last tick ran."""

    shard: str
    row_key: str
    due: datetime

    def entry(self) -> DueEntry:
        return DueEntry(self.shard, self.row_key, "", "", 0, self.due, kind=HEARTBEAT)


@dataclass(frozen=True)
class ShardsEntry:
    """The most due-index shards a tick has scanned (``shards``, recorded at ``due``), so that a deployment
    whose ``SCHEDULER_DUE_SHARDS`` was lowered keeps scanning the shards that still hold entries."""

    shard: str
    row_key: str
    due: datetime
    shards: int

    def entry(self) -> DueEntry:
        return DueEntry(self.shard, self.row_key, "", "", 0, self.due, kind=SHARDS, shards=self.shards)


#: The typed kinds of the entries of the due-index's shards.
TypedEntry = OccurrenceEntry | ParkedEntry | WatchEntry | HeartbeatEntry | ShardsEntry


def typed(stored: DueEntry) -> TypedEntry | None:
    """The typed entry a stored one holds (None: a kind this version does not know, such as a backfill
    ledger's row, or one written by a newer version: left alone)."""
    s = stored
    if s.kind == "":
        if s.message is not None:
            return ParkedEntry(
                s.shard, s.row_key, s.job_partition, s.job_row, s.generation, s.due, s.message, written_at=s.written_at
            )
        return OccurrenceEntry(
            s.shard, s.row_key, s.job_partition, s.job_row, s.generation, s.due, written_at=s.written_at
        )
    if s.kind == WATCH and s.message is not None:
        return WatchEntry(
            s.shard,
            s.row_key,
            s.job_partition,
            s.job_row,
            s.generation,
            s.due,
            s.message,
            s.checks,
            s.held,
            written_at=s.written_at,
        )
    if s.kind == HEARTBEAT:
        return HeartbeatEntry(s.shard, s.row_key, s.due)
    if s.kind == SHARDS:
        return ShardsEntry(s.shard, s.row_key, s.due, s.shards)
    return None
