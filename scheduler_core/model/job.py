"""Jobs as stored: the definition (when the job runs and what it does, secrets included as
:class:`~scheduler_core.model.actions.Secret` fields), the state, the counters and where the job's live
due-index entry is.

The definition's policies (:class:`OverlapPolicy`, :class:`MissedRunPolicy`, ``pause_after_failures``,
``delete_after_completion``) and the recurrence's ``jitter`` and :class:`Exclusions` exist at the wire only
in api-version ``2026-12-01-preview``; each defaults to what a 2016-03-01 job does.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from scheduler_core.model.actions import JobAction, Notifications
from scheduler_core.model.calendars import CalendarRules, horizon
from scheduler_core.model.retry import Duration
from scheduler_core.model.states import JobState
from scheduler_core.recurrence import Recurrence, format_instant
from scheduler_core.storage.keys import JobRef


@dataclass(frozen=True)
class DueSlot:
    """Where a job's live due-index entry is."""

    shard: str
    row_key: str


class OverlapPolicy(enum.StrEnum):
    """``properties.overlapPolicy``: what an occurrence does while the previous one is unfinished (its main
    action, retries or error action still pending)."""

    ALLOW_ALL = "AllowAll"
    """Runs anyway, alongside the previous one (Azure Scheduler's behaviour; the default)."""
    SKIP = "Skip"
    """Does not run; recorded in history as ``Skipped`` with the reason."""
    BUFFER_ONE = "BufferOne"
    """Waits for the previous one to finish, then runs; at most one waits (a later one is skipped)."""


class MissedRunMode(enum.StrEnum):
    """``properties.missedRunPolicy.mode``: what happens to occurrences missed while the service was down."""

    RUN_ONCE = "RunOnce"
    """One late run stands for all of them (Azure Scheduler's coalescing; the default)."""
    RUN_ALL = "RunAll"
    """Each missed occurrence runs, in order."""
    SKIP = "Skip"
    """None runs; the schedule resumes at the next future occurrence."""


@dataclass(frozen=True, slots=True)
class MissedRunPolicy:
    """``properties.missedRunPolicy``: ``mode``, and ``window``: how old a missed occurrence may be and
    still run (None: any age). ``window`` applies to RunOnce and RunAll only."""

    mode: MissedRunMode = MissedRunMode.RUN_ONCE
    window: Duration | None = None

    @property
    def window_length(self) -> timedelta | None:
        """The window as a length of time, or None for no limit."""
        return self.window.value if self.window is not None else None


#: The policy of a job that names none: today's coalescing, without a window.
DEFAULT_MISSED_RUN_POLICY = MissedRunPolicy()


@dataclass(frozen=True, slots=True)
class ExclusionRange:
    """One ``recurrence.exclusions.ranges`` item: local wall-clock times in the job's time zone (UTC when
    it has none). ``start`` and ``end`` are each a :class:`~datetime.date` (midnight; as ``end``, the whole
    day is included) or a naive :class:`~datetime.datetime` (``end`` excluded)."""

    start: date | datetime
    end: date | datetime

    @property
    def start_wall(self) -> datetime:
        """The first excluded wall-clock time."""
        return _wall(self.start)

    @property
    def end_wall(self) -> datetime:
        """The first wall-clock time after the range (a date as ``end``: midnight of the next day)."""
        if isinstance(self.end, datetime):
            return self.end
        return _wall(self.end) + timedelta(days=1)


def _wall(value: date | datetime) -> datetime:
    return value if isinstance(value, datetime) else datetime(value.year, value.month, value.day)


