"""Lease keeping: the holder of a claim renews its lease for as long as it holds the claim.

An attempt's claim protects it for :data:`~scheduler_core.model.claim.CLAIM_LEASE` (15 s) since its holder
last renewed it. While the executor holds a claim (from the claim to the write that completes it: the call,
then the follow-up messages and the counters), a :class:`LeaseKeeper` renews it every
:func:`~scheduler_core.model.claim.heartbeat_every` (5 s), from a thread of its own. So a call of any length
(up to ``SCHEDULER_HTTP_TIMEOUT_SECONDS``) is never taken over while its worker lives, and a worker that dies
is taken for dead a lease after its last renewal, not after a fixed 2 minutes.

A renewal that fails (storage unreachable, a timeout) is tried again every
:data:`~scheduler_core.model.claim.RENEW_RETRY` (1 s) until one lands; each try is bounded (the Azure adapter's
``RENEW_TIMEOUTS``). Renewals may fail for 10 s (from the heartbeat after the last one that landed to the
lease's end) with the lease still live; a longer outage lets it run out in storage, but no other worker can
take the claim over while storage is unreachable, and once it answers again this holder renews within a
second or two, while a worker that finds the lease over waits
:func:`~scheduler_core.model.claim.takeover_pause` (10 s) before it looks again and takes it over
(:mod:`scheduler_core.model.claim`). A renewal that finds the claim another holder's (this holder was cut off
from storage alone for longer than that) stops: the call may then be made twice, and both are recorded.

Cost: one storage write (a merge of the claim's row) per 5 s that an attempt holds its claim beyond its
first 5 s; an attempt that ends within 5 s (nearly all of them) renews nothing and starts no thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from scheduler_core.alarms import ALARMS
from scheduler_core.model.claim import RENEW_RETRY, Claim, heartbeat_every
from scheduler_core.ports import Claims

log = logging.getLogger("scheduler_core.execute")

#: Waits up to the given seconds for the event; returns whether it was set (the keeper's wait: real time by
#: default, simulated time in tests).
Wait = Callable[[threading.Event, float], bool]


def wait_on_event(stop: threading.Event, seconds: float) -> bool:
    """Wait up to ``seconds`` (real time) for ``stop``; whether it was set."""
    return stop.wait(seconds)


class LeaseKeeper:
    """Renews one claim's lease (``now + lease``, every ``every``: default :func:`heartbeat_every`) from
    :meth:`start` until :meth:`stop`, which returns the claim's latest version (the one to complete it with).
    A renewal that fails is tried again every ``retry``; one that finds the claim no longer this holder's
    ends the keeping (:attr:`lost`). ``renewed`` is called with the time of each renewal that landed (the
    attempt's flow control slot is kept with its claim; its failure is logged, never ends the keeping).
    ``wait`` is a seam for simulated time."""

    def __init__(
        self,
        claims: Claims,
        claim: Claim,
        lease: timedelta,
        clock: Callable[[], datetime],
        *,
        every: timedelta | None = None,
        retry: timedelta = RENEW_RETRY,
        wait: Wait = wait_on_event,
        name: str = "",
        renewed: Callable[[datetime], None] | None = None,
    ) -> None:
        self.claims = claims
        self.lease = lease
        self.clock = clock
        self.every = every if every is not None else heartbeat_every(lease)
        self.retry = min(retry, self.every)
        self.wait = wait
        self.name = name or claim.row
        self.renewed = renewed
        self.renewals = 0  # renewals that landed
        self.failures = 0  # tries that failed
        self.lost = False  # a renewal found the claim another holder's (or done, or gone)
        self._claim = claim
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def claim(self) -> Claim:
        """The claim as last written by this holder."""
        with self._lock:
            return self._claim

    def start(self) -> LeaseKeeper:
        """Start renewing, from a daemon thread of its own (a worker that dies takes it along, and its lease
        runs out). In real time (the default ``wait``) the thread is started only when the first renewal
        comes due, by the process's alarms (:mod:`scheduler_core.alarms`): an attempt that ends within
        ``every`` (nearly all of them) starts none. With another ``wait`` (simulated time) it starts now."""
        if self.wait is wait_on_event:
            ALARMS.add(time.monotonic() + self.every.total_seconds(), self._begin)
        else:
            self._begin(first=self.every)
        return self

    def stop(self) -> Claim:
        """Stop renewing (after a renewal in flight has ended); the claim's latest version. Idempotent."""
        self._stop.set()
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        return self.claim

    def _begin(self, first: timedelta = timedelta(0)) -> None:
        """Start the renewing thread, its first renewal ``first`` from now (none once stopped)."""
        with self._lock:  # stop() reads the thread under the lock after it sets the event
            if self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._keep, args=(first,), name=f"lease {self.name}", daemon=True)
            self._thread.start()

    def _keep(self, first: timedelta) -> None:
        delay = first
        failing = 0  # tries failed in a row
        while not self.wait(self._stop, delay.total_seconds()):
            try:
                renewed = self.claims.renew(self.claim, self.clock(), self.lease)
            except Exception as error:  # storage unreachable: try again soon, the lease may still be saved
                self.failures += 1
                if not failing:
                    log.warning(
                        "claim %s: lease not renewed (%s: %s); trying again", self.name, type(error).__name__, error
                    )
                failing, delay = failing + 1, self.retry
                continue
            if renewed is None:
                self.lost = True
                log.warning("claim %s: no longer this worker's (taken over while it could not renew)", self.name)
                return
            with self._lock:
                self._claim = renewed
            self.renewals += 1
            if self.renewed is not None:
                try:
                    self.renewed(self.clock())
                except Exception as error:  # the slot runs out a lease later at worst; the call goes on
                    log.warning(
                        "claim %s: flow control slot not renewed (%s: %s)", self.name, type(error).__name__, error
                    )
            if failing:
                log.info("claim %s: lease renewed again after %d failed tries", self.name, failing)
            failing, delay = 0, self.every
