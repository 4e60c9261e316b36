"""A region's records in memory (:class:`~scheduler_core.regions.replication.Bookmarks`)."""

from __future__ import annotations

import threading

from scheduler_core.regions.replication import ReplicationState


class MemoryBookmarks:
    """The replication's state and the due index's epoch, kept in this process."""

    def __init__(self) -> None:
        self._replication = ReplicationState()
        self._epoch: int | None = None
        self._lock = threading.Lock()

    def replication(self) -> ReplicationState:
        with self._lock:
            return self._replication

    def set_replication(self, state: ReplicationState) -> None:
        with self._lock:
            self._replication = state

    def due_epoch(self) -> int | None:
        with self._lock:
            return self._epoch

    def set_due_epoch(self, epoch: int) -> None:
        with self._lock:
            self._epoch = epoch
