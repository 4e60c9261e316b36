"""The job's counters under contention, on Azurite: hundreds of attempts of one job counted at the same time,
each from its own thread, each a real ETag-guarded write of the job row (``pipeline/counters.py``).

Before the counters waited between lost races and were bounded in time (they gave up after ten tries, with
no wait), concurrent attempts were lost, each logged as ERROR "counters not updated after 10 attempts" (200
attempts left ``executionCount`` at 190 in the report; here, 300 attempts at once counted 101, 100 counted 51).
Now every attempt is counted, exactly once.

The job store is the real Table adapter; :class:`CountingJobs` only counts its guarded writes and the races
they lose (a subclass that calls the adapter's own ``save``)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.adapters.azure.clients import table_service
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.azure.tables import TableJobs, table_stores
from scheduler_core.errors import EtagMismatchError
from scheduler_core.model import Job
from scheduler_core.pipeline import counters
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.service import SchedulerService
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.jobs import http_action, job_body

pytestmark = pytest.mark.azurite

COLLECTION = CollectionRef("sub", "rg", "jc")
REF = JobRef(COLLECTION, "busy")
#: Concurrent attempts of the one job (each a thread of its own): as many as in the report of lost counts (300
#: took 13-16 s on Azurite, within the 30 s budget with little margin on a machine shared by parallel tests).
ATTEMPTS = 200
#: Every third attempt failed (``failureCount``).
FAILED_EVERY = 3


class CountingJobs(TableJobs):
    """The Table adapter's job store, counting the guarded writes it is asked for and those that lost a race."""

    def __init__(self, table: Any) -> None:
        super().__init__(table)
        self.lock = threading.Lock()
        self.writes = 0
        self.lost = 0

    def save(self, record: Job, *, create: bool, etag: str | None = None) -> Job:
        with self.lock:
            self.writes += 1
        try:
            return super().save(record, create=create, etag=etag)
        except EtagMismatchError:
            with self.lock:
                self.lost += 1
            raise


@pytest.fixture
def busy_job(storage_env: Settings) -> tuple[CountingJobs, Job]:
    provision(storage_env)
    stores = table_stores(table_service(storage_env), storage_env)
    service = SchedulerService(stores, storage_env.due_shards)
    service.put_collection(COLLECTION, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    start = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = job_body(start, http_action("https://example.org/", method="GET", body=None), {"frequency": "Hour"})
    job, _ = service.put_job(REF, body)
    return CountingJobs(stores.jobs.table), job  # type: ignore[attr-defined]


def attempt(job: Job, n: int) -> ExecutionMessage:
    """The message of the ``n``-th attempt: a backfill's occurrence each (distinct attempt keys)."""
    occurrence = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=n)
    return ExecutionMessage(
        job.ref.partition_key,
        job.ref.row_key,
        job.generation,
        occurrence.strftime("%Y-%m-%dT%H:%M:%SZ"),
        cause=Cause.BACKFILL,
        backfill="race",
    )


def test_200_concurrent_attempts_of_one_job_are_each_counted_once(
    busy_job: tuple[CountingJobs, Job], caplog: pytest.LogCaptureFixture
) -> None:
    jobs, job = busy_job
    barrier = threading.Barrier(ATTEMPTS)
    now = datetime.now(UTC)
    written: list[Job | None] = [None] * ATTEMPTS

    def count(n: int) -> None:
        barrier.wait()  # all at once, each from the job as read before its action (as the executor does)
        written[n] = counters.count_attempt(jobs, job, attempt(job, n), n % FAILED_EVERY != 0, False, None, now)

    started = time.monotonic()
    with ThreadPoolExecutor(ATTEMPTS) as pool:
        list(pool.map(count, range(ATTEMPTS)))
    took = time.monotonic() - started
    stored = jobs.get(REF)
    assert stored is not None
    print(
        f"\n{ATTEMPTS} concurrent counter writes of one job on Azurite: {took:.1f} s, "
        f"{jobs.writes} guarded writes, {jobs.lost} races lost ({jobs.lost / ATTEMPTS:.1f} per attempt)"
    )
    assert stored.execution_count == ATTEMPTS
    assert stored.failure_count == len(range(0, ATTEMPTS, FAILED_EVERY))
    assert all(row is not None for row in written)  # each attempt's own write landed
    assert jobs.writes - jobs.lost == ATTEMPTS  # one write landed per attempt, no more
    assert "counters" not in caplog.text  # nothing given up


def test_an_attempt_counted_again_after_the_race_is_not_counted_twice(busy_job: tuple[CountingJobs, Job]) -> None:
    """The idempotence key survives contention: the same attempts counted again (a write retried after its
    answer was lost, a worker that took a dead one's attempt over) change nothing."""
    jobs, job = busy_job
    messages = [attempt(job, n) for n in range(12)]
    now = datetime.now(UTC)
    with ThreadPoolExecutor(12) as pool:
        list(pool.map(lambda m: counters.count_attempt(jobs, job, m, True, False, None, now), messages))
    again = jobs.get(REF)
    assert again is not None and again.execution_count == 12
    with ThreadPoolExecutor(12) as pool:
        repeats = list(pool.map(lambda m: counters.count_attempt(jobs, again, m, True, False, None, now), messages))
    assert repeats == [None] * 12
    final = jobs.get(REF)
    assert final is not None and final.execution_count == 12
