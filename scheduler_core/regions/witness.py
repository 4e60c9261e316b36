"""The witness: one lease, kept by a storage service outside both regions, whose holder is the active region
(docs/regions.md, "The two regions and the witness").

Contract of a :class:`Witness` (every implementation passes ``tests/contract/test_witness.py``):

- The lease lasts :attr:`Witness.lease` from its acquisition or last renewal, timed by the witness, never by a
  region's clock. Once it has run out, any region may acquire it.
- Each acquisition starts an **epoch**, one more than the last one the witness recorded, and records the holder
  (a region's name) with it. :meth:`Witness.read` says who holds it, in which epoch, and whether the lease runs.
- A holding is a (region, epoch) pair: every instance of a region renews or releases it by those two alone, and
  instances of one region that acquire at the same moment may all be answered with the same holding.
  :meth:`Witness.renew` of a holding whose lease ran out succeeds while no other region has acquired it since;
  it fails (False) once another has, or for an epoch that is not the witness's.
- An operator's demotion of a region is kept by the witness (:meth:`Witness.set_demoted`): a demoted region never
  acquires the lease, whichever of its instances asks, until it is promoted again.
- A region's hand-back of its holding is kept by the witness too (:meth:`Witness.hand_back`): the region renews it no
  more and does not acquire the lease again until another region has acquired it, or :data:`HANDBACK_HOLD` has
  passed (the region it was handed to did not take it: the region may take it back).
- A witness that cannot be reached raises :class:`WitnessUnreachable`; nothing else escapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

__all__ = ["HANDBACK_HOLD", "LEASE", "Witness", "WitnessState", "WitnessUnreachable"]

#: The lease of a blob's longest finite lease: the witness ends a lost region's holding at most this long
#: after its last renewal.
LEASE = timedelta(seconds=60)
#: How long a hand-back keeps its region from acquiring the lease again: the lease running out, and two beats of the
#: region it is handed to.
HANDBACK_HOLD = timedelta(seconds=120)


class WitnessUnreachable(Exception):
    """The witness did not answer (or answered with a server error): nothing is known."""


@dataclass(frozen=True)
class WitnessState:
    """What the witness says: the region that last acquired the lease (None: none ever did), its epoch (0: none),
    whether its lease runs now, the regions an operator demoted, and the region handing its holding back (None:
    none, or its hand-back is over)."""

    holder: str | None
    epoch: int
    leased: bool
    demoted: frozenset[str] = frozenset()
    handing_back: str | None = None

    def held_by(self, region: str) -> bool:
        """Whether ``region`` holds the lease now."""
        return self.leased and self.holder == region


class Witness(Protocol):
    """The lease that names the active region (see the module for the contract)."""

    lease: timedelta

    def read(self) -> WitnessState:
        """Who holds the lease, in which epoch, and whether it runs."""
        ...

    def acquire(self, region: str) -> int | None:
        """Take the lease for ``region`` when it does not run and ``region`` is not demoted: the new epoch; None
        otherwise (or when another region took it first)."""
        ...

    def set_demoted(self, region: str, demoted: bool) -> None:
        """Keep ``region`` from acquiring the lease (``demoted``), or let it again. Its running holding, if any,
        is not ended here (:meth:`release` does that)."""
        ...

    def renew(self, region: str, epoch: int) -> bool:
        """Renew ``region``'s holding of ``epoch``: whether it is still that region's."""
        ...

    def hand_back(self, region: str, epoch: int) -> bool:
        """Record that ``region`` hands its holding of ``epoch`` back (it lets the lease run out and stays out of
        it for a while, see the module): whether the holding was still that region's."""
        ...

    def release(self, region: str, epoch: int) -> None:
        """End ``region``'s holding of ``epoch`` now (nothing when it is not that region's any more)."""
        ...
