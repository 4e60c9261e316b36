"""A job's schedule with jitter and exclusions: the occurrences that fire, at the instants they fire.

:class:`AdjustedSchedule` wraps the nominal series of :class:`~scheduler_core.recurrence.CompiledSchedule`
(compiled without ``count`` and ``endTime``, which it applies itself) and answers the same questions
(``first_occurrence``, ``after``, ``occurrences``, ``ordinal``, ``is_last``) about the *fire instants*:

* **Exclusions**: a nominal occurrence whose local wall time (in the recurrence's time zone, UTC without
  one) falls on an excluded date or inside an excluded range does not fire and does not count towards
  ``count``; ``endTime`` cuts the nominal series.
* **Jitter**: each remaining occurrence fires at ``nominal + offset``, ``offset`` in ``[0, jitter)``, a keyed
  hash of the job's identity (``key``) and the nominal instant: the same for every caller, on every retry
  and after a restart, with no state kept. The offset is in whole seconds when the jitter is at least a
  second. An offset never carries an occurrence to or past the next nominal one, so fire instants keep the
  order of their occurrences (the wire allows at most half the smallest gap, so this only matters around a
  daylight-saving change). The immediate first occurrence of a job without ``startTime`` is not jittered.
* **Moving instead of skipping** (``on_excluded``, the wire's ``exclusions.onExcluded``): ``Skip`` (the
  default) is the rule above; ``NextBusinessDay`` and ``PreviousBusinessDay`` move occurrences
  (:mod:`~scheduler_core.recurrence._business_days` computes them):

  1. A *business day* is a local date that is not an excluded date.
  2. A nominal occurrence on an excluded date moves to the same local wall time on the nearest business day
     after it (Next) or before it (Previous), at most 31 days away; with no business day within 31 days it
     does not fire, as under Skip. If that wall time does not exist on that day (a daylight-saving gap) the
     occurrence does not fire; if it is repeated, it moves to its first instance. If the moved instant
     falls inside an excluded range, the search goes on to the next business day in the same direction
     (still within 31 days of the original date).
  3. An occurrence excluded by a range only (its date is not excluded) does not fire, as under Skip.
  4. Never doubling: occurrences that land on the same instant (a moved one on a nominal one that fires,
     or two moved ones) are one occurrence, which fires once and counts once.
  5. The series keeps its bounds: ``endTime`` cuts the nominal series (an occurrence after it does not move
     back before it), and a moved occurrence after ``endTime``, or before the series' first possible
     instant (``startTime``, or the creation time when that is later or there is no ``startTime``; just
     after it for cron strings, which have no run at creation), does not fire. ``count`` counts the
     occurrences that fire, moved and merged ones once each, in the order they fire.
  6. A moved occurrence is jittered like any other, keyed by its moved instant (the one ``nominal``
     answers); an offset never carries it to or past the next nominal occurrence or the next scheduled one.
  7. Fire instants are strictly increasing, and every question (``first_occurrence``, ``after``,
     ``occurrences``, ``ordinal``, ``nominal``, ``is_last``) answers about the same ordered series.
  8. These modes need a schedule that fires at most once a day (occurrences at least 24 hours apart, the
     immediate first occurrence of a job without ``startTime`` aside); any other is refused with a
     ValidationError at ``<path>.exclusions.onExcluded``. With no excluded date they behave as Skip.

  ``ordinal`` does not walk the series: it counts the nominal occurrences arithmetically and enumerates
  only those on excluded dates (at most one a day), so its cost grows with the number of excluded dates.

The dispatcher, the executor and the API call these methods exactly as they call a
:class:`CompiledSchedule`'s, so a due-index row is written for the jittered instant and nothing downstream
knows about jitter or exclusions.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import hashlib
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Protocol

from scheduler_core.errors import ValidationError
from scheduler_core.recurrence._business_days import (
    NEXT_BUSINESS_DAY,
    SKIP,
    BusinessDayMoves,
    check_on_excluded,
    merge_intervals,
)
from scheduler_core.recurrence._engine import CompiledSchedule
from scheduler_core.recurrence._instants import format_instant, to_utc_from_wall
from scheduler_core.recurrence._model import Recurrence

__all__ = ["AdjustedSchedule", "OccurrenceSeries", "compile_adjusted"]

_ONE_US = timedelta(microseconds=1)
_SECOND_US = 1_000_000


class OccurrenceSeries(Protocol):
    """What the service, the dispatcher and the executor ask of a job's schedule (a
    :class:`CompiledSchedule` or an :class:`AdjustedSchedule`)."""

    @property
    def first_occurrence(self) -> datetime | None: ...

    def after(self, instant: datetime, *, inclusive: bool = False) -> datetime | None: ...

    def occurrences(self, after: datetime, n: int) -> list[datetime]: ...

    def ordinal(self, occurrence: datetime) -> int: ...

    def nominal(self, occurrence: datetime) -> datetime: ...

    def is_last(self, occurrence: datetime) -> bool: ...


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("instants must be aware datetimes")
    return value if value.tzinfo is UTC else value.astimezone(UTC)


def _windows(
    dates: Iterable[date], ranges: Iterable[tuple[datetime, datetime]], zone: tzinfo
) -> tuple[tuple[datetime, datetime], ...]:
    """The excluded instants as sorted, merged UTC intervals ``[start, end)``: each date from its local
    midnight to the next, each range from its start to its end (wall times in ``zone``). Cached: a job's
    schedule is compiled on every fire, and a calendar of week days and holidays gives thousands of dates."""
    return _merged_windows(tuple(dates), tuple(ranges), zone)


@functools.lru_cache(maxsize=64)
def _merged_windows(
    dates: tuple[date, ...], ranges: tuple[tuple[datetime, datetime], ...], zone: tzinfo
) -> tuple[tuple[datetime, datetime], ...]:
    walls = [(datetime(d.year, d.month, d.day), datetime(d.year, d.month, d.day) + timedelta(days=1)) for d in dates]
    walls.extend(ranges)
    return tuple(merge_intervals((to_utc_from_wall(a, zone), to_utc_from_wall(b, zone)) for a, b in walls))


def _first_possible(start: datetime | None, created: datetime, recurrence: Recurrence) -> datetime:
    """The series' first possible instant: the start, unless past; else the creation time (just after it for
    cron strings, which have no run at creation)."""
    if start is not None:
        return max(start, created)
    return created if recurrence.cron is None else created + _ONE_US


class AdjustedSchedule:
    """The fire instants of a recurring job with jitter and/or exclusions (see the module's docstring).

    ``dates`` and ``ranges`` are local (naive wall times, each range ``[start, end)``); ``key`` is the
    job's identity, which seeds the jitter; ``on_excluded`` is ``Skip``, ``NextBusinessDay`` or
    ``PreviousBusinessDay``."""

    def __init__(
        self,
        start_time: datetime | None,
        recurrence: Recurrence,
        created: datetime,
        *,
        jitter: timedelta | None = None,
        dates: Iterable[date] = (),
        ranges: Iterable[tuple[datetime, datetime]] = (),
        key: str = "",
        path: str = "properties.recurrence",
        on_excluded: str = SKIP,
    ) -> None:
        created = _utc(created)
        start = _utc(start_time) if start_time is not None else None
        end = recurrence.end_time
        if end is not None:
            if start is not None and end < start:
                raise ValidationError(
                    f"{path}.endTime",
                    f"must not be earlier than startTime ({format_instant(end)} < {format_instant(start)})",
                )
            if end < created:
                raise ValidationError(
                    f"{path}.endTime", f"must not be in the past ({format_instant(end)} is before now)"
                )
        self.recurrence = recurrence
        self.end_time = end
        self.count = recurrence.count
        self._base = CompiledSchedule(start, dataclasses.replace(recurrence, count=None, end_time=None), created, path)
        self._immediate = self._base.first_occurrence if start is None and recurrence.cron is None else None
        self._jitter_us = int(jitter / _ONE_US) if jitter is not None and jitter > timedelta(0) else 0
        self._key = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
        check_on_excluded(on_excluded, recurrence, start if start is not None else created, path)
        dates, ranges, zone = tuple(dates), tuple(ranges), recurrence.zone or UTC
        self._low = _first_possible(start, created, recurrence)
        #: With moving exclusions (and dates to move from): the scheduled instants; else None (Skip).
        self._moves: BusinessDayMoves | None = None
        if on_excluded != SKIP and dates:
            forward = on_excluded == NEXT_BUSINESS_DAY
            self._moves = BusinessDayMoves(self._base, zone, dates, ranges, forward=forward, low=self._low, end=end)
        self._windows = _windows(dates, ranges, zone) if self._moves is None else ()
        self._starts = [window[0] for window in self._windows]
        self._ends = [window[1] for window in self._windows]
        #: Nominal occurrences in each window, computed for a prefix of the windows as needed.
        self._excluded_counts: list[int] = []

    # -- exclusions ---------------------------------------------------------------------------------
    def _window_of(self, nominal: datetime) -> int | None:
        """The index of the excluded window holding ``nominal``, or None."""
        index = bisect.bisect_right(self._starts, nominal) - 1
        if index >= 0 and nominal < self._ends[index]:
            return index
        return None

    def _nominal_index(self, instant: datetime) -> int | None:
        """The ordinal of the first nominal occurrence at or after ``instant`` (None: there is none)."""
        nominal = self._base.after(instant, inclusive=True)
        return self._base.ordinal(nominal) if nominal is not None else None

    def _count_in(self, index: int) -> int:
        start, end = self._windows[index]
        high = self._nominal_index(end)
        if high is not None:
            low = self._nominal_index(start)
            return high - (low if low is not None else high)
        count, nominal = 0, self._base.after(start, inclusive=True)  # the rule ends inside the window
        while nominal is not None and nominal < end:
            count += 1
            nominal = self._base.after(nominal)
        return count

    def _excluded_before(self, nominal: datetime) -> int:
        """How many nominal occurrences before ``nominal`` (not itself excluded) are excluded."""
        index = bisect.bisect_right(self._ends, nominal)  # windows that end at or before it
        while len(self._excluded_counts) < index:
            self._excluded_counts.append(self._count_in(len(self._excluded_counts)))
        return sum(self._excluded_counts[:index])

    def _ordinal_of(self, nominal: datetime) -> int:
        """The position of a nominal occurrence that fires, among those that fire."""
        return self._base.ordinal(nominal) - self._excluded_before(nominal)

    # -- jitter -------------------------------------------------------------------------------------
    def offset(self, nominal: datetime) -> timedelta:
        """The jitter of the occurrence at ``nominal`` (before the cap at the next occurrence)."""
        if not self._jitter_us or nominal == self._immediate:
            return timedelta(0)
        digest = hashlib.blake2b(format_instant(nominal).encode(), key=self._key, digest_size=8).digest()
        number = int.from_bytes(digest, "big")
        if self._jitter_us >= _SECOND_US:
            return timedelta(seconds=number % (self._jitter_us // _SECOND_US))
        return timedelta(microseconds=number % self._jitter_us)

    def _fire(self, nominal: datetime, following: datetime | None = None) -> datetime:
        """The fire instant of the occurrence scheduled at ``nominal``: before the next nominal occurrence
        and before ``following`` (the next scheduled instant, when occurrences move)."""
        offset = self.offset(nominal)
        if not offset:
            return nominal
        fire = nominal + offset
        cap = self._base.after(nominal)
        if following is not None and (cap is None or following < cap):
            cap = following
        if cap is not None and fire >= cap:
            fire = cap - _ONE_US
        return fire

    def _fires(self, start: datetime, *, counted: bool = True) -> Iterable[tuple[datetime, datetime]]:
        """(scheduled instant, fire instant) of each occurrence that fires, from the first one scheduled at
        or after ``start``, in order, until ``endTime`` or (when ``counted``) ``count`` ends the series."""
        if self._moves is not None:
            yield from self._moved_fires(start, counted=counted)
            return
        nominal = self._base.after(start, inclusive=True)
        while nominal is not None:
            if self.end_time is not None and nominal > self.end_time:
                return
            window = self._window_of(nominal)
            if window is not None:
                nominal = self._base.after(self._ends[window], inclusive=True)
                continue
            if counted and self.count is not None and self._ordinal_of(nominal) > self.count:
                return
            yield nominal, self._fire(nominal)
            nominal = self._base.after(nominal)

    def _moved_fires(self, start: datetime, *, counted: bool) -> Iterable[tuple[datetime, datetime]]:
        """:meth:`_fires` when occurrences on excluded dates move: their scheduled instants come merged and
        in order from :class:`BusinessDayMoves`; ``count`` counts them from the first one's rank."""
        assert self._moves is not None
        stream = iter(self._moves.scheduled(start))
        current = next(stream, None)
        limit = self.count if counted else None
        ordinal = self._moves.rank(current) + 1 if current is not None and limit is not None else 0
        while current is not None and (limit is None or ordinal <= limit):
            following = next(stream, None)
            yield current, self._fire(current, following)
            current, ordinal = following, ordinal + 1

    def _start_for(self, instant: datetime) -> datetime:
        """Where to look for the nominal occurrence of a fire instant at or after ``instant``."""
        return instant - timedelta(microseconds=self._jitter_us) + _ONE_US if self._jitter_us else instant

    # -- public API ---------------------------------------------------------------------------------
    @property
    def first_occurrence(self) -> datetime | None:
        """The first fire instant, or None when nothing fires."""
        first = self._base.first_occurrence if self._moves is None else self._low
        return self.after(first, inclusive=True) if first is not None else None

    def after(self, instant: datetime, *, inclusive: bool = False) -> datetime | None:
        """The first fire instant after ``instant`` (at or after it when ``inclusive``), or None when the
        series is over."""
        instant = _utc(instant)
        for _, fire in self._fires(self._start_for(instant)):
            if fire > instant or (inclusive and fire == instant):
                return fire
        return None

    def occurrences(self, after: datetime, n: int) -> list[datetime]:
        """Up to ``n`` fire instants at or after ``after``, in order."""
        out: list[datetime] = []
        after = _utc(after)
        if n <= 0:
            return out
        for _, fire in self._fires(self._start_for(after)):
            if fire >= after:
                out.append(fire)
                if len(out) >= n:
                    break
        return out

    def nominal(self, occurrence: datetime) -> datetime:
        """The scheduled (nominal) instant of the fire instant ``occurrence``. Raises ValueError when it is
        not one."""
        occurrence = _utc(occurrence)
        for nominal, fire in self._fires(self._start_for(occurrence)):
            if fire == occurrence:
                return nominal
            if nominal > occurrence:
                break
        raise ValueError(f"{format_instant(occurrence)} is not an occurrence of this schedule")

    def ordinal(self, occurrence: datetime) -> int:
        """The 1-based position of the fire instant ``occurrence`` among the occurrences that fire (excluded
        ones do not count). Raises ValueError when it is not one."""
        occurrence = _utc(occurrence)
        if self._moves is not None:
            for scheduled, fire in self._fires(self._start_for(occurrence), counted=False):
                if fire == occurrence:
                    return self._moves.rank(scheduled) + 1
                if scheduled > occurrence:
                    break
            raise ValueError(f"{format_instant(occurrence)} is not an occurrence of this schedule")
        nominal = self._base.after(self._start_for(occurrence), inclusive=True)
        while nominal is not None and nominal <= occurrence:
            if self._window_of(nominal) is None and self._fire(nominal) == occurrence:
                return self._ordinal_of(nominal)
            nominal = self._base.after(nominal)
        raise ValueError(f"{format_instant(occurrence)} is not an occurrence of this schedule")

    def is_last(self, occurrence: datetime) -> bool:
        """True when no occurrence fires after ``occurrence``."""
        return self.after(occurrence) is None


def compile_adjusted(
    start_time: datetime | None,
    recurrence: Recurrence | None,
    created: datetime,
    *,
    jitter: timedelta | None = None,
    dates: Iterable[date] = (),
    ranges: Iterable[tuple[datetime, datetime]] = (),
    key: str = "",
    path: str = "properties.recurrence",
    on_excluded: str = SKIP,
) -> OccurrenceSeries:
    """A job's schedule: its :class:`CompiledSchedule` when it has neither jitter nor exclusions (or no
    recurrence), else an :class:`AdjustedSchedule`. ``on_excluded`` (``Skip``, ``NextBusinessDay`` or
    ``PreviousBusinessDay``) is checked against the recurrence even when no date is excluded yet."""
    dates, ranges = tuple(dates), tuple(ranges)
    plain = not dates and not ranges and (jitter is None or jitter <= timedelta(0))
    if recurrence is None:
        return CompiledSchedule(start_time, recurrence, created, path)
    if plain:
        schedule = CompiledSchedule(start_time, recurrence, created, path)
        base = _utc(start_time) if start_time is not None else _utc(created)
        check_on_excluded(on_excluded, recurrence, base, path)
        return schedule
    return AdjustedSchedule(
        start_time,
        recurrence,
        created,
        jitter=jitter,
        dates=dates,
        ranges=ranges,
        key=key,
        path=path,
        on_excluded=on_excluded,
    )
