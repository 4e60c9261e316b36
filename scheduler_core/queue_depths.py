"""Queue depths: how many messages wait in the execution queues and their poison queues (``/health`` and
the dispatch tick's gauges). The values are plain; the probes that read them are made by the adapters
(:mod:`scheduler_core.adapters.azure.depths`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class QueueDepths:
    """Approximate message counts of the execution queues and their poison queues (None: could not be read)."""

    executions: int | None
    poison: int | None


#: Reads the queue depths (None where a deployment samples none).
DepthProbe = Callable[[], QueueDepths]


@dataclass(frozen=True)
class ExecutionQueueDepth:
    """Approximate message counts of one queue and of its poison queue (None: not readable)."""

    name: str
    depth: int | None
    poison: int | None


#: Reads the depth of every execution queue, queue 0 first (``/health`` shows them one by one).
ExecutionDepths = Callable[[], list[ExecutionQueueDepth]]


def total_depths(queues: list[ExecutionQueueDepth]) -> QueueDepths:
    """The depths of all execution queues together (None when any one could not be read)."""

    def total(values: list[int | None]) -> int | None:
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)

    return QueueDepths(total([q.depth for q in queues]), total([q.poison for q in queues]))
