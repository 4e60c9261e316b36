"""Claims: each (job, occurrence, cause, action, attempt) runs at most once, and is never lost.

Lease rule: a worker claims an attempt by creating its claim (state ``Running``, lease until
``now + lease``), and *renews* the lease while it holds the claim (:data:`CLAIM_LEASE`, 15 s, ahead, every
:func:`heartbeat_every`, 5 s: :mod:`scheduler_core.pipeline.leases`): while its action runs, and while the
writes after it retry. A second worker that finds the claim ``Running`` with an unexpired lease leaves
the attempt alone (its message comes back later); one that finds the lease expired (the holder stopped
renewing: it died, or lost storage) takes the claim over with an ETag-guarded write, so of two late-comers
only one wins, and learns whom it replaced (:class:`LostAttempt`, recorded in history next to the re-run).
A ``Done`` claim is never run again: a duplicate delivery of its message is dropped.

A worker that finds a lease expired does not take it over on that first look: it looks again
:func:`takeover_pause` (10 s) later (``take_over=False``, then ``True``) and takes it over only if the lease
is still over. A storage outage stops every renewal, but it also stops every takeover (a takeover is a
storage write): once storage answers again, a holder that is still alive renews within a second or two,
before the second look of any worker that could take its claim over. So an outage of any length never lets
a live call be taken over; only a holder cut off from storage *alone* (while other workers reach it) for
longer than the lease and the pause (25 s) can be: its attempt then runs again while its own call may still
run (it could not have recorded that call's end anyway, so the target sees the call twice either way).

Each claim counts how often it was taken over (:attr:`LostAttempt.takeovers`): an attempt whose worker was
lost :data:`MAX_TAKEOVERS` times is not run again, but recorded as failed (a crash of the action itself is
the likely cause), and goes on to its retries or error action as any failed attempt does.

Each claim call carries a random token, so a retried create whose first try landed (its answer was lost
in a storage outage) is recognised as this call's own claim instead of a live foreign one; a renewal
recognises its own claim by the same token. A holder's history entry is keyed by its claim time and the
attempt's execution id, so a retried history write lands on the same entry, and a lost holder's entry is
known to its successor.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from scheduler_core.storage.keys import SEPARATOR, format_due

#: How long a claim protects an attempt since its holder last renewed it (60 s before watch looks; 2 minutes,
#: never renewed, before that). The holder renews it every :func:`heartbeat_every` (5 s) for as long as it
#: holds the claim, so a call of any length (``SCHEDULER_HTTP_TIMEOUT_SECONDS`` allows 10 minutes) keeps it
#: while its worker lives, and renewals may fail for 10 s before it runs out. A holder that stopped renewing
#: is taken for dead a lease after its last renewal (and :func:`takeover_pause`), and the watchdog looks at a
#: lease within a watch slot of its end (:mod:`scheduler_core.pipeline.watchdog`): a dead worker's attempt
#: runs again about half a minute after the death. Why not longer: every second of it is a second more before
#: that re-run. Why not shorter: a renewal is a storage write every lease/3 per running attempt, and the lease
#: with the pause (25 s) is how long a holder cut off from storage *alone* (while other workers reach it) may
#: go before its attempt is run again beside its own call (a storage outage that every worker sees stops
#: takeovers too, so it never does this).
CLAIM_LEASE = timedelta(seconds=15)
#: A renewal that fails (storage unreachable) is tried again this often, at most, until one lands: once
#: storage answers again, a live holder renews within about this long (and a try's own timeouts).
RENEW_RETRY = timedelta(seconds=1)
#: The longest :func:`takeover_pause`: long enough for a live holder to renew once storage answers again
#: (:data:`RENEW_RETRY`, and a try bounded to 6 s by the Azure adapter).
TAKEOVER_PAUSE = timedelta(seconds=10)
#: Workers lost running one attempt before it is given up: the worker that takes it over the
#: ``MAX_TAKEOVERS``-th time records it as failed instead of running it again. One loss is ordinary (a host
#: restarted or scaled in); three in a row for one attempt mean that its action most likely stops its worker
#: (a native crash, memory exhausted), which would otherwise take the worker, and every other attempt on it,
#: down every few minutes for ever. The attempt's call is made ``MAX_TAKEOVERS`` times at most.
MAX_TAKEOVERS = 3


def heartbeat_every(lease: timedelta) -> timedelta:
    """How often a holder renews a claim of ``lease``: a third of it (5 s for :data:`CLAIM_LEASE`)."""
    return lease / 3


def takeover_pause(lease: timedelta) -> timedelta:
    """How long a worker that found a claim of ``lease`` expired waits before it looks again and takes it over:
    :data:`TAKEOVER_PAUSE`, or one heartbeat when that is shorter (a short lease of a test)."""
    return min(TAKEOVER_PAUSE, heartbeat_every(lease))


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
    EXPIRED = "expired"
    """Another worker's lease is over, and the call asked not to take it over (``take_over=False``): look
    again after :func:`takeover_pause`."""


@dataclass(frozen=True)
class Claim:
    """A claim this worker holds (the version it last wrote: a renewal returns the next one)."""

    partition: str
    row: str
    etag: str
    claimed_at: datetime  # when this holder claimed the attempt: the time in the key of its history entry
    token: str = ""  # the claim call's token: how a renewal recognises this holder's claim


@dataclass(frozen=True)
class LostAttempt:
    """A holder whose lease expired before it completed: its worker died (or lost storage) mid-attempt."""

    worker: str
    claimed_at: datetime
    #: How many times the attempt's claim has been taken over, this takeover included (1: its first holder
    #: was lost). The lost holder ran the call when this is at most :data:`MAX_TAKEOVERS`.
    takeovers: int = 1


@dataclass(frozen=True)
class ClaimResult:
    outcome: ClaimOutcome
    claim: Claim | None = None
    lost: LostAttempt | None = None  # set on a takeover: the holder this worker replaces
    lease_until: datetime | None = None  # BUSY: when the holder's lease ends; EXPIRED: when it ended


@dataclass(frozen=True)
class ClaimState:
    """What a watchdog needs to know of a claim."""

    done: bool
    lease_until: datetime | None
