"""The compiled schedule of one job: first occurrence, next occurrence, ordinals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

from scheduler_core.errors import ValidationError
from scheduler_core.recurrence._calendar import (
    DAY_US,
    HOUR_US,
    MINUTE_US,
    fold_end,
    gap_end,
    gaps_between,
    in_gap,
    us_from_naive,
)
from scheduler_core.recurrence._cron_pattern import CronPattern
from scheduler_core.recurrence._instants import format_instant
from scheduler_core.recurrence._model import Frequency, Recurrence
from scheduler_core.recurrence._patterns import (
    DailyRule,
    DayPattern,
    MonthlyRule,
    Pattern,
    TickPattern,
    WeeklyRule,
)

__all__ = ["CompiledSchedule", "compile_schedule"]

_ONE_US = timedelta(microseconds=1)
# Consecutive candidates that fall into daylight-saving gaps before the search gives up (each skip jumps
# past a whole gap, so this many skips in a row span decades of transitions). Only a rule whose every
# wall time is skipped (02:30 on the last Sunday of March in Europe/Berlin) reaches it.
_MAX_GAP_SKIPS = 64
_MAX_STEPS = 4096


_UTC_ORIGIN = datetime(1, 1, 1, tzinfo=UTC)  # naive microseconds DAY_US (ordinal 1, midnight)
_NAIVE_ORIGIN = datetime(1, 1, 1)


def _require_utc(value: datetime, name: str) -> datetime:
    tz = value.tzinfo
    if tz is UTC:
        return value
    if tz is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime")
    return value.astimezone(UTC)


def _check_end_time(end: datetime | None, start: datetime | None, created: datetime, path: str) -> None:
    """Refuse an ``endTime`` (at ``path``.endTime) earlier than ``start`` or than ``created``, in that order."""
    if end is None:
        return
    if start is not None and end < start:
        raise ValidationError(
            f"{path}.endTime",
            f"must not be earlier than startTime ({format_instant(end)} < {format_instant(start)})",
        )
    if end < created:
        raise ValidationError(f"{path}.endTime", f"must not be in the past ({format_instant(end)} is before now)")


def _build_pattern(recurrence: Recurrence, base_wall: datetime) -> Pattern:
    """The wall-clock pattern of a recurrence whose base (start or creation time) is ``base_wall``."""
    base = us_from_naive(base_wall)
    if recurrence.cron is not None:
        return CronPattern(base, recurrence.cron)
    sub = base_wall.second * 1_000_000 + base_wall.microsecond
    schedule = recurrence.schedule if recurrence.has_schedule else None
    hours = schedule.hours if schedule is not None else None
    minutes = schedule.minutes if schedule is not None else None
    step = recurrence.step
    frequency = recurrence.frequency
    minute_index = base // MINUTE_US
    if frequency is Frequency.MINUTE:
        return TickPattern(
            base,
            origin=minute_index,
            step=step,
            offsets=(0,),
            sub=sub,
            hours=frozenset(hours) if hours is not None else None,
            minutes=frozenset(minutes) if minutes is not None else None,
        )
    if frequency is Frequency.HOUR:
        return TickPattern(
            base,
            origin=minute_index - base_wall.minute,
            step=60 * step,
            offsets=tuple(sorted(minutes)) if minutes is not None else (base_wall.minute,),
            sub=sub,
            hours=frozenset(hours) if hours is not None else None,
            minutes=None,
        )
    # Calendar frequencies: hours x minutes, defaulting to the base's hour and minute, except that
    # minutes without hours mean every hour.
    if hours is None:
        hour_list: tuple[int, ...] = tuple(range(24)) if minutes is not None else (base_wall.hour,)
    else:
        hour_list = hours
    minute_list = minutes if minutes is not None else (base_wall.minute,)
    times = [h * HOUR_US + m * MINUTE_US + sub for h in hour_list for m in minute_list]
    day = base // DAY_US
    if frequency is Frequency.DAY:
        return DayPattern(base, DailyRule(day, step), times)
    if frequency is Frequency.WEEK:
        week_days = schedule.week_days if schedule is not None else None
        weekdays = [d.number for d in week_days] if week_days is not None else [base_wall.weekday()]
        return DayPattern(base, WeeklyRule(day - base_wall.weekday(), step, weekdays), times)
    months = schedule.months if schedule is not None else None
    month_days = schedule.month_days if schedule is not None else None
    occurrences = schedule.monthly_occurrences if schedule is not None else None
    rule = MonthlyRule(
        origin=base_wall.year * 12 + base_wall.month - 1,
        step=step,
        years=frequency is Frequency.YEAR,
        months=frozenset(months) if months is not None else None,
        month_days=month_days,
        occurrences=[(o.day.number, o.occurrence) for o in occurrences] if occurrences is not None else None,
        default_day=base_wall.day,
    )
    return DayPattern(base, rule, times)


class CompiledSchedule:
    """The occurrence series of one job, per the startTime table of the advanced-recurrence doc.

    * No recurrence: one occurrence, at ``startTime`` if that is not in the past, else at ``created``.
    * No ``startTime``: the first occurrence is ``created`` ("run once immediately"); the recurrence is
      based on ``created`` (its phase, and the hour/minute/second defaults of a schedule) and the later
      occurrences are those after ``created``. Cron strings have no immediate run: their first occurrence
      is their first match after ``created``.
    * ``startTime`` given: the recurrence is based on it; the series is every occurrence of the rule at or
      after ``max(startTime, created)``, so a past start keeps its phase and never fires in the past.

    ``count`` keeps the first ``count`` occurrences of that series, ``endTime`` (inclusive) cuts it;
    whichever ends it first wins. Every datetime in and out is aware; results are UTC.
    """

    def __init__(
        self,
        start_time: datetime | None,
        recurrence: Recurrence | None,
        created: datetime,
        path: str = "properties.recurrence",
    ) -> None:
        created = _require_utc(created, "created")
        start = _require_utc(start_time, "start_time") if start_time is not None else None
        self.recurrence = recurrence
        self.start_time = start
        self.created = created
        self.end_time = recurrence.end_time if recurrence is not None else None
        self.count = recurrence.count if recurrence is not None else None
        self._single: datetime | None = None
        if recurrence is None:
            self._single = start if start is not None and start >= created else created
            self.first_occurrence: datetime | None = self._single
            return
        _check_end_time(recurrence.end_time, start, created, path)
        self._compile_rule(recurrence, start, created, path)

    def _compile_rule(self, recurrence: Recurrence, start: datetime | None, created: datetime, path: str) -> None:
        """Set up the rule of a recurring series (zone, pattern, first rule occurrence, ordinal offset) and
        :attr:`first_occurrence`. ``start`` and ``created`` are UTC. Raises ValidationError (at ``path``, or
        its ``schedule`` when there is one) when the rule has no occurrence after the start."""
        absolute = recurrence.frequency in (Frequency.MINUTE, Frequency.HOUR) and not recurrence.has_schedule
        zone = recurrence.zone
        self._zone: tzinfo = UTC if absolute or zone is None else zone
        self._utc = self._zone is UTC
        base = start if start is not None else created
        self._pattern = _build_pattern(recurrence, self._wall(base))
        # The base is an instant: when its wall time is repeated it may be the second instance, which the
        # rule (wall time -> its first instance) cannot produce. _rule_next answers it for its wall time.
        self._base = base
        # "No startTime: run once immediately" (Azure Scheduler's rule); a cron job waits for its first match
        self._immediate = start is None and recurrence.cron is None
        self._rule_low = created + _ONE_US if start is None else max(start, created)
        rule_first = self._rule_next(self._rule_low)
        if rule_first is None:
            where = f"{path}.cron" if recurrence.cron else f"{path}.schedule" if recurrence.has_schedule else path
            raise ValidationError(
                where,
                "can never fire: no time matches the schedule after the start "
                "(for example monthDays 31 in months that never have 31 days, or only wall times "
                "skipped by daylight saving)",
            )
        self._rule_first = rule_first
        self._rule_first_us = self._wall_us(rule_first)
        # ordinal = offset + candidates with existing wall times in [first, occurrence)
        self._ordinal_offset = (1 if self._immediate else 0) + 1
        if rule_first == base and not self._utc:
            base_us = self._pattern.base
            if self._to_utc(base_us) != base:
                # the start is the second instance of its wall time: the candidates after it in the
                # repeated range had their first instance before it, so they are not occurrences
                fold_stop = fold_end(self._zone, base_us)
                if fold_stop is not None:
                    self._ordinal_offset -= self._pattern.count(base_us + 1, fold_stop)
        self.first_occurrence = created if self._immediate else rule_first

    # -- conversions --------------------------------------------------------------------------------
    def _wall(self, instant: datetime) -> datetime:
        if self._utc:
            return instant.replace(tzinfo=None)
        return instant.astimezone(self._zone).replace(tzinfo=None)

    def _wall_us(self, instant: datetime) -> int:
        """Naive microseconds of the wall time of a UTC instant."""
        return us_from_naive(instant if self._utc else instant.astimezone(self._zone))

    def _to_utc(self, naive_us: int) -> datetime | None:
        """The instant of a wall time (first one if repeated), or None if the wall time does not exist."""
        instant = _UTC_ORIGIN + timedelta(microseconds=naive_us - DAY_US)
        if self._utc:
            return instant
        if in_gap(self._zone, naive_us):
            return None
        offset = self._zone.utcoffset(_NAIVE_ORIGIN + timedelta(microseconds=naive_us - DAY_US))
        return instant - offset if offset else instant

    # -- the rule (no count, no endTime, no immediate occurrence) -----------------------------------
    def _rule_next(self, after: datetime) -> datetime | None:
        x = self._wall_us(after)
        pattern = self._pattern
        gap_skips = 0
        for _ in range(_MAX_STEPS):
            candidate = pattern.next(x)
            if candidate is None:
                return None
            instant = self._to_utc(candidate)
            if instant is None:  # inside a daylight-saving gap: resume where the gap ends
                gap_skips += 1
                if gap_skips > _MAX_GAP_SKIPS:
                    return None
                end = gap_end(self._zone, candidate)
                x = end if end is not None and end > candidate else candidate + 1
                continue
            if instant < after:
                if candidate == pattern.base and after <= self._base:
                    # the base itself, in the second pass of its repeated wall time: the start instant
                    # is occurrence 0 whichever pass it falls in
                    return self._base
                # `after` lies in the second pass of a repeated wall time: every wall time of the fold
                # has already had its (first) instance, so resume where the fold ends
                end = fold_end(self._zone, candidate)
                x = end if end is not None and end > candidate else candidate + 1
                continue
            return instant
        return None

    def _count_existing(self, a: int, b: int) -> int:
        """Pattern candidates in the naive range [a, b) whose wall time exists."""
        pattern = self._pattern
        total = pattern.count(a, b)
        if not self._utc:
            for g0, g1 in gaps_between(self._zone, a, b):
                total -= pattern.count(g0, g1)
        return total

    def _series_next(self, after: datetime) -> datetime | None:
        """The first occurrence at or after ``after``, ignoring ``count`` and ``endTime``."""
        if self._single is not None:
            return self._single if after <= self._single else None
        first = self.first_occurrence
        assert first is not None
        if after <= first:
            return first
        return self._rule_next(max(after, self._rule_low))

    def _ordinal_of(self, occurrence: datetime) -> int:
        """Ordinal of a known occurrence of the (uncapped) series."""
        if self._single is not None or occurrence == self.first_occurrence:
            return 1
        wall = self._wall_us(occurrence)
        return self._ordinal_offset + self._count_existing(self._rule_first_us, wall)

    # -- public API ---------------------------------------------------------------------------------
    def after(self, instant: datetime, *, inclusive: bool = False) -> datetime | None:
        """The first occurrence after ``instant`` (at or after it when ``inclusive``), or None when the
        series is over. ``instant`` must be aware (UTC)."""
        after = _require_utc(instant, "instant") if instant.tzinfo is not UTC else instant
        if not inclusive:
            after += _ONE_US
        if self._single is not None:
            candidate: datetime | None = self._single if after <= self._single else None
        else:
            first = self.first_occurrence
            assert first is not None
            if after <= first:
                candidate = first
            else:
                candidate = self._rule_next(after if after > self._rule_low else self._rule_low)
        if candidate is None:
            return None
        if self.end_time is not None and candidate > self.end_time:
            return None
        if self.count is not None and self._ordinal_of(candidate) > self.count:
            return None
        return candidate

    def occurrences(self, after: datetime, n: int) -> list[datetime]:
        """Up to ``n`` occurrences at or after ``after``, in order."""
        after = _require_utc(after, "after")
        out: list[datetime] = []
        current = self._series_next(after)
        ordinal = self._ordinal_of(current) if current is not None and self.count is not None else 0
        while current is not None and len(out) < n:
            if self.end_time is not None and current > self.end_time:
                break
            if self.count is not None and ordinal > self.count:
                break
            out.append(current)
            current = self._series_next(current + _ONE_US)
            ordinal += 1
        return out

    def ordinal(self, occurrence: datetime) -> int:
        """The 1-based position of ``occurrence`` in the series (counted from :attr:`first_occurrence`,
        ignoring ``count`` and ``endTime``, so ``ordinal(o) == count`` means ``o`` is the last one).
        Raises ValueError when ``occurrence`` is not an occurrence of the series."""
        occurrence = _require_utc(occurrence, "occurrence")
        if self._series_next(occurrence) != occurrence:
            raise ValueError(f"{format_instant(occurrence)} is not an occurrence of this schedule")
        return self._ordinal_of(occurrence)

    def nominal(self, occurrence: datetime) -> datetime:
        """The scheduled instant of ``occurrence``: itself (a compiled schedule has no jitter)."""
        return occurrence

    def is_last(self, occurrence: datetime) -> bool:
        """True when no occurrence follows ``occurrence`` (the job completes after it)."""
        return self.after(_require_utc(occurrence, "occurrence")) is None


def compile_schedule(
    start_time: datetime | None,
    recurrence: Recurrence | None,
    created: datetime,
    path: str = "properties.recurrence",
) -> CompiledSchedule:
    """Compile a job's schedule once; raises ValidationError when the recurrence can never fire or its
    endTime lies before the start or the creation time (``path`` prefixes the field names)."""
    return CompiledSchedule(start_time, recurrence, created, path)
