"""Promises of the management operations under concurrency and storage failures, on Azurite.

Two ``SchedulerService`` objects over the same tables stand for two instances of the app. The races are
real threads against real Azurite; the storage failures are injected by :class:`FailingJobs`, a **test
double** that wraps the real job store and fails one write the way a cut connection or a refusing
store would (a real outage is exercised end to end by the pipeline's fault tests).
"""

from __future__ import annotations

import contextlib
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.core.exceptions import HttpResponseError, ServiceRequestError, ServiceResponseError

from scheduler_core.adapters.azure.clients import table_service
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.azure.tables import TableJobs, table_stores
from scheduler_core.api import views
from scheduler_core.errors import NotFoundError, QuotaExceededError
from scheduler_core.model import Job
from scheduler_core.ports import Stores
from scheduler_core.service import SchedulerService
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.jobs import every, fixed_retries, http_action, job_body

pytestmark = pytest.mark.azurite

COLLECTION = CollectionRef("sub", "rg", "jc")


def job(uri: str = "https://example.org/") -> dict[str, Any]:
    start = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return job_body(start, http_action(uri, method="GET", body=None), every("Hour"))


def instance(config: Settings, jobs: type[TableJobs] = TableJobs) -> SchedulerService:
    stores = table_stores(table_service(config), config)
    return SchedulerService(
        Stores(stores.collections, jobs(stores.jobs.table), stores.due, stores.history), config.due_shards
    )


@pytest.fixture
def instances(storage_env: Settings) -> tuple[SchedulerService, SchedulerService]:
    provision(storage_env)
    return instance(storage_env), instance(storage_env)


def create_collection(service: SchedulerService, max_jobs: int, sku: str = "P20Premium") -> None:
    body = {"location": "westus", "properties": {"sku": {"name": sku}, "quota": {"maxJobCount": max_jobs}}}
    service.put_collection(COLLECTION, body)


def stored_jobs(service: SchedulerService) -> int:
    return service.stores.jobs.count(COLLECTION)


def due_rows(service: SchedulerService) -> int:
    return sum(len(list(service.stores.due.due_before(f"{s:04d}", "~"))) for s in range(service.shards))


def counter(service: SchedulerService) -> int | None:
    record = service.stores.collections.get(COLLECTION)
    assert record is not None
    return record.job_count


def test_concurrent_deletes_of_one_job_give_back_one_slot(
    instances: tuple[SchedulerService, SchedulerService],
) -> None:
    first, second = instances
    create_collection(first, 3)
    for name in ("a", "b", "c"):
        first.put_job(JobRef(COLLECTION, name), job())
    outcomes: list[str] = []
    barrier = threading.Barrier(10)

    def delete(n: int) -> None:
        barrier.wait()
        try:
            (first if n % 2 else second).delete_job(JobRef(COLLECTION, "a"))
            outcomes.append("deleted")
        except NotFoundError:
            outcomes.append("not found")

    with ThreadPoolExecutor(10) as pool:
        list(pool.map(delete, range(10)))
    assert sorted(outcomes) == ["deleted"] + ["not found"] * 9
    # One place is free again, not ten: of five creates only one fits.
    created = 0
    for name in ("d", "e", "f", "g", "h"):
        try:
            first.put_job(JobRef(COLLECTION, name), job())
            created += 1
        except QuotaExceededError:
            pass
    assert created == 1
    assert stored_jobs(first) == 3


def test_racing_creates_deletes_and_replaces_never_exceed_max_job_count(
    instances: tuple[SchedulerService, SchedulerService],
) -> None:
    limit = 3
    create_collection(instances[0], limit)
    names = [f"job{i}" for i in range(6)]
    stop = threading.Event()
    peak = [0]
    unexpected: list[BaseException] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        service = instances[seed % 2]
        while not stop.is_set():
            ref = JobRef(COLLECTION, rng.choice(names))
            try:
                if rng.random() < 0.5:
                    service.put_job(ref, job(f"https://example.org/{seed}"))
                else:
                    service.delete_job(ref)
            except (QuotaExceededError, NotFoundError):
                pass
            except BaseException as error:  # anything else breaks a promise
                unexpected.append(error)

    def watcher() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], stored_jobs(instances[0]))

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
    threads.append(threading.Thread(target=watcher))
    for thread in threads:
        thread.start()
    stop.wait(8)
    stop.set()
    for thread in threads:
        thread.join()
    assert not unexpected, unexpected[:3]
    assert peak[0] <= limit
    # After the storm the collection still holds what its counter says: fill it up to exactly the limit.
    for name in names:
        with contextlib.suppress(QuotaExceededError):
            instances[0].put_job(JobRef(COLLECTION, name + "-after"), job())
    assert stored_jobs(instances[0]) == limit


def test_second_free_collection_is_refused_as_quota_exceeded_not_retried(
    instances: tuple[SchedulerService, SchedulerService],
) -> None:
    service = instances[0]
    free = {"location": "westus", "properties": {"sku": {"name": "Free"}}}
    service.put_collection(CollectionRef("sub", "rg", "free1"), free)
    with pytest.raises(QuotaExceededError) as refused:
        service.put_collection(CollectionRef("sub", "rg", "free2"), free)
    assert refused.value.code == "QuotaExceeded"
    assert "Free" in refused.value.message and "retry" not in refused.value.message


