"""The wall-clock pattern of one or more cron strings (their union), on naive microseconds (``_calendar``).

Like the other patterns (``_patterns``) it answers ``next(x)`` and ``count(a, b)`` without walking over
occurrences. A cron string fires at whole seconds: the seconds of a day it fires at are a bitset of 86,400
bits (a Python integer), so the union of several strings on a day is an OR, the next second a shift and a
lowest-bit, a count a popcount: each costs microseconds however many seconds match, and no list of times is
ever built. A string without a year field depends on the month only through its shape (the month, its
length, the weekday of its 1st): which strings fire on which days is computed once per shape (at most 168)
and cached with the strings; a count adds whole months, and whole 400-year cycles of the Gregorian calendar
when the range spans them. :func:`cron_minimum_gap` finds the smallest gap between two instants exactly, over
a whole cycle, in the same terms.
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

__all__ = ["CronPattern", "cron_minimum_gap", "cron_never_fires"]

_SECOND_US = 1_000_000
_DAY_S = 86_400
_CYCLE_MONTHS = 4800  # the Gregorian calendar repeats every 400 years
_MAX_MONTH_INDEX = 9999 * 12 + 11


@dataclass(frozen=True, slots=True)
class _Month:
    """The days of a month shape on which some string fires, which strings (a bit mask each), and running
    totals of the seconds they fire at."""

    days: tuple[int, ...]
    masks: tuple[int, ...]
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


@functools.lru_cache(maxsize=4096)
def _day_bits(cron: CronExpression, days_in_month: int, first_weekday: int) -> int:
    """The days of a month that ``cron``'s day fields select (bit ``d``: day ``d``), for a month of
    ``days_in_month`` days whose 1st is ``first_weekday`` (``date.weekday()``: Monday is 0). What a cron's
    days are depends on nothing else, so a string has at most 4 x 7 of these whatever the year."""
    # cron numbers weekdays from Sunday (0); date.weekday() from Monday (0)
    weekday_of = {day: (first_weekday + day) % 7 for day in range(1, days_in_month + 1)}
    bits = 0
    for day in range(1, days_in_month + 1):
        if _fires_on(cron, day, days_in_month, weekday_of):
            bits |= 1 << day
    return bits


@functools.lru_cache(maxsize=256)
def _seconds_of(hours: tuple[int, ...], minutes: tuple[int, ...], seconds: tuple[int, ...]) -> int:
    """The bitset of the seconds of a day at which a string fires (bit ``s``: second ``s`` of the day)."""
    minute_bits = sum(1 << second for second in seconds)
    hour_bits = sum(minute_bits << (minute * 60) for minute in minutes)
    return sum(hour_bits << (hour * 3600) for hour in hours)


def _next_bit(bits: int, low: int) -> int | None:
    """The lowest set bit of ``bits`` at or above ``low``."""
    above = bits >> low
    return low + (above & -above).bit_length() - 1 if above else None


def _bits_below(bits: int, high: int) -> int:
    """How many bits of ``bits`` are set below ``high``."""
    return (bits & ((1 << high) - 1)).bit_count() if high > 0 else 0


def _shape_of(month_index: int) -> tuple[int, int, int]:
    """What a month's matching days depend on: (month - 1, its length, the weekday of its 1st)."""
    year, month0 = divmod(month_index, 12)
    first_weekday, days_in_month = calendar.monthrange(year, month0 + 1)
    return (month0, days_in_month, first_weekday)


@functools.cache
def _cycle_shapes() -> Counter[tuple[int, int, int]]:
    """How often each month shape occurs in 400 years (at most 12 x 2 x 7 = 168 shapes)."""
    return Counter(_shape_of(2000 * 12 + i) for i in range(_CYCLE_MONTHS))


class _Tables:
    """What a set of cron strings fires on, per month shape; shared by every pattern of the same strings."""

    def __init__(self, crons: tuple[CronExpression, ...]) -> None:
        self._crons = crons
        self._bits = [_seconds_of(cron.hours, cron.minutes, cron.seconds) for cron in crons]
        self._union_bits: dict[int, int] = {}
        self._sizes: dict[int, int] = {}
        self._by_shape: dict[tuple[int, int, int], _Month] = {}
        self._cycle_total: int | None = None

    def month(self, month_index: int) -> _Month:
        return self.shape(_shape_of(month_index))

    def shape(self, key: tuple[int, int, int]) -> _Month:
        found = self._by_shape.get(key)
        if found is None:
            month0, days_in_month, first_weekday = key
            found = self._by_shape[key] = self._build(month0 + 1, days_in_month, first_weekday)
        return found

    def _build(self, month: int, days_in_month: int, first_weekday: int) -> _Month:
        crons = [
            (1 << i, _day_bits(cron, days_in_month, first_weekday))
            for i, cron in enumerate(self._crons)
            if month in cron.months
        ]
        union = 0
        for _, day_bits in crons:
            union |= day_bits
        days: list[int] = []
        masks: list[int] = []
        before = [0]
        while union:
            day = (union & -union).bit_length() - 1
            union &= union - 1
            mask = sum(bit for bit, day_bits in crons if day_bits >> day & 1)
            days.append(day)
            masks.append(mask)
            before.append(before[-1] + self.size(mask))
        return _Month(tuple(days), tuple(masks), tuple(before))

    def bits(self, mask: int) -> int:
        """The seconds of a day at which the strings of ``mask`` fire (their union; the last 64 kept)."""
        found = self._union_bits.get(mask)
        if found is None:
            found = 0
            for i, bits in enumerate(self._bits):
                if mask >> i & 1:
                    found |= bits
            if len(self._union_bits) >= 64:
                self._union_bits.clear()
            self._union_bits[mask] = found
        return found

    def size(self, mask: int) -> int:
        """How many seconds of a day the strings of ``mask`` fire at."""
        found = self._sizes.get(mask)
        if found is None:
            found = self._sizes[mask] = self.bits(mask).bit_count()
        return found

    def cycle_total(self) -> int:
        """Candidates in 400 years (any 4,800 consecutive months)."""
        if self._cycle_total is None:
            self._cycle_total = sum(times * self.shape(key).total for key, times in _cycle_shapes().items())
        return self._cycle_total

    def never(self) -> bool:
        """True when no month of any shape has a day the strings fire on."""
        return self.cycle_total() == 0


