"""A collection's ``historyRetention`` at the wire (api-version 2026-12-01-preview): parse a client's, write the
canonical one (a stored one is read by parsing it again).

``{"succeeded": "P7D", "failed": 5000}``: each kind is kept either for a duration (entries that started longer
ago go, and at most the newest :data:`MAX_KEPT_ENTRIES` stay) or as a count (the newest that many stay,
whatever their age). A kind left out keeps the default (60 days, at most 1,000 entries of that kind). Absent,
null or ``{}``: the collection keeps Azure Scheduler's rule (:data:`~scheduler_core.model.history.DEFAULT_RETENTION`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from scheduler_core.definitions._durations import format_duration, read_bounded
from scheduler_core.definitions._json import Fields, int_value, kind
from scheduler_core.errors import ValidationError
from scheduler_core.model.history import DEFAULT_KEEP, HistoryRetention, Keep

__all__ = [
    "MAX_KEPT_COUNT",
    "MAX_KEPT_ENTRIES",
    "MAX_RETENTION",
    "MIN_RETENTION",
    "parse_history_retention",
    "retention_json",
]

#: Bounds of a duration: a day (the cleanup runs daily, so a shorter one would not be kept to) to a year.
MIN_RETENTION = timedelta(days=1)
MAX_RETENTION = timedelta(days=365)
#: Bounds of a count.
MAX_KEPT_COUNT = 10_000
#: The most entries of a kind a duration keeps (so that a job firing every minute cannot keep a year of them).
MAX_KEPT_ENTRIES = MAX_KEPT_COUNT
_KINDS = ("succeeded", "failed")
_RULE = f'must be a duration of P1D to P365D ("P30D") or a count of 1 to {MAX_KEPT_COUNT} (500)'


def _keep(value: object, path: str) -> Keep:
    if isinstance(value, str):
        return Keep(read_bounded(value, path, (MIN_RETENTION, "a day"), (MAX_RETENTION, "a year")), MAX_KEPT_ENTRIES)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Keep(None, int_value(value, path, 1, MAX_KEPT_COUNT))
    raise ValidationError(path, f"{_RULE}, not {kind(value)}")


def parse_history_retention(value: object, path: str) -> HistoryRetention | None:
    """A client's ``historyRetention`` (``path`` names it in errors); None when it sets no kind."""
    fields = Fields(value, path, _KINDS)
    if not fields.present():
        return None
    succeeded, failed = (_keep(fields.get(k), fields.where(k)) if k in fields else DEFAULT_KEEP for k in _KINDS)
    return HistoryRetention(succeeded=succeeded, failed=failed)


def _keep_json(keep: Keep) -> str | int:
    return keep.count if keep.age is None else format_duration(keep.age.value, keep.age.style)


def retention_json(retention: HistoryRetention) -> dict[str, Any]:
    """The canonical ``historyRetention`` of a collection that set one: the kinds it set, in the order
    succeeded, failed."""
    out: dict[str, Any] = {}
    for name, keep in (("succeeded", retention.succeeded), ("failed", retention.failed)):
        if keep != DEFAULT_KEEP:
            out[name] = _keep_json(keep)
    return out
