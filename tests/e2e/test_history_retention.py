"""History retention per collection on Azurite (issue 29): the daily cleanup keeps each kind of a job's entries
by its collection's ``historyRetention``, whether an entry lives in ``JobHistory`` or on the claim row it was
written with; a trimmed attempt's claim stays, so a late delivery of its message still runs nothing twice."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from scheduler_core.adapters.azure.tables import MAX_BATCH
from scheduler_core.definitions import Wire
from scheduler_core.model import ActionName, HistoryEntry, HistoryStatus
from scheduler_core.pipeline.cleanup import cleanup
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import history_row_key
from tests.support.harness import Deployment, near_now
from tests.support.http_target import HttpTarget
from tests.support.jobs import http_job

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

NO_RETRY = {"retryPolicy": {"retryType": "None"}}


@pytest.fixture
def pipeline(storage_env: Settings) -> Deployment:
    return near_now(storage_env, azurite=True)


def add_history(pipeline: Deployment, name: str, rows: list[tuple[datetime, HistoryStatus]]) -> None:
    """Entries written straight to ``JobHistory`` (as a record written apart from its claim is)."""
    ref = pipeline.ref(name)
    operations = []
    for i, (start, status) in enumerate(rows):
        execution = f"old{i}"
        record = HistoryEntry(
            execution, history_row_key(start, execution), start, start, start, ActionName.MAIN, status, "", 0, 0
        )
        operations.append(("upsert", pipeline.services.stores.history.entity(ref, record)))
    for begin in range(0, len(operations), MAX_BATCH):
        pipeline.services.stores.history.table.submit_transaction(operations[begin : begin + MAX_BATCH])


def test_each_kind_is_kept_by_the_collections_rule_in_history_rows_and_on_claim_rows(
    pipeline: Deployment, target: HttpTarget
) -> None:
    service = pipeline.services.service
    rule = {"properties": {"historyRetention": {"succeeded": 2, "failed": "P1D"}}}
    assert service.patch_collection(pipeline.collection, rule, wire=Wire.PREVIEW).history_retention is not None
    start = pipeline.clock.now + timedelta(seconds=20)
    pipeline.put_job(
        "minutely", http_job(target.base_url, start, {"frequency": "Minute", "interval": 1}, action=NO_RETRY)
    )
    target.answer([200, 500, 200, 500, 200, 200])
    pipeline.run_until(start + timedelta(minutes=5, seconds=10))
    ref = pipeline.ref("minutely")
    fired = [(h.status, h.expected_execution_time) for h in service.list_history(ref)]
    assert [status for status, _ in fired] == ["Completed", "Completed", "Failed", "Completed", "Failed", "Completed"]
    now = pipeline.clock()
    add_history(pipeline, "minutely", [(now - timedelta(days=3), "Failed"), (now - timedelta(days=4), "Completed")])
    claims = pipeline.services.executor.claims
    identity = ref.identity

    def claim_rows() -> int:
        return len(list(claims.table.query_entities("PartitionKey eq @p", parameters={"p": identity})))

    assert claim_rows() == 6  # each attempt's entry was written with its claim

    report = cleanup(pipeline.services.stores, now, claims)
    # succeeded: the newest two of five (three on claim rows, one in JobHistory go); failed: the day-old one goes
    assert report.history_removed == 3 + 1
    kept = [(h.status, h.expected_execution_time) for h in service.list_history(ref)]
    assert kept == [fired[0], fired[1], fired[2], fired[4]]
    assert claim_rows() == 6  # the claims stay (done): a late delivery of a trimmed attempt is still dropped

    later = cleanup(pipeline.services.stores, now + timedelta(days=1, minutes=10), claims)
    assert later.history_removed == 2
    assert [h.status for h in service.list_history(ref)] == ["Completed", "Completed"]
    assert cleanup(pipeline.services.stores, now + timedelta(days=1, minutes=10), claims).history_removed == 0


def test_a_collection_that_sets_no_rule_keeps_azure_schedulers_sixty_days_and_thousand_entries(
    pipeline: Deployment, target: HttpTarget
) -> None:
    pipeline.put_job("busy", http_job(target.base_url, pipeline.clock.now + timedelta(hours=1)))
    now = pipeline.clock()
    rows: list[tuple[datetime, HistoryStatus]] = [
        (now - timedelta(minutes=i), "Failed" if i % 2 else "Completed") for i in range(1003)
    ]
    add_history(pipeline, "busy", [*rows, (now - timedelta(days=61), "Failed")])
    assert cleanup(pipeline.services.stores, now).history_removed == 3 + 1
    kept = pipeline.services.service.list_history(pipeline.ref("busy"))
    assert [h.start_time for h in kept] == [start for start, _ in rows[:1000]]
