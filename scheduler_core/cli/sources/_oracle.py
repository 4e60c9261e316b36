"""What the source system would have run, computed apart from this service's engine: the wall times of a
cron expression come from ``croniter`` (naive, in the source's own field syntax), and the source's own
daylight-saving rule is applied to them here, so that where the two schedulers differ, the dry run shows it.

* The unix rule (crontab, and as the brief of this import says, Kubernetes and Cloud Scheduler too), as
  Vixie cron and cronie document it (``man 8 cron``): a time skipped when clocks go forward runs at once
  after the change (at the first instant of the new time) for a job with a fixed minute and hour; a job
  whose minute or hour field begins with ``*`` (``@hourly`` too) runs only at the times that exist. When
  clocks go back, a fixed-time job runs once (at the first instance), a wildcard one at both.
* EventBridge Scheduler's documented rule: a time that does not exist is skipped, a repeated one runs once
  (the first instance). Its day-of-week numbers (1-7 = SUN-SAT) are read by a table of names written here,
  not by the importer's conversion; its year field is croniter's seventh field; ``StartDate`` and
  ``EndDate`` (exclusive) bound it.
* ``rate()``: every interval from ``StartDate`` (none: from the job's creation); ``at()``: the one instant.

croniter cannot read every form (``LW``, ``L-n``, ``nL`` with a name): the answer is then the reason, and
the comparison shows the service's side alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, tzinfo

from scheduler_core.cli.sources._model import AT, EVENTBRIDGE, RATE, UNIX, Expected
from scheduler_core.recurrence._cron import MACROS
from scheduler_core.timezones import UnknownTimeZoneError, resolve_time_zone

__all__ = ["source_occurrences"]

#: How many wall times the search looks at before it gives up (a schedule that matches nothing soon).
MAX_STEPS = 5000
_EVENTBRIDGE_DAYS = {"1": "SUN", "2": "MON", "3": "TUE", "4": "WED", "5": "THU", "6": "FRI", "7": "SAT"}
#: How far apart in UTC the instants of two wall times can be out of order (a daylight-saving shift is less).
_SETTLED = timedelta(hours=3)
_UNIX_NUMBERS = {"SUN": "0", "MON": "1", "TUE": "2", "WED": "3", "THU": "4", "FRI": "5", "SAT": "6"}


class SourceUnknown(Exception):
    """The source's occurrences cannot be computed here (the message says why)."""


def _instances(wall: datetime, zone: tzinfo) -> list[datetime]:
    """The UTC instants a naive wall time is in ``zone``: none (skipped), one, or two (repeated)."""
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    second = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) != wall:
        return []
    return [first] if first == second else sorted({first, second})


def _after_gap(wall: datetime, zone: tzinfo) -> datetime:
    """The first instant after the skipped stretch of wall time that holds ``wall`` (when clocks went forward)."""
    low = min(wall.replace(tzinfo=zone, fold=0).astimezone(UTC), wall.replace(tzinfo=zone, fold=1).astimezone(UTC))
    instant = low.replace(second=0, microsecond=0)
    for _ in range(24 * 60):
        if instant.astimezone(zone).replace(tzinfo=None) > wall:
            return instant
        instant += timedelta(minutes=1)
    return instant


def _walls(expression: str, start: datetime) -> Iterator[datetime]:
    """Naive wall times matching ``expression`` after ``start`` (naive), by croniter."""
    from croniter import CroniterError, croniter

    try:
        walker = croniter(expression, start)
        for _ in range(MAX_STEPS):
            yield walker.get_next(datetime)
    except (CroniterError, ValueError, KeyError, OverflowError) as exc:
        raise SourceUnknown(f"croniter cannot compute {expression!r}: {exc}") from None


