"""The daily cleanup on Azurite with simulated time: finished jobs removed 60 days after they end (with their
history, and their place under maxJobCount given back), history trimmed to 60 days / 1,000 rows per job. On
the Azure adapter: the cleanup removes table rows in batches (claims, history) that the tests write and read
as rows."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from scheduler_core.adapters.azure.tables import MAX_BATCH
from scheduler_core.model import HistoryEntry
from scheduler_core.pipeline.cleanup import CLAIM_RETENTION, FINISHED_JOB_RETENTION, cleanup
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import history_row_key
from tests.support.harness import Deployment, near_now
from tests.support.http_target import HttpTarget
from tests.support.jobs import job_body

#: The default rule of a collection without ``historyRetention`` (Azure Scheduler's): 60 days, 1,000 entries.
HISTORY_RETENTION = timedelta(days=60)
HISTORY_MAX_ROWS = 1000

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


@pytest.fixture
def pipeline(storage_env: Settings) -> Deployment:
    """The pipeline on Azurite, in simulated time from just past a whole minute of the real clock."""
    return near_now(storage_env, azurite=True)


def one_shot(pipeline: Deployment, name: str, url: str) -> datetime:
    due = pipeline.clock.now + timedelta(seconds=20)
    action = {"type": "Http", "request": {"uri": url, "method": "GET"}}
    pipeline.put_job(name, job_body(due, action))
    return due


def counter(pipeline: Deployment) -> int | None:
    record = pipeline.services.stores.collections.get(pipeline.collection)
    assert record is not None
    return record.job_count


def test_finished_jobs_are_removed_sixty_days_after_they_end(pipeline: Deployment, target: HttpTarget) -> None:
    service = pipeline.services.service
    due = one_shot(pipeline, "once", target.base_url)
    pipeline.put_job(
        "hourly",
        job_body(
            due,
            {"type": "Http", "request": {"uri": target.base_url, "method": "GET"}},
            {"frequency": "Hour", "interval": 1},
        ),
    )
    pipeline.run_until(due + timedelta(seconds=5))
    assert service.get_job(pipeline.ref("once")).state == "Completed"
    assert len(service.list_history(pipeline.ref("once"))) == 1
    service.slots.forget(pipeline.collection)  # slots reserved ahead go back: the counter is the job count
    assert counter(pipeline) == 2

    early = cleanup(pipeline.services.stores, pipeline.clock() + FINISHED_JOB_RETENTION - timedelta(hours=1))
    assert early.jobs_removed == 0
    assert {job.ref.name for job in service.list_jobs(pipeline.collection)} == {"once", "hourly"}
    assert len(service.list_history(pipeline.ref("hourly"))) == 1  # not yet 60 days old

    claims = pipeline.services.executor.claims
    late = pipeline.clock() + FINISHED_JOB_RETENTION + timedelta(hours=1)
    report = cleanup(pipeline.services.stores, late, claims)
    assert report.jobs_removed == 1
    identity = pipeline.ref("once").identity
    assert list(claims.table.query_entities("PartitionKey eq @p", parameters={"p": identity})) == []
    assert [job.ref.name for job in service.list_jobs(pipeline.collection)] == ["hourly"]
    assert list(pipeline.services.stores.history.list(pipeline.ref("once"))) == []
    assert counter(pipeline) == 1  # the removed job's place under maxJobCount is free again
    assert service.list_history(pipeline.ref("hourly")) == []  # a live job keeps 60 days of history


def add_history(pipeline: Deployment, name: str, starts: list[datetime]) -> None:
    ref = pipeline.ref(name)
    operations = []
    for i, start in enumerate(starts):
        record = HistoryEntry(
            f"{name}{i}", history_row_key(start, f"{name}{i}"), start, start, start, "MainAction", "Completed", "", 0, 0
        )
        operations.append(("upsert", pipeline.services.stores.history.entity(ref, record)))
    for begin in range(0, len(operations), MAX_BATCH):
        pipeline.services.stores.history.table.submit_transaction(operations[begin : begin + MAX_BATCH])


def test_history_is_trimmed_to_sixty_days_and_a_thousand_rows(pipeline: Deployment, target: HttpTarget) -> None:
    hourly = {"frequency": "Hour", "interval": 1}
    action = {"type": "Http", "request": {"uri": target.base_url, "method": "GET"}}
    start = format_instant(pipeline.clock.now + timedelta(hours=1))
    for name in ("busy", "old"):
        pipeline.put_job(name, job_body(start, action, hourly))
    now = pipeline.clock()
    add_history(pipeline, "busy", [now - timedelta(minutes=5 * i) for i in range(1100)])
    recent = [now - timedelta(days=i) for i in range(3)]
    add_history(pipeline, "old", recent + [now - HISTORY_RETENTION - timedelta(days=i + 1) for i in range(4)])

    report = cleanup(pipeline.services.stores, now)
    assert report.history_removed == 100 + 4
    busy = list(pipeline.services.stores.history.list(pipeline.ref("busy")))
    assert len(busy) == HISTORY_MAX_ROWS
    assert [h.start_time for h in busy] == [now - timedelta(minutes=5 * i) for i in range(HISTORY_MAX_ROWS)]
    old = list(pipeline.services.stores.history.list(pipeline.ref("old")))
    assert [h.start_time for h in old] == recent  # only the rows of the last 60 days


def test_execution_claims_are_kept_eight_days(pipeline: Deployment, target: HttpTarget) -> None:
    due = one_shot(pipeline, "claimed", target.base_url)
    pipeline.run_until(due + timedelta(seconds=5))
    claims = pipeline.services.executor.claims
    identity = pipeline.ref("claimed").identity

    def stored() -> int:
        return len(list(claims.table.query_entities("PartitionKey eq @p", parameters={"p": identity})))

    assert stored() == 1
    stores = pipeline.services.stores
    assert cleanup(stores, due + CLAIM_RETENTION - timedelta(minutes=1), claims).claims_removed == 0
    assert stored() == 1  # a duplicate delivery of its message could still come
    assert cleanup(stores, due + CLAIM_RETENTION + timedelta(minutes=1), claims).claims_removed == 1
    assert stored() == 0
    assert pipeline.services.service.get_job(pipeline.ref("claimed")).state == "Completed"  # job stays
