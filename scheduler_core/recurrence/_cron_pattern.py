"""The wall-clock pattern of one or more cron strings (their union), on naive microseconds (``_calendar``).

Like the other patterns (``_patterns``) it answers ``next(x)`` and ``count(a, b)`` without walking over
occurrences: a cron string without a year field depends on the month only through its shape (the month,
whether the year is a leap year, the weekday of the 1st), so the matching days and their times of day are
computed once per shape (at most 168) and cached with the strings; a count adds whole months, and whole
400-year cycles of the Gregorian calendar when the range spans them.
"""

from __future__ import annotations

import calendar
import functools
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from scheduler_core.recurrence._calendar import DAY_US, MAX_ORDINAL
from scheduler_core.recurrence._cron import CronExpression

__all__ = ["CronPattern", "cron_never_fires"]

_SECOND_US = 1_000_000
_CYCLE_MONTHS = 4800  # the Gregorian calendar repeats every 400 years
_MAX_MONTH_INDEX = 9999 * 12 + 11


@dataclass(frozen=True, slots=True)
class _Month:
    """The days of a month shape on which some string fires, the times of each, and running totals."""

    days: tuple[int, ...]
    times: tuple[tuple[int, ...], ...]
    #: ``before[i]``: candidates on ``days[:i]``.
    before: tuple[int, ...]

    @property
    def total(self) -> int:
        return self.before[-1]


def _nearest_weekday(day: int, days_in_month: int, weekday_of: dict[int, int]) -> int | None:
    """``dayW``: the weekday (Monday-Friday) nearest ``day`` within the month; None when it has no such day."""
    if day > days_in_month:
        return None
    weekday = weekday_of[day]
    if weekday == 6:  # Saturday: the Friday before, or the Monday after the 1st
        return day - 1 if day > 1 else day + 2
    if weekday == 0:  # Sunday: the Monday after, or the Friday before the last day
        return day + 1 if day < days_in_month else day - 2
    return day


