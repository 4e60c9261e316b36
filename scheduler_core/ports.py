"""The ports: what the core needs from storage, queues and time, as ``Protocol``s whose docstrings are the
contract every adapter keeps (``scheduler_core.adapters.azure``: Table and Queue Storage;
``scheduler_core.adapters.memory``: in-process, for tests and simulations). One contract suite
(``tests/contract``) runs over every adapter.

Rules that hold for every store:

- **ETags.** Every value read carries the ``etag`` of the version read. A write that names an ETag fails
  with :class:`~scheduler_core.errors.EtagMismatchError` when the stored version is another one, or is gone;
  a create fails with :class:`~scheduler_core.errors.AlreadyExistsError` when the key exists. Both are
  :class:`~scheduler_core.errors.WriteRaceError`: the caller reads again and decides again. A successful
  write returns the value with its new ETag.
- **Failures.** A store that cannot be reached raises :class:`~scheduler_core.errors.StorageError` (its
  ``transient`` says whether trying again may help; ``storage_status`` the storage service's HTTP status, if
  any). No adapter lets a foreign exception out.
- **Keys.** Names are matched case-insensitively through the keys of :mod:`scheduler_core.storage.keys`;
  values keep the client's spelling.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from scheduler_core.errors import EtagMismatchError
from scheduler_core.model import (
    ClaimResult,
    ClaimState,
    DueEntry,
    HistoryEntry,
    Job,
    JobCollection,
)
from scheduler_core.model.claim import Claim
from scheduler_core.model.history import HistoryRetention
from scheduler_core.storage.keys import CollectionRef, JobRef


class Clock(Protocol):
    """The current instant, timezone-aware (UTC). Tests pass a simulated clock."""

    def __call__(self) -> datetime: ...


class ExecutionQueue(Protocol):
    """Sends an execution message, invisible for ``visibility`` whole seconds (0: visible at once). At
    least once: a message may be delivered more than once, never lost once this returns."""

    def __call__(self, text: str, visibility: int, /) -> None: ...


class Backlog(Protocol):
    """Whether an execution queue's consumers are behind: it shows a message, not yet taken, that was sent
    more than ``older_than`` before ``now``. Takes and hides nothing; may raise ``StorageError``."""

    def __call__(self, older_than: timedelta, now: datetime, /) -> bool: ...


class MessageSender(Protocol):
    """One of the app's own queues (scans, executions), as an object."""

    def send(self, text: str, visibility: int = 0) -> None:
        """Send ``text``, invisible for ``visibility`` whole seconds (0: visible at once); at least once."""
        ...


class CollectionStore(Protocol):
    """Job collections, by subscription; each carries its job counter (``job_count``)."""

    def get(self, ref: CollectionRef) -> JobCollection | None:
        """The collection (also one marked deleted), or None."""
        ...

    def list(self, subscription: str, resource_group: str | None = None) -> list[JobCollection]:
        """The collections of a subscription (of one resource group when given), in key order."""
        ...

    def all_partitions(self) -> builtins.list[str]:
        """Every subscription that has collections, sorted."""
        ...

    def save(self, record: JobCollection, *, create: bool) -> JobCollection:
        """Create (fails if it exists) or replace guarded by ``record.etag`` (unconditional when empty).
        The job counter is written only when ``record.job_count`` is not None."""
        ...

    def set_job_count(self, record: JobCollection, count: int) -> JobCollection:
        """Set the job counter and nothing else, guarded by ``record.etag``; the result's ``modified_at`` is now."""
        ...

    def delete(self, ref: CollectionRef) -> None:
        """Delete the collection row (missing is fine)."""
        ...


class JobStore(Protocol):
    """Jobs, by collection (partition = the collection's identity, row = the job's key)."""

    def get(self, ref: JobRef) -> Job | None: ...

    def get_by_keys(self, partition: str, row: str) -> Job | None:
        """The job stored under these keys (as named by a due entry or a queue message)."""
        ...

    def get_many(self, partition: str, rows: Iterable[str]) -> dict[str, Job]:
        """The jobs of one partition with these row keys, by row key (missing ones absent)."""
        ...

    def list(self, collection: CollectionRef) -> list[Job]:
        """The jobs of a collection, by name case-insensitively."""
        ...

    def count(self, collection: CollectionRef) -> int: ...

    def save(self, record: Job, *, create: bool, etag: str | None = None) -> Job:
        """Create (fails if it exists) or replace guarded by ``etag`` (``None``: unconditional)."""
        ...

    def delete(self, ref: JobRef, etag: str | None) -> bool | None:
        """Delete the job if it still has ``etag`` (``None``: any version). True when this call removed
        it, False when it was already gone (of concurrent deletes exactly one sees True), None when it is
        gone and this call cannot tell whether it removed it (a delete sent again after its answer was lost
        found it gone: its caller removes the job's other rows, and gives no slot back, so that none is
        given back twice); raises :class:`EtagMismatchError` when it was changed meanwhile."""
        ...


