"""History entries: one per attempt of an action."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from scheduler_core.model.states import ActionName, HistoryStatus


class Trigger(StrEnum):
    """What started the occurrence an entry belongs to (``properties.trigger`` of a history entry with
    api-version 2026-12-01-preview; 2016-03-01 answers never show it). Retries and the error action of an
    occurrence carry its trigger. An entry stored without one (written before the field) is ``Scheduled``."""

    SCHEDULED = "Scheduled"
    """An occurrence of the job's schedule (on time, late, or standing for missed ones), its retries and
    its error action."""
    MANUAL = "Manual"
    """A run on demand (``POST .../run``)."""
    BACKFILL = "Backfill"
    """An occurrence of a past window run by ``POST .../backfill`` (api-version 2026-12-01-preview)."""
    REPLAY = "Replay"
    """An occurrence run again by ``POST .../history/{id}/rerun`` (api-version 2026-12-01-preview)."""


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
    trigger: Trigger = Trigger.SCHEDULED
    #: When the attempt was due to start, where that is not its expected execution time (a retry's retry
    #: time, an error action's send, a backfill's start slot): what its lateness is measured against. None:
    #: its expected execution time, or unknown (an entry written before the field).
    due_time: datetime | None = None
