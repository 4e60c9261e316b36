"""Values the contract tests store: one builder per kind, with every field filled in unless a test says
otherwise, so that a round trip checks every field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_core.definitions import parse_job
from scheduler_core.model import (
    ActionName,
    CollectionState,
    DueEntry,
    DueSlot,
    HistoryEntry,
    HistoryStatus,
    Job,
    JobCollection,
    JobDefinition,
    JobState,
    MaxRecurrence,
    Quota,
    Sku,
)
from scheduler_core.recurrence import Frequency
from scheduler_core.storage.keys import CollectionRef, JobRef, due_row_key, history_row_key

#: An instant with microseconds, to show that stores keep them.
T0 = datetime(2031, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)

COLLECTION = CollectionRef("Sub-A", "Group-1", "Jobs-One")
JOB = JobRef(COLLECTION, "Job-One")


def collection(
    ref: CollectionRef = COLLECTION, *, job_count: int | None = None, etag: str = "", max_jobs: int = 10
) -> JobCollection:
    return JobCollection(
        ref=ref,
        location="West US",
        tags={"team": "ops", "tier": "1"},
        sku=Sku.STANDARD,
        state=CollectionState.ENABLED,
        quota=Quota(max_jobs, MaxRecurrence(Frequency.MINUTE, 1), max_job_occurrence=500),
        created_at=T0,
        etag=etag,
        job_count=job_count,
    )


#: A job definition with every part filled in: a start with microseconds, a recurrence with a schedule, an
#: end and a time zone, an HTTP action with headers and a secret, a retry policy in TimeSpan style and an
#: error action with its own policy.
DEFINITION_JSON: dict[str, Any] = {
    "properties": {
        "startTime": "2031-03-04T05:06:07.123456Z",
        "action": {
            "type": "Https",
            "request": {
                "uri": "https://example.org/hook?x=1",
                "method": "POST",
                "headers": {"X-One": "1", "Content-Type": "text/plain"},
                "body": "ping",
                "authentication": {"type": "Basic", "username": "ops", "password": "pa55"},
            },
            "retryPolicy": {"retryType": "Exponential", "retryInterval": "00:00:20", "retryCount": 3},
            "errorAction": {
                "type": "StorageQueue",
                "queueMessage": {
                    "storageAccount": "acct",
                    "queueName": "errors",
                    "sasToken": "?sv=1&sig=x",
                    "message": "failed",
                },
                "retryPolicy": {"retryType": "None"},
            },
        },
        "recurrence": {
            "frequency": "Week",
            "interval": 2,
            "endTime": "2032-01-01T00:00:00Z",
            "schedule": {"weekDays": ["Monday", "Friday"], "hours": [9, 17], "minutes": [30]},
            "timeZone": "Europe/Paris",
        },
    }
}


def definition() -> JobDefinition:
    return parse_job(DEFINITION_JSON, validate_limits=False).definition


def job(ref: JobRef = JOB, *, generation: int = 1, **changes: Any) -> Job:
    fields: dict[str, Any] = {
        "ref": ref,
        "definition": definition(),
        "state": JobState.ENABLED,
        "generation": generation,
        "defined_at": T0,
        "created_at": T0 - timedelta(days=1),
        "execution_count": 7,
        "failure_count": 2,
        "faulted_count": 1,
        "last_execution_time": T0 + timedelta(minutes=1),
        "next_execution_time": T0 + timedelta(hours=1),
        "due": DueSlot("0003", due_row_key(T0 + timedelta(hours=1), ref.identity, generation)),
        "ended_at": None,
        "counted": ("attempt-1", "attempt-2"),
    }
    fields.update(changes)
    return Job(**fields)


def due_entry(
    due: datetime, shard: str = "0001", *, job: JobRef = JOB, generation: int = 1, suffix: str = "", **changes: Any
) -> DueEntry:
    fields: dict[str, Any] = {
        "shard": shard,
        "row_key": due_row_key(due, job.identity, generation) + suffix,
        "job_partition": job.partition_key,
        "job_row": job.row_key,
        "generation": generation,
        "due": due,
    }
    fields.update(changes)
    return DueEntry(**fields)


def history_entry(started: datetime, execution_id: str = "exec-1", **changes: Any) -> HistoryEntry:
    fields: dict[str, Any] = {
        "execution_id": execution_id,
        "row_key": history_row_key(started, execution_id),
        "start_time": started,
        "end_time": started + timedelta(seconds=2),
        "expected_execution_time": started - timedelta(seconds=1),
        "action_name": ActionName.MAIN,
        "status": HistoryStatus.COMPLETED,
        "message": "Http Action - Response from host 'example.org': 'OK'",
        "retry_count": 0,
        "repeat_count": 3,
    }
    fields.update(changes)
    return HistoryEntry(**fields)
