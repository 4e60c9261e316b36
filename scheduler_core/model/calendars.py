"""The recurring part of a collection's calendar (api-version 2026-12-01-preview): dates every year
(``recurringDates``), days of the week (``weekDays``) and a country's public holidays (``holidays``, from the
maintained ``holidays`` library). A job that names calendars carries the union of their rules, as it
carries their fixed dates, so its schedule needs no read of the collection.

Rules are expanded into local dates for the years :func:`horizon` gives around when the job was written
(its schedule's creation time): from the year before to :data:`HORIZON_YEARS` years after. Writing the job
or the calendar again moves the horizon with it.
"""

from __future__ import annotations

import calendar
import functools
from dataclasses import dataclass
from datetime import date, datetime, timedelta

__all__ = ["HORIZON_YEARS", "CalendarRules", "Holidays", "horizon"]

#: How many years after the job's creation year its calendars' recurring rules are expanded for.
HORIZON_YEARS = 25


def horizon(created: datetime) -> range:
    """The years the recurring rules of a job created at ``created`` are expanded for."""
    return range(max(created.year - 1, 1900), min(created.year + HORIZON_YEARS, 9998) + 1)


@dataclass(frozen=True, order=True)
class Holidays:
    """A country's public holidays (ISO 3166-1 alpha-2 ``country``, optional ``subdivision``), as the
    ``holidays`` library lists them."""

    country: str
    subdivision: str | None = None


@dataclass(frozen=True)
class CalendarRules:
    """``recurring_dates`` (month, day) every year (29 February in leap years only), ``week_days``
    (``date.weekday()`` numbers: Monday is 0) and ``holidays``; each sorted, each item once."""

    recurring_dates: tuple[tuple[int, int], ...] = ()
    week_days: tuple[int, ...] = ()
    holidays: tuple[Holidays, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.recurring_dates or self.week_days or self.holidays)

    def union(self, other: CalendarRules) -> CalendarRules:
        return CalendarRules(
            tuple(sorted(set(self.recurring_dates) | set(other.recurring_dates))),
            tuple(sorted(set(self.week_days) | set(other.week_days))),
            tuple(sorted(set(self.holidays) | set(other.holidays))),
        )

    def dates(self, years: range) -> tuple[date, ...]:
        """Every local date the rules name in ``years``, sorted."""
        return _expand(self, years.start, years.stop)


@functools.lru_cache(maxsize=128)
def _expand(rules: CalendarRules, first: int, stop: int) -> tuple[date, ...]:
    found: set[date] = set()
    for year in range(first, stop):
        for month, day in rules.recurring_dates:
            if day <= calendar.monthrange(year, month)[1]:
                found.add(date(year, month, day))
    if rules.week_days:
        week = date(first, 1, 1)
        while week.weekday() not in rules.week_days:
            week += timedelta(days=1)
        end = date(stop - 1, 12, 31)
        steps = sorted((weekday - week.weekday()) % 7 for weekday in rules.week_days)
        while week <= end:
            found.update(week + timedelta(days=step) for step in steps if week + timedelta(days=step) <= end)
            week += timedelta(days=7)
    for item in rules.holidays:
        found.update(public_holidays(item, first, stop))
    return tuple(sorted(found))


@functools.lru_cache(maxsize=64)
def public_holidays(item: Holidays, first: int, stop: int) -> tuple[date, ...]:
    """The public holidays of ``item`` in the years ``[first, stop)``."""
    import holidays

    listed = holidays.country_holidays(item.country, subdiv=item.subdivision, years=range(first, stop))
    return tuple(sorted(listed.keys()))
