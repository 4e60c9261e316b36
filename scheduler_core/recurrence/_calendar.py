"""Calendar and time-zone arithmetic shared by the parser and the engine.

Wall-clock times are handled as integers: microseconds since 0001-01-01T00:00 of the proleptic Gregorian
calendar ("naive microseconds"). Days are proleptic ordinals (``date.toordinal()``); months are indices
``year * 12 + month - 1``.
"""

from __future__ import annotations

import calendar
import functools
from bisect import bisect_left
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta, tzinfo

__all__ = [
    "DAY_US",
    "MINUTE_US",
    "days_in_month",
    "month_day_list",
    "naive_from_us",
    "us_from_naive",
    "zone_gaps",
]

MINUTE_US = 60_000_000
HOUR_US = 60 * MINUTE_US
DAY_US = 24 * HOUR_US
_ORIGIN = datetime(1, 1, 1)
# The last wall-clock day the engine produces occurrences on (datetime overflows shortly after).
MAX_ORDINAL = date(9999, 12, 30).toordinal()
MAX_NAIVE_US = MAX_ORDINAL * DAY_US


def us_from_naive(dt: datetime) -> int:
    """Naive microseconds of a naive (or wall-clock) datetime; tzinfo is ignored."""
    return ((dt.toordinal() * 86_400 + dt.hour * 3600 + dt.minute * 60 + dt.second) * 1_000_000) + (dt.microsecond)


def naive_from_us(value: int) -> datetime:
    """The naive datetime of naive microseconds."""
    days, rest = divmod(value, DAY_US)
    return datetime.fromordinal(days) + timedelta(microseconds=rest)


def days_in_month(month_index: int) -> int:
    year, month0 = divmod(month_index, 12)
    return calendar.monthrange(year, month0 + 1)[1]


def first_weekday(month_index: int) -> int:
    year, month0 = divmod(month_index, 12)
    return date(year, month0 + 1, 1).weekday()


def month_day_list(
    month_days: Iterable[int] | None,
    occurrences: Iterable[tuple[int, int | None]] | None,
    default_day: int | None,
    dim: int,
    first_wd: int,
) -> tuple[int, ...]:
    """The sorted days (1..dim) on which a monthly rule fires in a month with ``dim`` days whose first day
    is weekday ``first_wd``. ``month_days`` may be negative (from the end); ``occurrences`` are
    ``(weekday, n)`` pairs with n in -5..5 or None for every such weekday. When neither is given,
    ``default_day`` is used (and skipped when the month is too short, never clamped).
    """
    days: set[int] = set()
    if month_days is None and occurrences is None:
        if default_day is not None and default_day <= dim:
            days.add(default_day)
        return tuple(sorted(days))
    for value in month_days or ():
        day = value if value > 0 else dim + 1 + value
        if 1 <= day <= dim:
            days.add(day)
    for weekday, nth in occurrences or ():
        first = 1 + (weekday - first_wd) % 7
        matching = list(range(first, dim + 1, 7))
        if nth is None:
            days.update(matching)
        elif nth > 0:
            if nth <= len(matching):
                days.add(matching[nth - 1])
        elif -nth <= len(matching):
            days.add(matching[nth])
    return tuple(sorted(days))


def possible_month_shapes(month: int) -> list[tuple[int, int]]:
    """Every (days in month, weekday of the 1st) a calendar month (1..12) can have."""
    dims = {2: (28, 29), 4: (30,), 6: (30,), 9: (30,), 11: (30,)}.get(month, (31,))
    return [(dim, wd) for dim in dims for wd in range(7)]


def zone_gaps(zone: tzinfo, year: int) -> tuple[tuple[int, int], ...]:
    """Wall-clock gaps (naive microseconds ``[start, end)``) made by transitions in UTC year ``year``.
    A wall time inside a gap does not exist (spring forward)."""
    return _zone_transitions(zone, year)[0]


