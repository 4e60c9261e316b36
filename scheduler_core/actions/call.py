"""One outbound HTTP call: its deadline, what it is doing now, and the host its credentials are bound to.

**The deadline bounds the whole call**: connecting (TCP and TLS), sending, the answer's head, the part of its
body the history keeps, on every redirect hop. A socket timeout bounds each read, not the call, so a target
that sends its answer one byte a second would hold a worker for as long as it likes; instead every socket
the call opens is registered here (a duplicate of its descriptor, taken before TLS wraps it, so the
duplicate is the call's own and is never a descriptor reused by another call), and when the deadline passes
the process's alarms thread (:mod:`scheduler_core.alarms`) shuts each of them down: whatever read or write
the call is blocked in returns at once.
:attr:`OutboundCall.phase` says what the call was doing then, for the history.

**Credentials are bound to the host they were made for** (:attr:`OutboundCall.credentials_host`): the
guarded adapter (``outbound.py``) refuses to send a request carrying ``Authorization`` to any other host,
judged by the host the connection is made to, on every hop.

The call in progress is a context variable (:func:`current`), set by :meth:`OutboundCall.running` around the
send: the guarded connections and adapter of that thread read it."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TypeVar

from scheduler_core.alarms import ALARMS

__all__ = ["OutboundCall", "current"]

T = TypeVar("T")

_CURRENT: ContextVar[OutboundCall | None] = ContextVar("scheduler_outbound_call", default=None)


def current() -> OutboundCall | None:
    """The call this thread is making, if any."""
    return _CURRENT.get()


class OutboundCall:
    """One call with a deadline ``seconds`` from now (``time.monotonic``)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        #: What the call is doing, in words that follow "while" ("waiting for the answer's head from 'x'").
        self.phase = "starting the call"
        #: Whether the deadline passed before the call ended (its sockets were shut down).
        self.expired = False
        #: :attr:`phase` when the deadline passed (None: it has not).
        self.ran_out_while: str | None = None
        #: The host (as the connection names it, lower case) an ``Authorization`` header may go to; None: any.
        self.credentials_host: str | None = None
        #: Hosts connected to so far, in order (one per redirect hop).
        self.hops: list[str] = []
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._ended = False

    def remaining(self) -> float:
        """Seconds until the deadline (not below 0)."""
        return max(0.0, self.at - time.monotonic())

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` down when the deadline passes (at once if it has)."""
        own = sock.dup()
        with self._lock:
            if not self.expired and not self._ended:
                self._sockets.append(own)
                return
        with contextlib.suppress(OSError):
            own.shutdown(socket.SHUT_RDWR)
        own.close()

    def expire(self) -> None:
        """The deadline passed: shut every socket of the call down (the alarms thread calls this)."""
        with self._lock:
            if self._ended:
                return
            self.expired = True
            self.ran_out_while = self.phase
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def end(self) -> None:
        """The call is over: nothing more is shut down, and the duplicates are closed."""
        with self._lock:
            self._ended = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            sock.close()

    def expired_now(self) -> bool:
        """Whether the deadline has passed (whether or not the alarms thread has acted yet)."""
        return self.expired or time.monotonic() >= self.at

    def within(self, work: Callable[[], T], phase: str) -> T:
        """``work()``, given at most the time left (a name lookup, which no socket of the call can cut
        short): run in a thread of its own, abandoned at the deadline (raises :class:`TimeoutError`; the
        thread ends when the lookup does, and its answer is dropped)."""
        self.phase = phase
        outcome: list[T] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                outcome.append(work())
            except BaseException as exc:  # handed to the caller
                failure.append(exc)

        worker = threading.Thread(target=run, name="scheduler-call-lookup", daemon=True)
        worker.start()
        worker.join(self.remaining())
        if worker.is_alive():
            with self._lock:
                self.expired = True
                self.ran_out_while = self.ran_out_while or phase
            raise TimeoutError(f"the call's deadline ran out while {phase}")
        if failure:
            raise failure[0]
        return outcome[0]

    @contextlib.contextmanager
    def running(self) -> Iterator[OutboundCall]:
        """Make this the thread's current call, with its deadline set as an alarm, until the block ends."""
        token = _CURRENT.set(self)
        ALARMS.add(self.at, self.expire)
        try:
            yield self
        finally:
            self.end()
            _CURRENT.reset(token)