def _unix_instants(expected: Expected, zone: tzinfo, after: datetime) -> Iterator[datetime]:
    expression = MACROS.get(expected.expression.strip().lower(), expected.expression)
    fields = expression.split()
    wildcard = len(fields) == 5 and (fields[0].startswith("*") or fields[1].startswith("*"))
    start = after.astimezone(zone).replace(tzinfo=None) - timedelta(hours=3)
    for wall in _walls(expression, start):
        instants = _instances(wall, zone)
        if not instants:
            if not wildcard:
                yield _after_gap(wall, zone)
            continue
        yield from instants if wildcard else instants[:1]


def eventbridge_expression(expression: str) -> str:
    """EventBridge's six fields as croniter reads them: day-of-week numbers as names (by a table written
    here), ``nL`` as croniter's ``L<unix number>``, and the year as croniter's seventh field (seconds 0)."""
    fields = expression.split()
    if len(fields) != 6:
        raise SourceUnknown(f"{expression!r} has not EventBridge's 6 fields")
    minute, hour, month_day, month, week_day, year = fields
    days: list[str] = []
    for item in week_day.split(","):
        if item.upper() == "L":
            days.append("SAT")
        elif len(item) > 1 and item.upper().endswith("L"):
            name = _EVENTBRIDGE_DAYS.get(item[:-1], item[:-1].upper())
            days.append("L" + _UNIX_NUMBERS.get(name, name))
        else:
            day, hash_, k = item.partition("#")
            low, dash, high = day.partition("-")
            low = _EVENTBRIDGE_DAYS.get(low, low)
            high = _EVENTBRIDGE_DAYS.get(high, high) if dash and "/" not in high else high
            days.append(f"{low}{dash}{high}{hash_}{k}")
    return " ".join((minute, hour, month_day, month, ",".join(days), "0", year))


def _eventbridge_instants(expected: Expected, zone: tzinfo, after: datetime) -> Iterator[datetime]:
    expression = eventbridge_expression(expected.expression)
    begin = max(after, expected.start) if expected.start is not None else after
    start = begin.astimezone(zone).replace(tzinfo=None) - timedelta(hours=3)
    for wall in _walls(expression, start):
        instants = _instances(wall, zone)
        if instants:
            yield instants[0]


def _rate_instants(expected: Expected, after: datetime, now: datetime) -> Iterator[datetime]:
    assert expected.every is not None
    start = expected.start or now
    skipped = max(0, (after - start) // expected.every) if after > start else 0
    instant = start + skipped * expected.every
    for _ in range(MAX_STEPS):
        yield instant
        instant += expected.every


def _zone(name: str) -> tzinfo:
    try:
        return resolve_time_zone(name).zone
    except UnknownTimeZoneError:
        raise SourceUnknown(f"{name!r} is not a time zone known here") from None


def _instants(expected: Expected, after: datetime, now: datetime) -> Iterator[datetime]:
    if expected.kind == UNIX:
        return _unix_instants(expected, _zone(expected.zone), after)
    if expected.kind == EVENTBRIDGE:
        return _eventbridge_instants(expected, _zone(expected.zone), after)
    if expected.kind == RATE:
        return _rate_instants(expected, after, now)
    if expected.kind == AT:
        return iter([expected.start] if expected.start is not None else [])
    raise SourceUnknown(f"no comparison for {expected.kind!r}")


def source_occurrences(expected: Expected, after: datetime, count: int, now: datetime) -> list[datetime]:
    """The first ``count`` instants at or after ``after`` the source would have run, in order (``now``: the
    job's creation, the start of a rate without StartDate); :class:`SourceUnknown` when it cannot be told.

    The instants of successive wall times are in order but for a repeated hour (a wildcard job runs in both
    instances of it): the search goes on until an instant is :data:`_SETTLED` past the ``count``-th."""
    pool: list[datetime] = []
    for instant in _instants(expected, after, now):
        if expected.end is not None and instant >= expected.end:
            break
        if instant < after or (expected.kind != AT and expected.start is not None and instant < expected.start):
            continue
        pool.append(instant)
        if len(pool) >= count:
            pool.sort()
            if instant >= pool[count - 1] + _SETTLED:
                break
    return sorted(pool)[:count]
