"""The domain model: frozen, typed values with no I/O and no Azure imports.

Every layer speaks these: the service and the pipeline decide over them, the ports (``scheduler_core.ports``)
store and fetch them, ``scheduler_core.definitions`` converts them to and from the ARM JSON of the wire.
"""

from scheduler_core.model.claim import (
    CLAIM_LEASE,
    Claim,
    ClaimOutcome,
    ClaimResult,
    ClaimState,
    LostAttempt,
    claim_key,
)
from scheduler_core.model.collection import JobCollection, MaxRecurrence, Quota, Sku
from scheduler_core.model.due import (
    WATCH,
    DueEntry,
    HeartbeatEntry,
    OccurrenceEntry,
    ParkedEntry,
    ShardsEntry,
    TypedEntry,
    WatchEntry,
    typed,
)
from scheduler_core.model.history import HistoryEntry
from scheduler_core.model.job import DueSlot, Job, JobDefinition
from scheduler_core.model.states import ActionName, CollectionState, HistoryStatus, JobState

__all__ = [
    "CLAIM_LEASE",
    "WATCH",
    "ActionName",
    "Claim",
    "ClaimOutcome",
    "ClaimResult",
    "ClaimState",
    "CollectionState",
    "DueEntry",
    "DueSlot",
    "HeartbeatEntry",
    "HistoryEntry",
    "HistoryStatus",
    "Job",
    "JobCollection",
    "JobDefinition",
    "JobState",
    "LostAttempt",
    "MaxRecurrence",
    "OccurrenceEntry",
    "ParkedEntry",
    "Quota",
    "ShardsEntry",
    "Sku",
    "TypedEntry",
    "WatchEntry",
    "claim_key",
    "typed",
]
