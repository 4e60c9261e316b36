"""The in-memory due index (the :class:`~scheduler_core.ports.DueIndex` port): entries by shard, ordered by
row key, each stamped with the injected clock's reading when it was written (``written_at``)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import replace

from scheduler_core.adapters.memory.seam import FaultSeam, faultable, utc
from scheduler_core.model import DueEntry
from scheduler_core.ports import Clock


class MemoryDueIndex(FaultSeam):
    """Due-index entries by (shard, row key). :meth:`advance` applies all its moves and puts at once (under
    the store's lock), so no reader sees a job with two live entries."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self._clock = clock
        self._rows: dict[tuple[str, str], DueEntry] = {}
        self._lock = threading.RLock()

    def _write(self, row: DueEntry) -> None:
        self._rows[(row.shard, row.row_key)] = replace(
            row,
            generation=int(row.generation),
            due=utc(row.due),
            kind=str(row.kind or ""),
            checks=int(row.checks or 0),
            held=bool(row.held),
            written_at=utc(self._clock()),
        )

    @faultable
    def put(self, row: DueEntry) -> None:
        with self._lock:
            self._write(row)

    @faultable
    def advance(self, shard: str, moves: list[tuple[str, DueEntry | None]], puts: Iterable[DueEntry] = ()) -> None:
        extra = list(puts)
        with self._lock:
            for old_key, new_row in moves:
                self._rows.pop((shard, old_key), None)
                if new_row is not None:
                    self._write(new_row)
            for row in extra:
                self._write(row)

    @faultable
    def delete(self, shard: str, row_key: str) -> None:
        with self._lock:
            self._rows.pop((shard, row_key), None)

    @faultable
    def delete_many(self, rows: list[tuple[str, str]]) -> None:
        with self._lock:
            for key in rows:
                self._rows.pop(key, None)

    @faultable
    def due_before(
        self, shard: str, before: str, after: str = "", limit: int | None = None, *, once: bool = False
    ) -> Iterator[DueEntry]:
        with self._lock:
            found = sorted(
                (key[1], row) for key, row in self._rows.items() if key[0] == shard and after < key[1] < before
            )
        for _, row in found[:limit]:
            yield row