def zone_folds(zone: tzinfo, year: int) -> tuple[tuple[int, int], ...]:
    """Wall-clock folds (naive microseconds ``[start, end)``) made by transitions in UTC year ``year``.
    A wall time inside a fold happens twice (fall back)."""
    return _zone_transitions(zone, year)[1]


_Ranges = tuple[tuple[int, int], ...]


@functools.lru_cache(maxsize=4096)
def _zone_transitions(zone: tzinfo, year: int) -> tuple[_Ranges, _Ranges]:
    """Gaps and folds of a zone in UTC year ``year``. Transitions are found by sampling the UTC offset
    daily and bisecting each change to the second; two changes within one day are not expected in real
    zone data."""
    if zone is UTC or year < 2 or year > 9998:
        return (), ()
    start = datetime(year, 1, 1, tzinfo=UTC)
    samples = [start + timedelta(days=i) for i in range(367)]
    offsets = [s.astimezone(zone).utcoffset() or timedelta(0) for s in samples]
    gaps: list[tuple[int, int]] = []
    folds: list[tuple[int, int]] = []
    for i in range(len(samples) - 1):
        before, after = offsets[i], offsets[i + 1]
        if before == after:
            continue
        lo, hi = samples[i], samples[i + 1]  # offset(lo) == before, offset(hi) == after
        while hi - lo > timedelta(seconds=1):
            mid = lo + (hi - lo) / 2
            mid = mid.replace(microsecond=0)
            if mid <= lo:
                break
            if (mid.astimezone(zone).utcoffset() or timedelta(0)) == before:
                lo = mid
            else:
                hi = mid
        if after > before:
            wall_start = us_from_naive((hi + before).replace(tzinfo=None))
            gaps.append((wall_start, wall_start + _us(after - before)))
        else:
            wall_start = us_from_naive((hi + after).replace(tzinfo=None))
            folds.append((wall_start, wall_start + _us(before - after)))
    return tuple(gaps), tuple(folds)


def _us(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def gaps_between(zone: tzinfo, start_us: int, end_us: int) -> list[tuple[int, int]]:
    """Gaps of ``zone`` overlapping the naive range ``[start_us, end_us)``, clipped to it."""
    if zone is UTC or end_us <= start_us:
        return []
    first_year = naive_from_us(max(start_us - DAY_US, DAY_US)).year
    last_year = naive_from_us(min(end_us + DAY_US, MAX_NAIVE_US)).year
    out: list[tuple[int, int]] = []
    for year in range(first_year, last_year + 1):
        for g0, g1 in zone_gaps(zone, year):
            lo, hi = max(g0, start_us), min(g1, end_us)
            if lo < hi:
                out.append((lo, hi))
    return out


def gap_end(zone: tzinfo, naive_us: int) -> int | None:
    """The end of the gap containing ``naive_us``, or None if the wall time exists."""
    return _range_end(zone_gaps, zone, naive_us)


def fold_end(zone: tzinfo, naive_us: int) -> int | None:
    """The end of the fold containing ``naive_us``, or None if the wall time is not repeated."""
    return _range_end(zone_folds, zone, naive_us)


def in_gap(zone: tzinfo, naive_us: int) -> bool:
    """True when the wall time ``naive_us`` does not exist in ``zone``."""
    return _range_end(zone_gaps, zone, naive_us) is not None


def _range_end(table: Callable[[tzinfo, int], _Ranges], zone: tzinfo, naive_us: int) -> int | None:
    day = naive_us // DAY_US
    year = date.fromordinal(day).year if 0 < day <= MAX_ORDINAL else 1
    for y in (year, year - 1) if day - date(year, 1, 1).toordinal() < 2 else (year,):
        ranges = table(zone, y)
        if not ranges:
            continue
        i = bisect_left(ranges, (naive_us + 1, 0)) - 1
        if i >= 0 and ranges[i][0] <= naive_us < ranges[i][1]:
            return ranges[i][1]
    return None
