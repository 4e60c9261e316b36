"""The automatic hand-back (``scheduler_core/regions/handback.py``), on a memory witness and simulated time: the
region active in the primary's place hands the lease back once the primary's copy has been current for the whole
wait, the primary then takes it, and the two regions are never active at once; a break in the primary's copy starts
the wait again; no hand-back by the primary, by a standby, or with hand-back left to an operator."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core.adapters.memory import SimulatedClock
from scheduler_core.adapters.memory.witness import MemoryWitness
from scheduler_core.regions import BEAT, HANDBACK_HOLD, LEASE, HandBack, RegionRole, ReplicationState

START = datetime(2030, 1, 1, tzinfo=UTC)
WAIT = timedelta(minutes=10)


class Regions:
    """Regions ``a`` (the primary) and ``b`` over one memory witness; ``b`` active after an outage of ``a``, and
    ``a``'s record of its copy as ``b`` reads it (``copy``)."""

    def __init__(self, after: timedelta | None = WAIT, primary: str = "a") -> None:
        self.clock = SimulatedClock(START)
        self.seconds = 0.0  # the regions' monotonic clock, moved with the simulated one
        self.witness = MemoryWitness(self.clock)
        self.a = RegionRole("a", self.witness, lambda: self.seconds)
        self.b = RegionRole("b", self.witness, lambda: self.seconds)
        assert self.b.beat()
        self.copy = ReplicationState()
        self.handback = HandBack(self.b, primary, after, lambda: self.copy, self.clock)

    def sweep(self) -> None:
        """``a``'s copy finished a sweep now."""
        self.copy = ReplicationState(swept_at=self.clock(), sweeps=self.copy.sweeps + 1)

    def step(self, seconds: float) -> None:
        """Let ``seconds`` pass, one second at a time: both regions beat every :data:`BEAT`, ``b``'s copy timer
        checks the hand-back every 10 s; never both active."""
        for _ in range(int(seconds)):
            self.clock.advance(1)
            self.seconds += 1
            if self.seconds % BEAT == 0:
                self.a.beat()
                self.b.beat()
            if self.seconds % 10 == 0:
                self.handback.check()
            assert not (self.a.active() and self.b.active()), self.seconds


def test_the_active_region_hands_back_once_the_primarys_copy_has_been_current_for_the_wait() -> None:
    regions = Regions()
    for _ in range(int(WAIT.total_seconds() // 10) - 1):
        regions.sweep()
        regions.step(10)
    assert regions.b.active()  # not yet: the copy has not been current for the whole wait
    for _ in range(2):
        regions.sweep()
        regions.step(10)
    assert not regions.b.active() and regions.witness.read().handing_back == "b"
    regions.step(LEASE.total_seconds() + BEAT)  # b's lease runs out; a takes it at its next beat
    assert regions.a.active() and not regions.b.active()
    assert regions.witness.read().holder == "a" and regions.witness.read().epoch == 2
    regions.step(HANDBACK_HOLD.total_seconds() * 2)
    assert regions.a.active() and not regions.b.active()  # once: the primary keeps it


def test_a_break_in_the_primarys_copy_starts_the_wait_again() -> None:
    regions = Regions()
    for _ in range(int(WAIT.total_seconds() // 10) - 3):
        regions.sweep()
        regions.step(10)
    regions.step(40)  # no sweep for 40 s: its copy is not current
    for _ in range(int(WAIT.total_seconds() // 10) - 3):
        regions.sweep()
        regions.step(10)
    assert regions.b.active() and regions.witness.read().handing_back is None


def test_a_primary_that_does_not_take_the_lease_gets_it_handed_back_and_the_region_takes_it_again() -> None:
    regions = Regions(after=timedelta(seconds=30))
    regions.a = RegionRole("a", regions.witness.seen_from("a"), lambda: regions.seconds)
    regions.witness.cut.add("a")  # the primary's copy is current, but it cannot reach the witness
    for _ in range(5):
        regions.sweep()
        regions.step(10)
    assert not regions.b.active()
    regions.step(HANDBACK_HOLD.total_seconds() + BEAT)
    assert regions.b.active() and regions.witness.read().epoch == 2  # b took it back after the hold


@pytest.mark.parametrize(("after", "primary"), [(None, "a"), (WAIT, "b"), (WAIT, "")])
def test_no_hand_back_when_left_to_an_operator_or_by_the_primary_itself(after: timedelta | None, primary: str) -> None:
    regions = Regions(after=after, primary=primary)
    for _ in range(int(WAIT.total_seconds() // 10) + 6):
        regions.sweep()
        regions.step(10)
    assert regions.b.active() and regions.witness.read().handing_back is None
