"""Replication: the standby region keeps a copy of the active region's catalog (docs/regions.md, "What is
replicated, and how").

The standby pulls: every :data:`SWEEP` its :class:`Replicator` reads the rows of the replicated tables
(:data:`REPLICATED_TABLES`: job collections with their calendars, and jobs with their state and counters) that
the active region's storage wrote since the last sweep, by the time the storage service stamped on each row, and
writes them over its own. Every :data:`KEYS_EVERY` sweeps it also compares the two tables' keys and deletes what
the active region deleted. Nothing is written on the active region's path: replication costs the active region
only the standby's reads.

The rules it protects:

- **A copy is the active region's row as stored** (secrets, generation, counters and all), applied as a whole:
  applied twice, it is the same row.
- **Every write is copied within two sweeps**: a sweep reads again the rows written :data:`OVERLAP` before the
  newest it copied, so a write whose stamp is older than one already seen (written concurrently) is not missed.
- **A sweep that fails copies what it copied and keeps its place**: the next one starts where the last that
  finished did (the cursor moves only after a table is copied whole).
- **A region that has been active copies everything at its next standby sweep** (its takeover empties its
  :class:`ReplicationState`): its own tables diverged from the peer's while it accepted writes, and the active
  region's are the truth.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from scheduler_core.errors import SchedulerError
from scheduler_core.storage.names import COLLECTIONS_TABLE, JOBS_TABLE

__all__ = [
    "KEYS_EVERY",
    "OVERLAP",
    "REPLICATED_TABLES",
    "SWEEP",
    "Bookmarks",
    "Copy",
    "Replica",
    "ReplicationState",
    "Replicator",
    "Row",
    "SweepReport",
]

log = logging.getLogger("scheduler_core.regions")

#: The tables the standby copies (their base names): collections (calendars live on their rows) and jobs.
REPLICATED_TABLES: tuple[str, ...] = (COLLECTIONS_TABLE, JOBS_TABLE)
#: How often the standby sweeps (seconds): the ``region_replicate`` timer's period.
SWEEP = 10.0
#: How far before the newest stamp copied a sweep reads again.
OVERLAP = timedelta(seconds=30)
#: Every this many sweeps, the keys are compared and what the active region deleted is deleted.
KEYS_EVERY = 6
#: Rows written to the own tables at a time, as they are read from the peer's.
BATCH = 100


@dataclass(frozen=True)
class Row:
    """One stored row: its keys, when the storage service last wrote it, and its properties as stored."""

    partition: str
    row: str
    written: datetime
    values: Mapping[str, Any] = field(repr=False)


class Replica(Protocol):
    """The replicated tables of one region's storage (one class for both ends: the peer is read, the own written).

    Every call raises :class:`~scheduler_core.errors.StorageError` (or a subclass) when the storage cannot be
    reached or refuses; a call against the peer is bounded (seconds, few retries): the peer may be gone."""

    def changed(self, table: str, since: datetime | None) -> Iterator[Row]:
        """The rows of ``table`` the storage wrote at or after ``since`` (None: every row)."""

    def keys(self, table: str) -> set[tuple[str, str]]:
        """The (partition, row) keys of every row of ``table``."""

    def put(self, table: str, rows: Iterable[Row]) -> None:
        """Write ``rows`` over what ``table`` holds under their keys (whole rows: properties they lack go)."""

    def delete(self, table: str, keys: Iterable[tuple[str, str]]) -> None:
        """Delete the rows of ``keys`` from ``table`` (a key with no row is no error)."""


@dataclass(frozen=True)
class ReplicationState:
    """What a region keeps of its replication: per table, the newest stamp copied (``cursors``); when the last
    sweep that finished ended (``swept_at``), how many sweeps ran (``sweeps``), and the last failure (``failed_at``,
    ``error``; cleared by a sweep that finishes)."""

    cursors: Mapping[str, datetime] = field(default_factory=dict)
    swept_at: datetime | None = None
    sweeps: int = 0
    failed_at: datetime | None = None
    error: str = ""

    @property
    def failing(self) -> bool:
        """Whether the last sweep failed (a sweep that finishes clears the failure)."""
        return self.failed_at is not None


class Bookmarks(Protocol):
    """A region's own record of its replication and of the epoch its due index was built for (its own storage)."""

    def replication(self) -> ReplicationState:
        """The state last written (an empty one when none was)."""

    def set_replication(self, state: ReplicationState) -> None: ...

    def due_epoch(self) -> int | None:
        """The epoch this region's due index was last built or kept for (None: never recorded)."""

    def set_due_epoch(self, epoch: int) -> None: ...


