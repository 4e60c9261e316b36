"""Execution claims in Table Storage (the :class:`~scheduler_core.ports.Claims` port): one row per attempt,
PartitionKey = the job's identity, RowKey = :func:`~scheduler_core.model.claim_key`. The lease rule is
:mod:`scheduler_core.model.claim`'s."""

from __future__ import annotations

import contextlib
import uuid
from datetime import datetime, timedelta
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import TableClient, UpdateMode

from scheduler_core.adapters.azure.errors import translated
from scheduler_core.adapters.azure.tables import _aware, delete_rows
from scheduler_core.model import Claim, ClaimOutcome, ClaimResult, ClaimState, LostAttempt
from scheduler_core.storage.keys import format_due


@translated
class TableClaims:
    def __init__(self, table: TableClient) -> None:
        self.table = table

    def claim(
        self, partition: str, row: str, worker: str, now: datetime, lease: timedelta, token: str | None = None
    ) -> ClaimResult:
        """Claim one attempt (see the module's lease rule). Safe to call again with the same ``token`` after
        an error: a claim made with it (whose answer was lost) is recognised and returned as claimed."""
        token = token or uuid.uuid4().hex
        entity: dict[str, Any] = {
            "PartitionKey": partition,
            "RowKey": row,
            "State": "Running",
            "Worker": worker,
            "Token": token,
            "LeaseUntil": now + lease,
            "ClaimedAt": now,
        }
        try:
            result = self.table.create_entity(entity)
            return ClaimResult(ClaimOutcome.CLAIMED, Claim(partition, row, str(result["etag"]), now))
        except ResourceExistsError:
            pass
        try:
            current = self.table.get_entity(partition, row)
        except ResourceNotFoundError:
            return ClaimResult(ClaimOutcome.BUSY)
        if current.get("Token") == token:  # this call's own create landed; its answer was lost
            return ClaimResult(ClaimOutcome.CLAIMED, Claim(partition, row, str(current.metadata["etag"]), now))
        if current.get("State") == "Done":
            return ClaimResult(ClaimOutcome.DONE)
        lease_until = _aware(current.get("LeaseUntil"))
        if lease_until is not None and lease_until > now:
            return ClaimResult(ClaimOutcome.BUSY, lease_until=lease_until)
        lost = LostAttempt(str(current.get("Worker", "")), _aware(current.get("ClaimedAt")) or now)
        try:
            result = self.table.update_entity(
                entity,
                mode=UpdateMode.REPLACE,
                etag=current.metadata["etag"],
                match_condition=MatchConditions.IfNotModified,
            )
        except (ResourceModifiedError, ResourceNotFoundError):
            return ClaimResult(ClaimOutcome.BUSY, lease_until=now + lease)
        return ClaimResult(ClaimOutcome.CLAIMED, Claim(partition, row, str(result["etag"]), now), lost=lost)

    def state(self, partition: str, row: str) -> ClaimState | None:
        """The claim's state (None: nobody has claimed the attempt)."""
        try:
            current = self.table.get_entity(partition, row, select=["State", "LeaseUntil"])
        except ResourceNotFoundError:
            return None
        return ClaimState(current.get("State") == "Done", _aware(current.get("LeaseUntil")))

    def complete(self, claim: Claim, now: datetime) -> None:
        """Mark the attempt done (idempotent: a merge that may be repeated)."""
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
