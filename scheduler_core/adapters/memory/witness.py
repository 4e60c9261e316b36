"""The witness in memory, timed by a :class:`~scheduler_core.ports.Clock` (simulated time in tests), with a seam
that cuts one region off from it."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from scheduler_core.ports import Clock
from scheduler_core.regions.witness import HANDBACK_HOLD, LEASE, WitnessState, WitnessUnreachable

__all__ = ["MemoryWitness", "SeenFrom"]


class MemoryWitness:
    """A :class:`~scheduler_core.regions.witness.Witness` in memory. ``cut`` holds the regions that cannot
    reach it: their calls, and every call through :meth:`seen_from` them, raise :class:`WitnessUnreachable`."""

    def __init__(self, clock: Clock, lease: timedelta = LEASE, hold: timedelta = HANDBACK_HOLD) -> None:
        self.clock = clock
        self.lease = lease
        self.hold = hold
        self.cut: set[str] = set()
        self._holder: str | None = None
        self._epoch = 0
        self._until: datetime | None = None
        self._demoted: set[str] = set()
        self._handback: tuple[str, datetime] | None = None
        self._lock = threading.Lock()

    def seen_from(self, region: str) -> SeenFrom:
        """This witness as ``region`` reaches it (its reads fail too while it is cut off)."""
        return SeenFrom(self, region)

    def _reach(self, region: str) -> None:
        if region in self.cut:
            raise WitnessUnreachable(f"region '{region}' cannot reach the witness")

    def _runs(self) -> bool:
        return self._until is not None and self.clock() < self._until

    def read(self) -> WitnessState:
        with self._lock:
            return WitnessState(self._holder, self._epoch, self._runs(), frozenset(self._demoted), self._handing_back())

    def _handing_back(self) -> str | None:
        if self._handback is None or self.clock() - self._handback[1] >= self.hold:
            return None
        return self._handback[0]

    def acquire(self, region: str) -> int | None:
        self._reach(region)
        with self._lock:
            if self._runs() or region in self._demoted or self._handing_back() == region:
                return None
            self._holder, self._epoch, self._until = region, self._epoch + 1, self.clock() + self.lease
            self._handback = None
            return self._epoch

    def hand_back(self, region: str, epoch: int) -> bool:
        self._reach(region)
        with self._lock:
            if (self._holder, self._epoch) != (region, epoch) or not self._runs():
                return False
            self._handback = (region, self.clock())
            return True

    def set_demoted(self, region: str, demoted: bool) -> None:
        self._reach(region)
        with self._lock:
            if demoted:
                self._demoted.add(region)
            else:
                self._demoted.discard(region)

    def renew(self, region: str, epoch: int) -> bool:
        self._reach(region)
        with self._lock:
            if (self._holder, self._epoch) != (region, epoch) or self._until is None:
                return False
            self._until = self.clock() + self.lease
            return True

    def release(self, region: str, epoch: int) -> None:
        self._reach(region)
        with self._lock:
            if (self._holder, self._epoch) == (region, epoch):
                self._until = None


class SeenFrom:
    """A :class:`MemoryWitness` as one region reaches it."""

    def __init__(self, witness: MemoryWitness, region: str) -> None:
        self.witness = witness
        self.region = region
        self.lease = witness.lease

    def read(self) -> WitnessState:
        self.witness._reach(self.region)
        return self.witness.read()

    def acquire(self, region: str) -> int | None:
        return self.witness.acquire(region)

    def renew(self, region: str, epoch: int) -> bool:
        return self.witness.renew(region, epoch)

    def hand_back(self, region: str, epoch: int) -> bool:
        return self.witness.hand_back(region, epoch)

    def set_demoted(self, region: str, demoted: bool) -> None:
        self.witness.set_demoted(region, demoted)

    def release(self, region: str, epoch: int) -> None:
        self.witness.release(region, epoch)
