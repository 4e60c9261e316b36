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

The dispatcher, the executor and the API call these methods exactly as they call a
:class:`CompiledSchedule`'s, so a due-index row is written for the jittered instant and nothing downstream
knows about jitter or exclusions.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Protocol

from scheduler_core.errors import ValidationError
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
) -> list[tuple[datetime, datetime]]:
    """The excluded instants as sorted, merged UTC intervals ``[start, end)``: each date from its local
    midnight to the next, each range from its start to its end (wall times in ``zone``)."""
    walls = [(datetime(d.year, d.month, d.day), datetime(d.year, d.month, d.day) + timedelta(days=1)) for d in dates]
    walls.extend(ranges)
    intervals = sorted((to_utc_from_wall(a, zone), to_utc_from_wall(b, zone)) for a, b in walls)
    merged: list[tuple[datetime, datetime]] = []
    for start, end in intervals:
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


class AdjustedSchedule:
    """The fire instants of a recurring job with jitter and/or exclusions (see the module's docstring).

    ``dates`` and ``ranges`` are local (naive wall times, each range ``[start, end)``); ``key`` is the
    job's identity, which seeds the jitter."""

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
        self._windows = _windows(dates, ranges, recurrence.zone or UTC)
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

    def _fire(self, nominal: datetime) -> datetime:
        offset = self.offset(nominal)
        if not offset:
            return nominal
        fire = nominal + offset
        following = self._base.after(nominal)
        if following is not None and fire >= following:
            fire = following - _ONE_US
        return fire

    def _fires(self, start: datetime) -> Iterable[tuple[datetime, datetime]]:
        """(nominal, fire instant) of each occurrence that fires, from the first nominal one at or after
        ``start``, in order, until ``endTime`` or ``count`` ends the series."""
        nominal = self._base.after(start, inclusive=True)
        while nominal is not None:
            if self.end_time is not None and nominal > self.end_time:
                return
            window = self._window_of(nominal)
            if window is not None:
                nominal = self._base.after(self._ends[window], inclusive=True)
                continue
            if self.count is not None and self._ordinal_of(nominal) > self.count:
                return
            yield nominal, self._fire(nominal)
            nominal = self._base.after(nominal)

    def _start_for(self, instant: datetime) -> datetime:
        """Where to look for the nominal occurrence of a fire instant at or after ``instant``."""
        return instant - timedelta(microseconds=self._jitter_us) + _ONE_US if self._jitter_us else instant

    # -- public API ---------------------------------------------------------------------------------
    @property
    def first_occurrence(self) -> datetime | None:
        """The first fire instant, or None when nothing fires."""
        first = self._base.first_occurrence
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
) -> OccurrenceSeries:
    """A job's schedule: its :class:`CompiledSchedule` when it has neither jitter nor exclusions (or no
    recurrence), else an :class:`AdjustedSchedule`."""
    dates, ranges = tuple(dates), tuple(ranges)
    plain = not dates and not ranges and (jitter is None or jitter <= timedelta(0))
    if recurrence is None or plain:
        return CompiledSchedule(start_time, recurrence, created, path)
    return AdjustedSchedule(
        start_time, recurrence, created, jitter=jitter, dates=dates, ranges=ranges, key=key, path=path
    )
