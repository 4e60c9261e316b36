"""Execution claims in Table Storage (the :class:`~scheduler_core.ports.Claims` port): one row per attempt,
PartitionKey = the job's identity, RowKey = :func:`~scheduler_core.model.claim_key`. The lease rule is
:mod:`scheduler_core.model.claim`'s.

A claim completed by :meth:`TableClaims.record` holds the attempt's history entry too (the properties of a
``JobHistory`` row, and ``HistoryKey``, its row key there): one write instead of a history row and a claim
update. :class:`~scheduler_core.adapters.azure.tables.TableHistory` lists such rows with the job's history
rows. Rows written before this (history in ``JobHistory``, claims without an entry) read as before.

A holder renews its lease with :meth:`TableClaims.renew` (one merge of ``LeaseUntil``); a takeover counts
itself in ``Takeovers`` (absent: never taken over), which the worker that takes the claim over learns
(:attr:`~scheduler_core.model.claim.LostAttempt.takeovers`).
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import UpdateMode

from scheduler_core.adapters.azure.errors import translated
from scheduler_core.adapters.azure.rest import Table
from scheduler_core.adapters.azure.tables import (
    HISTORY_KEY,
    HISTORY_PROPERTIES,
    MAX_BATCH,
    TableHistory,
    _aware,
    delete_rows,
)
from scheduler_core.model import Claim, ClaimOutcome, ClaimResult, ClaimState, HistoryEntry, LostAttempt
from scheduler_core.storage.keys import JobRef, format_due

#: The bounds of one try of a renewal (seconds, and no retry by the client): a holder tries again itself
#: within a second, so that once storage answers again it renews within a few seconds, well inside the pause
#: a worker that found its lease over waits before it takes the claim over
#: (:func:`~scheduler_core.model.claim.takeover_pause`).
RENEW_TIMEOUTS: dict[str, Any] = {"connection_timeout": 2.0, "read_timeout": 4.0, "retry_total": 0}


@translated
class TableClaims:
    def __init__(self, table: Table, history: Table) -> None:
        self.table = table
        self.history = history  # JobHistory: where an entry goes whose claim another worker took over

    def claim(
        self,
        partition: str,
        row: str,
        worker: str,
        now: datetime,
        lease: timedelta,
        token: str | None = None,
        take_over: bool = True,
    ) -> ClaimResult:
        """Claim one attempt (see the module's lease rule). Safe to call again with the same ``token`` after
        an error: a claim made with it (whose answer was lost) is recognised and returned as claimed. A lease
        that is over is taken over (the row's ``Takeovers`` counted up), unless ``take_over`` is False."""
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
            return ClaimResult(ClaimOutcome.CLAIMED, Claim(partition, row, str(result["etag"]), now, token))
        except ResourceExistsError:
            pass
        try:
            current = self.table.get_entity(partition, row)
        except ResourceNotFoundError:
            return ClaimResult(ClaimOutcome.BUSY)
        if current.get("Token") == token:  # this call's own create landed; its answer was lost
            return ClaimResult(ClaimOutcome.CLAIMED, Claim(partition, row, str(current.metadata["etag"]), now, token))
        if current.get("State") == "Done":
            return ClaimResult(ClaimOutcome.DONE)
        lease_until = _aware(current.get("LeaseUntil"))
        if lease_until is not None and lease_until > now:
            return ClaimResult(ClaimOutcome.BUSY, lease_until=lease_until)
        if not take_over:
            return ClaimResult(ClaimOutcome.EXPIRED, lease_until=lease_until)
        takeovers = int(current.get("Takeovers") or 0) + 1
        lost = LostAttempt(str(current.get("Worker", "")), _aware(current.get("ClaimedAt")) or now, takeovers)
        try:
            result = self.table.update_entity(
                entity | {"Takeovers": takeovers},
                mode=UpdateMode.REPLACE,
                etag=current.metadata["etag"],
                match_condition=MatchConditions.IfNotModified,
            )
        except (ResourceModifiedError, ResourceNotFoundError):
            return ClaimResult(ClaimOutcome.BUSY, lease_until=now + lease)
        claimed = Claim(partition, row, str(result["etag"]), now, token)
        return ClaimResult(ClaimOutcome.CLAIMED, claimed, lost=lost)

    def renew(self, claim: Claim, now: datetime, lease: timedelta) -> Claim | None:
        """Extend this holder's lease to ``now + lease``: one merge guarded by the version it last wrote. When
        the guard fails, the row is read: still this holder's (its token, ``Running``: a renewal whose answer
        was lost landed) it is renewed over the version read; another holder's, done or gone: None. Each try
        is bounded by :data:`RENEW_TIMEOUTS` with no retry of the client's own (the holder tries again
        itself, every :data:`~scheduler_core.model.claim.RENEW_RETRY`)."""
        entity = {"PartitionKey": claim.partition, "RowKey": claim.row, "LeaseUntil": now + lease}
        etag = claim.etag
        for _ in range(2):
            try:
                result = self.table.update_entity(
                    entity,
                    mode=UpdateMode.MERGE,
                    etag=etag,
                    match_condition=MatchConditions.IfNotModified,
                    **RENEW_TIMEOUTS,
                )
                return replace(claim, etag=str(result["etag"]))
            except ResourceNotFoundError:
                return None
            except ResourceModifiedError:
                pass
            try:
                current = self.table.get_entity(claim.partition, claim.row, select=["State", "Token"], **RENEW_TIMEOUTS)
            except ResourceNotFoundError:
                return None
            if current.get("State") == "Done" or not claim.token or current.get("Token") != claim.token:
                return None
            etag = str(current.metadata["etag"])
        return None  # written again between the read and the merge: not this holder's any more

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

    def record(self, claim: Claim, job: JobRef, entry: HistoryEntry, now: datetime) -> None:
        """Mark the attempt done with its history entry in the claim's row: one merge, guarded by the claim's
        ETag so that it never lands on a claim another worker took over. When the guard fails, the row is
        read: already this entry's (a retry whose first try landed) is fine; another holder's means this
        holder's lease ended, and its entry goes to ``JobHistory`` next to the new holder's."""
        history = TableHistory.entity(job, entry)
        properties = {k: v for k, v in history.items() if k not in ("PartitionKey", "RowKey")}
        row = {
            "PartitionKey": claim.partition,
            "RowKey": claim.row,
            **properties,
            HISTORY_KEY: entry.row_key,
            "State": "Done",
            "CompletedAt": now,
        }
        try:
            self.table.update_entity(
                row, mode=UpdateMode.MERGE, etag=claim.etag, match_condition=MatchConditions.IfNotModified
            )
            return
        except (ResourceModifiedError, ResourceNotFoundError):
            pass
        try:
            current = self.table.get_entity(claim.partition, claim.row, select=["State", "Token", HISTORY_KEY])
        except ResourceNotFoundError:  # the job's claims were deleted meanwhile: done, with this entry
            self.table.upsert_entity(row, mode=UpdateMode.MERGE)
            return
        if current.get(HISTORY_KEY) == entry.row_key:
            return  # this entry landed (the answer to the first try was lost)
        if claim.token and current.get("Token") == claim.token and current.get("State") != "Done":
            # Still this holder's claim: a version it wrote whose answer was lost (a renewal). Over that one.
            with contextlib.suppress(ResourceModifiedError, ResourceNotFoundError):
                self.table.update_entity(
                    row,
                    mode=UpdateMode.MERGE,
                    etag=current.metadata["etag"],
                    match_condition=MatchConditions.IfNotModified,
                )
                return
        self.history.upsert_entity(history)  # another holder's claim now: the entry goes next to its own

    def release(self, claim: Claim) -> None:
        """Give a claim back (the attempt did not run), so a redelivery may take it at once."""
        with contextlib.suppress(ResourceModifiedError, ResourceNotFoundError):
            self.table.delete_entity(
                claim.partition, claim.row, etag=claim.etag, match_condition=MatchConditions.IfNotModified
            )

    def delete_older_than(self, partition: str, before: datetime) -> int:
        """Delete the claims of one job whose occurrence is before ``before`` (batched). Returns how many."""
        rows = self.table.query_entities(
            "PartitionKey eq @p and RowKey lt @b", parameters={"p": partition, "b": format_due(before)}
        )
        return self._delete(partition, list(rows))

    def delete_all(self, partition: str) -> None:
        """Delete every claim of one job (the job is being removed)."""
        self._delete(partition, list(self.table.query_entities("PartitionKey eq @p", parameters={"p": partition})))

    def _delete(self, partition: str, rows: list[Any]) -> int:
        """Delete claim rows; the history entries some hold are written to ``JobHistory`` first (batched), so
        the job's history keeps them."""
        entries = [
            {"PartitionKey": partition, "RowKey": row[HISTORY_KEY]}
            | {name: row[name] for name in HISTORY_PROPERTIES if name in row}
            for row in rows
            if row.get(HISTORY_KEY)
        ]
        for start in range(0, len(entries), MAX_BATCH):
            self.history.submit_transaction([("upsert", entry) for entry in entries[start : start + MAX_BATCH]])
        delete_rows(self.table, partition, [str(row["RowKey"]) for row in rows])
        return len(rows)
