"""History entries: one per attempt of an action."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from scheduler_core.model.states import ActionName, HistoryStatus


@dataclass(frozen=True)
class HistoryEntry:
    """One attempt as recorded. ``row_key`` orders a job's entries newest first and is fixed by the attempt's
    claim and execution id, so writing the same attempt again leaves one entry."""

    execution_id: str
    row_key: str
    start_time: datetime
    end_time: datetime | None
    expected_execution_time: datetime | None
    action_name: ActionName
    status: HistoryStatus
    message: str
    retry_count: int
    repeat_count: int
