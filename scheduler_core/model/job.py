"""Jobs as stored: the definition (when the job runs and what it does, secrets included as
:class:`~scheduler_core.model.actions.Secret` fields), the state, the counters and where the job's live
due-index entry is."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scheduler_core.model.actions import JobAction
from scheduler_core.model.states import JobState
from scheduler_core.recurrence import Recurrence, format_instant
from scheduler_core.storage.keys import JobRef


@dataclass(frozen=True)
class DueSlot:
    """Where a job's live due-index entry is."""

    shard: str
    row_key: str


@dataclass(frozen=True)
class JobDefinition:
    """What a client defines of a job: when it runs and what it does. ``start_time`` (aware, UTC) is the
    first instant it may run (None: when the definition is written); ``recurrence`` is how it repeats
    (None: it runs once); ``action`` is what it does, with its retry policy and error action. The state
    (enabled or disabled by the client, completed or faulted by the service) is the job's, not the
    definition's. Secrets inside the action are :class:`~scheduler_core.model.actions.Secret` values, so a
    printed definition shows none."""

    action: JobAction
    start_time: datetime | None = None
    recurrence: Recurrence | None = None

    @property
    def series(self) -> tuple[object, ...] | None:
        """What identifies the job's series of occurrences: its start and the recurrence's frequency,
        interval, schedule and time zone (``count`` and ``endTime`` only bound it). An edit that keeps
        the series keeps the occurrences run so far counting towards ``count``. None: the job does not
        recur, so it has no series to keep."""
        recurrence = self.recurrence
        if recurrence is None:
            return None
        return (self.start_time, recurrence.frequency, recurrence.interval, recurrence.schedule, recurrence.time_zone)


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
    or state: an execution message or due entry of another generation is stale. ``etag`` is the version it
    was read at."""

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
    next_execution_time: datetime | None = None
    due: DueSlot | None = None
    ended_at: datetime | None = None
    etag: str = ""
    #: The attempts (``ExecutionMessage.attempt_key``) whose counters this job holds, the last few only:
    #: a counter write retried after its answer was lost, or a dead worker's, is not counted twice.
    counted: tuple[str, ...] = ()

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
