"""A job's series as the service computes it, for ``export`` (the effective start and the runs left) and for
``import --dry-run`` (what fires in the next hour), with the service's own recurrence engine.

The API does not return when a job's series began: a recurring job without ``startTime`` is anchored at
the instant it was written (its first occurrence, run at once), and ``count`` counts from the first
occurrence at or after that instant. A job written again elsewhere would start a new series at the time of
that write: it would run at once, take the write's time of day as its phase, and run ``count`` times more.
The export therefore writes each such job's *effective start* (its first occurrence, from the preview's
``occurrences`` operation with ``after`` before any job) as ``startTime``, and each job with a ``count`` the
occurrences it has left. Both are listed in the export's ``adjustments``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import date, datetime, timedelta
from typing import Any

from scheduler_core import definitions
from scheduler_core.cli.client import SchedulerClient
from scheduler_core.cli.secrets import stand_ins
from scheduler_core.errors import ValidationError
from scheduler_core.model import JobDefinition
from scheduler_core.model.calendars import CalendarRules
from scheduler_core.model.collection import Calendar
from scheduler_core.recurrence import OccurrenceSeries, format_instant, parse_instant
from scheduler_core.schedules import definition_schedule, next_unrun
from scheduler_core.service import jobs as service_jobs

#: An instant before every job's first occurrence (the earliest ``after`` the occurrences operation takes).
BEFORE_ANY_JOB = "1900-01-01T00:00:00Z"
#: The window of the dry run's "fires in the next hour".
NEXT_HOUR = timedelta(hours=1)
#: Most instants the dry run lists per job (it counts them all).
MAX_LISTED = 100
#: The states of a finished job (no series left).
FINISHED = ("completed", "faulted")


def read_calendar(resource: Mapping[str, Any]) -> Calendar:
    """A calendar as the API answers it (``{"name", "properties"}``; ``name`` may be ``collection/calendar``)
    read by the service's rules: its fixed dates and its recurring rules (recurring dates, week days,
    holidays). A calendar that does not parse is a :class:`~scheduler_core.errors.ValidationError`."""
    name = str(resource.get("name") or "").rsplit("/", 1)[-1]
    dates, rules = definitions.parse_calendar_body({"properties": resource.get("properties") or {}})
    return Calendar(name, dates, rules)


def calendars_by_name(resources: Iterable[Mapping[str, Any]]) -> dict[str, Calendar]:
    """The calendars of a collection as the API answers them (:func:`read_calendar`), by name in lower case;
    one that does not parse is left out."""
    found: dict[str, Calendar] = {}
    for resource in resources:
        try:
            calendar = read_calendar(resource)
        except ValidationError:
            continue
        found[calendar.name.lower()] = calendar
    return found


def with_calendars(definition: JobDefinition, calendars: Mapping[str, Calendar]) -> JobDefinition:
    """``definition`` carrying the fixed dates and the recurring rules of the calendars it names, as the
    service makes a job carry them, from ``calendars`` (by name in lower case; a name it lacks adds none)."""
    exclusions = definition.exclusions
    if exclusions is None or not exclusions.calendars:
        return definition
    dates: set[date] = set()
    rules = CalendarRules()
    for name in exclusions.calendars:
        calendar = calendars.get(name.lower())
        if calendar is not None:
            dates.update(calendar.dates)
            rules = rules.union(calendar.rules)
    return service_jobs.with_calendars(definition, (tuple(sorted(dates)), rules))


def nominal_series(
    properties: Mapping[str, Any], calendars: Mapping[str, Calendar], created: datetime
) -> OccurrenceSeries:
    """The series of a job as the API shows it (its ``properties``), written at ``created``, at its scheduled
    instants: without its jitter, which moves an occurrence but never adds, removes or reorders one."""
    props = {k: v for k, v in properties.items() if k != "status"}
    definition = replace(definitions.read_job_definition(props, stand_ins(props)), jitter=None)
    return definition_schedule(with_calendars(definition, calendars), created, "")


def next_hour(series: OccurrenceSeries, now: datetime) -> tuple[list[datetime], int]:
    """The instants ``series`` fires at within :data:`NEXT_HOUR` of ``now`` (at most :data:`MAX_LISTED`
    listed) and how many there are in all."""
    listed: list[datetime] = []
    total = 0
    instant = next_unrun(series, now, None)
    while instant is not None and instant <= now + NEXT_HOUR:
        total += 1
        if len(listed) < MAX_LISTED:
            listed.append(instant)
        instant = series.after(instant)
    return listed, total


def anchor(
    client: SchedulerClient, group: str, collection: str, job: dict[str, Any], calendars: Mapping[str, Calendar]
) -> dict[str, Any] | None:
    """Write the effective start and the runs left into an exported ``job`` (its ARM JSON, changed in place)
    when the API shows neither; returns what was changed (for the export's ``adjustments``), or None. Only
    an unfinished recurring job read with the preview api-version (which has the ``occurrences`` operation)
    is anchored. ``calendars``: the collection's calendars (:func:`calendars_by_name`)."""
    props = job.get("properties")
    recurrence = props.get("recurrence") if isinstance(props, dict) else None
    if not client.preview or not isinstance(props, dict) or not isinstance(recurrence, dict):
        return None
    if str(props.get("state") or "").lower() in FINISHED:
        return None
    name = str(job.get("name") or "").rsplit("/", 1)[-1]
    first = client.occurrences(group, collection, name, 1, after=BEFORE_ANY_JOB)
    if not first:
        return None
    start = parse_instant(first[0]["scheduledTime"], "scheduledTime")
    original = dict(props)
    change: dict[str, Any] = {}
    if props.get("startTime") is None:
        props["startTime"] = format_instant(start)
        change["startTime"] = {"was": None, "now": props["startTime"]}
    count = recurrence.get("count")
    if isinstance(count, int) and not isinstance(count, bool):
        left = _runs_left(client, group, collection, name, original, calendars, start)
        if left is not None and left != count:
            props["recurrence"] = {**recurrence, "count": left}
            change["count"] = {"was": count, "now": left}
    return change or None


def _runs_left(
    client: SchedulerClient,
    group: str,
    collection: str,
    name: str,
    properties: Mapping[str, Any],
    calendars: Mapping[str, Calendar],
    first: datetime,
) -> int | None:
    """How many occurrences of the job's ``count`` are left: ``count`` less those before its next one (by
    the series' ordinal of that occurrence, computed here from its first occurrence ``first``). None when
    the service shows no next one, or one the series here does not have."""
    upcoming = client.occurrences(group, collection, name, 1)
    if not upcoming:
        return None
    series = nominal_series(properties, calendars, first)
    try:
        ordinal = series.ordinal(parse_instant(upcoming[0]["scheduledTime"], "scheduledTime"))
    except ValueError:
        return None
    count = int(properties["recurrence"]["count"])
    return max(1, count - ordinal + 1)
