"""Claims: each (job, occurrence, cause, action, attempt) runs at most once, and is never lost.

Lease rule: a worker claims an attempt by creating its claim (state ``Running``, lease until
``now + lease``). A second worker that finds the claim ``Running`` with an unexpired lease leaves the
attempt alone (its message comes back later); one that finds the lease expired (the first worker died)
takes the claim over with an ETag-guarded write, so of two late-comers only one wins, and learns whom it
replaced (:class:`LostAttempt`, recorded in history next to the re-run). A ``Done`` claim is never run
again: a duplicate delivery of its message is dropped.

Each claim call carries a random token, so a retried create whose first try landed (its answer was lost
in a storage outage) is recognised as this call's own claim instead of a live foreign one. A holder's
history entry is keyed by its claim time and the attempt's execution id, so a retried history write lands
on the same entry, and a lost holder's entry is known to its successor.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from scheduler_core.storage.keys import SEPARATOR, format_due

#: How long a claim protects a running attempt: the action timeout (60 s) plus a margin. A holder still
#: running after it is taken to be dead: a redelivery or the watchdog may take the attempt over.
CLAIM_LEASE = timedelta(seconds=120)


def claim_key(occurrence: datetime, action: str, attempt: int, cause: str) -> str:
    """The key of an attempt's claim within its job (sorted by occurrence, so old claims are trimmed by range)."""
    return f"{format_due(occurrence)}{SEPARATOR}{cause}{SEPARATOR}{action}{SEPARATOR}{attempt:03d}"


class ClaimOutcome(Enum):
    """What a claim call found."""

    CLAIMED = "claimed"
    """This worker runs the attempt."""
    DONE = "done"
    """The attempt already ran: drop the message."""
    BUSY = "busy"
    """Another worker holds a live lease: try again once it ends."""


@dataclass(frozen=True)
class Claim:
    """A claim this worker holds."""

    partition: str
    row: str
    etag: str
    claimed_at: datetime  # when this holder claimed the attempt: the time in the key of its history entry


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
