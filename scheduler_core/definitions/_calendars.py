"""A collection's named calendars at the wire (api-version 2026-12-01-preview), and local dates.

``PUT .../jobCollections/{jc}/calendars/{name}`` takes ``{"properties": {"dates": ["2026-12-25", ...]}}``:
local dates (``YYYY-MM-DD``), which each job that names the calendar in ``recurrence.exclusions.calendars``
reads in its own time zone. The stores keep a collection's calendars as :func:`calendars_json` writes them
and read them back with :func:`read_calendars`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from typing import Any

from scheduler_core.definitions._json import Fields, kind
from scheduler_core.errors import ValidationError
from scheduler_core.model.collection import Calendar

__all__ = [
    "FIRST_LOCAL_DATE",
    "LAST_LOCAL_DATE",
    "MAX_CALENDARS",
    "MAX_CALENDAR_DATES",
    "calendar_json",
    "calendars_json",
    "check_calendar_limits",
    "format_local_date",
    "parse_calendar",
    "parse_local_date",
    "read_calendars",
]

#: At most this many calendars per collection...
MAX_CALENDARS = 20
#: ... and this many dates in all of them together (each job that names a calendar carries its dates).
MAX_CALENDAR_DATES = 1000

#: The first and last local dates a calendar or an exclusion may hold. Beyond them a date's local midnight,
#: or the midnight after it, read in a time zone far from UTC, is no instant Python can hold (year 1 in
#: Tokyo is year 0 in UTC; the day after 9999-12-31 does not exist).
FIRST_LOCAL_DATE = date(1900, 1, 1)
LAST_LOCAL_DATE = date(9998, 12, 31)

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_DATE_RULE = "must be a local date written YYYY-MM-DD (2026-12-25)"


def parse_local_date(value: object, path: str) -> date:
    """A local calendar date, ``YYYY-MM-DD`` exactly (no time, no offset)."""
    if not isinstance(value, str):
        raise ValidationError(path, f"{_DATE_RULE}, not {kind(value)}")
    match = _DATE.fullmatch(value)
    if match is None:
        shown = repr(value) if len(value) <= 40 else "the given value"
        raise ValidationError(path, f"{_DATE_RULE}, not {shown}")
    try:
        value = date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError as exc:
        raise ValidationError(path, f"{_DATE_RULE}; {exc}") from None
    if not FIRST_LOCAL_DATE <= value <= LAST_LOCAL_DATE:
        raise ValidationError(
            path,
            f"must be a local date from {format_local_date(FIRST_LOCAL_DATE)} to {format_local_date(LAST_LOCAL_DATE)}, "
            f"not {value.isoformat()}",
        )
    return value


def format_local_date(value: date) -> str:
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"


def parse_dates(value: object, path: str, limit: int) -> tuple[date, ...]:
    """An array of local dates (at most ``limit``), deduplicated in the given order."""
    if not isinstance(value, list):
        raise ValidationError(path, f"must be an array of local dates (YYYY-MM-DD), not {kind(value)}")
    if len(value) > limit:
        raise ValidationError(path, f"must hold at most {limit} dates, not {len(value)}")
    dates = [parse_local_date(item, f"{path}[{index}]") for index, item in enumerate(value)]
    return tuple(dict.fromkeys(dates))


def check_calendar_limits(collection: str, name: str, dates: Sequence[date], calendars: Iterable[Calendar]) -> None:
    """Refuse a calendar ``name`` of ``dates`` written into the collection named ``collection`` that holds
    ``calendars``: past :data:`MAX_CALENDARS` calendars (a new one) or :data:`MAX_CALENDAR_DATES` dates in all
    (the calendar it replaces not counted)."""
    others = [item for item in calendars if item.name.lower() != name.lower()]
    replaces = any(item.name.lower() == name.lower() for item in calendars)
    if not replaces and len(others) >= MAX_CALENDARS:
        raise ValidationError(
            "calendarName",
            f"job collection '{collection}' already has {MAX_CALENDARS} calendars, the most it may have",
        )
    total = len(dates) + sum(len(item.dates) for item in others)
    if total > MAX_CALENDAR_DATES:
        raise ValidationError(
            "properties.dates",
            f"the calendars of a job collection may hold at most {MAX_CALENDAR_DATES} dates in all; with these "
            f"{len(dates)} they would hold {total}",
        )


def parse_calendar(body: Mapping[str, Any]) -> tuple[date, ...]:
    """The dates of a calendar PUT's body, ``{"properties": {"dates": [...]}}`` (``id``, ``type`` and
    ``name`` may be echoed back and are ignored). At most :data:`MAX_CALENDAR_DATES` dates."""
    top = Fields(body, "", ("properties",), ignored=("id", "type", "name"))
    if "properties" not in top:
        raise ValidationError("properties", 'is required: {"dates": ["YYYY-MM-DD", ...]}')
    properties = Fields(top.get("properties"), top.where("properties"), ("dates",))
    if "dates" not in properties:
        raise ValidationError(properties.where("dates"), "is required (an array of local dates, YYYY-MM-DD)")
    return parse_dates(properties.get("dates"), properties.where("dates"), MAX_CALENDAR_DATES)


def calendar_json(calendar: Calendar) -> dict[str, Any]:
    """The ``properties`` of a calendar in a response."""
    return {"dates": [format_local_date(item) for item in calendar.dates]}


def calendars_json(calendars: Iterable[Calendar]) -> list[dict[str, Any]]:
    """A collection's calendars as stored: ``[{"name", "dates"}]``."""
    return [{"name": item.name, "dates": calendar_json(item)["dates"]} for item in calendars]


def read_calendars(data: object) -> tuple[Calendar, ...]:
    """The calendars :func:`calendars_json` wrote (trusted; None or absent: none)."""
    if not isinstance(data, list):
        return ()
    return tuple(
        Calendar(str(item["name"]), tuple(date.fromisoformat(text) for text in item.get("dates", ())))
        for item in data
        if isinstance(item, Mapping)
    )
