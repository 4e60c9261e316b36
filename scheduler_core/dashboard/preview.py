"""The dashboard's dry run of a job write: what a PUT of a definition would store, without storing it.

``POST /dashboard/api/preview/<ARM path of a job>?count=N`` with the body a PUT would send
(``{"properties": {...}}``, api-version 2026-12-01-preview's wire) answers, for the job editor:

* the definition validated exactly as the PUT validates it (:func:`scheduler_core.definitions.parse_job` with
  the stored job as ``previous``, the collection's calendars, its ``maxRecurrence`` and plan): a body the PUT
  would refuse is refused here with the same ARM error (400 naming the field, 409 over the quota);
* its next ``count`` occurrences (1 to 50), in UTC and in the job's time zone, as the PUT would schedule
  them: a write that keeps the job's series keeps its creation time and last run (``count`` and
  ``endTime`` keep counting), any other starts it afresh;
* its write-only fields (paths only, never a value) and, for each one the stored job has set, whether the
  write keeps it (the PUT omits it and the field's identity is unchanged: same user name, tenant and
  client, storage account and queue, namespace and key name, target origin), takes a new value, or drops
  it (``droppedSecrets``): the editor says so before anything is written.

Nothing is written; the answer is ``Cache-Control: no-store`` as every dashboard API answer. It needs the
role to write the job (Contributor): a Reader gets the management API's 403.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from scheduler_core import definitions
from scheduler_core.dashboard.insight import write_only_fields
from scheduler_core.definitions import Wire
from scheduler_core.errors import ValidationError
from scheduler_core.model import JobState
from scheduler_core.recurrence import format_instant
from scheduler_core.schedules import definition_schedule, next_unrun
from scheduler_core.service import plans
from scheduler_core.service.jobs import JobService, calendars_of, refuse_final, with_calendars
from scheduler_core.service.reads import live_collection
from scheduler_core.storage.keys import JobRef
from scheduler_core.timezones import resolve_time_zone

__all__ = ["preview_job"]


def preview_job(jobs: JobService, ref: JobRef, body: Mapping[str, Any], count: int) -> dict[str, Any]:
    """What a PUT of ``body`` (preview wire) on ``ref`` would store: its occurrences and write-only fields."""
    if not isinstance(body.get("properties"), Mapping):
        raise ValidationError("properties", "is required: send the body of the job's PUT")
    collection = live_collection(jobs.stores, ref.collection)
    ref = JobRef(collection.ref, ref.name)
    existing = jobs.stores.jobs.get(ref)
    refuse_final(existing)
    now: datetime = jobs.clock()
    spec = definitions.parse_job(
        body,
        previous=existing.definition if existing is not None else None,
        now=now,
        identity=jobs.identity,
        default_retry_interval=plans.default_retry_interval(collection),
        wire=Wire.PREVIEW,
    )
    definition = with_calendars(spec.definition, calendars_of(spec.definition, collection))
    plans.check_job_fits(ref, definition, collection)

    # The series as the writer keeps it (scheduler_core.service.writes.JobWriter._next_generation).
    series = existing.definition.series if existing is not None else None
    keeps = existing is not None and series is not None and series == definition.series
    defined_at = existing.defined_at if existing is not None and keeps else now
    last_run = existing.last_execution_time if existing is not None and keeps else None
    schedule = definition_schedule(definition, defined_at, ref.identity)
    first = next_unrun(schedule, now, last_run)
    instants = schedule.occurrences(first, count) if first is not None else []
    recurrence = definition.recurrence
    zone = resolve_time_zone(recurrence.zone_name) if recurrence is not None and recurrence.zone_name else None

    properties, secrets = definitions.job_json(definition, spec.state)
    before: Mapping[str, str] = {}
    if existing is not None:
        before = definitions.job_json(existing.definition, existing.state)[1]
    fields = _write_only(properties, secrets, before, _given_paths(body["properties"]))
    dropped = [path for path in before if path not in secrets]
    return {
        "id": ref.resource_id,
        "now": format_instant(now),
        "exists": existing is not None,
        "keepsSeries": keeps,
        "state": str(spec.state),
        "completesAtOnce": spec.state == JobState.ENABLED and first is None,
        "timeZone": {"name": zone.name, "iana": zone.iana} if zone is not None else None,
        "occurrences": [
            {
                "utc": format_instant(instant),
                "local": instant.astimezone(zone.zone).isoformat() if zone is not None else None,
            }
            for instant in instants
        ],
        "writeOnly": fields,
        "droppedSecrets": dropped,
    }


def _write_only(
    properties: Mapping[str, Any], secrets: Mapping[str, str], before: Mapping[str, str], given: set[str]
) -> list[dict[str, Any]]:
    """Each write-only field of the job as it would be stored: set or not, set before or not, and its fate
    ("kept", "new value", "set", "not set")."""
    fields = []
    for path in write_only_fields(properties):
        was = path in before
        now_set = path in secrets
        if not now_set:
            fate = "not set"
        elif was and secrets[path] == before[path]:
            fate = "kept"
        elif path in given:
            fate = "new value"
        else:
            fate = "set"
        fields.append({"path": path, "set": now_set, "wasSet": was, "fate": fate})
    return fields


def _given_paths(properties: Mapping[str, Any], prefix: str = "") -> set[str]:
    """The dotted paths of every non-empty string leaf of ``properties`` (which secrets the body sends)."""
    found: set[str] = set()
    for key, value in properties.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            found |= _given_paths(value, path + ".")
        elif isinstance(value, str) and value:
            found.add(path)
    return found
