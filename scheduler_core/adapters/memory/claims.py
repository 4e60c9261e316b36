"""In-memory execution claims (the :class:`~scheduler_core.ports.Claims` port) under the lease rule of
:mod:`scheduler_core.model.claim`: one claim per (job identity, :func:`~scheduler_core.model.claim_key`).

:meth:`MemoryClaims.record` writes the history entry into the deployment's :class:`MemoryHistory` (through
its ``add``, so a fault set there is met) and then completes the claim: two steps where the Azure adapter
makes one write, in the order that leaves no done claim without its entry."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, replace
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
    takeovers: int = 0  # how many times the claim was taken over


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
        self,
        partition: str,
        row: str,
        worker: str,
        now: datetime,
        lease: timedelta,
        token: str | None = None,
        take_over: bool = True,
    ) -> ClaimResult:
        token = token or uuid.uuid4().hex
        now = utc(now)
        with self._lock:
            rows = self._rows.setdefault(partition, {})
            current = rows.get(row)
            takeovers = 0
            if current is not None:
                if current.token == token:  # this call's own claim, made by a try whose answer was lost
                    return ClaimResult(ClaimOutcome.CLAIMED, Claim(partition, row, current.etag, now, token))
                if current.done:
                    return ClaimResult(ClaimOutcome.DONE)
                if current.lease_until is not None and current.lease_until > now:
                    return ClaimResult(ClaimOutcome.BUSY, lease_until=current.lease_until)
                if not take_over:
                    return ClaimResult(ClaimOutcome.EXPIRED, lease_until=current.lease_until)
                takeovers = current.takeovers + 1
            claimed = _ClaimRow(new_etag(), False, worker, token, now + lease, now, takeovers=takeovers)
            rows[row] = claimed
        result = Claim(partition, row, claimed.etag, now, token)
        if current is None:
            return ClaimResult(ClaimOutcome.CLAIMED, result)
        lost = LostAttempt(current.worker, current.claimed_at or now, takeovers)
        return ClaimResult(ClaimOutcome.CLAIMED, result, lost=lost)

    @faultable
    def renew(self, claim: Claim, now: datetime, lease: timedelta) -> Claim | None:
        with self._lock:
            rows = self._rows.get(claim.partition, {})
            current = rows.get(claim.row)
            if current is None or current.done or current.token != claim.token:
                return None  # taken over, done or deleted: no longer this holder's
            renewed = replace(current, etag=new_etag(), lease_until=utc(now) + lease)
            rows[claim.row] = renewed
        return replace(claim, etag=renewed.etag)

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
            rows[claim.row] = replace(current, etag=new_etag(), done=True, completed_at=utc(now))

    @faultable
    def record(self, claim: Claim, job: JobRef, entry: HistoryEntry, now: datetime) -> None:
        self.history.add(job, entry)
        with self._lock:
            current = self._rows.get(claim.partition, {}).get(claim.row)
            # Another holder's now (a version this holder did not write: not its token, or, for a claim
            # without one, another ETag); a claim another worker took over stays that worker's to complete.
            mine = current is not None and (current.token == claim.token if claim.token else current.etag == claim.etag)
            taken_over = current is not None and not mine and not current.done
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