@dataclass(frozen=True)
class Copy:
    """What one table's sweep did: rows copied, rows deleted."""

    table: str
    copied: int = 0
    deleted: int = 0


@dataclass(frozen=True)
class SweepReport:
    """What one sweep did: per table, and whether it finished (``error``: why not)."""

    tables: tuple[Copy, ...] = ()
    error: str = ""

    @property
    def copied(self) -> int:
        return sum(copy.copied for copy in self.tables)

    @property
    def deleted(self) -> int:
        return sum(copy.deleted for copy in self.tables)


class Replicator:
    """Copies ``peer``'s replicated tables into ``own`` (``bookmarks``: where the sweeps are; ``clock``: now)."""

    def __init__(self, peer: Replica, own: Replica, bookmarks: Bookmarks, clock: Callable[[], datetime]) -> None:
        self.peer = peer
        self.own = own
        self.bookmarks = bookmarks
        self.clock = clock

    def sweep(self) -> SweepReport:
        """Copy what the peer wrote since the last sweep (every row at the first), then,
        every :data:`KEYS_EVERY` sweeps (and at the first), delete what the peer no longer holds. A failure is
        recorded and reported, never raised: the next sweep goes on from the last table copied whole."""
        state = self.bookmarks.replication()
        compare = state.swept_at is None or (state.sweeps + 1) % KEYS_EVERY == 0
        done: list[Copy] = []
        cursors = dict(state.cursors)
        try:
            for table in REPLICATED_TABLES:
                copy, newest = self._copy(table, cursors.get(table))
                if newest is not None:
                    cursors[table] = newest
                if compare:
                    copy = replace(copy, deleted=self._prune(table))
                done.append(copy)
                self.bookmarks.set_replication(replace(state, cursors=dict(cursors)))
        except Exception as error:  # any failure is recorded; the next sweep tries again
            why = _reason(error)
            log.warning("replication: the sweep failed (%s); the next one goes on", why)
            self._quietly(replace(state, cursors=dict(cursors), failed_at=self.clock(), error=why))
            return SweepReport(tuple(done), why)
        finished = ReplicationState(dict(cursors), self.clock(), state.sweeps + 1)
        self.bookmarks.set_replication(finished)
        return SweepReport(tuple(done))

    def _copy(self, table: str, cursor: datetime | None) -> tuple[Copy, datetime | None]:
        """Copy ``table``'s rows written since ``cursor`` (less the overlap), :data:`BATCH` at a time as they are
        read (a first copy of a large catalog is never held whole). The newest stamp copied."""
        since = cursor - OVERLAP if cursor is not None else None
        copied, newest, batch = 0, cursor, list[Row]()
        for row in self.peer.changed(table, since):
            batch.append(row)
            newest = row.written if newest is None or row.written > newest else newest
            if len(batch) == BATCH:
                self.own.put(table, batch)
                copied, batch = copied + len(batch), []
        if batch:
            self.own.put(table, batch)
            copied += len(batch)
        return Copy(table, copied=copied), newest

    def _prune(self, table: str) -> int:
        gone = self.own.keys(table) - self.peer.keys(table)
        self.own.delete(table, sorted(gone))
        return len(gone)

    def _quietly(self, state: ReplicationState) -> None:
        try:
            self.bookmarks.set_replication(state)
        except Exception:  # own storage out of reach too: the next sweep records it
            log.warning("replication: the failure could not be recorded", exc_info=True)


def _reason(error: Exception) -> str:
    """What a failed sweep records and ``/health`` shows: the service's own message for its errors (they name no
    secret), the class alone for any other (its text could quote a row or a connection)."""
    if isinstance(error, SchedulerError):
        return f"{type(error).__name__}: {str(error)[:200]}"
    return type(error).__name__