def _fires_on(cron: CronExpression, day: int, days_in_month: int, weekday_of: dict[int, int]) -> bool:
    """Whether ``cron``'s day fields select ``day`` (weekdays as cron numbers them: 0 is Sunday)."""
    weekday = weekday_of[day]
    by_month_day = (
        day in cron.month_days
        or any(day == days_in_month - offset for offset in cron.last_offsets)
        or any(_nearest_weekday(n, days_in_month, weekday_of) == day for n in cron.nearest)
        or (cron.last_weekday and day == _nearest_weekday(days_in_month, days_in_month, weekday_of))
    )
    by_week_day = (
        weekday in cron.week_days
        or (weekday, (day - 1) // 7 + 1) in cron.nth
        or (weekday in cron.last_of and day + 7 > days_in_month)
    )
    return (by_month_day and by_week_day) if cron.days_and else (by_month_day or by_week_day)


def _times_of(cron: CronExpression) -> frozenset[int]:
    return frozenset(
        (hour * 3600 + minute * 60 + second) * _SECOND_US
        for hour in cron.hours
        for minute in cron.minutes
        for second in cron.seconds
    )


class _Tables:
    """What a set of cron strings fires on, per month shape; shared by every pattern of the same strings."""

    def __init__(self, crons: tuple[CronExpression, ...]) -> None:
        self._crons = crons
        self._times = [_times_of(cron) for cron in crons]
        self._by_mask: dict[int, tuple[int, ...]] = {}
        self._by_shape: dict[tuple[int, int, int], _Month] = {}
        self._cycle_total: int | None = None

    def month(self, month_index: int) -> _Month:
        return self._shape(_shape_of(month_index))

    def _shape(self, key: tuple[int, int, int]) -> _Month:
        found = self._by_shape.get(key)
        if found is None:
            month0, days_in_month, first_weekday = key
            found = self._by_shape[key] = self._build(month0 + 1, days_in_month, first_weekday)
        return found

    def _build(self, month: int, days_in_month: int, first_weekday: int) -> _Month:
        # cron numbers weekdays from Sunday (0); date.weekday() from Monday (0)
        weekday_of = {day: (first_weekday + day) % 7 for day in range(1, days_in_month + 1)}
        days: list[int] = []
        times: list[tuple[int, ...]] = []
        before = [0]
        for day in range(1, days_in_month + 1):
            mask = 0
            for i, cron in enumerate(self._crons):
                if month in cron.months and _fires_on(cron, day, days_in_month, weekday_of):
                    mask |= 1 << i
            if mask:
                day_times = self._union(mask)
                days.append(day)
                times.append(day_times)
                before.append(before[-1] + len(day_times))
        return _Month(tuple(days), tuple(times), tuple(before))

    def _union(self, mask: int) -> tuple[int, ...]:
        found = self._by_mask.get(mask)
        if found is None:
            chosen = [times for i, times in enumerate(self._times) if mask >> i & 1]
            found = self._by_mask[mask] = tuple(sorted(frozenset().union(*chosen)))
        return found

    def cycle_total(self) -> int:
        """Candidates in 400 years (any 4,800 consecutive months)."""
        if self._cycle_total is None:
            self._cycle_total = sum(times * self._shape(key).total for key, times in _cycle_shapes().items())
        return self._cycle_total

    def never(self) -> bool:
        """True when no month of any shape has a day the strings fire on."""
        return self.cycle_total() == 0


def _shape_of(month_index: int) -> tuple[int, int, int]:
    """What a month's matching days depend on: (month - 1, its length, the weekday of its 1st)."""
    year, month0 = divmod(month_index, 12)
    first_weekday, days_in_month = calendar.monthrange(year, month0 + 1)
    return (month0, days_in_month, first_weekday)


@functools.cache
def _cycle_shapes() -> Counter[tuple[int, int, int]]:
    """How often each month shape occurs in 400 years (at most 12 x 2 x 7 = 168 shapes)."""
    return Counter(_shape_of(2000 * 12 + i) for i in range(_CYCLE_MONTHS))


@functools.lru_cache(maxsize=512)
def _tables(crons: tuple[CronExpression, ...]) -> _Tables:
    return _Tables(crons)


def cron_never_fires(crons: Sequence[CronExpression]) -> bool:
    """True when no day of any year matches (``0 0 30 2 *``, ``0 0 31W 4 *``)."""
    return _tables(tuple(crons)).never()


class CronPattern:
    """The union of ``crons`` from ``base`` (naive microseconds) on: each wall time matching any string."""

    def __init__(self, base: int, crons: Sequence[CronExpression]) -> None:
        self.base = base
        self._tables = _tables(tuple(crons))

    def next(self, x: int) -> int | None:
        """The first candidate at or after ``x``."""
        if self._tables.never():
            return None
        x = max(x, self.base)
        day, time_of_day = divmod(x, DAY_US)
        if day > MAX_ORDINAL:
            return None
        start = date.fromordinal(day)
        month_index, first_day = start.year * 12 + start.month - 1, start.day
        for _ in range(_CYCLE_MONTHS + 1):
            if month_index > _MAX_MONTH_INDEX:
                return None
            month = self._tables.month(month_index)
            i = bisect_left(month.days, first_day)
            while i < len(month.days):
                times = month.times[i]
                if month.days[i] == first_day:
                    j = bisect_left(times, time_of_day)
                    if j == len(times):
                        i += 1
                        continue
                    found = times[j]
                else:
                    found = times[0]
                year, month0 = divmod(month_index, 12)
                ordinal = date(year, month0 + 1, month.days[i]).toordinal()
                return ordinal * DAY_US + found if ordinal <= MAX_ORDINAL else None
            month_index, first_day, time_of_day = month_index + 1, 1, 0
        return None

    def _on_day(self, day: int, low: int, high: int) -> int:
        """Candidates on ``day`` with a time of day in ``[low, high)``."""
        d = date.fromordinal(day)
        month = self._tables.month(d.year * 12 + d.month - 1)
        i = bisect_left(month.days, d.day)
        if i == len(month.days) or month.days[i] != d.day:
            return 0
        times = month.times[i]
        return bisect_left(times, high) - bisect_left(times, low)

    def _before_day(self, month_index: int, day: int) -> int:
        """Candidates in month ``month_index`` on days before ``day``."""
        month = self._tables.month(month_index)
        return month.before[bisect_left(month.days, day)]

    def _whole_days(self, d0: int, d1: int) -> int:
        """Candidates on the days ``[d0, d1)``."""
        if d1 <= d0:
            return 0
        first, last = date.fromordinal(d0), date.fromordinal(d1 - 1)
        m0 = first.year * 12 + first.month - 1
        m1 = last.year * 12 + last.month - 1
        if m0 == m1:
            return self._before_day(m0, last.day + 1) - self._before_day(m0, first.day)
        total = self._tables.month(m0).total - self._before_day(m0, first.day)
        total += self._before_day(m1, last.day + 1)
        middle = m1 - m0 - 1
        cycles, rest = divmod(middle, _CYCLE_MONTHS)
        total += cycles * self._tables.cycle_total() if cycles else 0
        for month_index in range(m0 + 1, m0 + 1 + rest):
            total += self._tables.month(month_index).total
        return total

    def count(self, a: int, b: int) -> int:
        """Candidates in ``[a, b)`` (none before the base)."""
        a = max(a, self.base)
        if b <= a:
            return 0
        da, ta = divmod(a, DAY_US)
        db, tb = divmod(b, DAY_US)
        if da == db:
            return self._on_day(da, ta, tb)
        return self._on_day(da, ta, DAY_US) + self._whole_days(da + 1, db) + self._on_day(db, 0, tb)
