"""The in-memory adapter of every port (:mod:`scheduler_core.ports`): whole deployments in one process, in
simulated time, for decision tests and simulations. The contract suite (``tests/contract``) holds it to
the same rules as the Azure adapter; it imports nothing from ``azure``.

Build one with :func:`memory_storage`::

    clock = SimulatedClock(datetime(2030, 1, 1, tzinfo=UTC))
    storage = memory_storage(clock)
    storage.stores                            # the deployment's ports.Stores
    storage.claims                            # its Claims
    storage.executions, storage.scans         # MemoryQueue: the ExecutionQueue (call it, or .send)
    storage.executions.receive()              # take the messages visible as of the clock
    clock.advance(60)                         # time moves only when told
    storage.jobs.fail_next("save", StorageError("down"))   # test seam: the next save fails

Each store holds copies (a caller mutating a dict it passed in or got back changes nothing stored), is
thread-safe (one lock per store) and has the fault seam :meth:`FaultSeam.fail_next`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler_core.adapters.memory.catalog import MemoryCollections, MemoryJobs
from scheduler_core.adapters.memory.claims import MemoryClaims
from scheduler_core.adapters.memory.clock import SimulatedClock
from scheduler_core.adapters.memory.due import MemoryDueIndex
from scheduler_core.adapters.memory.flow import MemoryFlowLimits
from scheduler_core.adapters.memory.history import MemoryHistory
from scheduler_core.adapters.memory.queues import MemoryQueue, QueuedMessage
from scheduler_core.adapters.memory.seam import FaultSeam
from scheduler_core.ports import Clock, Stores

__all__ = [
    "FaultSeam",
    "MemoryClaims",
    "MemoryCollections",
    "MemoryDueIndex",
    "MemoryFlowLimits",
    "MemoryHistory",
    "MemoryJobs",
    "MemoryQueue",
    "MemoryStorage",
    "QueuedMessage",
    "SimulatedClock",
    "memory_storage",
]


@dataclass(frozen=True)
class MemoryStorage:
    """Every in-memory adapter of one deployment (the counterpart of ``adapters.azure.AzureStorage``),
    with the concrete stores so that a test can reach their fault seams and inspect them."""

    clock: Clock
    collections: MemoryCollections
    jobs: MemoryJobs
    due: MemoryDueIndex
    history: MemoryHistory
    claims: MemoryClaims
    scans: MemoryQueue
    executions: MemoryQueue
    flow: MemoryFlowLimits = field(default_factory=MemoryFlowLimits)
    stores: Stores = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stores", Stores(self.collections, self.jobs, self.due, self.history))

    def clear_faults(self) -> None:
        """Forget every fault set on any store or queue and not yet raised."""
        seams = (self.collections, self.jobs, self.due, self.history, self.claims, self.scans, self.executions)
        for seam in (*seams, self.flow):
            seam.clear_faults()


def memory_storage(clock: Clock | None = None) -> MemoryStorage:
    """A fresh, empty in-memory deployment on ``clock`` (default: a :class:`SimulatedClock` at its default
    start, 2030-01-01T00:00:00Z). ``written_at`` of due entries, ``modified_at`` of collections and the
    visibility of queued messages are read from it."""
    clock = clock or SimulatedClock()
    history = MemoryHistory()
    return MemoryStorage(
        clock=clock,
        collections=MemoryCollections(clock),
        jobs=MemoryJobs(),
        due=MemoryDueIndex(clock),
        history=history,
        claims=MemoryClaims(history),
        scans=MemoryQueue(clock),
        executions=MemoryQueue(clock),
    )
