"""A takeover: the due index of a region that becomes active after another region was (docs/regions.md,
"Takeover").

The standby copies jobs, not due-index entries (those are the active region's machinery), and what its own due
index holds is from the last time it was active. So before a region dispatches in an epoch it acquired from
another region, :meth:`Takeover.prepare` clears its due index and builds it again from its jobs: for each enabled
job, its first occurrence after the later of its last run (copied with the job) and :data:`MARGIN` before the
copy's newest stamp. An occurrence in the past is dispatched at the next scan under the job's own
``missedRunPolicy``, as after any outage.

The rules it protects:

- **Nothing stale fires**: every entry of the index before the takeover goes (an occurrence the region dispatched
  when it was last active, since run by the other region), and no one dispatches or writes a job while the index is
  built (:meth:`Takeover.ready` is False until it is).
- **Nothing the other region had not run is lost**, up to what was copied: an occurrence whose run was not counted
  in a copied job, within :data:`MARGIN` of the newest copy, fires; it may have run in the other region, with the
  same execution id and expected time (at most once per region).
- **A hand-back runs nothing twice**: when the other region still answers (it was demoted, or the link came back),
  it may still run what its last scans dispatched, up to :meth:`Takeover.handover` after this region took the
  lease (its fence ends its scans 20 s before its lease can be taken, and a scan dispatches a lookahead ahead); so
  the index is built only after that, from a copy made then, in which those runs are counted. Occurrences due
  meanwhile that the other region did not dispatch fire late by at most that wait.
- **A region that re-acquires its own lapsed lease keeps its index** (the epoch before this one was its own), and
  so does a deployment that never copied from a peer (a witness added to a running deployment).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta

from scheduler_core.model import DueEntry, Job, JobState, OccurrenceEntry
from scheduler_core.pipeline import ticks
from scheduler_core.ports import Clock, Stores
from scheduler_core.regions.replication import Bookmarks, ReplicationState, Replicator
from scheduler_core.regions.role import FENCE
from scheduler_core.regions.witness import LEASE
from scheduler_core.schedules import definition_schedule
from scheduler_core.storage.keys import shard_of
from scheduler_core.storage.names import JOBS_TABLE

__all__ = ["MARGIN", "Takeover"]

log = logging.getLogger("scheduler_core.regions")

#: How long before the newest copied stamp an unrun occurrence still fires at a takeover: an attempt's counters
#: land within seconds of its run, so an occurrence older than this was run, or missed, by the other region.
MARGIN = timedelta(minutes=2)
#: How long after its run an occurrence's counters are taken as written in the other region's jobs.
COUNTED = timedelta(seconds=5)
#: A row key after every due-index row key (they begin with a sortable UTC instant).
_LAST = "~"


class Takeover:
    """Builds this region's due index for an epoch (``stores``, ``shards``: ``SCHEDULER_DUE_SHARDS``;
    ``replicator``: the final copy before building, None without a peer)."""

    def __init__(
        self,
        stores: Stores,
        bookmarks: Bookmarks,
        shards: int,
        clock: Clock,
        replicator: Replicator | None = None,
        lookahead: timedelta = timedelta(seconds=60),
    ) -> None:
        self.lookahead = lookahead
        self._building_at: dict[int, datetime] = {}
        self.stores = stores
        self.bookmarks = bookmarks
        self.shards = shards
        self.clock = clock
        self.replicator = replicator
        self._ready: int | None = None
        self._lock = threading.Lock()

    def ready(self, epoch: int | None) -> bool:
        """Whether this region's due index is built for ``epoch`` (None: no witness; always ready)."""
        if epoch is None or self._ready == epoch:
            return True
        if self.bookmarks.due_epoch() == epoch:
            self._ready = epoch
            return True
        return False

    def prepare(self, epoch: int | None) -> bool:
        """Make the due index this region's for ``epoch`` before it dispatches: kept when the epoch before was
        this region's, or when it never copied from a peer; else built again (:meth:`rebuild`), :attr:`handover`
        after the first call when the other region still answers. Whether it was built. The dispatch timer's tick
        calls it, and the region's beat while the index is not built (one instance at a time)."""
        if epoch is None or self.ready(epoch):
            return False
        with self._lock:
            recorded = self.bookmarks.due_epoch()
            if epoch in (self._ready, recorded):  # built meanwhile by the call this one waited for
                self._ready = epoch
                return False
            copied = self.bookmarks.replication()
            if recorded == epoch - 1 or (recorded is None and copied.swept_at is None):
                self._own(epoch, copied)
                return False
            # the other region answered the last sweep: copy once more (when it did not, it is taken as lost, and
            # the index is built at once from the copy there is rather than after another sweep's timeouts)
            if self.replicator is not None and not copied.failing:
                report = self.replicator.sweep()  # the last writes of the other region, when it still answers
                log.warning("region takeover: a copy (%d rows, %s)", report.copied, report.error or "complete")
                build_at = self._building_at.setdefault(epoch, self.clock() + self.handover)
                if not report.error and self.clock() < build_at:
                    return False  # the other region may still run what it dispatched: build from a later copy
                copied = self.bookmarks.replication()
            since = self._since(copied.cursors.get(JOBS_TABLE))
            built = self.rebuild(since)
            self._own(epoch, copied)
            log.warning("region takeover: epoch %d, due index built for %d jobs from %s", epoch, built, since)
            return True

    @property
    def handover(self) -> timedelta:
        """How long after this region took the lease the other region may still run occurrences its scans
        dispatched, and have counted them: its fence ends (at the latest) :data:`FENCE` after its last renewal,
        which the lease outlasted; a scan dispatches a lookahead ahead; :data:`COUNTED` for the counters."""
        return max(timedelta(seconds=FENCE) - LEASE + self.lookahead, timedelta(0)) + COUNTED

    def _own(self, epoch: int, copied: ReplicationState) -> None:
        """Record the index as this region's for ``epoch``; the copy starts over at the next standby sweep (this
        region's tables diverge from the other's while it is active)."""
        if copied != ReplicationState():
            self.bookmarks.set_replication(ReplicationState())
        self.bookmarks.set_due_epoch(epoch)
        self._ready = epoch

    def _since(self, cursor: datetime | None) -> datetime:
        now = self.clock()
        return min(cursor, now) - MARGIN if cursor is not None else now - MARGIN

    def rebuild(self, since: datetime) -> int:
        """Clear the due index's shards and write each enabled job's first unrun occurrence after ``since`` (its
        last run when later), in batches of one shard. A job (or a collection's jobs) that cannot be read or
        scheduled is logged and left out: one bad row does not stop the takeover. How many jobs have an entry."""
        shards = max(self.shards, ticks.recorded_shards(self.stores) or 0)
        for number in range(shards):
            shard = f"{number:04d}"
            stale: list[tuple[str, DueEntry | None]] = [
                (entry.row_key, None) for entry in self.stores.due.due_before(shard, _LAST)
            ]
            if stale:
                self.stores.due.advance(shard, stale)
        by_shard: dict[str, list[DueEntry]] = {}
        for job in self._jobs():
            try:
                entry = self._entry(job, since)
            except Exception:
                log.exception("region takeover: job %s could not be scheduled; it has no entry", job.ref.identity)
                continue
            if entry is not None:
                by_shard.setdefault(entry.shard, []).append(entry)
        for shard, entries in by_shard.items():
            self.stores.due.advance(shard, [], entries)
        return sum(len(entries) for entries in by_shard.values())

    def _jobs(self) -> Iterator[Job]:
        """Every enabled job of every collection (a collection whose jobs cannot be read is logged and left out)."""
        for subscription in self.stores.collections.all_partitions():
            for collection in self.stores.collections.list(subscription):
                try:
                    jobs = self.stores.jobs.list(collection.ref)
                except Exception:
                    log.exception("region takeover: the jobs of %s could not be read", collection.ref.identity)
                    continue
                yield from (job for job in jobs if job.state is JobState.ENABLED)

    def _entry(self, job: Job, since: datetime) -> DueEntry | None:
        """``job``'s entry: its first occurrence after the later of its last run and ``since`` (None: none)."""
        last = job.last_execution_time
        floor = max(last, since) if last is not None else since
        when = definition_schedule(job.definition, job.defined_at, job.ref.identity).after(floor)
        if when is None:
            return None
        return OccurrenceEntry.of(shard_of(job.ref.identity, self.shards), job.ref, job.generation, when).entry()