@dataclass(frozen=True, slots=True)
class Exclusions:
    """``recurrence.exclusions``: occurrences on these local ``dates``, within these ``ranges``, or on a
    date of the collection's named ``calendars`` do not fire and do not count towards ``count``.
    ``calendar_dates`` and ``calendar_rules`` are the dates and recurring rules of those calendars as they
    were when the job was last written (the service writes every job that uses a calendar again when the
    calendar changes), so the schedule needs no read of the collection."""

    dates: tuple[date, ...] = ()
    ranges: tuple[ExclusionRange, ...] = ()
    calendars: tuple[str, ...] = ()
    calendar_dates: tuple[date, ...] = field(default=())
    calendar_rules: CalendarRules = field(default_factory=CalendarRules)
    #: What an occurrence on an excluded date does: ``Skip`` (it does not fire), ``NextBusinessDay`` or
    #: ``PreviousBusinessDay`` (it moves to the nearest day not excluded, at the same wall time).
    on_excluded: str = "Skip"

    def dates_for(self, created: datetime) -> frozenset[date]:
        """Every excluded local date of a schedule created at ``created``: :attr:`all_dates` and the dates
        the calendars' recurring rules name within their horizon (:func:`~scheduler_core.model.calendars.horizon`)."""
        if not self.calendar_rules:
            return self.all_dates
        return self.all_dates | frozenset(self.calendar_rules.dates(horizon(created)))

    @property
    def all_dates(self) -> frozenset[date]:
        """Every excluded local date: the job's own and its calendars'."""
        return frozenset(self.dates) | frozenset(self.calendar_dates)

    @property
    def walls(self) -> tuple[tuple[datetime, datetime], ...]:
        """The excluded ranges as (first excluded wall time, first wall time after), in the given order."""
        return tuple((item.start_wall, item.end_wall) for item in self.ranges)


@dataclass(frozen=True)
class JobDefinition:
    """What a client defines of a job: when it runs and what it does. ``start_time`` (aware, UTC) is the
    first instant it may run (None: when the definition is written); ``recurrence`` is how it repeats
    (None: it runs once); ``action`` is what it does, with its retry policy and error action. The state
    (enabled or disabled by the client, completed or faulted by the service) is the job's, not the
    definition's. Secrets inside the action are :class:`~scheduler_core.model.actions.Secret` values, so a
    printed definition shows none.

    The rest exists at the wire in api-version 2026-12-01-preview only (each default is a 2016-03-01 job):
    ``overlap_policy``, ``missed_run_policy``, ``pause_after_failures`` (after this many consecutive faulted
    occurrences the job is disabled; None: never), ``delete_after_completion`` (a job that completes, not
    one that faults, is removed), and, with a recurrence only, ``jitter`` (each occurrence fires at a stable
    pseudo-random offset in [0, jitter) after its instant) and ``exclusions``; ``tags`` and ``description``
    only label the job."""

    action: JobAction
    start_time: datetime | None = None
    recurrence: Recurrence | None = None
    overlap_policy: OverlapPolicy = OverlapPolicy.ALLOW_ALL
    missed_run_policy: MissedRunPolicy = DEFAULT_MISSED_RUN_POLICY
    pause_after_failures: int | None = None
    delete_after_completion: bool = False
    jitter: Duration | None = None
    exclusions: Exclusions | None = None
    #: ``tags`` (key, value) in the order written, and ``description``: labels for people and ``$filter``.
    tags: tuple[tuple[str, str], ...] = ()
    description: str | None = None
    #: ``notifications``: what the job sends when a failure streak starts or ends (None: nothing).
    notifications: Notifications | None = None

    def tag(self, key: str) -> str | None:
        """The value of the tag ``key`` (keys match without regard to case, as ARM's do), or None."""
        wanted = key.casefold()
        return next((value for name, value in self.tags if name.casefold() == wanted), None)

    @property
    def jitter_length(self) -> timedelta | None:
        """The jitter as a length of time (None: none)."""
        return self.jitter.value if self.jitter is not None else None

    @property
    def series(self) -> tuple[object, ...] | None:
        """What identifies the job's series of occurrences: its start and the recurrence's frequency,
        interval, schedule, cron strings and time zone (``count`` and ``endTime`` only bound it). An edit that keeps
        the series keeps the occurrences run so far counting towards ``count``. None: the job does not
        recur, so it has no series to keep."""
        recurrence = self.recurrence
        if recurrence is None:
            return None
        return (
            self.start_time,
            recurrence.frequency,
            recurrence.interval,
            recurrence.schedule,
            recurrence.zone_name,
            recurrence.cron,
        )


