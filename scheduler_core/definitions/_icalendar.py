"""An iCalendar file (RFC 5545) of all-day events read into a calendar's dates (``iCalendar`` of a calendar
PUT, api-version 2026-12-01-preview; parsed by the maintained ``icalendar`` library).

* Each ``VEVENT`` must be all-day (``DTSTART;VALUE=DATE``); it names its day, or the days up to its
  ``DTEND`` (exclusive, at most 366 days).
* ``RRULE:FREQ=YEARLY`` alone (no ``BY...`` parts, ``INTERVAL``, ``COUNT``, ``UNTIL`` or ``EXDATE``) is a
  recurring date (``MM-DD``, every year); any other rule is expanded into its dates from ``DTSTART`` up to
  :data:`~scheduler_core.model.calendars.HORIZON_YEARS` years later (``python-dateutil``'s ``rrule``), each
  counting towards the calendar's limits.
* Other components (``VTIMEZONE``, ``VTODO``, ...) are ignored; a timed event, a file that is no iCalendar,
  more than :data:`MAX_EVENTS` events or more dates than a calendar holds is a 400 naming ``iCalendar`` and
  the event (its index and ``SUMMARY``).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from dateutil.rrule import rrule, rruleset, rrulestr

from scheduler_core.errors import ValidationError
from scheduler_core.model.calendars import HORIZON_YEARS

__all__ = ["MAX_EVENTS", "MAX_ICALENDAR_CHARS", "read_icalendar"]

#: The most events one file may hold, and its longest text.
MAX_EVENTS = 2000
MAX_ICALENDAR_CHARS = 1_000_000
#: The most dates one event may expand to (a longer rule or span is refused, not cut).
_MAX_EVENT_DATES = 1001
_PLAIN_YEARLY = {"FREQ": ["YEARLY"]}
_DAY_FREQUENCIES = ("YEARLY", "MONTHLY", "WEEKLY", "DAILY")
#: The filters a yearly rule shares with any rule (BYDAY is read without its ordinals).
_FILTERS = ("BYMONTH", "BYMONTHDAY", "BYYEARDAY", "BYWEEKNO")


def _as_datetime(value: date) -> datetime:
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    return datetime(value.year, value.month, value.day)


def read_icalendar(value: object, path: str) -> tuple[tuple[date, ...], tuple[tuple[int, int], ...]]:
    """The fixed dates and recurring (month, day) dates of the all-day events of an iCalendar text."""
    import icalendar

    if not isinstance(value, str) or not value.strip():
        raise ValidationError(path, "must be the text of an iCalendar file (BEGIN:VCALENDAR ... END:VCALENDAR)")
    if len(value) > MAX_ICALENDAR_CHARS:
        raise ValidationError(path, f"is {len(value):,} characters long; at most {MAX_ICALENDAR_CHARS:,} are read")
    try:
        document = icalendar.Calendar.from_ical(value)
    except Exception as exc:  # the library's parse errors are ValueError and its subclasses, and more
        raise ValidationError(path, f"is not an iCalendar file: {str(exc)[:200]}") from None
    dates: dict[date, None] = {}
    recurring: set[tuple[int, int]] = set()
    for index, event in enumerate(document.walk("VEVENT")):
        if index >= MAX_EVENTS:
            raise ValidationError(path, f"holds more than {MAX_EVENTS:,} events")
        where = f"{path}: event {index + 1} ({str(event.get('SUMMARY', ''))[:60]!r})"
        first, days = _days_of(event, where)
        rule = event.get("RRULE")
        if rule is not None and dict(rule) == _PLAIN_YEARLY and event.get("EXDATE") is None:
            recurring.update((day.month, day.day) for day in days)
        elif rule is not None:
            for start in _expand(event, first, where):
                dates.update(dict.fromkeys(start + (day - first) for day in days))
        else:
            dates.update(dict.fromkeys(days))
    return tuple(dates), tuple(sorted(recurring))


def _days_of(event: Any, where: str) -> tuple[date, list[date]]:
    """The first day of an all-day event and every day it spans."""
    try:
        start = event.decoded("DTSTART")
        end = event.decoded("DTEND") if event.get("DTEND") is not None else None
    except Exception:  # a missing or unreadable DTSTART
        raise ValidationError(where, "has no readable DTSTART") from None
    if isinstance(start, datetime) or not isinstance(start, date):
        raise ValidationError(where, "is not an all-day event (DTSTART;VALUE=DATE:YYYYMMDD); timed events are not read")
    if end is None:
        return start, [start]
    if isinstance(end, datetime) or not isinstance(end, date) or end <= start:
        raise ValidationError(where, "has a DTEND that is not a date after DTSTART")
    if (end - start).days > 366:
        raise ValidationError(where, "spans more than 366 days")
    return start, [start + timedelta(days=n) for n in range((end - start).days)]


def _may_match(recur: Any, start: datetime, limit: datetime) -> bool:
    """Whether a rule can name a day before ``limit``, asked of a yearly rule with the same month, day and
    week-day filters (weekdays without their ordinals, no BYSETPOS): a superset of the rule's days that
    python-dateutil walks a year at a time. dateutil checks UNTIL only on days that match, so a daily rule
    that never matches (BYMONTH=2;BYMONTHDAY=30) would otherwise be walked day by day to the year 9999."""
    parts = [f"{key}={','.join(_text(value) for value in values)}" for key, values in recur.items() if key in _FILTERS]
    days = [_text(day).lstrip("+-0123456789") for day in recur.get("BYDAY") or []]
    if days:
        parts.append("BYDAY=" + ",".join(dict.fromkeys(days)))
    yearly = rrulestr(";".join(["FREQ=YEARLY", *parts]), dtstart=start)
    first = yearly.after(start, inc=True)
    return first is not None and first <= limit


def _text(value: Any) -> str:
    return value.to_ical().decode() if hasattr(value, "to_ical") else str(value)


def _expand(event: Any, first: date, where: str) -> list[date]:
    """The start days of a recurring event up to the horizon (python-dateutil reads the RRULE and EXDATEs).
    Rules finer than a day are refused, and every rule is cut at the horizon, so the expansion is bounded."""
    start = datetime(first.year, first.month, first.day)
    limit = datetime(min(first.year + HORIZON_YEARS, 9998), 12, 31)
    recur = event.get("RRULE")
    if str((recur.get("FREQ") or [""])[0]).upper() not in _DAY_FREQUENCIES:
        raise ValidationError(where, "has an RRULE finer than daily (an all-day event repeats by days at least)")
    try:
        rule = rrulestr(recur.to_ical().decode(), dtstart=start)
        if not isinstance(rule, rrule):
            raise ValueError("not a single rule")
        until = (recur.get("UNTIL") or [None])[0]
        if "COUNT" not in recur and (until is None or _as_datetime(until) > limit):
            rule = rule.replace(until=limit)
        if not _may_match(recur, start, limit):
            return []
        dates = rruleset()
        dates.rrule(rule)
        excluded = event.get("EXDATE")
        for item in excluded if isinstance(excluded, list) else [excluded] if excluded is not None else []:
            for moment in item.dts:
                dates.exdate(_as_datetime(moment.dt))
        starts: list[date] = []
        for moment in dates:
            if moment > limit:
                break
            starts.append(moment.date())
            if len(starts) >= _MAX_EVENT_DATES:
                raise ValidationError(
                    where, f"repeats more than {_MAX_EVENT_DATES - 1:,} times within {HORIZON_YEARS} years"
                )
    except (ValueError, TypeError, OverflowError, AttributeError) as exc:
        raise ValidationError(where, f"has an RRULE that cannot be read: {str(exc)[:200]}") from None
    return starts
