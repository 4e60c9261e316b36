"""What one due-index row becomes: an occurrence fired (with the following ones inside the window), a parked
retry sent, a watch entry looked at, or a stale row dropped.

A row is *live* when its job exists, is enabled and has the row's generation; a job has at most one row
per generation, because the dispatcher replaces a fired row by the following one in one transaction. A
row whose generation is newer than its job's belongs to a write still in progress (the row is written
before the job): it is left alone unless it is older than :data:`ABANDONED_AFTER`. Occurrences missed while
the service was down are coalesced into one late run (or planned by ``missedRunPolicy``), and the schedule
resumes at the next future occurrence.

Nothing here writes the index: each decision goes into the scan's :class:`ScanReport` (its moves, deletes and
new watch entries), which the dispatcher writes in the shard's batches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from scheduler_core import policies
from scheduler_core.model import Job, JobState, OccurrenceEntry, ParkedEntry, TypedEntry, WatchEntry
from scheduler_core.model.actions import NotificationKind
from scheduler_core.model.job import DEFAULT_MISSED_RUN_POLICY
from scheduler_core.pipeline import attempts, catch_up, reporting
from scheduler_core.pipeline.attempts import Attempts
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.pipeline.watchdog import Watchdog
from scheduler_core.ports import Stores
from scheduler_core.recurrence import OccurrenceSeries, format_instant
from scheduler_core.schedules import schedule_of

log = logging.getLogger("scheduler_core.dispatch")

#: A due-index row newer than its job's generation is left alone for this long (the job write may be
#: in flight); after that it is an abandoned write and is removed.
ABANDONED_AFTER = timedelta(minutes=2)

#: Jobs named in one ``JobStore.get_many`` call of a scan (14 fit one Table Storage query's filter); the
#: calls of a large scan run on the pool too.
JOBS_PER_READ = 14


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
    #: Each fired or looked-at entry's key, and the entry that replaces it (None: none).
    moves: list[tuple[str, OccurrenceEntry | WatchEntry | None]] = field(default_factory=list)
    #: The watch entries of the attempts the scan sent.
    watches: list[WatchEntry] = field(default_factory=list)

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


def jobs_of(
    stores: Stores, entries: list[TypedEntry | None], now: datetime, threads: Callable[[], Executor]
) -> dict[tuple[str, str], Job]:
    """The jobs the rows name, read a partition (collection) at a time, :data:`JOBS_PER_READ` keys a call
    (concurrently for a large scan; a watch entry's job only when the entry is due: it is looked at then)."""
    wanted: dict[str, set[str]] = {}
    for entry in entries:
        if isinstance(entry, (OccurrenceEntry, ParkedEntry)) or (isinstance(entry, WatchEntry) and entry.due <= now):
            wanted.setdefault(entry.job_partition, set()).add(entry.job_row)
    reads = [
        (partition, ordered[start : start + JOBS_PER_READ])
        for partition, keys in wanted.items()
        for ordered in [sorted(keys)]
        for start in range(0, len(ordered), JOBS_PER_READ)
    ]

    def read(part: tuple[str, list[str]]) -> dict[str, Job]:
        return stores.jobs.get_many(*part)

    found = map(read, reads) if len(reads) <= 1 else threads().map(read, reads)
    jobs: dict[tuple[str, str], Job] = {}
    for (partition, _keys), got in zip(reads, found, strict=True):
        for key, job in got.items():
            jobs[(partition, key)] = job
    return jobs


class Rows:
    """Decides the rows of scans (the deployment's stores, its attempts and watchdog, the scans' lookahead)."""

    def __init__(self, stores: Stores, attempts: Attempts, watchdog: Watchdog, lookahead: timedelta) -> None:
        self.stores = stores
        self.attempts = attempts
        self.watchdog = watchdog
        self.lookahead = lookahead

    def dispatch(self, entry: TypedEntry | None, now: datetime, report: ScanReport, job: Job | None) -> None:
        """Fire, re-send, look at or drop one entry; ``job`` is its job as read by the caller (None: gone). An
        entry of a kind a scan does not handle (None: unknown) is left alone."""
        match entry:
            case WatchEntry():
                look = self.watchdog.check(entry, now, job)
                if look is not None:
                    report.moves.append((entry.row_key, look.again))
                    report.rescued += look.rescued
            case ParkedEntry():  # a long-delayed retry parked in the index
                if job is not None and job.generation == entry.generation and job.state == JobState.ENABLED:
                    self.attempts.unpark(entry, now)
                    report.retries += 1
                report.deleted.append((entry.shard, entry.row_key))
            case OccurrenceEntry():
                self._occurrence(entry, now, report, job)

    def _occurrence(self, row: OccurrenceEntry, now: datetime, report: ScanReport, job: Job | None) -> None:
        """Fire a live occurrence entry; drop a stale one (its job deleted, edited or disabled, or a write
        abandoned)."""
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

    def _fire(self, job: Job, row: OccurrenceEntry, now: datetime, report: ScanReport) -> None:
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
            self._deadline(job, message, row.shard, now, report)
            report.fired += 1
            if following is None or following >= horizon:
                break
            occurrence, missed = following, 0
            following = schedule.after(occurrence)
        self._move(job, row, following, report)

    def _deadline(self, job: Job, message: ExecutionMessage, shard: str, now: datetime, report: ScanReport) -> None:
        """With ``notifications.deadline``: send its message with the occurrence's, to show ``after`` past the
        occurrence (at once when that has passed), watched in the scan's batch."""
        notifications = job.definition.notifications
        deadline = notifications.deadline if notifications is not None else None
        if deadline is not None:
            due = message.occurrence_time + deadline.after.value
            report.watches.append(
                self.attempts.dispatch_at(
                    job, attempts.notification_of(message, NotificationKind.DEADLINE), shard, due, now
                )
            )

    @staticmethod
    def _move(job: Job, row: OccurrenceEntry, following: datetime | None, report: ScanReport) -> None:
        """Replace the fired row by the row of ``following`` (None: the series is over)."""
        new_row = None
        if following is not None:
            new_row = OccurrenceEntry.of(row.shard, job.ref, job.generation, following)
        report.moves.append((row.row_key, new_row))

    def _catch_up(
        self,
        job: Job,
        row: OccurrenceEntry,
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
            self._deadline(job, message, row.shard, now, report)
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