def first_generation(created: datetime) -> int:
    """The generation of a job when it is created: the microseconds from the Unix epoch to ``created``.

    A job deleted and created again under the same name must not share a generation with its former
    self, or a due-index entry or an execution message the old job left behind (an entry the dispatcher
    moved after the row last named it, a retry waiting in the queue) would fire the new one. Each write
    of a job adds one to its generation and takes well over a microsecond, so every generation of the old
    job is below the new job's first, whatever the edits, as long as the clock does not step back further
    than the old job lived."""
    return int(created.timestamp() * 1_000_000)


@dataclass(frozen=True)
class Job:
    """A stored job: its ``definition`` and ``state``, and what the service keeps about it.
    ``generation`` starts at :func:`first_generation` and grows by one with every write of the definition
    or state: an execution message or due entry of another generation is stale. ``etag`` is the stored row's
    version it was read at (every write of the row changes it, a fire's counters too); :attr:`version` is the
    job's version as clients see it (the ETag the API answers and ``If-Match`` names)."""

    ref: JobRef
    definition: JobDefinition
    state: JobState
    generation: int
    defined_at: datetime  # when this definition was written (the "creation time" of its schedule)
    created_at: datetime
    execution_count: int = 0
    failure_count: int = 0
    faulted_count: int = 0
    last_execution_time: datetime | None = None
    #: The history status of the last counted execution of the main action (``Completed`` or ``Failed``;
    #: "": none yet). Answered to no client; ``$filter=lastOutcome eq '...'`` lists jobs by it.
    last_outcome: str = ""
    next_execution_time: datetime | None = None
    due: DueSlot | None = None
    ended_at: datetime | None = None
    etag: str = ""
    #: The attempts (``ExecutionMessage.attempt_key``) whose counters this job holds, the last few only:
    #: a counter write retried after its answer was lost, or a dead worker's, is not counted twice.
    counted: tuple[str, ...] = ()
    #: ``overlapPolicy`` Skip or BufferOne only: the occurrence whose attempts are unfinished, as
    #: ``"<generation>|<occurrence>"`` ("": none), and the execution message of the occurrence that waits for
    #: it (BufferOne; "": none). Every write of the definition or state starts them afresh.
    running: str = ""
    waiting: str = ""
    #: Why the service disabled the job (``pauseAfterFailures``; "": it did not). A write starts it afresh.
    paused: str = ""

    @property
    def version(self) -> str:
        """The ETag clients see: it changes when the definition or the state does (every write of either adds
        to the generation; the service completes, faults or pauses a job by its state) and only then, so a fire
        (its counters, next execution time, history) does not make an edit started before it a 412. A job
        deleted and created again has another (:func:`first_generation`)."""
        return f'W/"{self.generation:x}-{self.state.value.lower()}"'

    def running_occurrence(self) -> datetime | None:
        """The occurrence of this generation whose attempts are unfinished (None: none)."""
        generation, _, occurrence = self.running.partition("|")
        if not occurrence or generation != str(self.generation):
            return None
        return datetime.fromisoformat(occurrence.replace("Z", "+00:00"))

    def status(self) -> dict[str, Any]:
        """The read-only ``status`` of the job's ARM JSON."""
        status: dict[str, Any] = {
            "executionCount": self.execution_count,
            "failureCount": self.failure_count,
            "faultedCount": self.faulted_count,
        }
        if self.last_execution_time is not None:
            status["lastExecutionTime"] = format_instant(self.last_execution_time)
        if self.next_execution_time is not None:
            status["nextExecutionTime"] = format_instant(self.next_execution_time)
        return status
