"""The dispatch timer's tick: one scan message per due-index shard, the heartbeat that ``/health`` reads, the
record of how many shards ticks have scanned (so lowering ``SCHEDULER_DUE_SHARDS`` never leaves entries
unscanned), and a sample of the queue depths."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from scheduler_core.model import DueEntry, HeartbeatEntry, ShardsEntry, typed
from scheduler_core.model.due import SHARDS
from scheduler_core.pipeline import reporting
from scheduler_core.pipeline.messages import ScanMessage
from scheduler_core.ports import Stores
from scheduler_core.queue_depths import DepthProbe, QueueDepths
from scheduler_core.recurrence import format_instant

log = logging.getLogger("scheduler_core.dispatch")

#: The due-index partition of the dispatch heartbeat: one row (:data:`HEARTBEAT_ROW`) whose ``due`` is when
#: the dispatch timer last ticked (``GET /health`` reads it). No scan reads it: scans read shards 0000-NNNN.
HEARTBEAT_SHARD = "health"
HEARTBEAT_ROW = "dispatch-tick"
#: The kind (and row-key prefix) of the rows of the heartbeat's partition that record the shard counts ticks
#: have scanned (``DueEntry.shards``): one row per count (``shards|0016``), so that ticks recording different
#: counts at once never lower the most.
SHARDS_KIND = SHARDS
#: The most due-index shards a deployment may have (``SCHEDULER_DUE_SHARDS``' largest value).
MAX_SHARDS = 1000


def heartbeat_row(now: datetime) -> DueEntry:
    """The heartbeat row saying the dispatch timer ticked at ``now``."""
    return HeartbeatEntry(HEARTBEAT_SHARD, HEARTBEAT_ROW, now).entry()


def last_tick(stores: Stores, *, once: bool = False) -> datetime | None:
    """When the dispatch timer last ticked (any instance), from its heartbeat row; None: never. ``once``: one
    try, none of the client's retries (``DueIndex.due_before``)."""
    for row in stores.due.due_before(HEARTBEAT_SHARD, "~", once=once):
        if row.row_key == HEARTBEAT_ROW:
            return row.due
    return None


def shards_row(shards: int, now: datetime) -> DueEntry:
    """The row recording that a tick at ``now`` scanned ``shards`` due-index shards."""
    key = f"{SHARDS_KIND}|{shards:04d}"
    return ShardsEntry(HEARTBEAT_SHARD, key, now, shards).entry()


def recorded_shards(stores: Stores) -> int | None:
    """The most due-index shards a tick has recorded scanning (at most :data:`MAX_SHARDS`); None: nothing
    recorded yet (a deployment from before the record)."""
    return _most_shards(list(stores.due.due_before(HEARTBEAT_SHARD, "~")))


def _most_shards(health_rows: list[DueEntry]) -> int | None:
    counts = [entry.shards for entry in map(typed, health_rows) if isinstance(entry, ShardsEntry)]
    return min(max(counts), MAX_SHARDS) if counts else None


class Ticker:
    """Ticks for a deployment of ``shards`` due-index shards (``SCHEDULER_DUE_SHARDS``); ``depths`` reads the
    queue depths (None: not sampled); ``threads`` is the pool that looks for shards in use a few at a time."""

    def __init__(
        self, stores: Stores, shards: int, depths: DepthProbe | None, threads: Callable[[], ThreadPoolExecutor]
    ) -> None:
        self.stores = stores
        self.shards = shards
        self.depths = depths
        self.threads = threads

    def tick(self, send_scan: Callable[[str], None], now: datetime) -> int:
        """One scan message per shard (the timer's whole job: scans then run in parallel), then the
        heartbeat row (when it ticked) and a sample of the queue depths. Returns how many shards it scanned
        (:meth:`shards_to_scan`)."""
        shards = self.shards_to_scan(now)
        for shard in range(shards):
            send_scan(ScanMessage(shard=f"{shard:04d}", tick=format_instant(now)).to_json())
        try:
            self.stores.due.put(heartbeat_row(now))
        except Exception:  # the scans are sent: a lost heartbeat only makes /health warn
            log.warning("dispatch tick: heartbeat not written", exc_info=True)
        depths = self.sample_depths()
        reporting.tick(shards, None if depths is None else depths.executions, None if depths is None else depths.poison)
        return shards

    def shards_to_scan(self, now: datetime) -> int:
        """The shards a tick scans: ``SCHEDULER_DUE_SHARDS``, or the most shards a tick has scanned before when
        that is more. Every entry stays in the shard it was written to (a scan moves an entry within its own
        shard), so a count that grows only adds shards, and one that was lowered would otherwise leave the
        entries of the shards above it unscanned: their jobs would never fire again. A larger count is
        recorded (one write) before a scan uses it. A deployment that has ticked but has no record yet (from
        before it, whose setting may have been lowered in the same change) has its shards above the setting
        looked at once (one query of one entry each, :meth:`shards_in_use`); one that never ticked records
        its setting. When the record cannot be read or made, the setting is scanned this once (storage is
        failing: the scans fail as well; the next tick tries again)."""
        try:
            health_rows = list(self.stores.due.due_before(HEARTBEAT_SHARD, "~"))  # the record and the heartbeat
            recorded = _most_shards(health_rows)
            known = recorded or 0
            if recorded is None and any(row.row_key == HEARTBEAT_ROW for row in health_rows):
                known = self.shards_in_use()  # ticked before the record existed
        except Exception:
            log.warning("dispatch tick: the recorded shard count not read; scanning %d shards", self.shards)
            return self.shards
        shards = max(known, self.shards)
        if recorded is None or recorded < shards:
            try:
                self.stores.due.put(shards_row(shards, now))
            except Exception:
                log.warning("dispatch tick: shard count %d not recorded", shards, exc_info=True)
        if shards > self.shards:
            log.info(
                "dispatch tick: scanning %d shards (SCHEDULER_DUE_SHARDS %d was higher before)", shards, self.shards
            )
        return shards

    def shards_in_use(self) -> int:
        """One more than the highest shard at or above ``SCHEDULER_DUE_SHARDS`` that holds an entry (0: none
        does): a query of at most one entry per shard up to :data:`MAX_SHARDS`, a few at a time."""
        above = range(self.shards, MAX_SHARDS)

        def holds(shard: int) -> bool:
            return any(True for _ in self.stores.due.due_before(f"{shard:04d}", "~", limit=1))

        found = [shard for shard, held in zip(above, self.threads().map(holds, above), strict=True) if held]
        return max(found) + 1 if found else 0

    def sample_depths(self) -> QueueDepths | None:
        """Read the queue depths and record them on the gauges (None: no probe, or it failed)."""
        if self.depths is None:
            return None
        try:
            depths = self.depths()
        except Exception:
            log.warning("dispatch tick: queue depths not read", exc_info=True)
            return None
        reporting.queue_depths(depths.executions, depths.poison)
        return depths
