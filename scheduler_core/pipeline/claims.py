"""Claims: each (job, occurrence, action, attempt) runs at most once, and is never lost.

Lease rule: a worker claims an attempt by creating its claim row (state ``Running``, lease until
``now + lease``). A second worker that finds the row ``Running`` with an unexpired lease leaves the attempt
alone (its message comes back later); one that finds the lease expired (the first worker died) takes the
claim over with an ETag-guarded update, so of two late-comers only one wins, and learns whom it replaced
(:class:`LostAttempt`, recorded in history next to the re-run). A ``Done`` claim is never run again: a
duplicate delivery of its message is dropped.

Each claim call writes a random token into the row, so a retried create whose first try landed (its answer
was lost in a storage outage) is recognised as this call's own claim instead of a live foreign one. A
holder's history row is keyed by its ``ClaimedAt`` and the attempt's execution id, so a retried history
write lands on the same row, and a lost holder's row is known to its successor.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import TableClient, UpdateMode

from scheduler_core.storage.keys import SEPARATOR, format_due
from scheduler_core.storage.tables import _aware, delete_rows

#: How long a claim protects a running attempt: the action timeout (60 s) plus a margin. A holder still
#: running after it is taken to be dead: a redelivery or the watchdog may take the attempt over.
CLAIM_LEASE = timedelta(seconds=120)


class ClaimOutcome(Enum):
    CLAIMED = "claimed"  # this worker runs the attempt
    DONE = "done"  # already ran: drop the message
    BUSY = "busy"  # another worker holds a live lease: try again later


@dataclass(frozen=True)
class Claim:
    partition: str
    row: str
    etag: str
    claimed_at: datetime  # when this holder claimed the attempt: the time in the key of its history row


@dataclass(frozen=True)
class LostAttempt:
    """A holder whose lease expired before it completed: its worker died (or lost storage) mid-attempt."""

    worker: str
    claimed_at: datetime


@dataclass(frozen=True)
class ClaimResult:
    outcome: ClaimOutcome
    claim: Claim | None = None
    lost: LostAttempt | None = None  # set on a takeover: the holder this worker replaces
    lease_until: datetime | None = None  # BUSY: when the holder's lease ends


@dataclass(frozen=True)
class ClaimState:
    """What a watchdog needs to know of a claim."""

    done: bool
    lease_until: datetime | None


class ClaimStore:
    def __init__(self, table: TableClient) -> None:
        self.table = table

    @staticmethod
    def row_key(occurrence: datetime, action: str, attempt: int, trigger: str) -> str:
        return f"{format_due(occurrence)}{SEPARATOR}{trigger}{SEPARATOR}{action}{SEPARATOR}{attempt:03d}"

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
