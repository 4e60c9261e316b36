"""Execution messages spread over K queues, by job (``SCHEDULER_EXECUTION_QUEUE_COUNT``).

Every execution message the pipeline sends (a dispatched occurrence, a retry, an error action, a run on
demand, a watchdog's re-send, a long retry parked in the due index and sent later) names its job, and goes
to the queue of a stable hash of that job's identity. So every attempt of one job, retries included, is on
one queue, and the jobs of a deployment spread evenly over the K queues, each consumed by its own
queue-triggered function (``function_app.py``), which the Functions scale controller scales on its own.

:class:`ExecutionRouter` is the :class:`~scheduler_core.ports.ExecutionQueue` port (and a
:class:`~scheduler_core.ports.MessageSender`) over the K queues' senders: the dispatcher, the watchdog and
the executor send through it unchanged. With K = 1 it is the one queue.

The router also tells the watchdog whether a message's queue is behind (:meth:`ExecutionRouter.behind`:
its consumers have not taken a message sent more than a lease ago), asking each queue at most once per
:data:`BEHIND_FOR` of the pipeline's clock, so a scan that finds a burst's watch entries due peeks once.

The hash is BLAKE2b of the job identity with its own personalisation, so the queue of a job does not
follow its due-index shard (:func:`scheduler_core.storage.keys.shard_of`): the jobs of one shard, which one
scan dispatches together, spread over every queue.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta

from scheduler_core.errors import StorageError
from scheduler_core.ports import Backlog, ExecutionQueue
from scheduler_core.storage.keys import SEPARATOR

__all__ = ["ExecutionRouter", "queue_index", "queue_index_of_message"]

#: How long an answer of :meth:`ExecutionRouter.behind` stands for its queue (by the pipeline's clock).
BEHIND_FOR = timedelta(seconds=5)

_PERSON = b"sched-exec-queue"  # 16 bytes: BLAKE2b's personalisation, so this hash is not shard_of's


def queue_index(job_partition: str, job_row: str, count: int) -> int:
    """The execution queue (0 to ``count - 1``) of the job stored under these keys: the same for every
    message of the job, on every instance and across restarts."""
    if count < 1:
        raise ValueError(f"count must be 1 or more, got {count}")
    if count == 1:
        return 0
    identity = f"{job_partition}{SEPARATOR}{job_row}"
    digest = hashlib.blake2b(identity.encode(), digest_size=8, person=_PERSON).digest()
    return int.from_bytes(digest, "big") % count


def queue_index_of_message(text: str, count: int) -> int:
    """The execution queue of a message's job (queue 0 for a message that names no job: the executor
    refuses it there, as it would on any queue)."""
    if count == 1:
        return 0
    try:
        data = json.loads(text)
        partition, row = data["job_partition"], data["job_row"]
    except (ValueError, TypeError, KeyError):
        return 0
    if not isinstance(partition, str) or not isinstance(row, str):
        return 0
    return queue_index(partition, row, count)


class ExecutionRouter:
    """The execution queue port over K queues: each message goes to the queue of its job."""

    def __init__(self, queues: Sequence[ExecutionQueue], backlogs: Sequence[Backlog | None] = ()) -> None:
        """``backlogs`` are the queues' backlog probes, in the same order (none: never behind)."""
        if not queues:
            raise ValueError("an execution router needs at least one queue")
        if backlogs and len(backlogs) != len(queues):
            raise ValueError("an execution router needs one backlog probe per queue, or none")
        self.queues: tuple[ExecutionQueue, ...] = tuple(queues)
        self.backlogs: tuple[Backlog | None, ...] = tuple(backlogs) or (None,) * len(self.queues)
        self._answers: dict[int, tuple[datetime, bool]] = {}
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        return len(self.queues)

    def queue_of(self, text: str) -> int:
        """The index of the queue ``text`` is sent to."""
        return queue_index_of_message(text, len(self.queues))

    def __call__(self, text: str, visibility: int, /) -> None:
        self.queues[self.queue_of(text)](text, visibility)

    def send(self, text: str, visibility: int = 0) -> None:
        """Send ``text`` to its job's queue, invisible for ``visibility`` whole seconds; at least once."""
        self(text, visibility)

    def behind(self, text: str, older_than: timedelta, now: datetime) -> bool:
        """Whether the queue of ``text``'s job is behind: it shows a message sent more than ``older_than``
        before ``now`` that no worker has taken. Asked of the queue at most once per :data:`BEHIND_FOR`; a
        queue that cannot be asked (no probe, or storage failed) is taken as keeping up."""
        index = self.queue_of(text)
        probe = self.backlogs[index]
        if probe is None:
            return False
        with self._lock:
            known = self._answers.get(index)
        if known is not None and timedelta(0) <= now - known[0] < BEHIND_FOR:
            return known[1]
        try:
            answer = probe(older_than, now)
        except StorageError:
            answer = False
        with self._lock:
            self._answers[index] = (now, answer)
        return answer
