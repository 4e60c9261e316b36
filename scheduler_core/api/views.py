"""The JSON shapes the API answers with (ARM resources: id, type, name, properties), in the request's wire.

A job is answered as its api-version's wire shows it (:func:`scheduler_core.definitions.job_wire`): a
2016-03-01 client never sees a preview property. Calendars and occurrences exist in 2026-12-01-preview only
(:func:`require_preview`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from scheduler_core import definitions
from scheduler_core.api.paths import ResourcePath
from scheduler_core.definitions import API_VERSIONS, PREVIEW_VERSION, Wire
from scheduler_core.errors import ValidationError
from scheduler_core.model import HistoryEntry, HistoryStatus, Job, JobCollection, JobState
from scheduler_core.model.collection import Calendar
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import CollectionRef, JobRef

__all__ = [
    "API_VERSIONS",
    "CALENDAR_TYPE",
    "CLASSIC_EXECUTION_STATUSES",
    "COLLECTION_TYPE",
    "EXECUTION_STATUSES",
    "HISTORY_TYPE",
    "JOB_STATES",
    "JOB_TYPE",
    "OCCURRENCE_TYPE",
    "calendar",
    "collection",
    "history",
    "job",
    "occurrences",
    "require_preview",
]

COLLECTION_TYPE = "Microsoft.Scheduler/jobCollections"
JOB_TYPE = "Microsoft.Scheduler/jobCollections/jobs"
HISTORY_TYPE = definitions.HISTORY_TYPE
CALENDAR_TYPE = "Microsoft.Scheduler/jobCollections/calendars"
OCCURRENCE_TYPE = "Microsoft.Scheduler/jobCollections/jobs/occurrences"

JOB_STATES = (JobState.ENABLED, JobState.DISABLED, JobState.FAULTED, JobState.COMPLETED)
EXECUTION_STATUSES = tuple(HistoryStatus)
#: The statuses of 2016-03-01 (Microsoft's JobExecutionStatus): all but Skipped, a preview status.
CLASSIC_EXECUTION_STATUSES = tuple(status for status in HistoryStatus if status is not HistoryStatus.SKIPPED)


def collection(record: JobCollection, wire: Wire = Wire.CLASSIC) -> dict[str, Any]:
    """A collection as ``wire`` shows it (the classic wire: exactly as 2016-03-01 always answered)."""
    retention = record.history_retention if wire.preview else None
    return {
        "id": record.ref.resource_id,
        "type": COLLECTION_TYPE,
        "name": record.ref.name,
        "location": record.location,
        "tags": record.tags,
        "properties": definitions.collection_json(record.sku, record.state, record.quota, retention),
    }


def job(record: Job, wire: Wire = Wire.CLASSIC) -> dict[str, Any]:
    """A job as ``wire`` shows it (the classic wire: exactly as 2016-03-01 always answered)."""
    properties = definitions.job_wire(record.definition, record.state, wire)
    status = record.status()
    if wire.preview and record.state == JobState.DISABLED and record.paused:
        status["disabledReason"] = record.paused  # pauseAfterFailures disabled it
    return {
        "id": record.ref.resource_id,
        "type": JOB_TYPE,
        "name": f"{record.ref.collection.name}/{record.ref.name}",
        "properties": definitions.job_output(properties, status),
    }


def require_preview(wire: Wire, path: ResourcePath) -> None:
    """Refuse (400, naming api-version) a path that exists with the preview api-version only."""
    if path.preview_only and not wire.preview:
        what = _PREVIEW_PATHS.get(path.kind, "calendars need")
        raise ValidationError("api-version", f"{what} api-version {PREVIEW_VERSION}")


#: What each preview-only kind of path is, in the words of the error a classic api-version gets.
_PREVIEW_PATHS = {
    "job_occurrences": "a job's occurrences need",
    "job_backfill": "a job's backfill needs",
    "job_history_rerun": "re-running a history entry needs",
}


def calendar(ref: CollectionRef, record: Calendar) -> dict[str, Any]:
    """A collection's calendar (``{"properties": {"dates": [...]}}`` and its ARM identity)."""
    return {
        "id": f"{ref.resource_id}/calendars/{record.name}",
        "type": CALENDAR_TYPE,
        "name": f"{ref.name}/{record.name}",
        "properties": definitions.calendar_json(record),
    }


def occurrences(items: Sequence[tuple[datetime, datetime]], next_link: str | None) -> dict[str, Any]:
    """A page of a job's occurrences: each its ``scheduledTime`` and the ``fireTime`` it fires at (its
    jitter added; excluded occurrences are not listed)."""
    payload: dict[str, Any] = {
        "value": [
            {"scheduledTime": format_instant(scheduled), "fireTime": format_instant(fire)} for scheduled, fire in items
        ]
    }
    if next_link is not None:
        payload["nextLink"] = next_link
    return payload


def history(ref: JobRef, row: HistoryEntry, wire: Wire = Wire.CLASSIC) -> dict[str, Any]:
    """A history entry as ``wire`` shows it (:func:`scheduler_core.definitions.history_json`)."""
    return definitions.history_json(ref, row, wire)
