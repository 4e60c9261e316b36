"""``onExcluded``: an occurrence on an excluded date moves to the nearest business day.

:class:`BusinessDayMoves` maps each nominal occurrence of a job's series to the instant it is scheduled at
(its *image*: itself, a moved instant, or nothing) and answers, without walking the series occurrence by
occurrence, the two questions :class:`~scheduler_core.recurrence.AdjustedSchedule` asks of those instants:
the scheduled instants from a point on, in order and merged (:meth:`BusinessDayMoves.scheduled`), and how
many lie before an instant (:meth:`BusinessDayMoves.rank`). The rules are in ``_adjusted``'s docstring.

Counting: the scheduled instants before ``s`` are the nominal ones before ``s`` (arithmetic on the
compiled schedule), less those in excluded ranges (arithmetic per range), less those on excluded dates
(enumerated, run of consecutive dates by run: with at most one occurrence a day there are as many as
excluded dates), plus the distinct moved instants before ``s`` that are not themselves nominal ones. A
move spans at most 31 days, so only the runs up to ``s`` (31 days past it for PreviousBusinessDay) matter.
"""

from __future__ import annotations

import bisect
import functools
import heapq
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from scheduler_core.errors import ValidationError
from scheduler_core.recurrence._engine import CompiledSchedule
from scheduler_core.recurrence._instants import to_utc_from_wall
from scheduler_core.recurrence._model import Frequency, Recurrence
from scheduler_core.recurrence._quota import minimum_gap

__all__ = [
    "NEXT_BUSINESS_DAY",
    "ON_EXCLUDED",
    "PREVIOUS_BUSINESS_DAY",
    "SKIP",
    "BusinessDayMoves",
    "check_on_excluded",
    "date_runs",
    "merge_intervals",
]

SKIP = "Skip"
NEXT_BUSINESS_DAY = "NextBusinessDay"
PREVIOUS_BUSINESS_DAY = "PreviousBusinessDay"
ON_EXCLUDED = (SKIP, NEXT_BUSINESS_DAY, PREVIOUS_BUSINESS_DAY)

#: How many days a moved occurrence may travel: the search for a business day stops after this many.
MAX_MOVE_DAYS = 31
_DAY = timedelta(days=1)
#: The most a move shifts an instant: 31 days, plus the difference of two UTC offsets of the zone (under a
#: day), with a day to spare.
_REACH = timedelta(days=MAX_MOVE_DAYS + 2)
_CALENDAR = (Frequency.DAY, Frequency.WEEK, Frequency.MONTH, Frequency.YEAR)

Interval = tuple[datetime, datetime]
#: The last day a moved occurrence may land on (a day later, its instant may not exist in UTC).
_LAST_DAY = date(9999, 12, 30).toordinal()


# ------------------------------------------------------------------------------------------- validation


def _times_a_day(recurrence: Recurrence) -> int:
    """How many wall times a day a calendar-frequency schedule fires at (as the engine builds them)."""
    schedule = recurrence.schedule if recurrence.has_schedule else None
    hours = schedule.hours if schedule is not None else None
    minutes = schedule.minutes if schedule is not None else None
    per_hour = len(minutes) if minutes is not None else 1
    if hours is None:
        return 24 * per_hour if minutes is not None else 1
    return len(hours) * per_hour


@functools.lru_cache(maxsize=512)
def _smallest_gap(recurrence: Recurrence, base: datetime) -> timedelta:
    return minimum_gap(recurrence, base, stop_below=_DAY)


def _spoken(gap: timedelta) -> str:
    seconds = int(gap.total_seconds())
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds // 3600} hour(s)"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds // 60} minute(s)"
    return f"{gap.total_seconds():g} second(s)"


