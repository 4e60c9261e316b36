"""The management operations' races: :func:`scheduler_core.races.race` with their bound, and ``If-Match``.

A lost race starts the operation over from a fresh read, ``If-Match`` or not: the attempt checks the client's
``If-Match`` against what it read (:func:`check_if_match`), so a resource whose version the client named is
still written when another writer changed only what the version does not cover (a fire's counters on a job),
and is the client's 412 when it changed. Every other error is final and raised as it is: a quota, a
validation error or a conflict with the stored state is never retried or re-worded. After
:data:`RACE_ATTEMPTS` lost races the operation answers 409.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from scheduler_core.errors import ConflictError, PreconditionFailedError
from scheduler_core.races import Backoff, Bound, RacesLost, StartOver, race

__all__ = ["RACE_ATTEMPTS", "Races", "StartOver", "check_if_match"]

T = TypeVar("T")

#: How often an operation starts over when another writer changed a row between its read and its write.
#: Between attempts it waits a random time up to :data:`RACE_BACKOFF` doubled per attempt, at most
#: :data:`RACE_BACKOFF_CAP`.
RACE_ATTEMPTS = 30
RACE_BACKOFF = 0.005
RACE_BACKOFF_CAP = 0.25


@dataclass
class Races:
    """Runs attempts by the module's rule. ``sleep`` is the seam for tests (simulated time)."""

    sleep: Callable[[float], None] = field(default=time.sleep)
    attempts: int = RACE_ATTEMPTS

    def retrying(self, what: str, attempt: Callable[[], T]) -> T:
        """Run ``attempt`` (which reads, decides and writes) until no concurrent writer beats it; after
        :attr:`attempts` lost races, a 409 naming ``what``."""
        bound = Bound(tries=self.attempts, first=RACE_BACKOFF, cap=RACE_BACKOFF_CAP)
        try:
            return race(attempt, Backoff(bound, sleep=self.sleep))
        except RacesLost:
            raise ConflictError(f"{what} is being changed by many requests at the same time; retry") from None


def check_if_match(etag: str | None, if_match: str | None, what: str) -> None:
    """Honour an ``If-Match`` header against the stored ETag (``None`` = the resource does not exist)."""
    if if_match is None:
        return
    if etag is None:
        raise PreconditionFailedError(f"If-Match was given but the {what} does not exist")
    if if_match.strip() != "*" and if_match.strip() != etag:
        raise PreconditionFailedError(f"If-Match does not match the current ETag of the {what}")
