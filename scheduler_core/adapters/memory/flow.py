"""In-memory flow control state (the :class:`~scheduler_core.ports.FlowLimits` port): per key, the next free
instant of its rate, its slots (holder, until) and the places of the attempts waiting for a slot."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from scheduler_core.adapters.memory.seam import FaultSeam, faultable, utc


@dataclass
class _Key:
    next_free: datetime | None = None
    reserved: dict[str, datetime] = field(default_factory=dict)  # holder -> its start
    slots: dict[str, datetime] = field(default_factory=dict)  # holder -> until
    waiting: dict[tuple[str, str], datetime] = field(default_factory=dict)  # (job, place) -> until


class MemoryFlowLimits(FaultSeam):
    """Flow control state by key (keys compare as given: callers lower-case them)."""

    def __init__(self) -> None:
        super().__init__()
        self._keys: dict[str, _Key] = {}
        self._lock = threading.Lock()

    def _key(self, key: str) -> _Key:
        return self._keys.setdefault(key, _Key())

    @faultable
    def reserve(
        self, key: str, spacing: timedelta, now: datetime, holder: str, *, passed: datetime | None = None
    ) -> datetime:
        now = utc(now)
        with self._lock:
            state = self._key(key)
            if holder in state.reserved and passed is None:
                return state.reserved[holder]
            if passed is not None and state.next_free == utc(passed) + spacing:  # the key's last: it moves to now
                state.next_free = None
            start = now if state.next_free is None or state.next_free < now else state.next_free
            state.next_free = start + spacing
            state.reserved[holder] = start
            return start

    @faultable
    def forget(self, key: str, holder: str) -> None:
        with self._lock:
            self._key(key).reserved.pop(holder, None)

    @faultable
    def acquire(self, key: str, limit: int, holder: str, until: datetime, now: datetime) -> bool:
        now, until = utc(now), utc(until)
        with self._lock:
            state = self._key(key)
            if holder not in state.slots:
                live = sum(1 for end in state.slots.values() if end > now)
                if live >= limit:
                    return False
                for other in [other for other, end in state.slots.items() if end <= now]:
                    del state.slots[other]  # its holder died: the slot is free
            state.slots[holder] = until
            return True

    @faultable
    def release(self, key: str, holder: str) -> None:
        with self._lock:
            self._key(key).slots.pop(holder, None)

    @faultable
    def wait(self, key: str, job: str, place: str, until: datetime) -> None:
        with self._lock:
            self._key(key).waiting[(job, place)] = utc(until)

    @faultable
    def waiting(self, key: str, job: str, place: str, now: datetime) -> datetime | None:
        with self._lock:
            until = self._key(key).waiting.get((job, place))
            return until if until is not None and until > utc(now) else None

    @faultable
    def first_waiting(self, key: str, job: str, now: datetime) -> str | None:
        now = utc(now)
        with self._lock:
            places = [place for (owner, place), end in self._key(key).waiting.items() if owner == job and end > now]
            return min(places) if places else None

    @faultable
    def done_waiting(self, key: str, job: str, place: str) -> None:
        with self._lock:
            self._key(key).waiting.pop((job, place), None)

    def in_flight(self, key: str, now: datetime) -> int:
        """How many slots of the key are held at ``now`` (for tests and reports)."""
        with self._lock:
            return sum(1 for end in self._key(key).slots.values() if end > utc(now))