class DueIndex(Protocol):
    """The due index: entries by shard, ordered by row key (which starts with the due time)."""

    def put(self, row: DueEntry) -> None:
        """Write the entry (an upsert)."""
        ...

    def advance(self, shard: str, moves: list[tuple[str, DueEntry | None]], puts: Iterable[DueEntry] = ()) -> None:
        """Replace entries of one shard: each ``(old row key, new entry or None)`` deletes the old entry and
        writes the new one atomically, so a job never has two live entries; ``puts`` are written too. An old
        entry already gone (another scan moved it) is fine."""
        ...

    def delete(self, shard: str, row_key: str) -> None:
        """Delete one entry (missing is fine)."""
        ...

    def delete_many(self, rows: builtins.list[tuple[str, str]]) -> None:
        """Delete entries given as ``(shard, row key)`` (missing ones are fine)."""
        ...

    def due_before(
        self, shard: str, before: str, after: str = "", limit: int | None = None, *, once: bool = False
    ) -> Iterator[DueEntry]:
        """Entries of ``shard`` whose row key sorts before ``before`` (a formatted due time) and after
        ``after`` (a row key; "": from the first), oldest first, at most ``limit`` (None: all), each with
        ``written_at`` (when it was last written, by the store's clock). ``once``: each read is tried once, none
        of the client's retries (a probe reports storage as it is now, within its deadline)."""
        ...


class History(Protocol):
    """History entries, by job, newest first: those written here and those written with a claim's
    completion (:meth:`Claims.record`)."""

    def add(self, job: JobRef, record: HistoryEntry) -> None:
        """Write an entry (writing the same entry again leaves one)."""
        ...

    def add_if_absent(self, job: JobRef, record: HistoryEntry) -> bool:
        """Write an entry unless one with its key exists (which is kept). Returns whether it wrote."""
        ...

    def list(self, job: JobRef, *, once: bool = False) -> Iterator[HistoryEntry]:
        """The job's entries, newest first (by row key; one entry per row key). ``once``: each read is tried once,
        none of the client's retries (a probe reports storage as it is now, within its deadline)."""
        ...

    def trim(self, job: JobRef, retention: HistoryRetention, now: datetime) -> int:
        """Delete the entries ``retention`` removes at ``now`` (:meth:`HistoryRetention.doomed`); how many. An
        entry written with a claim leaves the claim behind (done), so a late delivery is still dropped."""
        ...

    def delete_all(self, job: JobRef) -> None: ...


class Claims(Protocol):
    """Execution claims, by job identity; the lease rule of :mod:`scheduler_core.model.claim`."""

    def claim(
        self,
        partition: str,
        row: str,
        worker: str,
        now: datetime,
        lease: timedelta,
        token: str | None = None,
        take_over: bool = True,
    ) -> ClaimResult:
        """Claim one attempt by the lease rule. Safe to call again with the same ``token`` after an error:
        a claim made with it (whose answer was lost) is returned as claimed (with the token). A claim whose
        lease is over is taken over (its :attr:`LostAttempt.takeovers` one more than the last holder's), unless
        ``take_over`` is False: then nothing is written and the result is ``EXPIRED`` with the lease's end."""
        ...

    def renew(self, claim: Claim, now: datetime, lease: timedelta) -> Claim | None:
        """Extend the lease of a claim its holder still holds (``Running``, with the holder's token) to
        ``now + lease``; returns the claim's new version (use it for :meth:`record`), or None when the claim is
        no longer this holder's (taken over, done or deleted). Safe to call again after an error (a renewal
        whose answer was lost is recognised by the token). Bounds each try more tightly than other calls, so
        that a holder notices storage answering again within seconds."""
        ...

    def state(self, partition: str, row: str) -> ClaimState | None:
        """The claim's state (None: nobody has claimed the attempt)."""
        ...

    def complete(self, claim: Claim, now: datetime) -> None:
        """Mark the attempt done (idempotent)."""
        ...

    def record(self, claim: Claim, job: JobRef, entry: HistoryEntry, now: datetime) -> None:
        """Mark the attempt done and write its history entry, as one write where the store allows it: the
        entry is then listed, trimmed and deleted with the job's history (:class:`History`) as any other.
        Idempotent (a retry after a lost answer leaves one entry). When the claim is no longer this
        holder's (its lease ended and another worker took it over), the entry is written all the same,
        next to the new holder's, and the claim is left to its holder."""
        ...

    def release(self, claim: Claim) -> None:
        """Give a claim back if it is still this holder's version (the attempt did not run)."""
        ...

    def delete_older_than(self, partition: str, before: datetime) -> int:
        """Delete a job's claims whose occurrence is before ``before``; how many. History entries written
        with them (:meth:`record`) stay in the job's history."""
        ...

    def delete_all(self, partition: str) -> None:
        """Delete every claim of one job (the job is being removed); its history stays (see
        :meth:`delete_older_than`)."""
        ...


