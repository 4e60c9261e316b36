"""History entries: one per attempt of an action."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from scheduler_core.model.retry import Duration
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
    #: How long the attempt waited for its ``flowControl`` key's limits before it started (not part of its
    #: lateness). None: it did not wait (or was recorded before the field).
    flow_wait: timedelta | None = None


@dataclass(frozen=True, slots=True)
class Keep:
    """How long a job keeps its history entries of one kind: those that started less than ``age`` ago (None:
    no age limit), and of them only the newest ``count``."""

    age: Duration | None
    count: int


@dataclass(frozen=True, slots=True)
class HistoryRetention:
    """Which of a job's history entries the daily cleanup keeps (a collection's ``historyRetention``,
    api-version 2026-12-01-preview): ``failed`` rules the entries whose status is ``Failed``, ``succeeded``
    every other entry (``Completed``, ``Skipped``), each counted apart; ``total`` (None: no such limit) keeps at
    most that many entries of both kinds together, the newest. The default (:data:`DEFAULT_RETENTION`) is
    Azure Scheduler's: 60 days, and at most the newest 1,000 entries of both kinds together."""

    succeeded: Keep
    failed: Keep
    total: int | None = None

    def doomed(self, entries: Iterable[tuple[str, datetime, HistoryStatus]], now: datetime) -> list[str]:
        """The row keys of ``entries`` (row key, start time, status; keys order a job's entries newest first)
        that the rule removes at ``now``: an entry goes when it is older than its kind's ``age``, past its
        kind's ``count`` newest, or past the ``total`` newest of all."""
        seen = {HistoryStatus.FAILED: 0, HistoryStatus.COMPLETED: 0}
        out: list[str] = []
        for index, (key, started, status) in enumerate(sorted(entries, key=lambda entry: entry[0])):
            kind = HistoryStatus.FAILED if status == HistoryStatus.FAILED else HistoryStatus.COMPLETED
            keep = self.failed if kind == HistoryStatus.FAILED else self.succeeded
            seen[kind] += 1
            too_old = keep.age is not None and now - started > keep.age.value
            if too_old or seen[kind] > keep.count or (self.total is not None and index >= self.total):
                out.append(key)
        return out


#: Entries kept by default: 60 days, and at most the newest 1,000 (of both kinds together), as Azure Scheduler
#: kept them.
DEFAULT_KEEP = Keep(age=Duration(timedelta(days=60)), count=1000)
DEFAULT_RETENTION = HistoryRetention(succeeded=DEFAULT_KEEP, failed=DEFAULT_KEEP, total=1000)
