"""Regions: which of two deployments dispatches, the standby's copy of the active one's catalog, and the due
index of a region that takes over (docs/regions.md)."""

from scheduler_core.regions.handback import HandBack
from scheduler_core.regions.replication import Bookmarks, ReplicationState, Replicator, SweepReport
from scheduler_core.regions.role import BEAT, FENCE, RegionRole, RoleState
from scheduler_core.regions.takeover import Takeover
from scheduler_core.regions.witness import HANDBACK_HOLD, LEASE, Witness, WitnessState, WitnessUnreachable

__all__ = [
    "BEAT",
    "FENCE",
    "HANDBACK_HOLD",
    "LEASE",
    "Bookmarks",
    "HandBack",
    "RegionRole",
    "ReplicationState",
    "Replicator",
    "RoleState",
    "SweepReport",
    "Takeover",
    "Witness",
    "WitnessState",
    "WitnessUnreachable",
]
