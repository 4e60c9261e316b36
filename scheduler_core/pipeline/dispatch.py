"""Dispatch: every tick, each due-index shard is scanned and its due occurrences become execution messages.

For each row due before ``now + lookahead`` the scan decides what it becomes (:mod:`scheduler_core.pipeline.rows`:
an occurrence fired, a parked retry sent, a watch entry looked at, a stale row dropped), then writes those
decisions in the shard's batches: the fired row replaced by the row of the job's following occurrence.

With each attempt it sends, the scan writes the attempt's watch row in the same shard batch that moves
the fired row (no round trip of its own), and it hands the watch rows it finds due to the watchdog
(:mod:`scheduler_core.pipeline.watchdog`), which re-sends an attempt whose worker died.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

from scheduler_core.model import CLAIM_LEASE, DueEntry, Job, OccurrenceEntry, ParkedEntry, TypedEntry, WatchEntry, typed
from scheduler_core.pipeline import reporting
from scheduler_core.pipeline.attempts import Attempts
from scheduler_core.pipeline.messages import ScanMessage
from scheduler_core.pipeline.rows import (
    ABANDONED_AFTER,  # noqa: F401 (a name of this module too)
    Rows,
    ScanReport,
    jobs_of,
)
from scheduler_core.pipeline.ticks import Ticker
from scheduler_core.pipeline.watchdog import Behind, Watchdog
from scheduler_core.pipeline.watches import WATCH_GRACE, WATCH_KEYS, WATCH_SLOT, SendLook, Watches, watch_keys_before
from scheduler_core.ports import Claims, ExecutionQueue, FlowLimits, Stores
from scheduler_core.queue_depths import DepthProbe, QueueDepths
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import format_due

log = logging.getLogger("scheduler_core.dispatch")

Send = ExecutionQueue  # (message text, visibility timeout in whole seconds)


#: Rows one scan dispatches at most. A scan that finds more hands the rest of its shard on as a further scan
#: message (the rows after its last one, by row key), sent before it dispatches its own rows, so another
#: worker reads and sends the next rows meanwhile: a burst in one shard fans out over as many workers as
#: the scan queue's trigger runs.
SCAN_CHUNK = 200
#: Rows of one scan dispatched at once (each costs a queue send, a round trip): a scan with more rows than
#: :data:`SERIAL_ROWS` sends on this many threads of the dispatcher's pool.
SEND_THREADS = 16
#: A scan with at most this many rows dispatches them one after the other (no thread hand-off).
SERIAL_ROWS = 8
#: How long (seconds) a scan that can hand rows on starts rows: past this it starts no more (a scan of
#: :data:`SCAN_CHUNK` rows takes about a second when storage answers). The rows it did not start are handed
#: on as a further scan message (those after the last row it started), or, when it already handed the rest of
#: its shard on (its range is bounded by that message's), left in the index for the next tick's scan. So a
#: scan runs for this long, plus the storage calls in flight when it ran out (each bounded by the storage
#: clients' timeouts and retries), plus its index write and that message: well under the Functions host's
#: ``functionTimeout`` (10 minutes), whose expiry would restart the worker process and fail every invocation
#: on it (attempts included).
SCAN_BUDGET = 30.0
#: The tick's scan of a shard also looks at the shard's watch entries due more than this long ago: their
#: look (one per slot, :data:`~scheduler_core.pipeline.watches.WATCH_SLOT`) was lost or is stuck behind a
#: backlog of the scan queue. (Not those due just now: their look is running.)
LOOK_LOST_AFTER = 2 * WATCH_SLOT
_POOL: list[ThreadPoolExecutor] = []  # at most one: the process's pool for large scans
_POOL_LOCK = threading.Lock()


class Dispatcher:
    """Turns due-index rows into execution messages.

    Per occurrence it costs one queue send; the jobs of a scan are read a collection at a time (one query
    per 14 jobs), and the index rows it replaces (the fired row deleted, the following occurrence's row
    written) are batched per shard, each pair in one transaction. A scan dispatches at most ``chunk``
    rows and hands the rest of its shard on through ``send_scan`` (:data:`SCAN_CHUNK`), and starts rows for
    ``budget`` seconds at most (:data:`SCAN_BUDGET`; ``monotonic`` is its clock); without ``send_scan`` it
    dispatches every row it finds. Large scans send concurrently (:data:`SEND_THREADS`). The watch looks of
    the watch entries it writes go through ``send_look`` (:meth:`Watches.schedule`; None: the ticks' scans
    look at them).
    """

    def __init__(
        self,
        stores: Stores,
        send: Send,
        shards: int,
        lookahead: timedelta,
        claims: Claims,
        lease: timedelta = CLAIM_LEASE,
        grace: timedelta = WATCH_GRACE,
        depths: DepthProbe | None = None,
        send_scan: Callable[[str], None] | None = None,
        chunk: int = SCAN_CHUNK,
        behind: Behind | None = None,
        budget: float = SCAN_BUDGET,
        monotonic: Callable[[], float] = time.monotonic,
        send_look: SendLook | None = None,
        attempts: Attempts | None = None,
        flow: FlowLimits | None = None,
    ) -> None:
        """``attempts`` sends the attempts (default: over ``send``, with watch entries of ``lease`` and
        ``grace`` whose looks go through ``send_look``); ``flow`` is the flow control state, through which the
        watchdog knows an attempt held back by its key's limits from a lost one."""
        self.stores = stores
        self.shards = shards
        self.lookahead = lookahead
        self.attempts = attempts or Attempts(send, Watches(stores, shards, lease, grace, send_look))
        self.watches = self.attempts.watches
        self.watchdog = Watchdog(claims, self.attempts, behind, flow)
        self.rows = Rows(stores, self.attempts, self.watchdog, lookahead)
        self.ticker = Ticker(stores, shards, depths, self._threads)
        self.send_scan = send_scan
        self.chunk = max(1, chunk)
        self.budget = budget
        self.monotonic = monotonic

    @staticmethod
    def _threads() -> ThreadPoolExecutor:
        """The process's pool for the sends and reads of large scans (made on first use, shared by every
        dispatcher and scan of the process: at most :data:`SEND_THREADS` storage calls of scans at once)."""
        with _POOL_LOCK:
            if not _POOL:
                _POOL.append(ThreadPoolExecutor(max_workers=SEND_THREADS, thread_name_prefix="dispatch"))
            return _POOL[0]

    def tick(self, send_scan: Callable[[str], None], now: datetime) -> int:
        """The dispatch timer's tick (:meth:`Ticker.tick <scheduler_core.pipeline.ticks.Ticker.tick>`)."""
        return self.ticker.tick(send_scan, now)

    def sample_depths(self) -> QueueDepths | None:
        """Read the queue depths and record them on the gauges (None: no probe, or it failed)."""
        return self.ticker.sample_depths()

    def scan_message(self, message: ScanMessage, now: datetime) -> ScanReport:
        """Scan what a scan message names: a whole shard, the rest of one after a row key, or a shard's due
        watch entries (a watch look)."""
        if message.watch:
            return self.look(message.shard, now)
        return self.scan(message.shard, now, after=message.after, tick=message.tick)

    def look(self, shard: str, now: datetime) -> ScanReport:
        """A watch look: look at the watch entries of ``shard`` due by ``now`` (nothing else: occurrences are
        the scans' alone)."""
        began = time.monotonic()
        report = ScanReport(shard)
        rows = self._look(shard, now, now, report)
        reporting.scan(shard, time.monotonic() - began, rows, 0, 0, 0, 0, report.rescued)
        return report

    def _look(self, shard: str, now: datetime, due_by: datetime, report: ScanReport) -> int:
        """Look at the watch entries of ``shard`` due by ``due_by``, those started within the budget; the rest
        are left to a further look, sent at once. Watch entries sort after every occurrence's entry
        (:func:`~scheduler_core.pipeline.watches.watch_key`), so a scan never reads them. Returns how many it
        read."""
        deadline = self.monotonic() + self.budget
        entries = [typed(row) for row in self.stores.due.due_before(shard, watch_keys_before(due_by), after=WATCH_KEYS)]
        jobs = jobs_of(self.stores, entries, now, self._threads)
        unstarted = self._dispatch_rows(entries, now, report, jobs, deadline)
        self._apply(report, now)
        if unstarted:
            report.deferred += len(unstarted)
            try:
                self.watches.look(shard, now)  # the rest, at once
            except Exception:
                log.warning("shard %s: %d watch entries left for the next tick", shard, len(unstarted), exc_info=True)
        return len(entries)

    def scan(self, shard: str, now: datetime, after: str = "", tick: str = "") -> ScanReport:
        """Dispatch the rows of ``shard`` due before ``now`` + the lookahead (those after the row key
        ``after`` only), at most ``chunk`` of them when the rest can be handed on, and only those it starts
        within its budget (see the class and :data:`SCAN_BUDGET`)."""
        began = time.monotonic()
        deadline = self.monotonic() + self.budget if self.send_scan is not None else None
        report = ScanReport(shard)
        horizon = format_due(now + self.lookahead)
        limit = self.chunk + 1 if self.send_scan is not None else None
        rows = list(self.stores.due.due_before(shard, horizon, after=after, limit=limit))
        if limit is not None and len(rows) > self.chunk:
            rows = rows[: self.chunk]
            self._hand_on(shard, rows[-1].row_key, tick or format_instant(now), report)
        entries = [typed(row) for row in rows]
        jobs = jobs_of(self.stores, entries, now, self._threads)
        unstarted = self._dispatch_rows(entries, now, report, jobs, deadline)
        self._apply(report, now)
        if unstarted:
            self._out_of_time(shard, rows, unstarted, tick or format_instant(now), report)
        if not after:  # the tick's scan: watch entries whose look is late by more than a slot (it was lost)
            looked = ScanReport(shard)
            self._look(shard, now, now - LOOK_LOST_AFTER, looked)
            report.rescued += looked.rescued
        duration = time.monotonic() - began
        reporting.scan(
            shard, duration, len(rows), report.fired, report.coalesced, report.retries, report.stale, report.rescued
        )
        return report

    def _hand_on(self, shard: str, last: str, tick: str, report: ScanReport) -> None:
        """Send a scan message for the rows of ``shard`` after ``last``. If it cannot be sent, those rows
        stay in the index for the next tick's scan."""
        assert self.send_scan is not None
        try:
            self.send_scan(ScanMessage(shard=shard, tick=tick, after=last).to_json())
        except Exception:
            log.warning("shard %s: rows after %s not handed on; the next tick scans them", shard, last, exc_info=True)
            return
        report.handed_on = last
        log.info("shard %s: more than %d rows due; the rows after %s handed on", shard, self.chunk, last)

    def _out_of_time(
        self, shard: str, rows: list[DueEntry], unstarted: list[int], tick: str, report: ScanReport
    ) -> None:
        """The scan ran out of its budget before starting the rows at the indexes ``unstarted`` (of ``rows``,
        which are in key order): hand them on, as a scan of the rows after the last one before them, unless the
        rest of the shard was handed on already (a further scan of this range would also read that message's
        rows: they are left to the next tick's scan instead). Either way they stay in the index until sent."""
        first = min(unstarted)
        report.deferred = len(unstarted)
        if report.handed_on or self.send_scan is None:
            log.warning(
                "shard %s: %d rows not started within %g s; left for the next tick", shard, len(unstarted), self.budget
            )
            return
        last = rows[first - 1].row_key  # the first row is always started
        try:
            self.send_scan(ScanMessage(shard=shard, tick=tick, after=last).to_json())
        except Exception:
            log.warning("shard %s: rows after %s not handed on; the next tick scans them", shard, last, exc_info=True)
            return
        report.handed_on = last
        log.warning("shard %s: %d rows not started within %g s; handed on", shard, len(unstarted), self.budget)

    def _dispatch_rows(
        self,
        entries: list[TypedEntry | None],
        now: datetime,
        report: ScanReport,
        jobs: dict[tuple[str, str], Job],
        deadline: float | None = None,
    ) -> list[int]:
        """Dispatch each row (concurrently when there are many): a row that fails stays in the index. Past
        ``deadline`` (of :attr:`monotonic`; None: none) no row is started but the first: the indexes of the rows
        not started are returned (they stay in the index)."""
        unstarted: list[int] = []

        def one(index: int, entry: TypedEntry | None) -> ScanReport:
            mine = ScanReport(report.shard)
            if deadline is not None and index and self.monotonic() > deadline:
                unstarted.append(index)
                return mine
            if not isinstance(entry, (OccurrenceEntry, ParkedEntry, WatchEntry)):
                return mine  # not a kind a scan handles: left alone
            try:
                self.rows.dispatch(entry, now, mine, jobs.get((entry.job_partition, entry.job_row)))
            except Exception:
                # One bad row must not stop the shard; it stays in the index and is retried next tick.
                log.exception("shard %s: row %s could not be dispatched", report.shard, entry.row_key)
                return ScanReport(report.shard)  # none of its sends, moves or watches counts
            return mine

        if len(entries) <= SERIAL_ROWS:
            for index, entry in enumerate(entries):
                report.add(one(index, entry))
        else:
            for part in self._threads().map(one, range(len(entries)), entries):
                report.add(part)
        return sorted(unstarted)

    def dispatch_job(self, job: Job, now: datetime) -> ScanReport:
        """Dispatch a job's row right away (a job written with an occurrence inside the lookahead window
        would otherwise wait for the next tick and fire late)."""
        report = ScanReport(job.due.shard if job.due else "")
        if job.due is None or job.next_execution_time is None:
            return report
        ref = job.ref
        row = OccurrenceEntry(
            job.due.shard, job.due.row_key, ref.partition_key, ref.row_key, job.generation, job.next_execution_time
        )
        self.rows.dispatch(row, now, report, job)
        self._apply(report, now)
        return report

    def _apply(self, report: ScanReport, now: datetime) -> None:
        """Write what a scan decided (its moves and new watch entries in the shard's batches, its deletes),
        then send the watch looks of the watch entries it wrote."""
        if report.moves or report.watches:
            moves = [(key, new.entry() if new is not None else None) for key, new in report.moves]
            self.stores.due.advance(report.shard, moves, [watch.entry() for watch in report.watches])
        self.stores.due.delete_many(report.deleted)
        written = report.watches + [new for _, new in report.moves if isinstance(new, WatchEntry)]
        self.watches.schedule(written, now)
