"""The job's counters: each attempt is counted once, whatever is retried.

``executionCount``, ``failureCount`` and ``lastExecutionTime`` move with each attempt of the main action,
``faultedCount`` with each occurrence that faulted, and the final state with the last occurrence. The
write is guarded by the job's ETag and records the attempt in the job (``counted``, the last
:data:`COUNTED_KEEP` attempts), so a counters write retried after its answer was lost, or repeated by a
worker that took over a dead one's attempt, never counts an attempt twice.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from scheduler_core.errors import EtagMismatchError
from scheduler_core.model import Job, JobState
from scheduler_core.pipeline.durable import durably
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.ports import JobStore

log = logging.getLogger("scheduler_core.execute")

#: Attempts of one job's counters update before giving up (other executors race on the same row).
COUNTER_ATTEMPTS = 10
#: How many counted attempts a job remembers (far more than can be in flight, retrying, at once).
COUNTED_KEEP = 16


def count_attempt(
    jobs: JobStore,
    job: Job,
    message: ExecutionMessage,
    succeeded: bool,
    faulted: bool,
    final_state: JobState | None,
    now: datetime,
    adjust: Callable[[Job], dict[str, Any]] | None = None,
) -> Job | None:
    """Apply an attempt to the job's counters (and final state), once. The first try writes over the job
    as read before the action (``job``): no second read when nothing changed it meanwhile. ``adjust`` adds
    the changes the job's policies make (decided over the job as it is read for each try, in the same
    write). Returns the job as written (None: nothing written)."""
    main = message.action == "main"
    key = message.attempt_key
    current: Job | None = job
    for _ in range(COUNTER_ATTEMPTS):
        if current is None:
            return None
        if key in current.counted:
            return None  # this attempt's counters are in (a write whose answer was lost, or a lost worker's)
        changes: dict[str, Any] = {}
        if main:
            changes["execution_count"] = current.execution_count + 1
            changes["failure_count"] = current.failure_count + (0 if succeeded else 1)
            changes["last_execution_time"] = now
        if faulted:
            changes["faulted_count"] = current.faulted_count + 1
        if final_state and current.generation == job.generation and current.state == JobState.ENABLED:
            changes.update(
                state=final_state,
                ended_at=now,
                next_execution_time=None,
            )
        if adjust is not None:
            changes.update(adjust(current))
        if not changes:
            return None
        updated = replace(current, **changes, counted=(*current.counted, key)[-COUNTED_KEEP:])
        try:
            return durably("counters", functools.partial(jobs.save, updated, create=False, etag=current.etag))
        except EtagMismatchError:
            pass  # changed meanwhile (or by this write, whose answer was lost): read and decide again
        current = durably("job read", lambda: jobs.get_by_keys(job.ref.partition_key, job.ref.row_key))
    log.error("job %s: counters not updated after %d attempts", job.ref.identity, COUNTER_ATTEMPTS)
    return None
