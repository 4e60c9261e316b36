"""A region's role: active (it dispatches and accepts writes) while it holds the witness's lease, standby
otherwise (docs/regions.md, "Takeover").

The rule it protects: **two regions are never active at the same instant** while both reach the witness.
A region acts as active only within :data:`FENCE` (40 s) of sending its last renewal that landed, by its own
monotonic clock; the witness ends the holding :data:`~scheduler_core.regions.witness.LEASE` (60 s) after that
renewal reached it, which is later still. So a region cut off from the witness stops acting as active 20 s
before another region can take the lease, whatever the two regions' wall clocks say.

:meth:`RegionRole.beat` runs every :data:`BEAT` (15 s): the holder renews, a standby tries to acquire. Every
instance of a region keeps its own role: the timer that beats runs on one instance, and another instance's
:meth:`RegionRole.check` beats itself when its own confirmation is older than a beat (the holding is the region's,
so any instance renews it, and its own renewal that landed is what lets it act). An operator's
:meth:`RegionRole.demote` keeps the region standby until :meth:`RegionRole.promote`, in every instance (the witness
keeps the demotion): its holding is no longer renewed, so another region takes the lease once it has run out, never
while an instance of the demoted region may still act. ``promote`` takes the lease at once when it is free.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from scheduler_core.regions.witness import Witness, WitnessUnreachable

__all__ = ["BEAT", "FENCE", "RegionRole", "RoleState"]

log = logging.getLogger("scheduler_core.regions")

#: How often a region renews its holding, or tries to acquire the lease (seconds).
BEAT = 15.0
#: How long after sending its last renewal that landed a region still acts as active (seconds): less than the
#: witness's lease (60 s) by 20 s of margin.
FENCE = 40.0


@dataclass(frozen=True)
class RoleState:
    """What a region knows of its role: active or not, the epoch it holds (None: none), whether an operator
    demoted it, when its holding was last confirmed (monotonic seconds; None: never), and whether another region
    held the lease when this one last read the witness."""

    region: str
    active: bool
    epoch: int | None
    demoted: bool
    confirmed_at: float | None
    other_holds: bool = False


class RegionRole:
    """One region's role, kept by :meth:`beat` against ``witness`` (``monotonic``: seconds, a seam for tests)."""

    def __init__(self, region: str, witness: Witness, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.region = region
        self.witness = witness
        self.monotonic = monotonic
        self._epoch: int | None = None
        self._confirmed_at: float | None = None  # when the last renewal (or the acquisition) that landed was sent
        self._demoted = False
        self._other_holds = False  # another region held the lease at the last read of the witness
        self._beaten_at: float | None = None  # when this instance last beat
        self._lock = threading.Lock()

    def active(self) -> bool:
        """Whether this region acts as active now (it holds the lease, confirmed within :data:`FENCE`)."""
        with self._lock:
            return self._active(self.monotonic())

    def _active(self, now: float) -> bool:
        return self._epoch is not None and self._confirmed_at is not None and now - self._confirmed_at < FENCE

    def state(self) -> RoleState:
        with self._lock:
            now = self.monotonic()
            return RoleState(
                self.region, self._active(now), self._epoch, self._demoted, self._confirmed_at, self._other_holds
            )

    def check(self) -> bool:
        """Whether this region acts as active, beating first when this instance has not beaten for a beat."""
        with self._lock:
            now = self.monotonic()
            due = self._beaten_at is None or now - self._beaten_at >= BEAT
            if due:
                self._beaten_at = now  # one thread beats; the others use what it found before
        return self.beat() if due else self.active()

    def beat(self) -> bool:
        """Read the witness, then: a demoted region, or one handing its holding back, gives it up (it stops renewing:
        its instances stop acting by the fence, and the lease runs out before another region can take it); else renew
        the holding (this instance's, or the region's that another instance acquired), or try to acquire the lease.
        Whether this region is active after. A witness out of reach changes nothing: the fence ends the holding in
        time."""
        with self._lock:
            epoch = self._epoch
            self._beaten_at = self.monotonic()
        sent = self.monotonic()
        try:
            state = self.witness.read()
            demoted = self.region in state.demoted
            with self._lock:
                self._demoted = demoted
                self._other_holds = state.leased and state.holder not in (None, self.region)
            if state.handing_back == self.region:  # no instance renews or adopts it, none acquires meanwhile
                if epoch is not None:
                    self._lose(epoch, "handed back: the lease runs out without renewals")
                return self.active()
            if state.held_by(self.region):
                epoch = state.epoch  # another instance of this region may hold it: renewing it is this one's too
            if demoted:
                if epoch is not None:
                    self._lose(epoch, "demoted: the lease runs out without renewals")
            elif epoch is not None:
                if self.witness.renew(self.region, epoch):
                    self._confirm(epoch, sent)
                else:
                    self._lose(epoch, "the witness gave the lease to another region")
            else:
                acquired = self.witness.acquire(self.region)
                if acquired is not None:
                    self._confirm(acquired, sent)
                    log.warning("region %s: active from epoch %d", self.region, acquired)
        except WitnessUnreachable as error:
            log.warning("region %s: the witness is out of reach (%s)", self.region, error)
        return self.active()

    def demote(self) -> None:
        """Keep this region standby until :meth:`promote`, in every instance of it (the witness keeps the
        demotion). This instance stops acting now; the others at their next beat, and the lease is not renewed, so
        another region takes it only once it has run out (never two regions active at once). Raises
        :class:`WitnessUnreachable` when the witness could not be told (nothing changed then)."""
        self.witness.set_demoted(self.region, True)
        with self._lock:
            epoch, self._epoch, self._confirmed_at, self._demoted = self._epoch, None, None, True
        log.warning("region %s: demoted (standby until promoted; epoch %s not renewed)", self.region, epoch)

    def hand_back(self) -> bool:
        """Hand this region's holding back (to whichever region acquires next; docs/regions.md, "Hand-back"): the
        witness keeps it, so no instance renews it, and the region does not take the lease again until another
        region has, or the witness's hold is over. This instance stops acting now. Whether this region held it."""
        with self._lock:
            epoch = self._epoch
        if epoch is None or not self.witness.hand_back(self.region, epoch):
            return False
        self._lose(epoch, "handed back: the lease runs out without renewals")
        return True

    def promote(self) -> bool:
        """Let this region be active again (in every instance), and try to acquire the lease now; whether it is
        active. Raises :class:`WitnessUnreachable` when the witness could not be told."""
        self.witness.set_demoted(self.region, False)
        with self._lock:
            self._demoted = False
        return self.beat()

    def _confirm(self, epoch: int, sent: float) -> None:
        with self._lock:
            self._epoch, self._confirmed_at = epoch, sent

    def _lose(self, epoch: int, why: str) -> None:
        with self._lock:
            if self._epoch == epoch:
                self._epoch, self._confirmed_at = None, None
        log.warning("region %s: standby, epoch %d is over (%s)", self.region, epoch, why)
