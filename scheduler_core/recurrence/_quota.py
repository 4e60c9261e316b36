"""How often a recurrence fires, compared with a job collection's ``maxRecurrence`` quota."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from scheduler_core.recurrence._cron_pattern import cron_minimum_gap
from scheduler_core.recurrence._engine import CompiledSchedule
from scheduler_core.recurrence._model import Frequency, Recurrence
from scheduler_core.recurrence._parse import parse_frequency

__all__ = ["minimum_gap", "nominal_gap", "validate_against_quota"]

_UNIT = {
    Frequency.MINUTE: timedelta(minutes=1),
    Frequency.HOUR: timedelta(hours=1),
    Frequency.DAY: timedelta(days=1),
    Frequency.WEEK: timedelta(weeks=1),
    # the shortest month and year, so that a monthly job always satisfies a monthly quota
    Frequency.MONTH: timedelta(days=28),
    Frequency.YEAR: timedelta(days=365),
}
# Occurrences simulated to find a schedule's smallest gap: enough for every daily, weekly and monthly
# cycle of the patterns the validator accepts.
_SAMPLE = 3000
# A Monday at midnight, used as the base when the job has no start time.
_DEFAULT_BASE = datetime(2001, 1, 1, tzinfo=UTC)


def nominal_gap(frequency: Frequency | str, interval: int) -> timedelta:
    """``interval`` units of ``frequency`` (a month counts as 28 days, a year as 365)."""
    freq = frequency if isinstance(frequency, Frequency) else parse_frequency(frequency, "frequency")
    return _UNIT[freq] * interval


def minimum_gap(
    recurrence: Recurrence, start_time: datetime | None = None, stop_below: timedelta | None = None
) -> timedelta:
    """The smallest wall-clock gap between two consecutive occurrences of ``recurrence``.

    Cron strings: found exactly over a whole 400-year cycle, in UTC (:func:`cron_minimum_gap`). Without a
    schedule it is ``interval`` units (months and years measured over the calendar, so a
    monthly job's smallest gap is 28 days). With a schedule it is found by running the rule (in UTC, so
    that a daylight-saving change does not count as a shorter day) from ``start_time`` (default: a Monday
    at midnight) over a few thousand occurrences; the search stops early once a gap below ``stop_below``
    is seen.
    """
    frequency = recurrence.frequency
    if recurrence.cron:
        seconds = cron_minimum_gap(recurrence.cron)
        return timedelta(seconds=seconds) if seconds is not None else timedelta.max
    if frequency is not None and not recurrence.has_schedule and frequency not in (Frequency.MONTH, Frequency.YEAR):
        return nominal_gap(frequency, recurrence.step)
    plain = dataclasses.replace(recurrence, count=None, end_time=None, time_zone=None)
    base = start_time.astimezone(UTC) if start_time is not None else _DEFAULT_BASE
    compiled = CompiledSchedule(base, plain, base)
    smallest: timedelta | None = None
    previous = compiled.first_occurrence
    for _ in range(_SAMPLE):
        if previous is None:
            break
        current = compiled.after(previous)
        if current is None:
            break
        gap = current - previous
        if smallest is None or gap < smallest:
            smallest = gap
            if stop_below is not None and gap < stop_below:
                break
        previous = current
    return smallest if smallest is not None else timedelta.max


def validate_against_quota(
    recurrence: Recurrence | None,
    max_frequency: Frequency | str,
    max_interval: int,
    start_time: datetime | None = None,
) -> bool:
    """True when ``recurrence`` fires at most as often as a collection's ``maxRecurrence``
    ``{frequency, interval}`` allows, i.e. its smallest gap (see :func:`minimum_gap`) is at least
    ``max_interval`` units of ``max_frequency``. A job without recurrence always fits.
    """
    if recurrence is None:
        return True
    limit = nominal_gap(max_frequency, max_interval)
    return minimum_gap(recurrence, start_time, stop_below=limit) >= limit
