"""The JSON shapes the API answers with (ARM resources: id, type, name, properties)."""

from __future__ import annotations

from typing import Any

from scheduler_core import definitions
from scheduler_core.model import HistoryEntry, HistoryStatus, Job, JobCollection, JobState
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import JobRef

COLLECTION_TYPE = "Microsoft.Scheduler/jobCollections"
JOB_TYPE = "Microsoft.Scheduler/jobCollections/jobs"
HISTORY_TYPE = "Microsoft.Scheduler/jobCollections/jobs/history"

JOB_STATES = (JobState.ENABLED, JobState.DISABLED, JobState.FAULTED, JobState.COMPLETED)
EXECUTION_STATUSES = tuple(HistoryStatus)


def collection(record: JobCollection) -> dict[str, Any]:
    return {
        "id": record.ref.resource_id,
        "type": COLLECTION_TYPE,
        "name": record.ref.name,
        "location": record.location,
        "tags": record.tags,
        "properties": definitions.collection_json(record.sku, record.state, record.quota),
    }


def job(record: Job) -> dict[str, Any]:
    return {
        "id": record.ref.resource_id,
        "type": JOB_TYPE,
        "name": f"{record.ref.collection.name}/{record.ref.name}",
        "properties": definitions.job_output(definitions.job_json(record.definition, record.state)[0], record.status()),
    }


def history(ref: JobRef, row: HistoryEntry) -> dict[str, Any]:
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
