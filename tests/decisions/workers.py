"""Workers for the decision tests of lost workers and lease renewal: runners that hold, kill or count calls,
executors over a deployment with their own runner, and :class:`SimulatedWaits`, the simulated time that the
lease keeper of a running attempt (a thread of its own) waits in."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from scheduler_core.actions import ActionContext, ActionResult, ActionRunner
from scheduler_core.adapters.memory import SimulatedClock
from scheduler_core.model.actions import Action
from scheduler_core.pipeline.execute import Executor
from tests.support.harness import Deployment

#: How long (real time) a test waits for another thread to reach a point before it fails.
REAL_TIMEOUT = 10.0


class WorkerDied(BaseException):
    """The worker process dies in the middle of the call: nothing after it runs (no code catches this)."""


OK = ActionResult(True, "Http Action - Response from host 'target': '200 OK'", 200)


class CountingRunner(ActionRunner):
    """Answers every call with ``answer(context)`` (default: 200) and keeps each call's context."""

    def __init__(self, answer: Callable[[ActionContext], ActionResult] | None = None) -> None:
        super().__init__()
        self.calls: list[ActionContext] = []
        self.answer = answer or (lambda context: OK)

    def run(self, action: Action, context: ActionContext) -> ActionResult:
        self.calls.append(context)
        return self.answer(context)


class CrashingRunner(CountingRunner):
    """Kills its worker (:class:`WorkerDied`) on the calls ``crashes(context)`` names; answers 200 otherwise."""

    def __init__(self, crashes: Callable[[ActionContext], bool]) -> None:
        super().__init__()
        self.crashes = crashes

    def run(self, action: Action, context: ActionContext) -> ActionResult:
        self.calls.append(context)
        if self.crashes(context):
            raise WorkerDied
        return OK


class HeldRunner(CountingRunner):
    """Holds each call until the test releases it (:meth:`end`): then answers 200, or kills its worker."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self._release = threading.Event()
        self._die = False

    def run(self, action: Action, context: ActionContext) -> ActionResult:
        self.calls.append(context)
        self.started.set()
        if not self._release.wait(REAL_TIMEOUT):
            raise AssertionError("the held call was never released")
        if self._die:
            raise WorkerDied
        return OK

    def end(self, *, die: bool = False) -> None:
        """Let the held call end: answered, or with its worker's death."""
        self._die = die
        self._release.set()


class SimulatedWaits:
    """Simulated time for threads that wait in it (the lease keeper's ``wait`` seam): :meth:`wait` blocks a
    thread until the clock reaches its instant (or its event is set); :meth:`advance` moves the clock one
    second at a time and, after each step, lets every thread whose instant came run until it waits again (or
    ends), so that what a keeper does at an instant is done before time moves on. :meth:`advance` is also an
    executor's ``sleep`` seam (the pause before a takeover passes in it, with the keepers' renewals)."""

    def __init__(self, clock: SimulatedClock) -> None:
        self.clock = clock
        self._cond = threading.Condition()
        self._waiting: dict[int, datetime] = {}
        self._running: dict[int, threading.Thread] = {}

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        me = threading.get_ident()
        until = self.clock.now + timedelta(seconds=seconds)
        with self._cond:
            self._running.pop(me, None)
            self._waiting[me] = until
            self._cond.notify_all()
            while not stop.is_set() and self.clock.now < until:
                self._cond.wait(0.002)
            del self._waiting[me]
            stopped = stop.is_set()
            if not stopped:
                self._running[me] = threading.current_thread()
            self._cond.notify_all()
        return stopped

    def waiting(self) -> int:
        """How many threads wait in simulated time now."""
        with self._cond:
            return len(self._waiting)

    def until_waiting(self, count: int = 1) -> None:
        """Block until at least ``count`` threads wait in simulated time (a keeper just started)."""
        deadline = time.monotonic() + REAL_TIMEOUT
        with self._cond:
            while len(self._waiting) < count:
                if time.monotonic() > deadline:
                    raise AssertionError(f"fewer than {count} threads came to wait")
                self._cond.wait(0.002)

    def settle(self) -> None:
        """Block until no thread has its instant behind it and none is running on from a wait."""
        deadline = time.monotonic() + REAL_TIMEOUT
        with self._cond:
            while True:
                self._running = {key: thread for key, thread in self._running.items() if thread.is_alive()}
                now = self.clock.now
                if not self._running and all(until > now for until in self._waiting.values()):
                    return
                if time.monotonic() > deadline:
                    raise AssertionError("a thread waiting in simulated time did not settle")
                self._cond.wait(0.002)

    def advance(self, seconds: float) -> None:
        """Move time on by ``seconds``, a second (at most) at a time, settling after each step."""
        left = timedelta(seconds=seconds)
        self.settle()
        while left > timedelta(0):
            step = min(left, timedelta(seconds=1))
            self.clock.advance(step)
            left -= step
            with self._cond:
                self._cond.notify_all()  # the waiters look at the clock again at once
            self.settle()

    def set(self, instant: datetime) -> None:
        """Move time on to ``instant`` (as :meth:`advance`)."""
        self.advance((instant - self.clock.now).total_seconds())


def executor(
    deployment: Deployment,
    runner: ActionRunner,
    worker: str,
    waits: SimulatedWaits | None = None,
) -> Executor:
    """A worker over the deployment's stores and attempts (its queue) with its own runner; its waits (the pause
    before a takeover, the lease keeper's) pass in simulated time (``waits``; else the clock jumps)."""
    mine = deployment.executor
    if waits is None:
        return Executor(mine.stores, mine.claims, runner, mine.attempts, mine.clock, worker, deployment.clock.advance)
    return Executor(mine.stores, mine.claims, runner, mine.attempts, mine.clock, worker, waits.advance, wait=waits.wait)
