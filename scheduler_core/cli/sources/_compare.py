"""The dry run's side-by-side comparison of one job: the first occurrences by this service's engine (the
job as the service would parse it) and those the source system would have run (:mod:`._oracle`), matched
instant by instant; a row on one side only is a difference."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, tzinfo
from typing import Any

from scheduler_core import definitions
from scheduler_core.cli.sources._model import SourceJob
from scheduler_core.cli.sources._oracle import SourceUnknown, source_occurrences
from scheduler_core.definitions import Wire
from scheduler_core.errors import SchedulerError
from scheduler_core.recurrence import format_instant
from scheduler_core.schedules import definition_schedule
from scheduler_core.timezones import UnknownTimeZoneError, resolve_time_zone

__all__ = ["Comparison", "compare"]


@dataclass
class Comparison:
    """One job's rows: (this service's instant, the source's instant), None where one side has none."""

    job: str
    where: str
    system: str
    zone: str
    rows: list[tuple[datetime | None, datetime | None]] = field(default_factory=list)
    service_error: str | None = None
    source_error: str | None = None

    @property
    def differs(self) -> bool:
        return any(a != b for a, b in self.rows) and self.service_error is None and self.source_error is None

    def shown_zone(self) -> tzinfo:
        try:
            return resolve_time_zone(self.zone).zone
        except UnknownTimeZoneError:
            return UTC

    def to_json(self) -> dict[str, Any]:
        def text(instant: datetime | None) -> str | None:
            return format_instant(instant) if instant is not None else None

        return {
            "job": self.job,
            "where": self.where,
            "sourceSystem": self.system,
            "timeZone": self.zone,
            "rows": [{"service": text(a), "source": text(b), "same": a == b} for a, b in self.rows],
            "serviceError": self.service_error,
            "sourceError": self.source_error,
            "differs": self.differs,
        }


def _service(job: SourceJob, now: datetime, after: datetime, count: int) -> list[datetime]:
    """The job's first ``count`` scheduled instants at or after ``after`` by the service's engine, the job
    written at ``now`` (its jitter left out: the instants are the scheduled ones)."""
    definition = definitions.parse_job(job.body, now=now, wire=Wire.PREVIEW).definition
    return definition_schedule(replace(definition, jitter=None), now, "").occurrences(after, count)


def _matched(
    service: list[datetime], source: list[datetime], count: int
) -> list[tuple[datetime | None, datetime | None]]:
    """The two lists merged instant by instant, up to the last instant both sides have computed (a side
    with fewer than ``count`` instants has ended: it is complete)."""
    ends = [side[-1] for side in (service, source) if len(side) >= count]
    limit = min(ends) if ends else None
    rows: list[tuple[datetime | None, datetime | None]] = []
    i = j = 0
    while i < len(service) or j < len(source):
        a = service[i] if i < len(service) else None
        b = source[j] if j < len(source) else None
        if a is not None and (b is None or a <= b):
            if limit is not None and a > limit:
                break
            rows.append((a, b if a == b else None))
            i, j = i + 1, j + (1 if a == b else 0)
        else:
            assert b is not None
            if limit is not None and b > limit:
                break
            rows.append((None, b))
            j += 1
    return rows


def compare(job: SourceJob, now: datetime, after: datetime, count: int) -> Comparison:
    """The comparison of ``job`` (see the module's docstring); an error on a side is its message."""
    expected = job.expected
    zone = expected.zone if expected is not None else "UTC"
    recurrence = job.body.get("properties", {}).get("recurrence")
    if isinstance(recurrence, dict) and isinstance(recurrence.get("timeZone"), str):
        zone = recurrence["timeZone"]
    result = Comparison(job.name, job.where, expected.system if expected is not None else "source", zone)
    service: list[datetime] = []
    source: list[datetime] = []
    try:
        service = _service(job, now, after, count)
    except SchedulerError as exc:
        result.service_error = exc.message
    if expected is None:
        result.source_error = "not known"
    else:
        try:
            source = source_occurrences(expected, after, count, now)
        except SourceUnknown as exc:
            result.source_error = str(exc)
    result.rows = _matched(service, source, count)
    return result
