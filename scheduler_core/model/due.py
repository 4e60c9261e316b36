"""Due-index entries: what fires when."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

#: The kind of a due-index entry that watches a dispatched attempt (see ``pipeline/dispatch.py``).
WATCH = "watch"


@dataclass(frozen=True)
class DueEntry:
    """A due-index entry: an occurrence of a job (``kind`` ""), a retry parked until a queue can hold it
    (``kind`` "", ``message`` set), or a watch over a dispatched attempt (``kind`` :data:`WATCH`, ``message``
    set). ``shard`` and ``row_key`` place it in the index; ``row_key`` sorts by ``due``."""

    shard: str
    row_key: str
    job_partition: str
    job_row: str
    generation: int
    due: datetime
    message: str | None = None
    written_at: datetime | None = None
    kind: str = ""
    checks: int = 0  # watches: how many times the watchdog found the attempt not yet claimed
    #: Watches: the resend of an attempt nobody claimed was held back (its queue was behind): still owed.
    held: bool = False
    #: The shards entry only (``kind`` "shards", next to the dispatch heartbeat): the most due-index shards a
    #: tick has scanned, so that a deployment whose ``SCHEDULER_DUE_SHARDS`` was lowered keeps scanning the
    #: shards that still hold entries.
    shards: int = 0
