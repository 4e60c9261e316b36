"""Jobs as stored: the definition, its write-only secrets, the state, the counters and where the job's live
due-index entry is."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduler_core.model.states import JobState
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import JobRef


@dataclass(frozen=True)
class DueSlot:
    """Where a job's live due-index entry is."""

    shard: str
    row_key: str


@dataclass(frozen=True)
class Job:
    """A stored job. ``properties`` is its canonical ``JobProperties`` JSON without ``status`` and without
    secrets; ``secrets`` maps dotted paths inside it to the write-only values (kept out of ``repr``).
    ``generation`` grows with every write of the definition or state: an execution message or due entry of
    another generation is stale. ``etag`` is the version it was read at."""

    ref: JobRef
    properties: dict[str, Any]
    secrets: dict[str, str] = field(repr=False)
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
