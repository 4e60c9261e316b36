"""The normalised recurrence model: frozen dataclasses with a canonical JSON form."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from scheduler_core.recurrence._cron import CronExpression
from scheduler_core.recurrence._instants import format_instant
from scheduler_core.timezones import resolve_time_zone

__all__ = ["Frequency", "MonthlyOccurrence", "Recurrence", "Schedule", "WeekDay"]


class Frequency(enum.StrEnum):
    """``recurrence.frequency``; the values are the swagger's PascalCase spelling."""

    MINUTE = "Minute"
    HOUR = "Hour"
    DAY = "Day"
    WEEK = "Week"
    MONTH = "Month"
    YEAR = "Year"


class WeekDay(enum.StrEnum):
    """A day of the week; ``number`` follows :meth:`datetime.weekday` (Monday is 0)."""

    MONDAY = "Monday"
    TUESDAY = "Tuesday"
    WEDNESDAY = "Wednesday"
    THURSDAY = "Thursday"
    FRIDAY = "Friday"
    SATURDAY = "Saturday"
    SUNDAY = "Sunday"

    @property
    def number(self) -> int:
        return _WEEKDAY_INDEX[self]


_WEEKDAY_INDEX = {day: i for i, day in enumerate(WeekDay)}


@dataclass(frozen=True, slots=True)
class MonthlyOccurrence:
    """``{"day": ..., "Occurrence": n}``: the n-th (from the end if negative) such day; None = every one."""

    day: WeekDay
    occurrence: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"day": self.day.value}
        if self.occurrence is not None:
            out["Occurrence"] = self.occurrence
        return out


@dataclass(frozen=True, slots=True)
class Schedule:
    """``recurrence.schedule``. Each field is None when absent; lists keep the given order, deduplicated."""

    minutes: tuple[int, ...] | None = None
    hours: tuple[int, ...] | None = None
    week_days: tuple[WeekDay, ...] | None = None
    month_days: tuple[int, ...] | None = None
    monthly_occurrences: tuple[MonthlyOccurrence, ...] | None = None
    months: tuple[int, ...] | None = None

    @property
    def is_empty(self) -> bool:
        """True when no field is set: such a schedule behaves exactly like no schedule."""
        return (
            self.minutes is None
            and self.hours is None
            and self.week_days is None
            and self.month_days is None
            and self.monthly_occurrences is None
            and self.months is None
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.minutes is not None:
            out["minutes"] = list(self.minutes)
        if self.hours is not None:
            out["hours"] = list(self.hours)
        if self.week_days is not None:
            out["weekDays"] = [day.value for day in self.week_days]
        if self.month_days is not None:
            out["monthDays"] = list(self.month_days)
        if self.monthly_occurrences is not None:
            out["monthlyOccurrences"] = [occ.to_json() for occ in self.monthly_occurrences]
        if self.months is not None:
            out["months"] = list(self.months)
        return out


@dataclass(frozen=True, slots=True)
class Recurrence:
    """A validated ``recurrence`` object. Build it with :func:`parse_recurrence`.

    ``interval`` is None when the definition omitted it (it then means 1, see :attr:`step`);
    ``end_time`` is an aware UTC datetime; ``time_zone`` is the canonical spelling of the zone name.
    ``cron`` (api-version 2026-12-01-preview) replaces ``frequency``, ``interval`` and ``schedule`` (then
    None): the union of its strings fires; ``cron_list`` says it was written as an array.
    """

    frequency: Frequency | None
    interval: int | None = None
    count: int | None = None
    end_time: datetime | None = None
    schedule: Schedule | None = None
    time_zone: str | None = None
    cron: tuple[CronExpression, ...] | None = None
    cron_list: bool = False

    @property
    def step(self) -> int:
        """The interval, defaulting to 1."""
        return 1 if self.interval is None else self.interval

    @property
    def zone_name(self) -> str | None:
        """``timeZone``, else the zone of the cron strings' ``CRON_TZ=`` prefix (the parser checked they agree)."""
        if self.time_zone is not None or not self.cron:
            return self.time_zone
        return next((cron.zone for cron in self.cron if cron.zone is not None), None)

    @property
    def zone(self) -> tzinfo | None:
        """The resolved zone, or None when the recurrence has none (everything is UTC)."""
        name = self.zone_name
        if name is None:
            return None
        return resolve_time_zone(name).zone

    @property
    def has_schedule(self) -> bool:
        """True when a schedule with at least one field is present."""
        return self.schedule is not None and not self.schedule.is_empty

    def to_json(self, *, preview: bool = True) -> dict[str, Any]:
        """The canonical JSON form: PascalCase enum values, capital-O ``Occurrence``, UTC ``endTime``, the
        cron strings as written (``preview`` False: without them, as api-version 2016-03-01 shows a cron
        job: a recurrence with no frequency)."""
        out: dict[str, Any] = {}
        if self.frequency is not None:
            out["frequency"] = self.frequency.value
        if self.cron is not None and preview:
            texts = [cron.text for cron in self.cron]
            out["cron"] = texts if self.cron_list else texts[0]
        if self.interval is not None:
            out["interval"] = self.interval
        if self.count is not None:
            out["count"] = self.count
        if self.end_time is not None:
            out["endTime"] = format_instant(self.end_time)
        if self.schedule is not None:
            out["schedule"] = self.schedule.to_json()
        if self.time_zone is not None:
            out["timeZone"] = self.time_zone
        return out
