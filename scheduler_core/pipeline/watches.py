"""Watch entries: the due-index rows that watch a dispatched attempt, and the looks that read them.

A watch entry (kind ``watch``, carrying the attempt's message) is due when the attempt's claim lease would end,
plus :data:`WATCH_GRACE`; its key starts with :data:`WATCH_KEYS`, so it sorts after every occurrence's entry
of its shard (:func:`watch_key`). Whoever writes one sends the *watch look* of its :data:`WATCH_SLOT`
(:meth:`Watches.schedule`): a delayed scan message that looks at the shard's due watch entries
(:meth:`scheduler_core.pipeline.dispatch.Dispatcher.look`, deciding by
:class:`scheduler_core.pipeline.watchdog.Watchdog`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta

from scheduler_core.model import WATCH, Job, WatchEntry
from scheduler_core.pipeline import reporting
from scheduler_core.pipeline.messages import ExecutionMessage, ScanMessage
from scheduler_core.ports import Stores
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import SEPARATOR, due_row_key, format_due, shard_of

#: A watch entry is due this long after the lease it watches would end (clock skew between instances).
WATCH_GRACE = timedelta(seconds=2)
#: Watch entries are looked at in slots of this length: each writer of a watch entry sends one watch look (a
#: delayed scan message, :class:`~scheduler_core.pipeline.messages.ScanMessage` ``watch``) for the end of the
#: slot the entry falls due in, one per shard and slot (a process sends a slot once). So a look comes at most
#: a slot after its entry is due, and costs at most one message per shard and slot, shared by every entry of
#: the slot: nothing while nothing runs, one message per attempt of a quiet job, and at most 12 per shard and
#: minute however many attempts run. The tick's scans look at every due entry too (a lost look costs a
#: minute at most).
WATCH_SLOT = timedelta(seconds=5)
#: A process's memory of the watch looks it sent (slots), pruned of past ones beyond this many.
_SENT_SLOTS_KEPT = 4096

#: Sends a watch look: (scan message text, visibility timeout in whole seconds).
SendLook = Callable[[str, int], None]


#: Every watch entry's row key starts with this (:func:`watch_key`).
WATCH_KEYS = f"{WATCH}{SEPARATOR}"


def watch_key(due: datetime, job_identity: str, generation: int, attempt_key: str) -> str:
    """The row key of a watch entry: :data:`WATCH_KEYS`, then the due entry's key of its due time and job, then
    the attempt. Watch entries thus sort after every occurrence's entry of their shard (whose keys start with
    a date), so a scan, which reads the entries due before its horizon, never reads them, and a watch look
    reads the watch entries alone. (Entries written before this rule began with the due time; a scan reads and
    looks at them as it always did.)"""
    return f"{WATCH_KEYS}{due_row_key(due, job_identity, generation)}{SEPARATOR}{WATCH}{SEPARATOR}{attempt_key}"


def watch_keys_before(due_by: datetime) -> str:
    """The row key that every watch entry due by ``due_by`` sorts before."""
    return f"{WATCH_KEYS}{format_due(due_by)}~"


class Watches:
    """Writes watch entries and sends their looks. ``send_look`` sends watch looks (the scan queue; None: only
    the tick's scans look at entries)."""

    def __init__(
        self,
        stores: Stores,
        shards: int,
        lease: timedelta,
        grace: timedelta = WATCH_GRACE,
        send_look: SendLook | None = None,
        slot: timedelta = WATCH_SLOT,
    ) -> None:
        self.stores = stores
        self.shards = shards
        self.lease = lease
        self.grace = grace
        self.send_look = send_look
        self.slot = slot
        self._sent: set[tuple[str, datetime]] = set()
        self._sent_lock = threading.Lock()

    def row(
        self, job: Job, message: ExecutionMessage, shard: str, due: datetime, checks: int = 0, held: bool = False
    ) -> WatchEntry:
        """The watch entry of ``message``'s attempt, due at ``due`` (keyed by :func:`watch_key`)."""
        key = watch_key(due, job.ref.identity, job.generation, message.attempt_key)
        ref = job.ref
        return WatchEntry(
            shard, key, ref.partition_key, ref.row_key, job.generation, due, message.to_json(), checks, held
        )

    def row_after_lease(
        self, job: Job, message: ExecutionMessage, shard: str, due: datetime, now: datetime
    ) -> WatchEntry:
        """The watch entry of an attempt due at ``due`` and sent at ``now``: due when its claim's lease would
        end, plus the grace, counted from when it can first be claimed (its due time, or ``now`` for one sent
        late: a catch-up's run; dated from its occurrence, its first look would come before any worker could
        claim it, and send it again)."""
        return self.row(job, message, shard, max(due, now) + self.lease + self.grace)

    def watch(self, job: Job, message: ExecutionMessage, due: datetime, now: datetime) -> None:
        """Watch an attempt due at ``due`` that was sent outside a scan: one due-index write (and the look of
        its slot, unless this process sent that one already)."""
        row = self.row_after_lease(job, message, shard_of(job.ref.identity, self.shards), due, now)
        self.stores.due.put(row.entry())
        self.schedule([row], now)

    def watch_many(self, job: Job, sent: Sequence[tuple[ExecutionMessage, datetime]], now: datetime) -> None:
        """Watch attempts of ``job`` sent outside a scan, each ``(message, due)``: their entries written in the
        due index's batches (its shard's: at most 100 an operation), then their slots' looks."""
        if not sent:
            return
        shard = shard_of(job.ref.identity, self.shards)
        rows = [self.row_after_lease(job, message, shard, due, now) for message, due in sent]
        self.stores.due.advance(shard, [], [row.entry() for row in rows])
        self.schedule(rows, now)

    def slot_of(self, due: datetime) -> datetime:
        """The end of the :data:`WATCH_SLOT` that ``due`` falls in (slots are aligned to the epoch): when the
        look that takes an entry due at ``due`` runs."""
        epoch = datetime(1970, 1, 1, tzinfo=due.tzinfo)
        step = self.slot.total_seconds()
        return epoch + timedelta(seconds=math.ceil((due - epoch).total_seconds() / step) * step)

    def schedule(self, written: Iterable[WatchEntry], now: datetime) -> int:
        """Send the watch looks of the watch entries just ``written``: one per shard and slot, delayed to the
        slot's end, unless this process sent it already. A look that cannot be sent is logged and left to the
        tick's scans. Returns how many were sent."""
        if self.send_look is None:
            return 0
        wanted = sorted({(row.shard, self.slot_of(row.due)) for row in written})
        sent = 0
        for shard, slot in wanted:
            with self._sent_lock:
                if (shard, slot) in self._sent:
                    continue
                self._sent.add((shard, slot))
                if len(self._sent) > _SENT_SLOTS_KEPT:
                    self._sent = {kept for kept in self._sent if kept[1] >= now}
            delay = max(0, math.ceil((slot - now).total_seconds()))
            try:
                self.look(shard, now, delay)
            except Exception:
                with self._sent_lock:
                    self._sent.discard((shard, slot))
                reporting.look_not_sent(shard, slot)
                continue
            sent += 1
        return sent

    def look(self, shard: str, now: datetime, delay: int = 0) -> bool:
        """Send a watch look of ``shard``, shown ``delay`` whole seconds after ``now``; whether there is a scan
        queue to send it to (a send that fails raises)."""
        if self.send_look is None:
            return False
        self.send_look(ScanMessage(shard=shard, tick=format_instant(now), watch=True).to_json(), delay)
        return True
