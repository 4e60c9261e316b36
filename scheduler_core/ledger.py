"""The backfill ledger: the backfill occurrences each collection has outstanding.

A backfill's occurrences count towards their plan's limits (:class:`~scheduler_core.policies.BackfillLimits`) from
the moment it is accepted until their attempts are over. Each occurrence is one row of its collection's ledger
(:func:`ledger_row`): a partition of the due-index table of its own (``backfills|<collection>``, which no scan
reads), one row per occurrence plus one *tail* per backfill (the job's pace after it, for the rate). The service
writes a backfill's rows before it sends a message (:mod:`scheduler_core.service.jobs`), and the executor deletes
an occurrence's row when its attempts are over (:func:`~scheduler_core.pipeline.counters.backfill_ended`): a
delete, so a repeated one does nothing. A row whose occurrence will never end that way (its message dropped as
stale, or as poison, a worker lost for good) stops counting by itself
(:func:`~scheduler_core.policies.live_backfills`); the service removes such rows when it next accepts a backfill of
the collection.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from scheduler_core.model import DueEntry
from scheduler_core.policies import LedgerEntry
from scheduler_core.ports import DueIndex
from scheduler_core.storage.keys import SEPARATOR, format_due

#: The due-index partition of a collection's backfill ledger: this, the separator, the collection's identity.
LEDGER = "backfills"
#: The kind of an occurrence row of the ledger, and of a backfill's tail row.
OCCURRENCE_KIND = "backfill"
TAIL_KIND = "backfill-tail"
#: Every ledger row key starts with this and the separator (so the partition is one key range whatever the
#: names: ``b|<job row key>|<backfill id>|<occurrence, sortable; "~" for the tail>``).
_KEY_START = "b"


def ledger_partition(collection_identity: str) -> str:
    """The due-index partition of the ledger of the collection whose identity (its jobs' partition) is given."""
    return f"{LEDGER}{SEPARATOR}{collection_identity}"


def ledger_key(job_row: str, backfill: str, occurrence: datetime | None) -> str:
    """The ledger row key of one occurrence of a backfill of a job (``occurrence`` None: the backfill's tail)."""
    return SEPARATOR.join((_KEY_START, job_row, backfill, "~" if occurrence is None else format_due(occurrence)))


def key_range(prefix: str) -> tuple[str, str]:
    """The ``(after, before)`` bounds of :meth:`DueIndex.due_before` that hold exactly the keys starting with
    ``prefix`` (which ends with the separator: no key part holds one)."""
    return prefix, prefix[:-1] + chr(ord(SEPARATOR) + 1)


def backfill_range(job_row: str, backfill: str) -> tuple[str, str]:
    """The ``(after, before)`` bounds of :meth:`DueIndex.due_before` that hold exactly the rows of one backfill
    of a job."""
    return key_range(SEPARATOR.join((_KEY_START, job_row, backfill, "")))


def ledger_row(job_partition: str, entry: LedgerEntry) -> DueEntry:
    """The due-index row of a ledger entry of a job of the collection ``job_partition`` names."""
    data: dict[str, Any] = {"backfill": entry.backfill, "deadline": format_due(entry.deadline)}
    if entry.occurrence is not None:
        data["occurrence"] = format_due(entry.occurrence)
    if entry.chain:
        data.update(chain=True, gap=entry.gap.total_seconds())
    return DueEntry(
        shard=ledger_partition(job_partition),
        row_key=ledger_key(entry.job_row, entry.backfill, entry.occurrence),
        job_partition=job_partition,
        job_row=entry.job_row,
        generation=entry.generation,
        due=entry.slot,
        message=json.dumps(data, separators=(",", ":")),
        kind=OCCURRENCE_KIND if entry.occurrence is not None else TAIL_KIND,
    )


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def ledger_entry(row: DueEntry) -> LedgerEntry | None:
    """The ledger entry a due-index row of a ledger partition holds (None: not one, or unreadable)."""
    if row.kind not in (OCCURRENCE_KIND, TAIL_KIND) or not row.message:
        return None
    try:
        data = json.loads(row.message)
        occurrence = data.get("occurrence")
        return LedgerEntry(
            job_row=row.job_row,
            backfill=str(data.get("backfill") or ""),
            occurrence=instant(occurrence) if occurrence and row.kind == OCCURRENCE_KIND else None,
            generation=row.generation,
            slot=row.due,
            deadline=instant(str(data["deadline"])),
            chain=bool(data.get("chain")),
            gap=timedelta(seconds=float(data.get("gap") or 0)),
            key=row.row_key,
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def read_ledger(due: DueIndex, collection_identity: str, job_row: str | None = None) -> list[LedgerEntry]:
    """The ledger rows of a collection (of one of its jobs when ``job_row`` is given), in key order."""
    after, before = key_range(SEPARATOR.join((_KEY_START, job_row, "")) if job_row else _KEY_START + SEPARATOR)
    partition = ledger_partition(collection_identity)
    entries = (ledger_entry(row) for row in due.due_before(partition, before, after=after))
    return [entry for entry in entries if entry is not None and (job_row is None or entry.job_row == job_row)]
