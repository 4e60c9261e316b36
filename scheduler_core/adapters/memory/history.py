"""In-memory history (the :class:`~scheduler_core.ports.History` port): entries by job identity, listed in
row-key order, which is newest first (:func:`~scheduler_core.storage.keys.history_row_key`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta

from scheduler_core.adapters.memory.seam import FaultSeam, faultable, utc, utc_or_none
from scheduler_core.model import ActionName, HistoryEntry, HistoryStatus
from scheduler_core.model.history import HistoryRetention, Trigger
from scheduler_core.storage.keys import JobRef


class MemoryHistory(FaultSeam):
    """History entries by (job identity, row key)."""

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[str, dict[str, HistoryEntry]] = {}
        self._lock = threading.RLock()

    @staticmethod
    def _stored(record: HistoryEntry) -> HistoryEntry:
        return replace(
            record,
            start_time=utc(record.start_time),
            end_time=utc_or_none(record.end_time),
            expected_execution_time=utc_or_none(record.expected_execution_time),
            action_name=ActionName(record.action_name),
            status=HistoryStatus(record.status),
            retry_count=int(record.retry_count),
            repeat_count=int(record.repeat_count),
            trigger=Trigger(record.trigger),
            due_time=utc_or_none(record.due_time),
            # a double of seconds in a table
            flow_wait=timedelta(seconds=record.flow_wait.total_seconds()) if record.flow_wait is not None else None,
        )

    def _partition(self, job: JobRef) -> dict[str, HistoryEntry]:
        return self._rows.setdefault(job.identity, {})

    @faultable
    def add(self, job: JobRef, record: HistoryEntry) -> None:
        stored = self._stored(record)
        with self._lock:
            self._partition(job)[record.row_key] = stored

    @faultable
    def add_if_absent(self, job: JobRef, record: HistoryEntry) -> bool:
        stored = self._stored(record)
        with self._lock:
            rows = self._partition(job)
            if record.row_key in rows:
                return False
            rows[record.row_key] = stored
            return True

    @faultable
    def list(self, job: JobRef, *, once: bool = False) -> Iterator[HistoryEntry]:
        identity = job.identity
        with self._lock:
            rows = self._rows.get(identity, {})
            found = [rows[key] for key in sorted(rows)]
        yield from found

    @faultable
    def trim(self, job: JobRef, retention: HistoryRetention, now: datetime) -> int:
        identity = job.identity
        with self._lock:
            rows = self._rows.get(identity, {})
            doomed = retention.doomed(((key, row.start_time, row.status) for key, row in rows.items()), now)
            for key in doomed:
                del rows[key]
            return len(doomed)

    @faultable
    def delete_all(self, job: JobRef) -> None:
        identity = job.identity
        with self._lock:
            self._rows.pop(identity, None)