class FlowLimits(Protocol):
    """Flow control's shared state (``action.flowControl``), by key (a subscription and a target: whoever names
    the same key shares its limits, on every instance). A key nobody uses has no state."""

    def reserve(
        self, key: str, spacing: timedelta, now: datetime, holder: str, *, passed: datetime | None = None
    ) -> datetime:
        """Reserve a start for ``holder``'s call: the key's next free instant, or ``now`` when that is past; the
        one after it becomes the reserved instant plus ``spacing``. Two reservations never get instants closer
        than ``spacing``, and later reservations get later instants. A holder that has a reservation gets it
        again (copies of one attempt's message share one start), unless ``passed`` (its reserved start, which
        passed before it could make its call): then it gets a new one, ``now`` when ``passed`` is still the key's
        last reservation (no one reserved after it, so starting late keeps every spacing), else the key's next
        free instant."""
        ...

    def forget(self, key: str, holder: str) -> None:
        """Drop ``holder``'s reservation (its call ran); its instant stays taken."""
        ...

    def acquire(self, key: str, limit: int, holder: str, until: datetime, now: datetime) -> bool:
        """Take one of the key's ``limit`` slots for ``holder`` until ``until`` (a slot whose time has passed is
        free: its holder died); the holder's own slot is kept, its time set to ``until`` (a renewal). Whether
        the holder has a slot."""
        ...

    def release(self, key: str, holder: str) -> None:
        """Give back ``holder``'s slot of the key, if it still has one."""
        ...

    def wait(self, key: str, job: str, place: str, until: datetime) -> None:
        """Note that ``job``'s attempt at ``place`` (places order a job's attempts) waits for the key's limits,
        until ``until`` at least (written again while it waits)."""
        ...

    def waiting(self, key: str, job: str, place: str, now: datetime) -> datetime | None:
        """Until when ``job``'s attempt at ``place`` is noted as waiting for the key (None: not, or no longer)."""
        ...

    def first_waiting(self, key: str, job: str, now: datetime) -> str | None:
        """The first place of ``job``'s attempts waiting for the key (noted by :meth:`wait`, still in time);
        None: none waits."""
        ...

    def done_waiting(self, key: str, job: str, place: str) -> None:
        """Forget that ``job``'s attempt at ``place`` waits (it took a slot, or will not run)."""
        ...


@dataclass(frozen=True)
class Stores:
    """Every store of one deployment."""

    collections: CollectionStore
    jobs: JobStore
    due: DueIndex
    history: History

    def remove_job(self, job: Job, *, job_row: bool = True, any_version: bool = False) -> bool:
        """Delete a job's rows: the job (unless ``job_row`` is False: already deleted), its due-index entry
        and its history. The job row is deleted only if unchanged since ``job`` was read, unless
        ``any_version``. True when this call removed the job row (so it may give the job's slot back);
        False when another writer removed it first (its other rows are removed all the same) or changed
        it (then nothing is removed)."""
        removed: bool | None = True
        if job_row:
            try:
                removed = self.jobs.delete(job.ref, None if any_version else job.etag or None)
            except EtagMismatchError:
                return False  # changed meanwhile (a newer generation): it is not this caller's to remove
        if job.due is not None:
            self.due.delete(job.due.shard, job.due.row_key)
        self.history.delete_all(job.ref)
        return removed is True  # gone after a lost answer (None): its slot is not given back (see JobStore)


class Storage(Protocol):
    """Every storage port of one deployment (``adapters.azure.connect`` or ``adapters.memory.memory_storage``)."""

    @property
    def stores(self) -> Stores: ...

    @property
    def claims(self) -> Claims: ...

    @property
    def flow(self) -> FlowLimits: ...

    @property
    def scans(self) -> MessageSender: ...

    @property
    def executions(self) -> MessageSender: ...
