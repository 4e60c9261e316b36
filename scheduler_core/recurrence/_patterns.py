"""Wall-clock occurrence patterns, on naive microseconds (see ``_calendar``).

A pattern is the set of naive wall-clock times a recurrence produces, ignoring time zones, ``count``,
``endTime`` and the creation time; it starts at the base (the start time, or the creation time) and never
yields anything before it. Each pattern answers two questions in time independent of how far the base
lies in the past:

* ``next(x)``: the first candidate at or after ``x`` (jumping straight to the period that holds ``x``);
* ``count(a, b)``: how many candidates lie in ``[a, b)`` (arithmetic per period or per month, never a walk
  over occurrences).

``TickPattern`` serves Minute and Hour frequencies; ``DayPattern`` (with a day rule) serves Day, Week,
Month and Year.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from datetime import date
from typing import Protocol

from scheduler_core.recurrence._calendar import (
    DAY_US,
    MAX_NAIVE_US,
    MAX_ORDINAL,
    MINUTE_US,
    days_in_month,
    first_weekday,
    month_day_list,
)

__all__ = ["DailyRule", "DayPattern", "MonthlyRule", "Pattern", "TickPattern", "WeeklyRule"]

_MINUTES_PER_DAY = 1440
# A Gregorian calendar repeats every 400 years = 4800 months; any month-based rule that has not produced
# a day after this many periods never will.
_MONTH_SEARCH_LIMIT = 4800 * 12 + 24


class Pattern(Protocol):
    base: int

    def next(self, x: int) -> int | None: ...

    def count(self, a: int, b: int) -> int: ...


class TickPattern:
    """Minute or Hour frequency: periods of ``step`` minutes from ``origin`` (a naive minute index).

    Each period holds the candidates ``origin + k * step + offset`` for ``offset`` in ``offsets`` (Minute:
    ``[0]``; Hour: the schedule's minutes), each at ``sub`` microseconds into its minute, kept when its
    wall-clock hour is in ``hours`` and its minute in ``minutes`` (None = any). Because the minute-of-day of
    a period start repeats every ``lcm(step, 1440) / step`` periods, the allowed offsets per period are
    precomputed once for that cycle, with prefix counts and the distance to the next non-empty period.
    """

    def __init__(
        self,
        base: int,
        *,
        origin: int,
        step: int,
        offsets: Sequence[int],
        sub: int,
        hours: frozenset[int] | None,
        minutes: frozenset[int] | None,
    ) -> None:
        self.base = base
        self._origin = origin
        self._step = step
        self._sub = sub
        self._zero = origin * MINUTE_US + sub
        cycle = math.lcm(step, _MINUTES_PER_DAY) // step
        self._cycle = cycle
        allowed: list[tuple[int, ...]] = []
        for j in range(cycle):
            start = (origin + j * step) % _MINUTES_PER_DAY
            kept: list[int] = []
            for offset in offsets:
                hour, minute = divmod((start + offset) % _MINUTES_PER_DAY, 60)
                if (hours is None or hour in hours) and (minutes is None or minute in minutes):
                    kept.append(offset)
            allowed.append(tuple(kept))
        self._allowed = allowed
        prefix = [0]
        for period in allowed:
            prefix.append(prefix[-1] + len(period))
        self._prefix = prefix
        self._per_cycle = prefix[-1]
        # distance (in periods, 1..cycle) from position j to the next position with candidates
        dist: list[int | None] = [None] * cycle
        if self._per_cycle:
            nxt: int | None = None
            for j in range(2 * cycle - 1, -1, -1):
                if j < cycle:
                    dist[j] = nxt - j if nxt is not None else None
                if allowed[j % cycle]:
                    nxt = j
        self._dist = dist

    def _relative_minutes(self, x: int) -> int:
        """How many relative minutes r satisfy ``zero + r * MINUTE < x`` (r >= 0)."""
        y = x - self._zero
        if y <= 0:
            return 0
        return -(-y // MINUTE_US)

    def next(self, x: int) -> int | None:
        if self._per_cycle == 0:
            return None
        x = max(x, self.base)
        periods, rem = divmod(self._relative_minutes(x), self._step)
        j = periods % self._cycle
        kept = self._allowed[j]
        i = bisect_left(kept, rem)
        if i < len(kept):
            offset = kept[i]
        else:
            distance = self._dist[j]
            assert distance is not None
            periods += distance
            offset = self._allowed[(j + distance) % self._cycle][0]
        result = self._zero + (periods * self._step + offset) * MINUTE_US
        return result if result < MAX_NAIVE_US else None

    def _before(self, x: int) -> int:
        periods, rem = divmod(self._relative_minutes(x), self._step)
        cycles, j = divmod(periods, self._cycle)
        return cycles * self._per_cycle + self._prefix[j] + bisect_left(self._allowed[j], rem)

    def count(self, a: int, b: int) -> int:
        a = max(a, self.base)
        if b <= a:
            return 0
        return self._before(b) - self._before(a)


class DayRule(Protocol):
    def is_day(self, day: int) -> bool: ...

    def next_day(self, day: int) -> int | None: ...

    def count_days(self, d0: int, d1: int) -> int: ...


class DailyRule:
    """Every ``step`` days from day ``origin``."""

    def __init__(self, origin: int, step: int) -> None:
        self._origin = origin
        self._step = step

    def is_day(self, day: int) -> bool:
        return day >= self._origin and (day - self._origin) % self._step == 0

    def next_day(self, day: int) -> int | None:
        if day <= self._origin:
            return self._origin
        result = self._origin - ((self._origin - day) // self._step) * self._step
        return result if result <= MAX_ORDINAL else None

    def _before(self, day: int) -> int:
        return 0 if day <= self._origin else -((self._origin - day) // self._step)

    def count_days(self, d0: int, d1: int) -> int:
        return max(0, self._before(d1) - self._before(d0))


class WeeklyRule:
    """The given weekdays (0 = Monday) of every ``step``-th week, weeks starting on Monday ``monday``."""

    def __init__(self, monday: int, step: int, weekdays: Sequence[int]) -> None:
        self._monday = monday
        self._step = step
        self._weekdays = tuple(sorted(set(weekdays)))
        self._set = frozenset(self._weekdays)

    def is_day(self, day: int) -> bool:
        week, weekday = divmod(day - self._monday, 7)
        return week >= 0 and week % self._step == 0 and weekday in self._set

    def next_day(self, day: int) -> int | None:
        day = max(day, self._monday)
        week, weekday = divmod(day - self._monday, 7)
        if week % self._step == 0:
            i = bisect_left(self._weekdays, weekday)
            if i < len(self._weekdays):
                return day - weekday + self._weekdays[i]
        week = (week // self._step + 1) * self._step
        result = self._monday + 7 * week + self._weekdays[0]
        return result if result <= MAX_ORDINAL else None

    def _before(self, day: int) -> int:
        if day <= self._monday:
            return 0
        week, weekday = divmod(day - self._monday, 7)
        full = -(-week // self._step)
        partial = bisect_left(self._weekdays, weekday) if week % self._step == 0 else 0
        return full * len(self._weekdays) + partial

    def count_days(self, d0: int, d1: int) -> int:
        return max(0, self._before(d1) - self._before(d0))


class MonthlyRule:
    """Month (``years`` False: every ``step`` months from month index ``origin``, limited to ``months``)
    or Year (``years`` True: every ``step`` years from the year of ``origin``, in ``months``), on the days
    given by ``month_days``/``occurrences`` or else on ``default_day`` (skipped where it does not exist).
    """

    def __init__(
        self,
        *,
        origin: int,
        step: int,
        years: bool,
        months: frozenset[int] | None,
        month_days: Sequence[int] | None,
        occurrences: Sequence[tuple[int, int | None]] | None,
        default_day: int,
    ) -> None:
        self._origin = origin
        self._step = step
        self._years = years
        if years and months is None:
            months = frozenset({origin % 12 + 1})
        self._months = months
        self._sorted_months = tuple(m - 1 for m in sorted(months)) if months is not None else None
        self._month_days = tuple(month_days) if month_days is not None else None
        self._occurrences = tuple(occurrences) if occurrences is not None else None
        self._default_day = default_day
        self._shapes: dict[tuple[int, int], tuple[int, ...]] = {}
        self._by_month: dict[int, tuple[int, ...]] = {}

    def days_of(self, month_index: int) -> tuple[int, ...]:
        """The sorted days (1-based) of a candidate month on which the rule fires."""
        days = self._by_month.get(month_index)
        if days is not None:
            return days
        key = (days_in_month(month_index), first_weekday(month_index))
        days = self._shapes.get(key)
        if days is None:
            days = month_day_list(self._month_days, self._occurrences, self._default_day, *key)
            self._shapes[key] = days
        if len(self._by_month) >= 4096:
            self._by_month.clear()
        self._by_month[month_index] = days
        return days

    def is_month(self, month_index: int) -> bool:
        if self._years:
            year = month_index // 12
            origin_year = self._origin // 12
            if year < origin_year or (year - origin_year) % self._step:
                return False
        elif month_index < self._origin or (month_index - self._origin) % self._step:
            return False
        return self._months is None or month_index % 12 + 1 in self._months

    def next_month(self, month_index: int) -> int | None:
        """The first candidate month at or after ``month_index``, or None."""
        if self._years:
            origin_year = self._origin // 12
            year, month0 = divmod(month_index, 12)
            if year < origin_year:
                year, month0 = origin_year, 0
            if (year - origin_year) % self._step:
                year, month0 = origin_year + ((year - origin_year) // self._step + 1) * self._step, 0
            months = self._sorted_months
            assert months is not None
            i = bisect_left(months, month0)
            if i == len(months):
                year, i = year + self._step, 0
            result = year * 12 + months[i]
        else:
            k = 0 if month_index <= self._origin else -((self._origin - month_index) // self._step)
            for _ in range(12):
                candidate = self._origin + k * self._step
                if self._months is None or candidate % 12 + 1 in self._months:
                    break
                k += 1
            else:
                return None
            result = candidate
        return result if result // 12 <= 9999 else None

    def is_day(self, day: int) -> bool:
        d = date.fromordinal(day)
        month_index = d.year * 12 + d.month - 1
        return self.is_month(month_index) and d.day in self.days_of(month_index)

    def next_day(self, day: int) -> int | None:
        if day > MAX_ORDINAL:
            return None
        d = date.fromordinal(day)
        month_index, dom = d.year * 12 + d.month - 1, d.day
        for _ in range(_MONTH_SEARCH_LIMIT):
            found = self.next_month(month_index)
            if found is None:
                return None
            if found != month_index:
                month_index, dom = found, 1
            days = self.days_of(month_index)
            i = bisect_left(days, dom)
            if i < len(days):
                year, month0 = divmod(month_index, 12)
                result = date(year, month0 + 1, days[i]).toordinal()
                return result if result <= MAX_ORDINAL else None
            month_index, dom = month_index + 1, 1
        return None

    def count_days(self, d0: int, d1: int) -> int:
        if d1 <= d0:
            return 0
        first, last = date.fromordinal(d0), date.fromordinal(d1 - 1)
        first_index = month_index = first.year * 12 + first.month - 1
        last_index = last.year * 12 + last.month - 1
        total = 0
        while True:
            found = self.next_month(month_index)
            if found is None or found > last_index:
                return total
            days = self.days_of(found)
            lo = first.day if found == first_index else 1
            hi = last.day if found == last_index else 31
            if lo == 1 and hi == 31:
                total += len(days)
            else:
                total += bisect_left(days, hi + 1) - bisect_left(days, lo)
            month_index = found + 1


class DayPattern:
    """Candidate days from a day rule, each at the same sorted times of day (microseconds)."""

    def __init__(self, base: int, rule: DayRule, times: Sequence[int]) -> None:
        self.base = base
        self._rule = rule
        self._times = tuple(sorted(set(times)))

    def next(self, x: int) -> int | None:
        x = max(x, self.base)
        day, tod = divmod(x, DAY_US)
        times = self._times
        if tod <= times[-1] and self._rule.is_day(day):
            return day * DAY_US + times[bisect_left(times, tod)]
        following = self._rule.next_day(day + 1)
        if following is None:
            return None
        return following * DAY_US + times[0]

    def count(self, a: int, b: int) -> int:
        a = max(a, self.base)
        if b <= a:
            return 0
        da, ta = divmod(a, DAY_US)
        db, tb = divmod(b, DAY_US)
        times = self._times
        rule = self._rule
        if da == db:
            return bisect_left(times, tb) - bisect_left(times, ta) if rule.is_day(da) else 0
        total = len(times) * rule.count_days(da + 1, db)
        if rule.is_day(da):
            total += len(times) - bisect_left(times, ta)
        if rule.is_day(db):
            total += bisect_left(times, tb)
        return total
