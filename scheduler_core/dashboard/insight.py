"""What the dashboard shows about a job beyond its ARM JSON: its next occurrences and its write-only fields.

Pure: a stored :class:`~scheduler_core.model.Job` and an instant in, JSON out. No secret's value ever leaves
this module: only the dotted paths of the write-only fields and whether each is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from scheduler_core import definitions
from scheduler_core.model import Job
from scheduler_core.recurrence import format_instant
from scheduler_core.schedules import next_unrun, schedule_of
from scheduler_core.timezones import resolve_time_zone
from scheduler_core.uris import hidden_credentials

__all__ = ["job_insight", "write_only_fields"]

#: The write-only fields of each HTTP authentication type, inside ``request.authentication``.
_HTTP_AUTH_SECRETS = {
    "basic": ("password",),
    "clientcertificate": ("pfx", "password"),
    "activedirectoryoauth": ("secret",),
}
#: What each missing write-only field means, where it means more than "not given".
_WHEN_MISSING = {
    "sasToken": "not set: the app's own identity (managed identity) is used",
    "sasKey": "not set: the app's own identity (managed identity) is used",
    "password": "not set",
}


def _action_fields(action: Mapping[str, Any], prefix: str) -> list[str]:
    kind = str(action.get("type", "")).lower()
    if kind in ("http", "https"):
        request = action.get("request") or {}
        authentication = request.get("authentication") or {}
        names = _HTTP_AUTH_SECRETS.get(str(authentication.get("type", "")).lower(), ())
        fields = [f"{prefix}.request.uri"] if hidden_credentials(request.get("uri")) else []
        fields += [f"{prefix}.request.authentication.{name}" for name in names]
        if request.get("signing"):  # api-version 2026-12-01-preview: request signing's write-only secret
            fields.append(f"{prefix}.request.signing.secret")
        return fields
    if kind == "storagequeue":
        return [f"{prefix}.queueMessage.sasToken"]
    return [
        f"{prefix}.{payload}.authentication.sasKey"
        for payload in ("serviceBusQueueMessage", "serviceBusTopicMessage")
        if payload in action
    ]


def write_only_fields(properties: Mapping[str, Any]) -> list[str]:
    """The dotted paths (inside a job's ``properties``) of the fields its definition may hold that the API
    never returns: passwords, client secrets, certificates, SAS tokens and keys, request signing secrets, the
    credentials in a target URI's query (``request.uri``, answered with ``***`` in their place), of the action
    and of its error action."""
    action = properties.get("action") or {}
    fields = _action_fields(action, "action")
    error = action.get("errorAction")
    if isinstance(error, Mapping):
        fields += _action_fields(error, "action.errorAction")
    return fields


def job_insight(job: Job, now: datetime, count: int) -> dict[str, Any]:
    """The job's next ``count`` occurrences (the first not yet run as of ``now``, whether or not the job is
    enabled), each in UTC and in the job's time zone, and its write-only fields with whether each is set."""
    properties, secrets = definitions.job_json(job.definition, job.state)
    schedule = schedule_of(job)
    first = next_unrun(schedule, now, job.last_execution_time)
    instants = schedule.occurrences(first, count) if first is not None else []
    recurrence = job.definition.recurrence
    zone_name = recurrence.zone_name if recurrence is not None else None
    zone = resolve_time_zone(zone_name) if zone_name is not None else None
    occurrences = [
        {
            "utc": format_instant(instant),
            "local": instant.astimezone(zone.zone).isoformat() if zone is not None else None,
        }
        for instant in instants
    ]
    fields = []
    for path in write_only_fields(properties):
        is_set = path in secrets
        leaf = path.rpartition(".")[2]
        fields.append({"path": path, "set": is_set, "meaning": "set" if is_set else _WHEN_MISSING.get(leaf, "not set")})
    return {
        "id": job.ref.resource_id,
        "now": format_instant(now.astimezone(UTC)),
        "state": str(job.state),
        "timeZone": {"name": zone.name, "iana": zone.iana} if zone is not None else None,
        "occurrences": occurrences,
        "writeOnly": fields,
    }
