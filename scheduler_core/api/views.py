"""The JSON shapes the API answers with (ARM resources: id, type, name, properties)."""

from __future__ import annotations

from typing import Any

from scheduler_core import definitions
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import JobRef
from scheduler_core.storage.tables import CollectionRecord, HistoryRecord, JobRecord

COLLECTION_TYPE = "Microsoft.Scheduler/jobCollections"
JOB_TYPE = "Microsoft.Scheduler/jobCollections/jobs"
HISTORY_TYPE = "Microsoft.Scheduler/jobCollections/jobs/history"

JOB_STATES = ("Enabled", "Disabled", "Faulted", "Completed")
EXECUTION_STATUSES = ("Completed", "Failed", "Postponed")


def collection(record: CollectionRecord) -> dict[str, Any]:
    return {
        "id": record.ref.resource_id,
        "type": COLLECTION_TYPE,
        "name": record.ref.name,
        "location": record.location,
        "tags": record.tags,
        "properties": record.properties,
    }


def job(record: JobRecord) -> dict[str, Any]:
    return {
        "id": record.ref.resource_id,
        "type": JOB_TYPE,
        "name": f"{record.ref.collection.name}/{record.ref.name}",
        "properties": definitions.job_output(record.properties, record.status()),
    }


def history(ref: JobRef, row: HistoryRecord) -> dict[str, Any]:
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
    return {
        "id": f"{ref.resource_id}/history/{row.execution_id}",
        "type": HISTORY_TYPE,
        "name": row.execution_id,
        "properties": properties,
    }
