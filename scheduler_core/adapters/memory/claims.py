"""In-memory execution claims (the :class:`~scheduler_core.ports.Claims` port) under the lease rule of
:mod:`scheduler_core.model.claim`: one claim per (job identity, :func:`~scheduler_core.model.claim_key`).

:meth:`MemoryClaims.record` writes the history entry into the deployment's :class:`MemoryHistory` (through
its ``add``, so a fault set there is met) and then completes the claim: two steps where the Azure adapter
makes one write, in the order that leaves no done claim without its entry."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler_core.adapters.memory.history import MemoryHistory
from scheduler_core.adapters.memory.seam import FaultSeam, faultable, new_etag, utc
from scheduler_core.model import Claim, ClaimOutcome, ClaimResult, ClaimState, HistoryEntry, LostAttempt
from scheduler_core.storage.keys import JobRef, format_due


@dataclass(frozen=True)
class _ClaimRow:
    etag: str
    done: bool
    worker: str = ""
    token: str = ""
    lease_until: datetime | None = None
    claimed_at: datetime | None = None
    completed_at: datetime | None = None


class MemoryClaims(FaultSeam):
    """Claims by (partition, row). Each call is applied whole under the store's lock, so of two workers
    taking over one expired claim exactly one wins (the other finds the winner's live lease: busy)."""

    def __init__(self, history: MemoryHistory | None = None) -> None:
        super().__init__()
        self._rows: dict[str, dict[str, _ClaimRow]] = {}
        self._lock = threading.RLock()
        self.history = history if history is not None else MemoryHistory()

    @faultable
    def claim(
        self, partition: str, row: str, worker: str, now: datetime, lease: timedelta, token: str | None = None
    ) -> ClaimResult:
        token = token or uuid.uuid4().hex
        now = utc(now)
        with self._lock:
            rows = self._rows.setdefault(partition, {})
            current = rows.get(row)
            if current is not None:
                if current.token == token:  # this call's own claim, made by a try whose answer was lost
                    return ClaimResult(ClaimOutcome.CLAIMED, Claim(partition, row, current.etag, now))
                if current.done:
                    return ClaimResult(ClaimOutcome.DONE)
                if current.lease_until is not None and current.lease_until > now:
                    return ClaimResult(ClaimOutcome.BUSY, lease_until=current.lease_until)
            claimed = _ClaimRow(new_etag(), False, worker, token, now + lease, now)
            rows[row] = claimed
        result = Claim(partition, row, claimed.etag, now)
        if current is None:
            return ClaimResult(ClaimOutcome.CLAIMED, result)
        return ClaimResult(ClaimOutcome.CLAIMED, result, lost=LostAttempt(current.worker, current.claimed_at or now))

    @faultable
    def state(self, partition: str, row: str) -> ClaimState | None:
        with self._lock:
            current = self._rows.get(partition, {}).get(row)
        return None if current is None else ClaimState(current.done, current.lease_until)

    @faultable
    def complete(self, claim: Claim, now: datetime) -> None:
        with self._lock:
            rows = self._rows.setdefault(claim.partition, {})
            current = rows.get(claim.row) or _ClaimRow("", False)
            rows[claim.row] = _ClaimRow(
                new_etag(),
                True,
                current.worker,
                current.token,
                current.lease_until,
                current.claimed_at,
                utc(now),
            )

    @faultable
    def record(self, claim: Claim, job: JobRef, entry: HistoryEntry, now: datetime) -> None:
        self.history.add(job, entry)
        with self._lock:
            current = self._rows.get(claim.partition, {}).get(claim.row)
            taken_over = current is not None and current.etag != claim.etag and not current.done
        if not taken_over:  # a claim another worker took over stays that worker's to complete
            self.complete(claim, now)

    @faultable
    def release(self, claim: Claim) -> None:
        with self._lock:
            rows = self._rows.get(claim.partition, {})
            current = rows.get(claim.row)
            if current is not None and current.etag == claim.etag:
                del rows[claim.row]

    @faultable
    def delete_older_than(self, partition: str, before: datetime) -> int:
        bound = format_due(before)
        with self._lock:
            rows = self._rows.get(partition, {})
            doomed = [key for key in rows if key < bound]
            for key in doomed:
                del rows[key]
            return len(doomed)

    @faultable
    def delete_all(self, partition: str) -> None:
        with self._lock:
            self._rows.pop(partition, None)
