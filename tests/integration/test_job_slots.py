"""The job counter of collections on Azurite: exact maxJobCount across instances, prefetched slots.

Two ``SchedulerService`` objects over the same tables stand for two instances of the app (each has its
own job counter cache and prefetched slots, as separate processes would).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core import job_slots
from scheduler_core.adapters.azure.clients import table_service
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.azure.tables import TableCollections, table_stores
from scheduler_core.errors import ConflictError, NotFoundError, QuotaExceededError
from scheduler_core.model import CollectionState, JobCollection
from scheduler_core.ports import Stores
from scheduler_core.service import SchedulerService
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.jobs import every, http_action, job_body

pytestmark = pytest.mark.azurite

COLLECTION = CollectionRef("sub", "rg", "jc")


class CountingCollections(TableCollections):
    """The real collection store, counting its job-counter writes."""

    writes = 0

    def set_job_count(self, record: JobCollection, count: int) -> JobCollection:
        type(self).writes += 1
        return super().set_job_count(record, count)


def job(recurrence: dict[str, Any] | None = None) -> dict[str, Any]:
    start = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return job_body(start, http_action("https://example.org/", method="GET", body=None), recurrence or every("Hour"))


def instance(config: Settings) -> SchedulerService:
    tables = table_service(config)
    stores = table_stores(tables, config)
    counting = CountingCollections(stores.collections.table)
    return SchedulerService(Stores(counting, stores.jobs, stores.due, stores.history), config.due_shards)


@pytest.fixture
def instances(storage_env: Settings) -> tuple[SchedulerService, SchedulerService]:
    provision(storage_env)
    CountingCollections.writes = 0
    return instance(storage_env), instance(storage_env)


def create_collection(service: SchedulerService, max_jobs: int) -> None:
    body = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}, "quota": {"maxJobCount": max_jobs}}}
    service.put_collection(COLLECTION, body)


def counter(service: SchedulerService) -> int | None:
    record = service.stores.collections.get(COLLECTION)
    assert record is not None
    return record.job_count


def try_create(service: SchedulerService, name: str) -> bool:
    try:
        _, created = service.put_job(JobRef(COLLECTION, name), job())
    except QuotaExceededError:
        return False
    assert created
    return True


def test_two_instances_racing_never_exceed_max_job_count(instances: tuple[SchedulerService, SchedulerService]) -> None:
    first, second = instances
    create_collection(first, 30)
    names = [(first if i % 2 else second, f"job{i}") for i in range(80)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        created = list(pool.map(lambda pair: try_create(*pair), names))
    assert sum(created) == 30
    assert len(first.stores.jobs.list(COLLECTION)) == 30
    assert counter(first) == 30


def test_prefetched_slots_spare_counter_writes_and_are_given_back(
    instances: tuple[SchedulerService, SchedulerService], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(job_slots, "PREFETCH_TTL", 30.0)  # long enough for the sequential creates below
    service, _ = instances
    create_collection(service, 1000)
    CountingCollections.writes = 0
    for i in range(40):
        assert try_create(service, f"job{i}")
    # One write takes 1 slot and 16 ahead: 40 sequential creates need 3 writes, not 40.
    assert CountingCollections.writes == 3
    assert counter(service) == 3 * (1 + job_slots.PREFETCH)  # 40 used, 11 still ahead
    monkeypatch.setattr(job_slots, "PREFETCH_TTL", 0.2)
    service.slots.forget(COLLECTION)  # as when this instance changes the collection: unused slots go back
    assert counter(service) == 40


def test_unused_prefetched_slots_expire_and_are_given_back(
    instances: tuple[SchedulerService, SchedulerService], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(job_slots, "PREFETCH_TTL", 0.3)
    service, _ = instances
    create_collection(service, 100)
    assert try_create(service, "only")
    assert counter(service) == 1 + job_slots.PREFETCH
    deadline = time.monotonic() + 10
    while counter(service) != 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert counter(service) == 1


def test_no_slots_are_taken_ahead_near_the_limit(instances: tuple[SchedulerService, SchedulerService]) -> None:
    service, other = instances
    create_collection(service, 5)
    for i in range(5):
        assert try_create(service, f"job{i}")
        assert counter(service) == i + 1
    assert not try_create(other, "sixth")
    assert not try_create(service, "sixth")


def test_an_instance_sees_another_instances_collection_change_once_its_slots_expire(
    instances: tuple[SchedulerService, SchedulerService], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(job_slots, "PREFETCH_TTL", 0.3)
    first, second = instances
    create_collection(first, 1000)
    first.put_job(JobRef(COLLECTION, "before"), job({"frequency": "Hour", "interval": 2}))  # first holds slots
    quota = {"maxRecurrence": {"frequency": "Hour", "interval": 2}}
    second.patch_collection(COLLECTION, {"properties": {"quota": quota}})
    time.sleep(0.5)
    with pytest.raises(QuotaExceededError, match="maxRecurrence"):
        first.put_job(JobRef(COLLECTION, "after"), job({"frequency": "Hour", "interval": 1}))
    first.put_job(JobRef(COLLECTION, "after"), job({"frequency": "Hour", "interval": 2}))


def test_a_collection_deleted_on_one_instance_keeps_no_job_created_with_slots_reserved_ahead(
    instances: tuple[SchedulerService, SchedulerService],
) -> None:
    creator, deleter = instances
    create_collection(creator, 1000)
    assert try_create(creator, "first")  # creator now holds slots reserved ahead, for PREFETCH_TTL
    jobs = creator.stores.jobs
    deletion = threading.Thread(target=deleter.delete_collection, args=(COLLECTION,))
    deletion.start()
    deadline = time.monotonic() + 5
    while jobs.get(JobRef(COLLECTION, "first")) is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert jobs.get(JobRef(COLLECTION, "first")) is None  # the deletion has marked and emptied the collection
    with pytest.raises(NotFoundError):
        deleter.get_collection(COLLECTION)
    # The creator still trusts its slot reserved ahead (at most PREFETCH_TTL old): its create goes through...
    assert try_create(creator, "straggler")
    deletion.join(timeout=30)
    # ...but the deletion waits out those slots and sweeps again: nothing of the collection is left.
    assert jobs.count(COLLECTION) == 0
    assert creator.stores.collections.get(COLLECTION) is None
    assert list(creator.stores.due.table.list_entities()) == []
    with pytest.raises(NotFoundError):
        creator.put_job(JobRef(COLLECTION, "late"), job())


def test_a_deletion_stopped_half_way_hides_the_collection_and_is_finished_by_the_next_delete(
    instances: tuple[SchedulerService, SchedulerService],
) -> None:
    service, _ = instances
    create_collection(service, 100)
    for name in ("a", "b"):
        assert try_create(service, name)
    record = service.stores.collections.get(COLLECTION)
    assert record is not None
    service.stores.collections.save(replace(record, state=CollectionState.DELETED), create=False)

    with pytest.raises(NotFoundError):
        service.get_collection(COLLECTION)
    assert service.list_collections("sub") == []
    with pytest.raises(ConflictError, match="being deleted"):
        service.put_collection(COLLECTION, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    assert service.stores.jobs.count(COLLECTION) == 2  # not yet deleted

    service.delete_collection(COLLECTION)
    assert service.stores.jobs.count(COLLECTION) == 0
    assert service.stores.collections.get(COLLECTION) is None
    service.put_collection(COLLECTION, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    assert service.list_jobs(COLLECTION) == []
