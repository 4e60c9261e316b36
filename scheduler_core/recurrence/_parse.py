"""Parsing and validation of the JSON ``recurrence`` object into a :class:`Recurrence`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, tzinfo
from typing import Any

from scheduler_core.errors import ValidationError
from scheduler_core.recurrence._calendar import month_day_list, possible_month_shapes
from scheduler_core.recurrence._cron import CronExpression, parse_cron
from scheduler_core.recurrence._cron_pattern import cron_never_fires
from scheduler_core.recurrence._instants import parse_instant
from scheduler_core.recurrence._model import Frequency, MonthlyOccurrence, Recurrence, Schedule, WeekDay
from scheduler_core.timezones import UnknownTimeZoneError, resolve_time_zone

__all__ = ["MAX_CRON_STRINGS", "MAX_INTERVAL", "parse_frequency", "parse_recurrence", "parse_start_time"]

#: Largest ``interval`` per frequency (scheduler-advanced-complexity.md; a recurrence spans at most
#: 18 months, so a yearly recurrence can only have interval 1).
MAX_INTERVAL: dict[Frequency, int] = {
    Frequency.MINUTE: 1000,
    Frequency.HOUR: 1000,
    Frequency.DAY: 548,
    Frequency.WEEK: 78,
    Frequency.MONTH: 18,
    Frequency.YEAR: 1,
}

_FREQUENCIES = {f.value.lower(): f for f in Frequency}
_WEEKDAYS = {d.value.lower(): d for d in WeekDay}
_FREQUENCY_NAMES = ", ".join(f.value for f in Frequency)
_WEEKDAY_NAMES = ", ".join(d.value for d in WeekDay)

_RECURRENCE_KEYS = ("frequency", "interval", "count", "endTime", "schedule", "timeZone", "cron")
#: The most cron strings one recurrence may hold (a union).
MAX_CRON_STRINGS = 50
_SCHEDULE_KEYS = ("minutes", "hours", "weekDays", "monthDays", "monthlyOccurrences", "months")
_OCCURRENCE_KEYS = ("day", "Occurrence")


def _fields(data: object, path: str, known: tuple[str, ...]) -> dict[str, tuple[str, Any]]:
    """Map canonical key -> (key as written, value). Keys match case-insensitively; null means absent."""
    if not isinstance(data, Mapping):
        raise ValidationError(path, "must be a JSON object")
    by_lower = {key.lower(): key for key in known}
    out: dict[str, tuple[str, Any]] = {}
    for key, value in data.items():
        if not isinstance(key, str) or key.lower() not in by_lower:
            allowed = ", ".join(known)
            raise ValidationError(f"{path}.{key}", f"is not a known field (allowed: {allowed})")
        canonical = by_lower[key.lower()]
        if canonical in out:
            raise ValidationError(
                f"{path}.{key}", f"duplicates {path}.{out[canonical][0]} (keys are not case-sensitive)"
            )
        out[canonical] = (key, value)
    return {k: v for k, v in out.items() if v[1] is not None}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(value: object, path: str, low: int, high: int, what: str = "an integer") -> int:
    if not _is_int(value):
        raise ValidationError(path, f"must be {what} between {low} and {high}")
    assert isinstance(value, int)
    if not low <= value <= high:
        raise ValidationError(path, f"must be {what} between {low} and {high}, not {value}")
    return value


def _enum_text(value: object, path: str, table: Mapping[str, Any], names: str) -> Any:
    if not isinstance(value, str) or value.strip().lower() not in table:
        shown = repr(value) if isinstance(value, str) else f"a {type(value).__name__}"
        raise ValidationError(path, f"must be one of {names} (any casing), not {shown}")
    return table[value.strip().lower()]


def parse_frequency(value: object, path: str) -> Frequency:
    """A frequency name in any casing."""
    result: Frequency = _enum_text(value, path, _FREQUENCIES, _FREQUENCY_NAMES)
    return result


def _int_list(value: object, path: str, check: Any) -> tuple[int, ...]:
    """An integer or an array of integers (both are documented), deduplicated in order."""
    if _is_int(value):
        return (check(value, path),)
    if not isinstance(value, list):
        raise ValidationError(path, "must be an integer or an array of integers")
    if not value:
        raise ValidationError(path, "must not be empty (an empty list can never match)")
    out: list[int] = []
    for i, item in enumerate(value):
        number = check(item, f"{path}[{i}]")
        if number not in out:
            out.append(number)
    return tuple(out)


def _month_day(value: object, path: str) -> int:
    rule = "must be an integer between 1 and 31 or between -31 and -1 (counted from the end of the month)"
    if not _is_int(value):
        raise ValidationError(path, rule)
    assert isinstance(value, int)
    if value == 0 or not -31 <= value <= 31:
        raise ValidationError(path, f"{rule}, not {value}")
    return value


def _parse_schedule(data: object, path: str, frequency: Frequency) -> Schedule:
    fields = _fields(data, path, _SCHEDULE_KEYS)
    values: dict[str, Any] = {}
    monthly = frequency in (Frequency.MONTH, Frequency.YEAR)
    for canonical, (key, value) in fields.items():
        here = f"{path}.{key}"
        if canonical == "minutes":
            values["minutes"] = _int_list(value, here, lambda v, p: _int(v, p, 0, 59))
        elif canonical == "hours":
            values["hours"] = _int_list(value, here, lambda v, p: _int(v, p, 0, 23))
        elif canonical == "weekDays":
            if frequency is not Frequency.WEEK:
                raise ValidationError(here, f"can only be used with frequency Week, not {frequency.value}")
            items = value if isinstance(value, list) else [value]
            if not items:
                raise ValidationError(here, "must not be empty (an empty list can never match)")
            if len(items) > 7:
                raise ValidationError(here, "must have at most 7 values")
            days: list[WeekDay] = []
            for i, item in enumerate(items):
                item_path = f"{here}[{i}]" if isinstance(value, list) else here
                day = _enum_text(item, item_path, _WEEKDAYS, _WEEKDAY_NAMES)
                if day not in days:
                    days.append(day)
            values["week_days"] = tuple(days)
        elif canonical == "monthDays":
            if not monthly:
                raise ValidationError(here, f"can only be used with frequency Month, not {frequency.value}")
            values["month_days"] = _int_list(value, here, _month_day)
        elif canonical == "monthlyOccurrences":
            if not monthly:
                raise ValidationError(here, f"can only be used with frequency Month, not {frequency.value}")
            values["monthly_occurrences"] = _parse_occurrences(value, here)
        else:  # months
            if not monthly:
                raise ValidationError(here, f"can only be used with frequency Month or Year, not {frequency.value}")
            values["months"] = _int_list(value, here, lambda v, p: _int(v, p, 1, 12))
    schedule = Schedule(**values)
    _check_month_shapes(schedule, path)
    return schedule


def _parse_occurrences(value: object, path: str) -> tuple[MonthlyOccurrence, ...]:
    if not isinstance(value, list):
        raise ValidationError(path, "must be an array of {day, Occurrence} objects")
    if not value:
        raise ValidationError(path, "must not be empty (an empty list can never match)")
    out: list[MonthlyOccurrence] = []
    for i, item in enumerate(value):
        here = f"{path}[{i}]"
        fields = _fields(item, here, _OCCURRENCE_KEYS)
        if "day" not in fields:
            raise ValidationError(f"{here}.day", "is required")
        day_key, day_value = fields["day"]
        day = _enum_text(day_value, f"{here}.{day_key}", _WEEKDAYS, _WEEKDAY_NAMES)
        nth: int | None = None
        if "Occurrence" in fields:
            occ_key, occ_value = fields["Occurrence"]
            occ_path = f"{here}.{occ_key}"
            nth = _int(occ_value, occ_path, -5, 5)
            if nth == 0:
                raise ValidationError(occ_path, "must be between 1 and 5 or between -5 and -1, not 0")
        occurrence = MonthlyOccurrence(day, nth)
        if occurrence not in out:
            out.append(occurrence)
    return tuple(out)


def _check_month_shapes(schedule: Schedule, path: str) -> None:
    """Reject day rules that no selected month can ever satisfy (monthDays [30] with months [2])."""
    if schedule.month_days is None and schedule.monthly_occurrences is None:
        return
    occurrences = [(o.day.number, o.occurrence) for o in schedule.monthly_occurrences or ()]
    months = schedule.months or tuple(range(1, 13))
    for month in months:
        for dim, first_wd in possible_month_shapes(month):
            if month_day_list(schedule.month_days, occurrences, None, dim, first_wd):
                return
    field = "monthDays" if schedule.monthly_occurrences is None else "monthlyOccurrences"
    raise ValidationError(
        f"{path}.{field}",
        "can never fire: no day it names exists in any of the selected months",
    )


def _parse_time_zone(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(path, "must be a time zone name (IANA such as Europe/Berlin, or Windows)")
    try:
        return resolve_time_zone(value).name
    except UnknownTimeZoneError:
        raise ValidationError(
            path,
            f"is not a known time zone: {value!r} (use an IANA name such as Europe/Berlin "
            "or a Windows name such as W. Europe Standard Time)",
        ) from None


def parse_recurrence(data: Mapping[str, Any] | None, path: str = "properties.recurrence") -> Recurrence | None:
    """Validate and normalise a JSON ``recurrence`` object (None stays None).

    Keys match without regard to case (so both ``Occurrence`` and ``occurrence`` work), enum values are
    case-insensitive, a JSON null counts as absent, and every other deviation raises
    :class:`ValidationError` naming the field (``{path}.schedule.hours[0]``) and the rule.
    """
    if data is None:
        return None
    fields = _fields(data, path, _RECURRENCE_KEYS)
    count: int | None = None
    if "count" in fields:
        key, value = fields["count"]
        count = _int(value, f"{path}.{key}", 1, 2**31 - 1)
    time_zone: str | None = None
    if "timeZone" in fields:
        key, value = fields["timeZone"]
        time_zone = _parse_time_zone(value, f"{path}.{key}")
    cron: tuple[CronExpression, ...] | None = None
    if "cron" in fields:
        cron = _parse_crons(fields, path, time_zone)
    zone_name = time_zone or next((item.zone for item in cron or () if item.zone is not None), None)
    zone: tzinfo | None = resolve_time_zone(zone_name).zone if zone_name is not None else None
    end_time: datetime | None = None
    if "endTime" in fields:
        key, value = fields["endTime"]
        end_time = parse_instant(value, f"{path}.{key}", zone)
    if cron is not None:
        return Recurrence(
            None, count=count, end_time=end_time, time_zone=time_zone, cron=cron, cron_list=_is_list(fields)
        )
    frequency, interval, schedule = _parse_rule(fields, path)
    return Recurrence(
        frequency=frequency,
        interval=interval,
        count=count,
        end_time=end_time,
        schedule=schedule,
        time_zone=time_zone,
    )


def _is_list(fields: Mapping[str, tuple[str, Any]]) -> bool:
    return isinstance(fields["cron"][1], list)


def _parse_rule(fields: Mapping[str, tuple[str, Any]], path: str) -> tuple[Frequency, int | None, Schedule | None]:
    """``frequency`` (required without ``cron``), ``interval`` and ``schedule``."""
    if "frequency" not in fields:
        raise ValidationError(f"{path}.frequency", f"is required (one of {_FREQUENCY_NAMES})")
    key, value = fields["frequency"]
    frequency = parse_frequency(value, f"{path}.{key}")
    interval: int | None = None
    if "interval" in fields:
        key, value = fields["interval"]
        high = MAX_INTERVAL[frequency]
        interval = _int(value, f"{path}.{key}", 1, high, f"an integer (for frequency {frequency.value})")
    schedule: Schedule | None = None
    if "schedule" in fields:
        key, value = fields["schedule"]
        schedule = _parse_schedule(value, f"{path}.{key}", frequency)
    return frequency, interval, schedule


def _parse_crons(fields: Mapping[str, tuple[str, Any]], path: str, time_zone: str | None) -> tuple[CronExpression, ...]:
    """``cron``: one string or an array of 1 to :data:`MAX_CRON_STRINGS`; it replaces ``frequency``,
    ``interval`` and ``schedule``. A ``CRON_TZ=`` prefix must name the zone of ``timeZone`` (and of the
    other strings)."""
    key, value = fields["cron"]
    where = f"{path}.{key}"
    for other in ("frequency", "interval", "schedule"):
        if other in fields:
            raise ValidationError(
                f"{path}.{fields[other][0]}",
                f"cannot be given with {key}: a cron string replaces frequency, interval and schedule",
            )
    if isinstance(value, list):
        if not 1 <= len(value) <= MAX_CRON_STRINGS:
            raise ValidationError(where, f"must hold 1 to {MAX_CRON_STRINGS} cron strings, not {len(value):,}")
        texts = [(f"{where}[{i}]", item) for i, item in enumerate(value)]
    else:
        texts = [(where, value)]
    crons = tuple(parse_cron(text, at) for at, text in texts)
    zone = resolve_time_zone(time_zone).iana if time_zone is not None else None
    zone_at = f"{path}.{fields['timeZone'][0]}" if "timeZone" in fields else ""
    for (at, _), cron in zip(texts, crons, strict=True):
        if cron.zone is None:
            continue
        try:
            named = resolve_time_zone(cron.zone).iana
        except UnknownTimeZoneError:
            raise ValidationError(at, f"names an unknown time zone in its prefix: {cron.zone!r}") from None
        if zone is None:
            zone, zone_at = named, at
        elif named != zone:
            raise ValidationError(
                at, f"names the zone {named} in its prefix, but {zone_at} names {zone} (a recurrence has one zone)"
            )
    if cron_never_fires(crons):
        raise ValidationError(where, "can never fire: no day of any year matches (for example 0 0 30 2 *)")
    return crons


def parse_start_time(
    value: str | None, recurrence: Recurrence | None, path: str = "properties.startTime"
) -> datetime | None:
    """Parse a job's ``startTime``: without an offset it is wall time in the recurrence's time zone
    (UTC when the recurrence has none). Returns an aware UTC datetime, or None when absent."""
    if value is None:
        return None
    zone = recurrence.zone if recurrence is not None else None
    return parse_instant(value, path, zone)
