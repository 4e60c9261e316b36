"""Values the contract tests store: one builder per kind, with every field filled in unless a test says
otherwise, so that a round trip checks every field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_core.model import (
    ActionName,
    DueEntry,
    DueSlot,
    HistoryEntry,
    HistoryStatus,
    Job,
    JobCollection,
    JobState,
)
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
        properties={"sku": {"name": "Standard"}, "state": "Enabled", "quota": {"maxJobCount": max_jobs}},
        created_at=T0,
        etag=etag,
        job_count=job_count,
    )


def job(ref: JobRef = JOB, *, generation: int = 1, **changes: Any) -> Job:
    fields: dict[str, Any] = {
        "ref": ref,
        "properties": {"action": {"type": "Http", "request": {"uri": "https://example.org/", "method": "GET"}}},
        "secrets": {"action.request.authentication.password": "pa55"},
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