def check_on_excluded(on_excluded: str, recurrence: Recurrence, base: datetime, path: str) -> None:
    """Refuse (at ``path``.exclusions.onExcluded) an unknown mode, or a moving mode on a schedule that may
    fire twice within 24 hours (``base``: the job's start, else its creation time)."""
    where = f"{path}.exclusions.onExcluded"
    if on_excluded not in ON_EXCLUDED:
        raise ValidationError(where, f"must be one of {', '.join(ON_EXCLUDED)}, not {on_excluded!r}")
    if on_excluded == SKIP:
        return
    rule = (
        f"{on_excluded} moves an occurrence to another day at the same time of day, so the schedule must fire "
        "at most once a day (occurrences at least 24 hours apart); use Skip"
    )
    if recurrence.cron is None and recurrence.frequency in _CALENDAR:
        times = _times_a_day(recurrence)
        if times > 1:
            raise ValidationError(where, f"{rule}: this schedule fires at {times} times of day")
        return
    gap = _smallest_gap(recurrence, base)
    if gap < _DAY:
        raise ValidationError(where, f"{rule}: occurrences of this schedule may be {_spoken(gap)} apart")


# -------------------------------------------------------------------------------------------- intervals


def merge_intervals(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, merged intervals ``[start, end)`` (empty ones dropped)."""
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def date_runs(dates: Iterable[date]) -> list[tuple[date, date]]:
    """Runs of consecutive dates, as (first, last), in order."""
    runs: list[tuple[date, date]] = []
    for day in sorted(set(dates)):
        if runs and day - runs[-1][1] == _DAY:
            runs[-1] = (runs[-1][0], day)
        else:
            runs.append((day, day))
    return runs


def _subtract(intervals: list[Interval], holes: list[Interval]) -> list[Interval]:
    """``intervals`` less ``holes`` (both sorted and merged)."""
    out: list[Interval] = []
    hole_ends = [hole[1] for hole in holes]
    for start, end in intervals:
        index = bisect.bisect_right(hole_ends, start)
        cursor = start
        for hole_start, hole_end in holes[index:]:
            if hole_start >= end:
                break
            if hole_start > cursor:
                out.append((cursor, hole_start))
            cursor = max(cursor, hole_end)
        if cursor < end:
            out.append((cursor, end))
    return out


def _inside(starts: list[datetime], ends: list[datetime], instant: datetime) -> int | None:
    index = bisect.bisect_right(starts, instant) - 1
    return index if index >= 0 and instant < ends[index] else None


def _minus(instant: datetime, delta: timedelta) -> datetime:
    try:
        return instant - delta
    except OverflowError:
        return datetime.min.replace(tzinfo=UTC)


def _plus(instant: datetime, delta: timedelta) -> datetime:
    try:
        return instant + delta
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


class _Unfit:
    """Why a business day's wall time cannot take a moved occurrence."""

    def __init__(self, name: str) -> None:
        self.name = name


_GAP = _Unfit("skipped by daylight saving")  # the occurrence is dropped
_EXCLUDED = _Unfit("inside an excluded range")  # the search goes on


# ------------------------------------------------------------------------------------------------ moves


class BusinessDayMoves:
    """The scheduled instants of a series whose occurrences on excluded dates move (``forward``: to the next
    business day, else to the previous one). ``base`` is the nominal series without ``count`` and
    ``endTime``; ``low`` and ``end`` bound the scheduled instants (``end`` also cuts the nominal series)."""

    def __init__(
        self,
        base: CompiledSchedule,
        zone: tzinfo,
        dates: Iterable[date],
        ranges: Iterable[tuple[datetime, datetime]],
        *,
        forward: bool,
        low: datetime,
        end: datetime | None,
    ) -> None:
        self._base = base
        self._zone = zone
        self._forward = forward
        self._low = low
        self._end = end
        excluded = frozenset(dates)
        runs = date_runs(excluded)
        self._excluded = frozenset(day.toordinal() for day in excluded)
        self._runs = [(self._utc(first), self._utc(last + _DAY)) for first, last in runs]
        self._run_starts = [run[0] for run in self._runs]
        self._run_ends = [run[1] for run in self._runs]
        ranged = merge_intervals((self._utc(a), self._utc(b)) for a, b in ranges)
        self._range_starts = [window[0] for window in ranged]
        self._range_ends = [window[1] for window in ranged]
        #: nominal occurrences excluded by a range and not by a date, with their counts (computed lazily)
        self._ranged = _subtract(ranged, merge_intervals(self._runs))
        self._ranged_counts: list[int] = []
        self._run_images: list[list[tuple[datetime, datetime | None]]] = []
        self._targets: dict[tuple[int, time], datetime | _Unfit] = {}
        self._nominal: dict[datetime, bool] = {}
        #: (end of the last run enumerated, the first nominal occurrence at or after it)
        self._carry: tuple[datetime, datetime | None] | None = None

    def _utc(self, wall: date | datetime) -> datetime:
        if not isinstance(wall, datetime):
            wall = datetime(wall.year, wall.month, wall.day)
        return to_utc_from_wall(wall, self._zone)

    # -- images -------------------------------------------------------------------------------------
    def image(self, nominal: datetime) -> datetime | None:
        """The instant the nominal occurrence at ``nominal`` is scheduled at: itself, where it moved, or
        None when it does not fire (excluded by a range, no business day to move to, out of bounds)."""
        if self._end is not None and nominal > self._end:
            return None
        if _inside(self._run_starts, self._run_ends, nominal) is not None:
            return self._move(nominal)
        if _inside(self._range_starts, self._range_ends, nominal) is not None:
            return None
        return nominal

    def _move(self, nominal: datetime) -> datetime | None:
        wall = nominal.astimezone(self._zone).replace(tzinfo=None, fold=0)
        day, clock = wall.toordinal(), wall.time()
        step = 1 if self._forward else -1
        for distance in range(1, MAX_MOVE_DAYS + 1):
            target = day + step * distance
            if target in self._excluded:
                continue
            instant = self._target(target, clock)
            if instant is _EXCLUDED:
                continue
            if isinstance(instant, _Unfit):
                return None
            if instant < self._low or (self._end is not None and instant > self._end):
                return None  # farther business days are farther out of bounds
            return instant
        return None

    def _target(self, day: int, clock: time) -> datetime | _Unfit:
        """The instant of wall time ``clock`` on the business day ``day`` (first one if repeated), or why
        it cannot take an occurrence."""
        key = (day, clock)
        found = self._targets.get(key)
        if found is None:
            wall = datetime.combine(date.fromordinal(day), clock) if 0 < day <= _LAST_DAY else None
            instant = to_utc_from_wall(wall, self._zone) if wall is not None else None
            if instant is None or instant.astimezone(self._zone).replace(tzinfo=None) != wall:
                found = _GAP  # also past the end of the calendar
            elif (
                _inside(self._range_starts, self._range_ends, instant) is not None
                or _inside(self._run_starts, self._run_ends, instant) is not None
            ):
                found = _EXCLUDED
            else:
                found = instant
            self._targets[key] = found
        return found

    def _is_nominal(self, instant: datetime) -> bool:
        known = self._nominal.get(instant)
        if known is None:
            known = self._nominal[instant] = self._base.after(instant, inclusive=True) == instant
        return known

    # -- the scheduled instants in order ------------------------------------------------------------
    def scheduled(self, start: datetime) -> Iterator[datetime]:
        """The scheduled instants at or after ``start``, in order, each once."""
        lead = timedelta(0) if self._forward else _REACH  # an image is never earlier than its nominal - lead
        nominal = self._base.after(_minus(start, _REACH) if self._forward else start, inclusive=True)
        pending: list[datetime] = []
        last: datetime | None = None
        while nominal is not None and (self._end is None or nominal <= self._end):
            image = self.image(nominal)
            if image is not None and image >= start:
                heapq.heappush(pending, image)
            nominal = self._base.after(nominal)
            floor = _minus(nominal, lead) if nominal is not None else None
            while pending and (floor is None or pending[0] < floor):
                image = heapq.heappop(pending)
                if image != last:
                    last = image
                    yield image
        while pending:
            image = heapq.heappop(pending)
            if image != last:
                last = image
                yield image

    # -- counting -----------------------------------------------------------------------------------
    def rank(self, instant: datetime) -> int:
        """How many scheduled instants lie before ``instant`` (at most ``endTime``)."""
        count = self._nominals_before(instant) - self._ranged_before(instant)
        reach = instant if self._forward else _plus(instant, _REACH)
        moved: set[datetime] = set()
        for index in range(bisect.bisect_left(self._run_starts, reach)):
            for nominal, image in self._run(index):
                if nominal >= reach:
                    break
                if nominal < instant:
                    count -= 1
                if image is not None and image < instant and not self._is_nominal(image):
                    moved.add(image)
        return count + len(moved)

    def _run(self, index: int) -> list[tuple[datetime, datetime | None]]:
        """(nominal, image) of each nominal occurrence on the run of excluded dates ``index`` (the runs are
        computed in order, each once)."""
        while len(self._run_images) <= index:
            self._run_images.append(self._images_of_run(len(self._run_images)))
        return self._run_images[index]

    def _images_of_run(self, index: int) -> list[tuple[datetime, datetime | None]]:
        start, stop = self._runs[index]
        # Every nominal occurrence from `origin` to the first one after the run is enumerated, so whether a
        # moved instant in that span is a nominal one is known without asking (a backward move lands on
        # the day before the run, a forward one on the day after it, as a rule).
        origin = start if self._forward else _minus(start, _DAY)
        carry = self._carry
        if carry is not None and carry[0] <= origin and (carry[1] is None or carry[1] >= origin):
            nominal = carry[1]  # the first nominal occurrence after the previous run is also the first here
        else:
            nominal = self._base.after(origin, inclusive=True)
        seen: set[datetime] = set()
        images: list[tuple[datetime, datetime | None]] = []
        while nominal is not None and nominal < stop and (self._end is None or nominal <= self._end):
            seen.add(nominal)
            if nominal >= start:
                images.append((nominal, self._move(nominal)))
            nominal = self._base.after(nominal)
        self._carry = (stop, nominal) if nominal is None or nominal >= stop else None
        if nominal is not None:
            seen.add(nominal)
        for _, image in images:
            if image is not None and origin <= image and (nominal is None or image <= nominal):
                self._nominal[image] = image in seen
        return images

    def _nominals_before(self, instant: datetime) -> int:
        """How many nominal occurrences lie before ``instant``."""
        base = self._base
        nominal = base.after(instant, inclusive=True)
        if nominal is not None:
            return base.ordinal(nominal) - 1
        # the rule ends before `instant` (near year 9999): count on from a nominal occurrence before it
        reach, probe = _DAY, None
        while probe is None:
            earlier = _minus(instant, reach)
            probe = base.after(earlier, inclusive=True)
            if earlier <= datetime.min.replace(tzinfo=UTC):
                break
            reach *= 2
        if probe is None:
            return 0
        count = base.ordinal(probe) - 1
        while probe is not None and probe < instant:
            count, probe = count + 1, base.after(probe)
        return count

    def _ranged_before(self, instant: datetime) -> int:
        """How many nominal occurrences before ``instant`` an excluded range (and not a date) excludes."""
        total = 0
        for index, (start, end) in enumerate(self._ranged):
            if start >= instant:
                break
            if end <= instant:
                if index == len(self._ranged_counts):
                    self._ranged_counts.append(self._nominals_before(end) - self._nominals_before(start))
                total += self._ranged_counts[index]
            else:
                total += self._nominals_before(instant) - self._nominals_before(start)
        return total
