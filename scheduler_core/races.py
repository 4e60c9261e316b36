"""Read, decide, write, and start over when another writer got there first: the one concurrency rule.

Every read-decide-write of the service and the pipeline runs as an *attempt* under :func:`race`: the attempt
reads what it needs, decides, and writes guarded by the ETags it read (or as a create). When it loses the
write race (it raises :class:`~scheduler_core.errors.WriteRaceError`: the row changed since it was read, or
was created meanwhile) it is run again, from a fresh read, after a random wait, so every decision is made on
the state it changes. The *bound* (:class:`Bound`) says how long the racing goes on: a number of tries, a
time budget, or both, with "full jitter" waits (after the ``n``-th lost race a random time up to
``first * 2**n`` seconds, at most ``cap``) so that racers spread out instead of meeting again. When the bound
is spent, :class:`RacesLost` is raised; each caller maps it once to what it promises (a 409, a failed queue
message, an attempt looked at again later).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from scheduler_core.errors import WriteRaceError

T = TypeVar("T")


class StartOver(Exception):
    """Raised by an attempt: run it again at once from a fresh read (what it read was stale, not contended:
    no wait). It counts as a try."""


class RacesLost(Exception):
    """The bound of a race was spent: ``lost`` races lost in ``elapsed`` seconds."""

    def __init__(self, lost: int, elapsed: float) -> None:
        super().__init__(f"{lost} write races lost in {elapsed:.1f} s")
        self.lost = lost
        self.elapsed = elapsed


@dataclass(frozen=True)
class Bound:
    """How long an attempt goes on losing races: at most ``tries`` tries (None: no limit) and ``budget``
    seconds from the first (None: no limit); between tries a full-jitter wait up to ``first`` seconds doubled
    per lost race, at most ``cap`` (``first`` 0: no wait)."""

    tries: int | None = None
    budget: float | None = None
    first: float = 0.0
    cap: float = 0.0


class Backoff:
    """The waits of one race under ``bound``. ``sleep``, ``timer`` and ``jitter`` are seams for tests."""

    def __init__(
        self,
        bound: Bound,
        *,
        sleep: Callable[[float], None] | None = None,
        timer: Callable[[], float] | None = None,
        jitter: Callable[[float, float], float] | None = None,
    ) -> None:
        self.bound = bound
        self.sleep = sleep or time.sleep
        self.timer = timer or time.monotonic
        self.jitter = jitter or random.uniform
        #: Races lost so far.
        self.lost = 0
        #: Tries so far (lost races and starts over).
        self.tries = 0
        self.started = self.timer()

    @property
    def elapsed(self) -> float:
        """Seconds since the first try."""
        return self.timer() - self.started

    def wait(self) -> bool:
        """After a lost race: wait, and say whether to try again (False: the bound is spent; no wait)."""
        self.lost += 1
        if not self.again():
            return False
        if self.bound.first <= 0:
            return True
        pause = self.jitter(0, min(self.bound.cap, self.bound.first * 2 ** min(self.lost - 1, 30)))
        if self.bound.budget is not None and self.elapsed + pause > self.bound.budget:
            return False
        self.sleep(pause)
        return True

    def again(self) -> bool:
        """Whether the bound allows another try (counting the one that just ended)."""
        self.tries += 1
        if self.bound.tries is not None and self.tries >= self.bound.tries:
            return False
        return self.bound.budget is None or self.elapsed <= self.bound.budget


def race(
    attempt: Callable[[], T],
    backoff: Backoff | Bound,
    lost: Callable[[WriteRaceError], bool] = lambda error: True,
) -> T:
    """Run ``attempt`` (which reads, decides and writes) until it returns. A
    :class:`~scheduler_core.errors.WriteRaceError` for which ``lost`` says True is a lost race: the attempt runs
    again after ``backoff``'s wait; others are raised as they are, as is every other error. :class:`StartOver`
    runs it again at once. Raises :class:`RacesLost` when the bound is spent."""
    waits = backoff if isinstance(backoff, Backoff) else Backoff(backoff)
    while True:
        try:
            return attempt()
        except StartOver:
            if not waits.again():
                raise RacesLost(waits.lost, waits.elapsed) from None
            continue
        except WriteRaceError as error:
            if not lost(error):
                raise
        if not waits.wait():
            raise RacesLost(waits.lost, waits.elapsed)
