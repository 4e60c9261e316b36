"""What the operations of one noun read of another's: a live collection, a job's history entry to replay, and
the errors for what is not found."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from scheduler_core.errors import NotFoundError, SchedulerError
from scheduler_core.model import Job, JobCollection
from scheduler_core.ports import Stores
from scheduler_core.storage.keys import CollectionRef, JobRef


def collection_not_found(ref: CollectionRef) -> NotFoundError:
    return NotFoundError(f"job collection '{ref.name}' was not found in resource group '{ref.resource_group}'")


def job_not_found(ref: JobRef) -> NotFoundError:
    return NotFoundError(f"job '{ref.name}' was not found in job collection '{ref.collection.name}'")


def live_collection(stores: Stores, ref: CollectionRef) -> JobCollection:
    """The collection as stored, unless it does not exist or is being deleted (404)."""
    record = stores.collections.get(ref)
    if record is None or record.deleting:
        raise collection_not_found(ref)
    return record


#: Runs a job's occurrence (its expected time) again now; the execution id of the replay's first attempt.
ReplayRequest = Callable[[Job, datetime], str]


def replay(stores: Stores, job: Job, execution_id: str, request: ReplayRequest | None) -> tuple[datetime, str]:
    """Run the occurrence of ``job``'s history entry ``execution_id`` again now (api-version
    2026-12-01-preview): its main action, its own expected time, under the job's retry policy, whatever the
    job's state; the occurrence and the execution id of the replay's first attempt. 404 naming ``historyId``
    when the job has no such entry (or one without an expected time)."""
    wanted = execution_id.strip().lower()
    found = next((row for row in stores.history.list(job.ref) if row.execution_id == wanted), None)
    if found is None or found.expected_execution_time is None:
        raise NotFoundError(f"historyId: job '{job.ref.name}' has no history entry '{execution_id[:64]}'")
    if request is None:
        raise SchedulerError("replaying occurrences is not available in this deployment")
    occurrence = found.expected_execution_time
    return occurrence, request(job, occurrence)
