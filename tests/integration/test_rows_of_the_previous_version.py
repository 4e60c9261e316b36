"""Rows written by the previous version read as before (Azurite, the Azure adapters). Until issue 15 an
attempt's history entry was a ``JobHistory`` row and its claim a row of its own in ``Executions``, completed
by a merge; now a completed claim's row holds the entry. Deployments hold rows of the old shapes: they are
written here raw, exactly as the previous version wrote them, and read, trimmed and claimed through the
adapters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from azure.data.tables import TableServiceClient

from scheduler_core.adapters.azure.claims import TableClaims
from scheduler_core.adapters.azure.clients import table_service
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.azure.tables import TableHistory, table_stores
from scheduler_core.model import ActionName, ClaimOutcome, HistoryEntry, HistoryStatus, claim_key
from scheduler_core.model.history import HistoryRetention, Keep
from scheduler_core.model.retry import Duration
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef, history_row_key
from scheduler_core.storage.names import CLAIMS_TABLE, HISTORY_TABLE

pytestmark = [pytest.mark.azurite]

JOB = JobRef(CollectionRef("sub", "rg", "jc"), "job")
T0 = datetime(2031, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
LEASE = timedelta(minutes=2)


def old_history_row(started: datetime, execution_id: str) -> dict[str, object]:
    """A ``JobHistory`` row as the previous version wrote it (``TableHistory.add``)."""
    return {
        "PartitionKey": JOB.identity,
        "RowKey": history_row_key(started, execution_id),
        "ExecutionId": execution_id,
        "StartTime": started,
        "ActionName": "MainAction",
        "Status": "Completed",
        "Message": "Http Action - Response from host '127.0.0.1': 'OK'",
        "RetryCount": 0,
        "RepeatCount": 1,
        "EndTime": started + timedelta(seconds=1),
        "ExpectedExecutionTime": started,
    }


def old_claim_row(occurrence: datetime, state: str) -> dict[str, object]:
    """An ``Executions`` row as the previous version left it (created by a claim, merged by a completion)."""
    row: dict[str, object] = {
        "PartitionKey": JOB.identity,
        "RowKey": claim_key(occurrence, "main", 0, "schedule"),
        "State": state,
        "Worker": "old-host:1234abcd",
        "Token": "0" * 32,
        "LeaseUntil": occurrence + LEASE,
        "ClaimedAt": occurrence,
    }
    if state == "Done":
        row["CompletedAt"] = occurrence + timedelta(seconds=1)
    return row


@pytest.fixture
def service(storage_env: Settings) -> TableServiceClient:
    provision(storage_env)
    return table_service(storage_env)


def test_history_and_claims_of_the_previous_version_are_read_claimed_and_trimmed(
    storage_env: Settings, service: TableServiceClient
) -> None:
    history_table = service.get_table_client(storage_env.table_name(HISTORY_TABLE))
    claims_table = service.get_table_client(storage_env.table_name(CLAIMS_TABLE))
    done, running = T0, T0 + timedelta(minutes=1)
    for started, execution_id in ((done, "exec-done"), (T0 - timedelta(minutes=1), "exec-earlier")):
        history_table.create_entity(old_history_row(started, execution_id))
    claims_table.create_entity(old_claim_row(done, "Done"))
    claims_table.create_entity(old_claim_row(running, "Running"))  # its worker stopped with the old version
    history = table_stores(service, storage_env).history
    assert isinstance(history, TableHistory)
    claims = TableClaims(claims_table, history_table)

    assert [e.execution_id for e in history.list(JOB)] == ["exec-done", "exec-earlier"]
    [entry, _] = history.list(JOB)
    assert (entry.status, entry.action_name, entry.expected_execution_time) == (
        HistoryStatus.COMPLETED,
        ActionName.MAIN,
        done,
    )
    late = T0 + timedelta(hours=1)
    assert claims.claim(JOB.identity, claim_key(done, "main", 0, "schedule"), "new", late, LEASE).outcome is (
        ClaimOutcome.DONE
    )
    taken = claims.claim(JOB.identity, claim_key(running, "main", 0, "schedule"), "new", late, LEASE)
    assert taken.outcome is ClaimOutcome.CLAIMED and taken.claim is not None
    assert taken.lost is not None and (taken.lost.worker, taken.lost.claimed_at) == ("old-host:1234abcd", running)

    # The new holder records its entry in its claim's row: listed with the old rows, newest first.
    new = HistoryEntry(
        "exec-running",
        history_row_key(late, "exec-running"),
        late,
        late + timedelta(seconds=1),
        running,
        ActionName.MAIN,
        HistoryStatus.COMPLETED,
        "ok",
        0,
        2,
    )
    claims.record(taken.claim, JOB, new, late + timedelta(seconds=1))
    assert [e.execution_id for e in history.list(JOB)] == ["exec-running", "exec-done", "exec-earlier"]

    keep_two = Keep(Duration(timedelta(days=60)), 2)
    trimmed = history.trim(JOB, HistoryRetention(keep_two, keep_two, total=2), T0 + timedelta(days=59))
    assert trimmed == 1  # the oldest, an old JobHistory row
    assert [e.execution_id for e in history.list(JOB)] == ["exec-running", "exec-done"]
    assert claims.delete_older_than(JOB.identity, late) == 2  # both claims; the new one's entry moves out
    assert [e.execution_id for e in history.list(JOB)] == ["exec-running", "exec-done"]
    assert claims.state(JOB.identity, claim_key(running, "main", 0, "schedule")) is None