@functools.lru_cache(maxsize=64)
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
        low = -(-time_of_day // _SECOND_US)  # the first whole second at or after x
        start = date.fromordinal(day)
        month_index, first_day = start.year * 12 + start.month - 1, start.day
        for _ in range(_CYCLE_MONTHS + 1):
            if month_index > _MAX_MONTH_INDEX:
                return None
            month = self._tables.month(month_index)
            for i in range(bisect_left(month.days, first_day), len(month.days)):
                second = _next_bit(self._tables.bits(month.masks[i]), low if month.days[i] == first_day else 0)
                if second is None:
                    continue
                year, month0 = divmod(month_index, 12)
                ordinal = date(year, month0 + 1, month.days[i]).toordinal()
                return ordinal * DAY_US + second * _SECOND_US if ordinal <= MAX_ORDINAL else None
            month_index, first_day, low = month_index + 1, 1, 0
        return None

    def _on_day(self, day: int, low: int, high: int) -> int:
        """Candidates on ``day`` with a time of day (microseconds) in ``[low, high)``."""
        d = date.fromordinal(day)
        month = self._tables.month(d.year * 12 + d.month - 1)
        i = bisect_left(month.days, d.day)
        if i == len(month.days) or month.days[i] != d.day:
            return 0
        bits = self._tables.bits(month.masks[i])
        return _bits_below(bits, -(-high // _SECOND_US)) - _bits_below(bits, -(-low // _SECOND_US))

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
        cycles, rest = divmod(m1 - m0 - 1, _CYCLE_MONTHS)
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


def _smallest_gap_in(bits: int) -> int | None:
    """The smallest distance (seconds) between two set bits of ``bits`` (None: fewer than two)."""
    if bits & (bits - 1) == 0:
        return None
    low, high = 1, _DAY_S  # some gap <= high exists; find the smallest g with bits & (bits >> d) for a d <= g
    while low < high:
        middle = (low + high) // 2
        smeared, span = bits >> 1, 1  # smeared: OR of bits >> d for d in 1..span
        while span < middle:
            step = min(span, middle - span)
            smeared |= smeared >> step
            span += step
        if smeared & bits:
            high = middle
        else:
            low = middle + 1
    return low


@dataclass(frozen=True, slots=True)
class _Span:
    """A month shape's instants in gap terms: the smallest gap inside the month (None: under two instants),
    and the first and last instants as (day, second of the day)."""

    inside: int | None
    first: tuple[int, int]
    last: tuple[int, int]


def _span(tables: _Tables, month: _Month, gaps: dict[int, int | None]) -> _Span | None:
    if not month.days:
        return None
    smallest: int | None = None
    last: tuple[int, int] | None = None
    for day, mask in zip(month.days, month.masks, strict=True):
        bits = tables.bits(mask)
        if mask not in gaps:
            gaps[mask] = _smallest_gap_in(bits)
        candidates = [gaps[mask]]
        if last is not None:
            candidates.append((day - last[0]) * _DAY_S - last[1] + (_next_bit(bits, 0) or 0))
        found = [gap for gap in candidates if gap is not None]
        if found:
            smallest = min(found) if smallest is None else min(smallest, *found)
        last = (day, bits.bit_length() - 1)
    first_bits = tables.bits(month.masks[0])
    assert last is not None
    return _Span(smallest, (month.days[0], _next_bit(first_bits, 0) or 0), last)


def cron_minimum_gap(crons: Sequence[CronExpression]) -> int | None:
    """The smallest gap in seconds between two consecutive instants of the union of ``crons`` read in UTC
    (so a daylight-saving change makes no day shorter), over a whole 400-year cycle: inside each month shape
    (computed once per shape) and from the last instant of a month that fires to the first of the next.
    None: the union fires at most once in 400 years."""
    tables = _tables(tuple(crons))
    gaps: dict[int, int | None] = {}
    spans: dict[tuple[int, int, int], _Span | None] = {}
    smallest: int | None = None
    previous: tuple[int, int] | None = None  # (day ordinal, second) of the last instant so far
    for i in range(_CYCLE_MONTHS + 1):  # one month more: the gap from the cycle's end into the next
        month_index = 2000 * 12 + i
        key = _shape_of(month_index)
        if key not in spans:
            spans[key] = _span(tables, tables.shape(key), gaps)
        span = spans[key]
        if span is None:
            continue
        first_ordinal = date(month_index // 12, month_index % 12 + 1, 1).toordinal() - 1
        found = [] if span.inside is None else [span.inside]
        if previous is not None:
            found.append((first_ordinal + span.first[0] - previous[0]) * _DAY_S - previous[1] + span.first[1])
        if found:
            smallest = min(found) if smallest is None else min(smallest, *found)
        previous = (first_ordinal + span.last[0], span.last[1])
    return smallest
