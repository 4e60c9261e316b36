"""The recurrence engine: Azure Scheduler schedules, exactly, with time zones.

Public surface (everything else in this package is private):

* :func:`parse_recurrence` validates a JSON ``recurrence`` object into a frozen :class:`Recurrence`
  (with :meth:`Recurrence.to_json` for the canonical output form);
* :func:`parse_start_time`, :func:`parse_instant` and :func:`format_instant` handle ISO 8601 instants;
* :func:`compile_schedule` turns ``startTime`` + recurrence + creation time into a
  :class:`CompiledSchedule` answering ``first_occurrence``, ``after(instant, inclusive=False)``,
  ``occurrences(after, n)``, ``ordinal(occurrence)`` and ``is_last(occurrence)``;
* :func:`compile_adjusted` adds a job's jitter and exclusions: an :class:`AdjustedSchedule` answering the
  same questions about the instants its occurrences fire at (:class:`OccurrenceSeries`, the protocol both
  satisfy);
* :func:`validate_against_quota` / :func:`minimum_gap` compare a recurrence with a collection's
  ``maxRecurrence``.

The rules are described in ``docs/recurrence.md``.
"""

from scheduler_core.recurrence._adjusted import AdjustedSchedule, OccurrenceSeries, compile_adjusted
from scheduler_core.recurrence._engine import CompiledSchedule, compile_schedule
from scheduler_core.recurrence._instants import format_instant, parse_instant
from scheduler_core.recurrence._model import Frequency, MonthlyOccurrence, Recurrence, Schedule, WeekDay
from scheduler_core.recurrence._parse import MAX_INTERVAL, parse_frequency, parse_recurrence, parse_start_time
from scheduler_core.recurrence._quota import minimum_gap, nominal_gap, validate_against_quota

__all__ = [
    "MAX_INTERVAL",
    "AdjustedSchedule",
    "CompiledSchedule",
    "Frequency",
    "MonthlyOccurrence",
    "OccurrenceSeries",
    "Recurrence",
    "Schedule",
    "WeekDay",
    "compile_adjusted",
    "compile_schedule",
    "format_instant",
    "minimum_gap",
    "nominal_gap",
    "parse_frequency",
    "parse_instant",
    "parse_recurrence",
    "parse_start_time",
    "validate_against_quota",
]