def test_concurrent_unconditional_puts_of_one_job_all_succeed_and_last_writer_wins(
    instances: tuple[SchedulerService, SchedulerService],
) -> None:
    create_collection(instances[0], 10)
    barrier = threading.Barrier(8)

    def put(n: int) -> tuple[bool, int]:
        barrier.wait()
        saved, created = instances[n % 2].put_job(JobRef(COLLECTION, "same"), job(f"https://example.org/{n}"))
        return created, saved.generation

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(put, range(8)))
    created = [was_created for was_created, _ in results]
    assert created.count(True) == 1
    [first] = [generation for was_created, generation in results if was_created]
    stored = instances[0].get_job(JobRef(COLLECTION, "same"))
    assert views.job(stored)["properties"]["action"]["request"]["uri"] in {f"https://example.org/{n}" for n in range(8)}
    assert stored.generation == first + 7  # one create, seven replaces
    assert stored_jobs(instances[0]) == 1
    assert due_rows(instances[0]) == 1


class FailingJobs(TableJobs):
    """Test double: the real job store, whose next save fails as ``fail`` says (then it works again)."""

    fail: str | None = None  # "refused" (storage said no), "lost" (sent, answer lost), "cut" (never sent)
    reads_fail = False

    def save(self, record: Job, *, create: bool, etag: str | None = None) -> Job:
        mode, type(self).fail = type(self).fail, None
        if mode == "refused":
            raise HttpResponseError(message="The property value exceeds the maximum allowed size")
        if mode == "cut":
            type(self).reads_fail = True
            raise ServiceRequestError("connection reset")
        saved = super().save(record, create=create, etag=etag)
        if mode == "lost":
            raise ServiceResponseError("connection reset while reading the response")
        return saved

    def get(self, ref: JobRef) -> Job | None:
        if type(self).reads_fail:
            type(self).reads_fail = False
            raise ServiceRequestError("connection reset")
        return super().get(ref)


@pytest.fixture
def failing(storage_env: Settings) -> SchedulerService:
    provision(storage_env)
    FailingJobs.fail, FailingJobs.reads_fail = None, False
    service = instance(storage_env, FailingJobs)
    create_collection(service, 2)
    return service


def refused_error() -> HttpResponseError:
    error = HttpResponseError(message="refused")
    error.status_code = 400
    return error


def test_a_create_refused_by_storage_leaves_no_job_row_due_row_or_slot(failing: SchedulerService) -> None:
    FailingJobs.fail = "refused"
    original = FailingJobs.save

    def refuse_with_status(self: FailingJobs, record: Job, *, create: bool, etag: str | None = None) -> Job:
        if type(self).fail == "refused":
            type(self).fail = None
            raise refused_error()
        return original(self, record, create=create, etag=etag)

    FailingJobs.save = refuse_with_status  # type: ignore[method-assign]
    try:
        with pytest.raises(HttpResponseError):
            failing.put_job(JobRef(COLLECTION, "x"), job())
    finally:
        FailingJobs.save = original  # type: ignore[method-assign]
    assert stored_jobs(failing) == 0
    assert due_rows(failing) == 0
    assert counter(failing) == 0
    # Both places are still free.
    failing.put_job(JobRef(COLLECTION, "y"), job())
    failing.put_job(JobRef(COLLECTION, "z"), job())
    assert stored_jobs(failing) == 2


def test_a_create_whose_answer_was_lost_but_landed_succeeds_once(failing: SchedulerService) -> None:
    FailingJobs.fail = "lost"
    saved, created = failing.put_job(JobRef(COLLECTION, "x"), job())
    stored = failing.stores.jobs.get(JobRef(COLLECTION, "x"))
    assert created and stored is not None and saved.generation == stored.generation
    assert (stored_jobs(failing), due_rows(failing), counter(failing)) == (1, 1, 1)


def test_a_create_cut_off_with_storage_unreadable_raises_and_is_repaired_later(failing: SchedulerService) -> None:
    FailingJobs.fail = "cut"
    with pytest.raises(ServiceRequestError):
        failing.put_job(JobRef(COLLECTION, "x"), job())
    assert stored_jobs(failing) == 0
    # The slot could not be proven free, so it stays taken until the counter is repaired from a count
    # (which needs the counter to say "full"): the collection never holds more than its quota.
    failing.put_job(JobRef(COLLECTION, "y"), job())
    assert stored_jobs(failing) == 1


def test_an_unconditional_race_loop_never_retries_final_errors(
    instances: tuple[SchedulerService, SchedulerService],
) -> None:
    service = instances[0]
    create_collection(service, 1)
    service.put_job(JobRef(COLLECTION, "one"), job())
    sleeps: list[float] = []
    service.sleep = sleeps.append
    with pytest.raises(QuotaExceededError):
        service.put_job(JobRef(COLLECTION, "two"), job())
    assert sleeps == []  # refused at once: no backoff, no retry


def test_a_free_jobs_default_retry_interval_is_written_in_the_jobs_duration_style(
    instances: tuple[SchedulerService, SchedulerService],
) -> None:
    service = instances[0]
    service.put_collection(COLLECTION, {"location": "westus", "properties": {"sku": {"name": "Free"}}})
    body = job()
    body["properties"]["action"]["retryPolicy"] = {"retryType": "Fixed", "retryCount": 1}
    timespan = {**body, "properties": {**body["properties"], "action": {**body["properties"]["action"]}}}
    timespan["properties"]["action"]["errorAction"] = http_action(
        "https://example.org/error", method="GET", body=None, retryPolicy=fixed_retries(1, "02:00:00")
    )
    saved, _ = service.put_job(JobRef(COLLECTION, "timespan"), timespan)
    assert views.job(saved)["properties"]["action"]["retryPolicy"]["retryInterval"] == "01:00:00"
    saved, _ = service.put_job(JobRef(COLLECTION, "iso"), job())
    assert views.job(saved)["properties"]["action"]["retryPolicy"]["retryInterval"] == "PT1H"
