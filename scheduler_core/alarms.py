"""One thread per process that runs short actions at their times, instead of a thread (or a wake-up) per wait.

Two rules use it: an outbound call's deadline (the reaper shuts the call's sockets down,
:mod:`scheduler_core.actions.call`) and a claim's first lease renewal (a keeper's renewing thread is started
only when its first renewal comes due, :mod:`scheduler_core.pipeline.leases`: nearly every attempt ends
before, and so starts no thread).

Contract of :class:`Alarms`:

- ``add(at, action)`` runs ``action()`` once, on the alarms' thread, at or soon after ``at`` (seconds on
  ``time.monotonic``); actions due at the same time run in the order they were added.
- An action must be short and must not block (it shuts sockets down, starts a thread); it is never
  cancelled: an action whose reason went away checks that itself and returns. An exception it raises is
  logged and the thread goes on.
- Adding is cheap: the thread is woken only when the new alarm is due before every other one.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

__all__ = ["ALARMS", "Alarms"]

log = logging.getLogger("scheduler_core.alarms")


class Alarms:
    """Actions run at their times by one daemon thread (see the module)."""

    def __init__(self, name: str = "scheduler-alarms") -> None:
        self.name = name
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self._condition = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, at: float, action: Callable[[], None]) -> None:
        """Run ``action()`` at ``at`` (``time.monotonic`` seconds)."""
        with self._condition:
            entry = (at, next(self._order), action)
            heapq.heappush(self._heap, entry)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            elif self._heap[0] is entry:
                self._condition.notify()  # due before the one the thread waits for

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._heap:
                    self._condition.wait()
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._condition.wait(wait)
                    continue
                _, _, action = heapq.heappop(self._heap)
            try:
                action()
            except Exception:
                log.exception("an alarm's action failed")


#: The process's alarms.
ALARMS = Alarms()
