"""Claims: each (job, occurrence, action, attempt) runs at most once, and is never lost.

Lease rule: a worker claims an attempt by creating its claim row (state ``Running``, lease until
``now + lease``). A second worker that finds the row ``Running`` with an unexpired lease leaves the attempt
alone (its message comes back later); one that finds the lease expired (the first worker died) takes the
claim over with an ETag-guarded update, so of two late-comers only one wins. A ``Done`` claim is never run
again: a duplicate delivery of its message is dropped.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import TableClient, UpdateMode

from scheduler_core.storage.keys import SEPARATOR, format_due
from scheduler_core.storage.tables import delete_rows


class ClaimOutcome(Enum):
    CLAIMED = "claimed"  # this worker runs the attempt
    DONE = "done"  # already ran: drop the message
    BUSY = "busy"  # another worker holds a live lease: try again later


@dataclass(frozen=True)
class Claim:
    partition: str
    row: str
    etag: str


class ClaimStore:
    def __init__(self, table: TableClient) -> None:
        self.table = table

    @staticmethod
    def row_key(occurrence: datetime, action: str, attempt: int, trigger: str) -> str:
        return f"{format_due(occurrence)}{SEPARATOR}{trigger}{SEPARATOR}{action}{SEPARATOR}{attempt:03d}"

    def claim(
        self, partition: str, row: str, worker: str, now: datetime, lease: timedelta
    ) -> tuple[ClaimOutcome, Claim | None]:
        entity = {
            "PartitionKey": partition,
            "RowKey": row,
            "State": "Running",
            "Worker": worker,
            "LeaseUntil": now + lease,
            "ClaimedAt": now,
        }
        try:
            result = self.table.create_entity(entity)
            return ClaimOutcome.CLAIMED, Claim(partition, row, str(result["etag"]))
        except ResourceExistsError:
            pass
        try:
            current = self.table.get_entity(partition, row)
        except ResourceNotFoundError:
            return ClaimOutcome.BUSY, None
        if current.get("State") == "Done":
            return ClaimOutcome.DONE, None
        lease_until = current.get("LeaseUntil")
        if lease_until is not None and lease_until > now:
            return ClaimOutcome.BUSY, None
        try:
            result = self.table.update_entity(
                entity,
                mode=UpdateMode.REPLACE,
                etag=current.metadata["etag"],
                match_condition=MatchConditions.IfNotModified,
            )
        except (ResourceModifiedError, ResourceNotFoundError):
            return ClaimOutcome.BUSY, None
        return ClaimOutcome.CLAIMED, Claim(partition, row, str(result["etag"]))

    def complete(self, claim: Claim, now: datetime) -> None:
        self.table.upsert_entity(
            {"PartitionKey": claim.partition, "RowKey": claim.row, "State": "Done", "CompletedAt": now},
            mode=UpdateMode.MERGE,
        )

    def release(self, claim: Claim) -> None:
        """Give a claim back (the attempt did not run), so a redelivery may take it at once."""
        with contextlib.suppress(ResourceModifiedError, ResourceNotFoundError):
            self.table.delete_entity(
                claim.partition, claim.row, etag=claim.etag, match_condition=MatchConditions.IfNotModified
            )

    def delete_older_than(self, partition: str, before: datetime) -> int:
        """Delete the claims of one job whose occurrence is before ``before`` (batched). Returns how many."""
        rows = self.table.query_entities(
            "PartitionKey eq @p and RowKey lt @b",
            parameters={"p": partition, "b": format_due(before)},
            select=["RowKey"],
        )
        keys = [row["RowKey"] for row in rows]
        delete_rows(self.table, partition, keys)
        return len(keys)

    def delete_all(self, partition: str) -> None:
        """Delete every claim of one job (the job is being removed)."""
        keys = [
            row["RowKey"]
            for row in self.table.query_entities("PartitionKey eq @p", parameters={"p": partition}, select=["RowKey"])
        ]
        delete_rows(self.table, partition, keys)
