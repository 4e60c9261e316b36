"""Dispatch: every tick, each due-index shard is scanned and its due occurrences become execution messages.

For each live row due before ``now + lookahead`` the scan sends an execution message that becomes visible
at the due second, then replaces the fired row by the row of the job's following occurrence (batched per
shard). Rows of stale generations, deleted or disabled jobs are
removed without firing. Occurrences missed while the service was down are coalesced into one late run,
recorded as such, and the schedule resumes at the next future occurrence.

A row is *live* when its job exists, is enabled and has the row's generation; a job has at most one row
per generation, because the dispatcher replaces a fired row by the following one in one transaction. A
row whose generation is newer than its job's belongs to a write still in progress (the row is written
before the job): it is left alone unless it is older than :data:`ABANDONED_AFTER`.

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
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from scheduler_core import policies
from scheduler_core.model import CLAIM_LEASE, WATCH, DueEntry, Job, JobState
from scheduler_core.model.job import DEFAULT_MISSED_RUN_POLICY
from scheduler_core.pipeline import attempts, catch_up, reporting
from scheduler_core.pipeline.attempts import Attempts
from scheduler_core.pipeline.messages import ScanMessage
from scheduler_core.pipeline.ticks import Ticker
from scheduler_core.pipeline.watchdog import Behind, Watchdog
from scheduler_core.pipeline.watches import WATCH_GRACE, WATCH_KEYS, WATCH_SLOT, SendLook, Watches, watch_keys_before
from scheduler_core.ports import Claims, ExecutionQueue, Stores
from scheduler_core.queue_depths import DepthProbe, QueueDepths
from scheduler_core.recurrence import OccurrenceSeries, format_instant
from scheduler_core.schedules import schedule_of
from scheduler_core.storage.keys import due_row_key, format_due

log = logging.getLogger("scheduler_core.dispatch")

#: A due-index row newer than its job's generation is left alone for this long (the job write may be
#: in flight); after that it is an abandoned write and is removed.
ABANDONED_AFTER = timedelta(minutes=2)

Send = ExecutionQueue  # (message text, visibility timeout in whole seconds)


@dataclass
class ScanReport:
    shard: str
    fired: int = 0
    coalesced: int = 0
    stale: int = 0
    retries: int = 0
    rescued: int = 0  # attempts sent again because their worker died (watchdog)
    handed_on: str = ""  # the row key after which the rest of the shard was handed on ("": none)
    deferred: int = 0  # rows not started within the scan's budget (handed on, or left for the next tick)
    deleted: list[tuple[str, str]] = field(default_factory=list)
    moves: list[tuple[str, DueEntry | None]] = field(default_factory=list)
    watches: list[DueEntry] = field(default_factory=list)

    def add(self, other: ScanReport) -> None:
        """Add what ``other`` (the report of some rows of the same scan) found and decided."""
        self.fired += other.fired
        self.coalesced += other.coalesced
        self.stale += other.stale
        self.retries += other.retries
        self.rescued += other.rescued
        self.deleted += other.deleted
        self.moves += other.moves
        self.watches += other.watches


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
#: Jobs named in one ``JobStore.get_many`` call of a scan (14 fit one Table Storage query's filter); the
#: calls of a large scan run on the pool too.
JOBS_PER_READ = 14
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
    ) -> None:
        """``attempts`` sends the attempts (default: over ``send``, with watch entries of ``lease`` and
        ``grace`` whose looks go through ``send_look``)."""
        self.stores = stores
        self.shards = shards
        self.lookahead = lookahead
        self.attempts = attempts or Attempts(send, Watches(stores, shards, lease, grace, send_look))
        self.watches = self.attempts.watches
        self.watchdog = Watchdog(claims, self.attempts, behind)
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
        rows = list(self.stores.due.due_before(shard, watch_keys_before(due_by), after=WATCH_KEYS))
        jobs = self._jobs_of(rows, now)
        unstarted = self._dispatch_rows(rows, now, report, jobs, deadline)
        self._apply(report, now)
        if unstarted:
            report.deferred += len(unstarted)
            try:
                self.watches.look(shard, now)  # the rest, at once
            except Exception:
                log.warning("shard %s: %d watch entries left for the next tick", shard, len(unstarted), exc_info=True)
        return len(rows)

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
        jobs = self._jobs_of(rows, now)
        unstarted = self._dispatch_rows(rows, now, report, jobs, deadline)
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
        rows: list[DueEntry],
        now: datetime,
        report: ScanReport,
        jobs: dict[tuple[str, str], Job],
        deadline: float | None = None,
    ) -> list[int]:
        """Dispatch each row (concurrently when there are many): a row that fails stays in the index. Past
        ``deadline`` (of :attr:`monotonic`; None: none) no row is started but the first: the indexes of the rows
        not started are returned (they stay in the index)."""
        unstarted: list[int] = []

        def one(index: int, row: DueEntry) -> ScanReport:
            mine = ScanReport(report.shard)
            if deadline is not None and index and self.monotonic() > deadline:
                unstarted.append(index)
                return mine
            try:
                self._dispatch_row(row, now, mine, jobs.get((row.job_partition, row.job_row)))
            except Exception:
                # One bad row must not stop the shard; it stays in the index and is retried next tick.
                log.exception("shard %s: row %s could not be dispatched", report.shard, row.row_key)
                return ScanReport(report.shard)  # none of its sends, moves or watches counts
            return mine

        if len(rows) <= SERIAL_ROWS:
            for index, row in enumerate(rows):
                report.add(one(index, row))
        else:
            for part in self._threads().map(one, range(len(rows)), rows):
                report.add(part)
        return sorted(unstarted)

    def _jobs_of(self, rows: list[DueEntry], now: datetime) -> dict[tuple[str, str], Job]:
        """The jobs the rows name, read a partition (collection) at a time, :data:`JOBS_PER_READ` keys a call
        (concurrently for a large scan; a watch entry's job only when the entry is due: it is looked at then)."""
        wanted: dict[str, set[str]] = {}
        for row in rows:
            if row.kind != WATCH or row.due <= now:
                wanted.setdefault(row.job_partition, set()).add(row.job_row)
        reads = [
            (partition, ordered[start : start + JOBS_PER_READ])
            for partition, keys in wanted.items()
            for ordered in [sorted(keys)]
            for start in range(0, len(ordered), JOBS_PER_READ)
        ]

        def read(part: tuple[str, list[str]]) -> dict[str, Job]:
            return self.stores.jobs.get_many(*part)

        found = map(read, reads) if len(reads) <= 1 else self._threads().map(read, reads)
        jobs: dict[tuple[str, str], Job] = {}
        for (partition, _keys), got in zip(reads, found, strict=True):
            for key, job in got.items():
                jobs[(partition, key)] = job
        return jobs

    def dispatch_job(self, job: Job, now: datetime) -> ScanReport:
        """Dispatch a job's row right away (a job written with an occurrence inside the lookahead window
        would otherwise wait for the next tick and fire late)."""
        report = ScanReport(job.due.shard if job.due else "")
        if job.due is None or job.next_execution_time is None:
            return report
        row = DueEntry(
            job.due.shard,
            job.due.row_key,
            job.ref.partition_key,
            job.ref.row_key,
            job.generation,
            job.next_execution_time,
        )
        self._dispatch_row(row, now, report, job)
        self._apply(report, now)
        return report

    def _apply(self, report: ScanReport, now: datetime) -> None:
        """Write what a scan decided (its moves and new watch entries in the shard's batches, its deletes),
        then send the watch looks of the watch entries it wrote."""
        if report.moves or report.watches:
            self.stores.due.advance(report.shard, report.moves, report.watches)
        self.stores.due.delete_many(report.deleted)
        written = report.watches + [new for _, new in report.moves if new is not None and new.kind == WATCH]
        self.watches.schedule(written, now)

    def _dispatch_row(self, row: DueEntry, now: datetime, report: ScanReport, job: Job | None) -> None:
        """Fire, re-send or drop one row; ``job`` is the row's job as read by the caller (None: gone)."""
        if row.kind == WATCH:
            look = self.watchdog.check(row, now, job)
            if look is not None:
                report.moves.append((row.row_key, look.again))
                report.rescued += look.rescued
            return
        if row.message is not None:  # a long-delayed retry parked in the index
            if job is not None and job.generation == row.generation and job.state == JobState.ENABLED:
                self.attempts.unpark(row, now)
                report.retries += 1
            report.deleted.append((row.shard, row.row_key))
            return
        if job is None or row.generation > job.generation:
            written = row.written_at or now
            if now - written > ABANDONED_AFTER:
                reporting.row_dropped(row, "deleted" if job is None else "abandoned write")
                report.stale += 1
                report.deleted.append((row.shard, row.row_key))
            return
        if row.generation != job.generation or job.state != JobState.ENABLED:
            reporting.row_dropped(row, "edited" if row.generation != job.generation else "disabled", job)
            report.stale += 1
            report.deleted.append((row.shard, row.row_key))
            return
        self._fire(job, row, now, report)

    def _fire(self, job: Job, row: DueEntry, now: datetime, report: ScanReport) -> None:
        """Send the row's occurrence, and any following ones that fall inside this scan's window (after a
        late or coalesced run the next occurrence may be near), then move the row past them."""
        schedule = schedule_of(job)
        horizon = now + self.lookahead
        occurrence = row.due
        following = schedule.after(occurrence)
        missed = 0
        if job.definition.missed_run_policy != DEFAULT_MISSED_RUN_POLICY and policies.is_missed(occurrence, now):
            # missedRunPolicy (api-version 2026-12-01-preview): which missed occurrences run, each sent now.
            following = self._catch_up(job, row, occurrence, now, report, schedule)
            if following is None or following >= horizon:
                self._move(job, row, following, report)
                return
            occurrence, following = following, schedule.after(following)
        elif following is not None and following <= now:
            # Down for more than one occurrence: one late run stands for all of them.
            resume = schedule.after(now, inclusive=True)
            # How many occurrences this run stands for (0 when the series ended meanwhile: not counted).
            missed = schedule.ordinal(resume) - schedule.ordinal(occurrence) if resume is not None else 0
            following = resume
            report.coalesced += 1
            reporting.coalesced(job, occurrence, missed, resume)
        while True:
            message = attempts.scheduled(job, occurrence, missed, last=following is None)
            report.watches.append(self.attempts.dispatch(job, message, row.shard, now))
            report.fired += 1
            if following is None or following >= horizon:
                break
            occurrence, missed = following, 0
            following = schedule.after(occurrence)
        self._move(job, row, following, report)

    @staticmethod
    def _move(job: Job, row: DueEntry, following: datetime | None, report: ScanReport) -> None:
        """Replace the fired row by the row of ``following`` (None: the series is over)."""
        new_row = None
        if following is not None:
            key = due_row_key(following, job.ref.identity, job.generation)
            new_row = DueEntry(row.shard, key, job.ref.partition_key, job.ref.row_key, job.generation, following)
        report.moves.append((row.row_key, new_row))

    def _catch_up(
        self,
        job: Job,
        row: DueEntry,
        occurrence: datetime,
        now: datetime,
        report: ScanReport,
        schedule: OccurrenceSeries,
    ) -> datetime | None:
        """Apply ``missedRunPolicy`` to the occurrences missed from ``occurrence`` to ``now``
        (:func:`~scheduler_core.pipeline.catch_up.plan`): the ``Skipped`` entry of those it does not run first
        (a scan that fails here sends nothing, and the next one writes it again), then each run it sends now.
        Returns the first occurrence after ``now`` (None: the series is over)."""
        plan = catch_up.plan(job, occurrence, now, schedule)
        if plan.skipped is not None:
            self.stores.history.add_if_absent(job.ref, plan.skipped)
        for late, stands_for, last in plan.runs:
            message = attempts.scheduled(job, late, stands_for, last)
            report.watches.append(self.attempts.dispatch(job, message, row.shard, now))  # shown at once: it is late
            report.fired += 1
        report.coalesced += 1
        policy = job.definition.missed_run_policy
        log.info(
            "job %s: missed occurrences from %s: %d run, the others not (missedRunPolicy %s%s); next %s",
            job.ref.identity,
            format_instant(occurrence),
            len(plan.runs),
            policy.mode,
            f", window {policy.window_length}" if policy.window_length is not None else "",
            format_instant(plan.following) if plan.following is not None else "none",
        )
        return plan.following
