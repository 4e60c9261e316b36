"""A job's history entries at the wire: the ``JobHistoryDefinition`` the API answers (and the history stream
carries), in each api-version's shape."""

from __future__ import annotations

from typing import Any

from scheduler_core.definitions._durations import format_duration
from scheduler_core.definitions._versions import Wire
from scheduler_core.model import HistoryEntry
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import JobRef

__all__ = ["HISTORY_TYPE", "history_json"]

HISTORY_TYPE = "Microsoft.Scheduler/jobCollections/jobs/history"


def history_json(ref: JobRef, row: HistoryEntry, wire: Wire = Wire.CLASSIC) -> dict[str, Any]:
    """A history entry as ``wire`` shows it: the preview adds ``trigger`` (``Scheduled``, ``Manual``,
    ``Backfill`` or ``Replay``: what started the occurrence) and, where the attempt was due at another instant than its
    expected execution time, ``dueTime`` (a retry's retry time, an error action's send, a backfill's start
    slot: what its lateness is measured against) and ``flowWait`` (how long it waited for its ``flowControl``
    key's limits, not part of its lateness); 2016-03-01 answers exactly as it always did."""
    properties: dict[str, Any] = {
        "startTime": format_instant(row.start_time),
        "actionName": row.action_name,
        "status": row.status,
        "message": row.message,
        "retryCount": row.retry_count,
        "repeatCount": row.repeat_count,
    }
    if row.end_time is not None:
        properties["endTime"] = format_instant(row.end_time)
    if row.expected_execution_time is not None:
        properties["expectedExecutionTime"] = format_instant(row.expected_execution_time)
    if wire.preview:
        properties["trigger"] = str(row.trigger)
        if row.due_time is not None:
            properties["dueTime"] = format_instant(row.due_time)
        if row.flow_wait is not None:
            properties["flowWait"] = format_duration(row.flow_wait)
    return {
        "id": f"{ref.resource_id}/history/{row.execution_id}",
        "type": HISTORY_TYPE,
        "name": row.execution_id,
        "properties": properties,
    }
