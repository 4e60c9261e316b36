"""Which region is active (:mod:`scheduler_core.regions.role`), in simulated time over the memory witness: two
regions beat every 15 s (at different seconds), and every simulated second the rule is checked that both are
never active at once; a region cut off from the witness stops acting as active before the other can take over,
and the other takes over within the lease and a beat."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from scheduler_core.adapters.memory import SimulatedClock
from scheduler_core.adapters.memory.witness import MemoryWitness
from scheduler_core.regions import BEAT, FENCE, LEASE, RegionRole

START = datetime(2030, 1, 1, tzinfo=UTC)


@dataclass
class Regions:
    """Regions A and B over one witness; :meth:`run` moves time on a second at a time."""

    clock: SimulatedClock = field(default_factory=lambda: SimulatedClock(START))
    witness: MemoryWitness = field(init=False)
    a: RegionRole = field(init=False)
    b: RegionRole = field(init=False)
    both_active: list[float] = field(default_factory=list)  # seconds at which both were active (never, by rule)
    timeline: list[tuple[float, bool, bool]] = field(default_factory=list)  # (second, A active, B active)

    def __post_init__(self) -> None:
        self.witness = MemoryWitness(self.clock)
        monotonic = self.seconds
        self.a = RegionRole("A", self.witness.seen_from("A"), monotonic)
        self.b = RegionRole("B", self.witness.seen_from("B"), monotonic)

    def seconds(self) -> float:
        return (self.clock() - START).total_seconds()

    def run(self, seconds: int) -> None:
        """``seconds`` seconds: A beats at each multiple of 15 s, B 7 s after; the rule is checked each second."""
        for _ in range(seconds):
            now = self.seconds()
            if now % BEAT == 0:
                self.a.beat()
            if now % BEAT == 7:
                self.b.beat()
            a, b = self.a.active(), self.b.active()
            self.timeline.append((now, a, b))
            if a and b:
                self.both_active.append(now)
            self.clock.advance(timedelta(seconds=1))

    def first(self, region: str, active: bool, after: float) -> float:
        """The first second after ``after`` at which ``region`` was (or was not) active."""
        index = 1 if region == "A" else 2
        return next(t for t, *roles in self.timeline if t > after and (roles[index - 1] is active))


def test_the_first_region_to_beat_is_active_and_the_other_stays_standby() -> None:
    regions = Regions()
    regions.run(300)
    assert regions.a.active() and not regions.b.active()
    assert regions.a.state().epoch == 1 and regions.b.state().epoch is None
    assert regions.both_active == []


def test_a_region_cut_off_from_the_witness_stops_before_the_other_takes_over_and_the_other_does_within_75_s() -> None:
    regions = Regions()
    regions.run(60)
    last_renewal = 45.0  # A renewed at 0, 15, 30, 45; cut off just after
    regions.witness.cut.add("A")
    regions.run(180)

    assert regions.both_active == []
    stopped = regions.first("A", False, last_renewal)
    took_over = regions.first("B", True, last_renewal)
    assert stopped == last_renewal + FENCE  # by its own clock, 40 s after its last renewal that landed
    assert last_renewal + LEASE.total_seconds() <= took_over <= last_renewal + LEASE.total_seconds() + BEAT
    assert regions.b.state().epoch == 2
    assert took_over - stopped <= LEASE.total_seconds() - FENCE + BEAT  # neither dispatches for at most 35 s

    regions.witness.cut.discard("A")  # A reaches the witness again: its renewal fails, it stays standby
    regions.run(60)
    assert not regions.a.active() and regions.a.state().epoch is None and regions.b.active()
    assert regions.both_active == []


def test_a_holder_that_reaches_the_witness_again_before_anyone_took_over_keeps_its_epoch() -> None:
    regions = Regions()
    regions.run(46)  # A renewed at 45
    regions.witness.cut.update({"A", "B"})  # no one reaches the witness: no one can take over
    regions.run(100)
    assert not regions.a.active() and not regions.b.active()  # both cut off: no region dispatches
    regions.witness.cut.clear()
    regions.run(30)
    assert regions.a.active() and regions.a.state().epoch == 1  # its renewal of the lapsed lease landed
    assert regions.both_active == []


def test_a_demoted_region_stays_standby_until_promoted_and_the_other_takes_over_once_the_lease_ran_out() -> None:
    regions = Regions()
    regions.run(20)  # A renewed at 15
    regions.a.demote()
    assert not regions.a.active() and regions.witness.read().demoted == frozenset({"A"})
    regions.run(100)
    took_over = regions.first("B", True, 20)
    assert 15 + LEASE.total_seconds() <= took_over <= 15 + LEASE.total_seconds() + BEAT  # not before the lease ran out
    assert regions.b.active() and regions.b.state().epoch == 2
    assert not regions.a.active() and regions.a.state().demoted  # it does not take the lease back

    assert not regions.a.promote()  # B holds it: A waits as standby
    regions.b.demote()
    regions.run(100)
    assert regions.a.active() and regions.a.state().epoch == 3
    assert regions.both_active == []


def test_another_instance_of_the_active_region_acts_on_its_own_renewal_and_stops_with_the_region() -> None:
    regions = Regions()
    second = RegionRole("A", regions.witness.seen_from("A"), regions.seconds)  # A's other instance: no timer
    overlaps: list[float] = []
    for _ in range(4):  # four minutes; A cut off from the witness after the first
        for _ in range(60):
            if regions.seconds() % 5 == 0:
                second.check()  # as its scans do: it beats when its own confirmation is a beat old
            regions.run(1)
            if second.active() and regions.b.active():
                overlaps.append(regions.seconds())
        if regions.seconds() == 60:
            assert second.active() and second.state().epoch == 1  # the holding A's timer acquired
            regions.witness.cut.add("A")
    assert overlaps == [] and regions.both_active == []
    assert not second.active() and regions.b.active() and regions.b.state().epoch == 2


def test_a_demotion_holds_for_every_instance_of_the_region_until_one_promotes_it() -> None:
    regions = Regions()
    other = RegionRole("A", regions.witness.seen_from("A"), regions.seconds)  # A's instance without the timer
    regions.run(20)
    assert other.check() and other.state().epoch == 1  # it adopted A's holding (and renewed it at 20)
    other.demote()  # as an operator's command would, from any instance: A's timer instance stops at its next beat
    overlaps: list[float] = []
    for _ in range(150):
        regions.run(1)
        if regions.b.active() and (regions.a.active() or other.active()):
            overlaps.append(regions.seconds())
    assert overlaps == [] and regions.both_active == []
    assert not regions.a.active() and not other.check() and regions.b.active()
    regions.b.demote()
    regions.run(100)
    assert not regions.a.active() and not regions.b.active()  # both demoted: no region dispatches
    assert regions.a.promote() and regions.a.state().epoch == 3
