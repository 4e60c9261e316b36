"""Queue depths: how many messages wait in the execution queues and their poison queues (``/health`` and
the dispatch tick's gauges). The values are plain; the probes that read them are made by the adapters
(:mod:`scheduler_core.adapters.azure.depths`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

#: A probe counts the messages due now (visible to workers) up to this many (a queue's peek returns at most 32).
DUE_PEEK = 32


@dataclass(frozen=True)
class QueueDepths:
    """Approximate message counts of the execution queues and their poison queues (None: could not be read);
    ``due``: how many of the execution queues' messages are visible now, at most :data:`DUE_PEEK` per queue
    (the rest are *staged*: sent ahead of their second, invisible until it comes; None: not read)."""

    executions: int | None
    poison: int | None
    due: int | None = None
    #: Messages sent ahead of their second, invisible until it comes (None: not known).
    staged: int | None = None


#: Reads the queue depths (None where a deployment samples none).
DepthProbe = Callable[[], QueueDepths]


@dataclass(frozen=True)
class ExecutionQueueDepth:
    """Approximate message counts of one queue and of its poison queue (None: not readable)."""

    name: str
    depth: int | None
    poison: int | None
    #: Messages visible now, at most :data:`DUE_PEEK` (None: not read).
    due: int | None = None

    @property
    def staged(self) -> int | None:
        """Messages sent ahead of their time, invisible until it comes (None: not known, also when the peek
        was full: then more than :data:`DUE_PEEK` are due and the rest cannot be told apart)."""
        if self.depth is None or self.due is None or self.due >= DUE_PEEK:
            return None
        return max(0, self.depth - self.due)


#: Reads the depth of every execution queue, queue 0 first (``/health`` shows them one by one).
ExecutionDepths = Callable[[], list[ExecutionQueueDepth]]


def total_depths(queues: list[ExecutionQueueDepth]) -> QueueDepths:
    """The depths of all execution queues together (None when any one could not be read)."""

    def total(values: list[int | None]) -> int | None:
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)

    return QueueDepths(
        total([q.depth for q in queues]),
        total([q.poison for q in queues]),
        total([q.due for q in queues]),
        total([q.staged for q in queues]),
    )
