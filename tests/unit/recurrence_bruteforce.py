"""An independent, deliberately naive enumerator of recurrence occurrences, for property tests.

It shares no code with ``scheduler_core.recurrence``: it reads the recurrence dict directly, walks every
wall-clock day in a window and, on each day that passes the day rules, every minute of the day, checking
each candidate against the rules as written in docs/recurrence.md. It is slow and simple on purpose.

Scope: the canonical JSON form (camelCase keys, any enum casing), IANA zone names only.
"""

from __future__ import annotations

import calendar
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def _as_list(value: Any) -> list[Any] | None:
    if value is None:
        return None
    return value if isinstance(value, list) else [value]


def _wall_to_utc(naive: datetime, zone: Any) -> datetime | None:
    """fold=0 instant of a wall time, or None when the wall time does not exist in the zone."""
    if zone is UTC:
        return naive.replace(tzinfo=UTC)
    instant = naive.replace(tzinfo=zone).astimezone(UTC)
    back = instant.astimezone(zone).replace(tzinfo=None)
    return instant if back == naive else None


def _month_day_matches(day: date, schedule: dict[str, Any], default_day: int) -> bool:
    dim = calendar.monthrange(day.year, day.month)[1]
    month_days = _as_list(schedule.get("monthDays"))
    occurrences = schedule.get("monthlyOccurrences")
    if month_days is None and occurrences is None:
        return day.day == default_day
    for value in month_days or []:
        if (value > 0 and day.day == value) or (value < 0 and day.day == dim + 1 + value):
            return True
    for item in occurrences or []:
        wanted = _WEEKDAYS.index(item["day"].lower())
        nth = item.get("Occurrence", item.get("occurrence"))
        if day.weekday() != wanted:
            continue
        from_start = (day.day - 1) // 7 + 1
        from_end = (dim - day.day) // 7 + 1
        if nth is None or (nth > 0 and from_start == nth) or (nth < 0 and from_end == -nth):
            return True
    return False


def _rule_instants(recurrence: dict[str, Any], base: datetime, until: datetime) -> list[datetime]:
    freq = recurrence["frequency"].lower()
    n = recurrence.get("interval") or 1
    schedule = recurrence.get("schedule") or {}
    has_schedule = any(v is not None for v in schedule.values())
    hours = _as_list(schedule.get("hours"))
    minutes = _as_list(schedule.get("minutes"))
    tz_name = recurrence.get("timeZone")
    out: list[datetime] = []

    if freq in ("minute", "hour") and not has_schedule:
        step = timedelta(minutes=n) if freq == "minute" else timedelta(hours=n)
        t = base
        # walk every whole second-aligned minute mark from the base, keep those on the step grid
        while t <= until:
            if (t - base) % step == timedelta(0):
                out.append(t)
            t += timedelta(minutes=1)
        return out

    zone: Any = ZoneInfo(tz_name) if tz_name and tz_name != "UTC" else UTC
    bw = base.astimezone(zone).replace(tzinfo=None)
    last_day = until.astimezone(zone).date() + timedelta(days=1)
    base_monday = bw.date() - timedelta(days=bw.weekday())
    week_days = [_WEEKDAYS.index(d.lower()) for d in _as_list(schedule.get("weekDays")) or []]
    months = _as_list(schedule.get("months"))

    day = bw.date()
    while day <= last_day:
        if freq == "day":
            ok = (day - bw.date()).days % n == 0
        elif freq == "week":
            weeks = (day - timedelta(days=day.weekday()) - base_monday).days // 7
            ok = weeks % n == 0 and day.weekday() in (week_days or [bw.weekday()])
        elif freq == "month":
            diff = (day.year - bw.year) * 12 + day.month - bw.month
            ok = diff % n == 0 and (months is None or day.month in months) and _month_day_matches(day, schedule, bw.day)
        elif freq == "year":
            ok = (
                (day.year - bw.year) % n == 0
                and day.month in (months or [bw.month])
                and _month_day_matches(day, schedule, bw.day)
            )
        else:  # minute, hour with a schedule: any day
            ok = True
        if ok:
            for h in range(24):
                for m in range(60):
                    if freq == "minute":
                        total = datetime(day.year, day.month, day.day, h, m) - bw.replace(second=0, microsecond=0)
                        good = (
                            (total.days * 1440 + total.seconds // 60) % n == 0
                            and (hours is None or h in hours)
                            and (minutes is None or m in minutes)
                        )
                    elif freq == "hour":
                        total = datetime(day.year, day.month, day.day, h) - bw.replace(
                            minute=0, second=0, microsecond=0
                        )
                        good = (
                            (total.days * 24 + total.seconds // 3600) % n == 0
                            and (hours is None or h in hours)
                            and m in (minutes if minutes is not None else [bw.minute])
                        )
                    else:
                        if hours is None:
                            hour_ok = h in (range(24) if minutes is not None else [bw.hour])
                        else:
                            hour_ok = h in hours
                        good = hour_ok and m in (minutes if minutes is not None else [bw.minute])
                    if not good:
                        continue
                    naive = datetime(day.year, day.month, day.day, h, m, bw.second, bw.microsecond)
                    if naive < bw:
                        continue
                    # the base's own wall time is the base instant (it may be the second instance of a
                    # repeated wall time); every other wall time is its first instance
                    instant = base if naive == bw else _wall_to_utc(naive, zone)
                    if instant is not None and instant <= until:
                        out.append(instant)
        day += timedelta(days=1)
    return sorted(out)


def series(
    recurrence: dict[str, Any] | None,
    start: datetime | None,
    created: datetime,
    until: datetime,
) -> list[datetime]:
    """Every occurrence of a job up to ``until`` (inclusive), per the startTime table."""
    if recurrence is None:
        only = start if start is not None and start >= created else created
        return [only] if only <= until else []
    base = start if start is not None else created
    rule = _rule_instants(recurrence, base, until)
    if start is None:
        result = [created] + [t for t in rule if t > created]
    else:
        low = max(start, created)
        result = [t for t in rule if t >= low]
    end = recurrence.get("endTime")
    if end is not None:
        end_dt = datetime.fromisoformat(end.replace("Z", "+00:00")).astimezone(UTC)
        result = [t for t in result if t <= end_dt]
    count = recurrence.get("count")
    if count is not None:
        result = result[:count]
    return [t for t in result if t <= until]
