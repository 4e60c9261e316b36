"""Read, decide, write, and start over when another writer got there first: the one concurrency rule of
the management operations.

An operation reads what it needs, decides, and writes guarded by the ETags it read (or as a create). When
it loses a write race (:class:`~scheduler_core.errors.WriteRaceError`: the row changed since it was read,
or was created meanwhile) it starts over from a fresh read after a short random wait, so every decision is
made on the state it changes. With the client's ``If-Match`` an ETag mismatch is the client's 412 instead.
Every other error is final and raised as it is: a quota, a validation error or a conflict with the stored
state is never retried or re-worded.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from scheduler_core.errors import ConflictError, EtagMismatchError, PreconditionFailedError, WriteRaceError

T = TypeVar("T")

#: How often an operation starts over when another writer changed a row between its read and its write.
#: Between attempts it waits a random time up to :data:`RACE_BACKOFF` doubled per attempt, at most
#: :data:`RACE_BACKOFF_CAP`.
RACE_ATTEMPTS = 30
RACE_BACKOFF = 0.005
RACE_BACKOFF_CAP = 0.25


class StartOver(Exception):
    """Raised inside an attempt: start over at once from a fresh read (this process's view was stale;
    not contention, so no wait)."""


@dataclass
class Races:
    """Runs attempts by the module's rule. ``sleep`` is the seam for tests (simulated time)."""

    sleep: Callable[[float], None] = field(default=time.sleep)
    attempts: int = RACE_ATTEMPTS

    def retrying(self, what: str, if_match: str | None, attempt: Callable[[], T]) -> T:
        """Run ``attempt`` (which reads, decides and writes) until no concurrent writer beats it; after
        :attr:`attempts` lost races, a 409 naming ``what``."""
        for n in range(self.attempts):
            try:
                return attempt()
            except StartOver:
                continue
            except EtagMismatchError:
                if if_match is not None:
                    raise
            except WriteRaceError:
                pass
            self.sleep(random.uniform(0, min(RACE_BACKOFF * 2**n, RACE_BACKOFF_CAP)))
        raise ConflictError(f"{what} is being changed by many requests at the same time; retry")


def check_if_match(etag: str | None, if_match: str | None, what: str) -> None:
    """Honour an ``If-Match`` header against the stored ETag (``None`` = the resource does not exist)."""
    if if_match is None:
        return
    if etag is None:
        raise PreconditionFailedError(f"If-Match was given but the {what} does not exist")
    if if_match.strip() != "*" and if_match.strip() != etag:
        raise PreconditionFailedError(f"If-Match does not match the current ETag of the {what}")
