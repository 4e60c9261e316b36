"""Regions: which of two deployments dispatches (docs/regions.md). Built so far: the witness's lease and a
region's role; replication, the takeover's due-index rebuild and the hand-back are not built yet."""

from scheduler_core.regions.role import BEAT, FENCE, RegionRole, RoleState
from scheduler_core.regions.witness import LEASE, Witness, WitnessState, WitnessUnreachable

__all__ = ["BEAT", "FENCE", "LEASE", "RegionRole", "RoleState", "Witness", "WitnessState", "WitnessUnreachable"]
