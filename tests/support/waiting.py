"""Waiting for a condition in real time (the end-to-end tests over real processes and real storage)."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(condition: Callable[[], bool], timeout: float, what: str, poll: float = 0.2) -> None:
    """Return as soon as ``condition()`` holds; fail naming ``what`` if it does not within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(poll)
    raise AssertionError(f"not within {timeout:g} s: {what}")


class FakeTime:
    """A timer and a sleep that share one instant (seconds): sleeping moves it (a seam for code that waits
    between tries, such as ``scheduler_core.races.Backoff``)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def timer(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
