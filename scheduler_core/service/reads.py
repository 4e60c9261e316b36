"""What the operations of one noun read of another's: a live collection, and the errors for what is not
found."""

from __future__ import annotations

from scheduler_core.errors import NotFoundError
from scheduler_core.model import JobCollection
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
