"""What each Azure Functions trigger does, in plain Python: ``function_app.py`` calls these and nothing else."""

from __future__ import annotations

import logging

from scheduler_core.pipeline.cleanup import cleanup
from scheduler_core.pipeline.messages import ExecutionMessage, ScanMessage
from scheduler_core.wiring import services

log = logging.getLogger("scheduler_core.triggers")


def on_dispatch_tick(past_due: bool = False) -> int:
    """Timer: one scan message per due-index shard. Returns how many were sent."""
    s = services()
    if past_due:
        log.warning("dispatch tick is past due; missed occurrences are picked up by the scans (coalesced)")

    return s.dispatcher.tick(s.scans.send, s.clock())


def on_scan(body: bytes) -> None:
    """Queue (scan): dispatch the due rows of one shard."""
    s = services()
    s.dispatcher.scan(ScanMessage.from_json(body).shard, s.clock())


def on_execution(body: bytes) -> None:
    """Queue (executions): run one attempt of one occurrence."""
    s = services()
    s.executor.execute(ExecutionMessage.from_json(body))  # the executor logs the attempt (one INFO line)


def on_cleanup() -> None:
    """Timer (daily): trim history and claims, remove long-finished jobs."""
    s = services()
    cleanup(s.stores, s.clock(), s.executor.claims)
