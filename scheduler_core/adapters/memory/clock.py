"""Simulated time for the in-memory deployment (a :class:`~scheduler_core.ports.Clock`)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class SimulatedClock:
    """A :class:`~scheduler_core.ports.Clock` that moves only when told: :meth:`advance` or :meth:`set`
    (and by ``step`` on every reading, when a test wants time to pass while code runs). Thread-safe.

    It also serves as a ``sleep`` seam: ``sleep=clock.advance`` makes waits pass in simulated time."""

    def __init__(self, start: datetime | None = None, *, step: timedelta = timedelta(0)) -> None:
        self._now = (start or datetime(2030, 1, 1, tzinfo=UTC)).astimezone(UTC)
        self._step = step
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        """The current simulated instant (moved on by ``step`` first)."""
        with self._lock:
            self._now += self._step
            return self._now

    @property
    def now(self) -> datetime:
        """The current simulated instant, without moving it."""
        with self._lock:
            return self._now

    def advance(self, by: float | timedelta) -> None:
        """Move time on by ``by`` (seconds, or a ``timedelta``); never backwards."""
        delta = by if isinstance(by, timedelta) else timedelta(seconds=by)
        if delta < timedelta(0):
            raise ValueError("simulated time does not go backwards")
        with self._lock:
            self._now += delta

    def set(self, instant: datetime) -> None:
        """Jump to ``instant`` (which may not be before the current one)."""
        instant = instant.astimezone(UTC)
        with self._lock:
            if instant < self._now:
                raise ValueError("simulated time does not go backwards")
            self._now = instant
