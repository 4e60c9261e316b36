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

from scheduler_core.definitions._icalendar import read_icalendar
from scheduler_core.definitions._json import Fields, kind
from scheduler_core.errors import ValidationError
from scheduler_core.model.calendars import CalendarRules, Holidays
from scheduler_core.model.collection import Calendar

__all__ = [
    "FIRST_LOCAL_DATE",
    "LAST_LOCAL_DATE",
    "MAX_CALENDARS",
    "MAX_CALENDAR_DATES",
    "MAX_RECURRING_DATES",
    "calendar_json",
    "calendars_json",
    "check_calendar_limits",
    "format_local_date",
    "parse_calendar",
    "parse_calendar_body",
    "parse_local_date",
    "read_calendars",
    "read_rules",
    "rules_json",
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
_MONTH_DAY = re.compile(r"(\d{2})-(\d{2})", re.ASCII)
_LONGEST = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_WEEK_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_DAY_NAMES = {name.lower(): number for number, name in enumerate(_WEEK_DAY_NAMES)}
_CALENDAR_FIELDS = ("dates", "recurringDates", "weekDays", "holidays", "iCalendar")
#: At most this many recurring dates (MM-DD) in one calendar.
MAX_RECURRING_DATES = 366
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
    """The fixed dates of a calendar PUT's body (see :func:`parse_calendar_body`)."""
    return parse_calendar_body(body)[0]


def parse_calendar_body(body: Mapping[str, Any]) -> tuple[tuple[date, ...], CalendarRules]:
    """The dates and recurring rules of a calendar PUT's body, ``{"properties": {"dates": [...],
    "recurringDates": ["12-25"], "weekDays": ["Saturday"], "holidays": {"country": "DE", "subdivision": "BY"},
    "iCalendar": "BEGIN:VCALENDAR..."}}`` (at least one of them; ``id``, ``type`` and ``name`` may be echoed
    back and are ignored). At most :data:`MAX_CALENDAR_DATES` dates (an iCalendar's fixed dates included),
    :data:`MAX_RECURRING_DATES` recurring dates, six week days (all seven would exclude every day)."""
    top = Fields(body, "", ("properties",), ignored=("id", "type", "name"))
    if "properties" not in top:
        raise ValidationError("properties", 'is required: {"dates": ["YYYY-MM-DD", ...]}')
    properties = Fields(top.get("properties"), top.where("properties"), _CALENDAR_FIELDS)
    if not any(name in properties for name in _CALENDAR_FIELDS):
        raise ValidationError(
            properties.where("dates"),
            "is required (an array of local dates, YYYY-MM-DD), unless recurringDates, weekDays, holidays or "
            "iCalendar is given",
        )
    dates: tuple[date, ...] = ()
    if "dates" in properties:
        dates = parse_dates(properties.get("dates"), properties.where("dates"), MAX_CALENDAR_DATES)
    recurring: tuple[tuple[int, int], ...] = ()
    if "recurringDates" in properties:
        recurring = _recurring_dates(properties.get("recurringDates"), properties.where("recurringDates"))
    if "iCalendar" in properties:
        more_dates, more_recurring = read_icalendar(properties.get("iCalendar"), properties.where("iCalendar"))
        dates = tuple(dict.fromkeys((*dates, *more_dates)))
        recurring = tuple(sorted(set(recurring) | set(more_recurring)))
        _check_counts(properties.where("iCalendar"), dates, recurring)
    week_days = _week_days(properties.get("weekDays"), properties.where("weekDays")) if "weekDays" in properties else ()
    holidays = (
        (_holidays(properties.get("holidays"), properties.where("holidays")),) if "holidays" in properties else ()
    )
    return dates, CalendarRules(recurring, week_days, holidays)


def _check_counts(path: str, dates: Sequence[date], recurring: Sequence[tuple[int, int]]) -> None:
    if len(dates) > MAX_CALENDAR_DATES:
        raise ValidationError(
            path, f"gives {len(dates):,} dates in all; a calendar holds at most {MAX_CALENDAR_DATES:,}"
        )
    if len(recurring) > MAX_RECURRING_DATES:
        raise ValidationError(
            path, f"gives {len(recurring):,} recurring dates in all; a calendar holds at most {MAX_RECURRING_DATES}"
        )


def _recurring_dates(value: object, path: str) -> tuple[tuple[int, int], ...]:
    """``recurringDates``: ``MM-DD`` strings, every year (``02-29`` in leap years only)."""
    if not isinstance(value, list):
        raise ValidationError(path, f'must be an array of dates every year written MM-DD ("12-25"), not {kind(value)}')
    if len(value) > MAX_RECURRING_DATES:
        raise ValidationError(path, f"must hold at most {MAX_RECURRING_DATES} dates, not {len(value):,}")
    found: list[tuple[int, int]] = []
    for index, item in enumerate(value):
        match = _MONTH_DAY.fullmatch(item) if isinstance(item, str) else None
        month, day = (int(match[1]), int(match[2])) if match else (0, 0)
        if not 1 <= month <= 12 or not 1 <= day <= _LONGEST[month]:
            shown = repr(item) if isinstance(item, str) and len(item) <= 20 else kind(item)
            raise ValidationError(f"{path}[{index}]", f'must be a date every year written MM-DD ("12-25"), not {shown}')
        found.append((month, day))
    return tuple(sorted(set(found)))


def _week_days(value: object, path: str) -> tuple[int, ...]:
    """``weekDays``: day names (any casing), at most six."""
    if not isinstance(value, list):
        raise ValidationError(path, f'must be an array of day names (["Saturday", "Sunday"]), not {kind(value)}')
    days: set[int] = set()
    for index, item in enumerate(value):
        number = _DAY_NAMES.get(item.lower()) if isinstance(item, str) else None
        if number is None:
            shown = repr(item) if isinstance(item, str) and len(item) <= 20 else kind(item)
            raise ValidationError(f"{path}[{index}]", f"must be a day name (Monday to Sunday), not {shown}")
        days.add(number)
    if len(days) == 7:
        raise ValidationError(path, "names every day of the week: a job naming this calendar could never run")
    return tuple(sorted(days))


def _holidays(value: object, path: str) -> Holidays:
    """``holidays``: ``{"country": "DE", "subdivision": "BY"}``, a country and subdivision the ``holidays``
    library knows (the error lists the subdivisions of a known country)."""
    fields = Fields(value, path, ("country", "subdivision"))
    if "country" not in fields or not isinstance(fields.get("country"), str):
        raise ValidationError(fields.where("country"), "is required: an ISO 3166-1 alpha-2 country code (DE, US)")
    country = str(fields.get("country")).upper()
    supported = supported_countries()
    if country not in supported:
        raise ValidationError(fields.where("country"), f"is not a country with known public holidays: {country[:20]!r}")
    if "subdivision" not in fields:
        return Holidays(country)
    subdivision = fields.get("subdivision")
    known = {item.upper(): item for item in supported[country]}
    if not isinstance(subdivision, str) or subdivision.upper() not in known:
        listed = ", ".join(supported[country][:40]) or "none"
        raise ValidationError(fields.where("subdivision"), f"is not a subdivision of {country} (known: {listed})")
    return Holidays(country, known[subdivision.upper()])


def supported_countries() -> dict[str, list[str]]:
    """The ``holidays`` library's countries (alpha-2 codes) and their subdivisions."""
    import holidays

    return {
        code: list(subdivisions) for code, subdivisions in holidays.list_supported_countries().items() if len(code) == 2
    }


def calendar_json(calendar: Calendar) -> dict[str, Any]:
    """The ``properties`` of a calendar in a response (the fields it has)."""
    out: dict[str, Any] = {"dates": [format_local_date(item) for item in calendar.dates]}
    out.update(rules_json(calendar.rules))
    return out


def rules_json(rules: CalendarRules) -> dict[str, Any]:
    """Recurring rules as the wire writes them (each field only when given)."""
    out: dict[str, Any] = {}
    if rules.recurring_dates:
        out["recurringDates"] = [f"{month:02d}-{day:02d}" for month, day in rules.recurring_dates]
    if rules.week_days:
        out["weekDays"] = [_WEEK_DAY_NAMES[day] for day in rules.week_days]
    if rules.holidays:
        item = rules.holidays[0] if len(rules.holidays) == 1 else None
        listed = [_holiday_json(entry) for entry in rules.holidays]
        out["holidays"] = _holiday_json(item) if item is not None else listed
    return out


def _holiday_json(item: Holidays) -> dict[str, str]:
    return {"country": item.country, **({"subdivision": item.subdivision} if item.subdivision else {})}


def read_rules(data: Mapping[str, Any]) -> CalendarRules:
    """The rules :func:`rules_json` wrote (trusted)."""
    holidays = data.get("holidays")
    entries = [holidays] if isinstance(holidays, Mapping) else list(holidays or ())
    return CalendarRules(
        tuple((int(text[:2]), int(text[3:])) for text in data.get("recurringDates", ())),
        tuple(_DAY_NAMES[name.lower()] for name in data.get("weekDays", ())),
        tuple(sorted(Holidays(str(item["country"]), item.get("subdivision")) for item in entries)),
    )


def calendars_json(calendars: Iterable[Calendar]) -> list[dict[str, Any]]:
    """A collection's calendars as stored: ``[{"name", "dates", ...rules}]``."""
    return [{"name": item.name, **calendar_json(item)} for item in calendars]


def read_calendars(data: object) -> tuple[Calendar, ...]:
    """The calendars :func:`calendars_json` wrote (trusted; None or absent: none)."""
    if not isinstance(data, list):
        return ()
    return tuple(
        Calendar(str(item["name"]), tuple(date.fromisoformat(text) for text in item.get("dates", ())), read_rules(item))
        for item in data
        if isinstance(item, Mapping)
    )
