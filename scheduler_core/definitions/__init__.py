"""Job collection and job definitions: parsing, validation, normalisation and serialisation.

Pure Python (no storage, no HTTP, no Azure SDK). The management API calls:

* :func:`parse_collection` -> :class:`CollectionSpec` (the typed plan, state and quota, and on the preview wire
  the history retention); :func:`collection_json` (a collection's plan, state, quota and history retention to
  canonical ``JobCollectionProperties``) and :func:`read_collection_properties` /
  :func:`read_collection_retention` (the other direction, trusted: for the stores);
* :func:`parse_job` -> :class:`JobSpec` (canonical properties without secrets, secrets by dotted path);
* :func:`merge_patch` / :func:`merge_collection_patch` for PATCH (JSON merge, then parse again);
* :func:`job_json` (a stored :class:`~scheduler_core.model.JobDefinition` and state to canonical
  ``JobProperties`` and secrets) and :func:`read_job_definition` (the other direction, trusted: for the
  stores), :func:`job_output` to shape a GET response's ``properties``;
* :func:`read_job_action` / :func:`job_action_json` for one ``action`` alone, :func:`restore_secrets` (the
  definition with its secrets put back);
* :func:`recurrence_exceeds_quota` for collection and plan checks;
* the api-versions and their wires (:class:`Wire`, :data:`API_VERSIONS`, :func:`wire_of`): :func:`parse_job`
  takes the request's wire and :func:`job_wire` answers in it;
* a collection's calendars (preview): :func:`parse_calendar`, :func:`calendar_json`, and for the stores
  :func:`calendars_json` / :func:`read_calendars`;
* a job's backfill (preview): :func:`parse_backfill` -> :class:`BackfillSpec`.

Input is accepted in any casing (enum values and field names) and durations as ISO 8601 or .NET
TimeSpan; output uses the swagger's PascalCase enums, camelCase fields, and each duration in the style it
was written in (a default one in the job's style: :attr:`JobSpec.duration_style`).
Every error is a :class:`scheduler_core.errors.ValidationError` (or ``PayloadTooLargeError``) naming the
JSON path and the rule, and never quoting a secret.
"""

from scheduler_core.definitions._actions import (
    action_json,
    job_action_json,
    read_action,
    read_job_action,
)
from scheduler_core.definitions._calendars import (
    MAX_CALENDAR_DATES,
    MAX_CALENDARS,
    calendar_json,
    calendars_json,
    check_calendar_limits,
    format_local_date,
    parse_calendar,
    parse_calendar_body,
    parse_local_date,
    read_calendars,
)
from scheduler_core.definitions._collection import (
    CollectionSpec,
    collection_json,
    parse_collection,
    read_collection_properties,
    read_collection_retention,
)
from scheduler_core.definitions._durations import (
    ISO,
    MAX_DURATION,
    TIMESPAN,
    DurationStyle,
    duration_style,
    format_duration,
    parse_duration,
    read_duration,
)
from scheduler_core.definitions._history import HISTORY_TYPE, history_json
from scheduler_core.definitions._http import MAX_BODY, MAX_HEADER_CHARS, MAX_HEADERS, MAX_URI
from scheduler_core.definitions._job import (
    MAX_JOB_CHARS,
    JobSpec,
    job_json,
    job_output,
    job_wire,
    parse_job,
    read_job_definition,
    recurrence_exceeds_quota,
    restore_secrets,
    written_style,
)
from scheduler_core.definitions._json import MAX_DEPTH, read_json
from scheduler_core.definitions._patch import merge_collection_patch, merge_patch
from scheduler_core.definitions._preview import BackfillSpec, keep_preview, parse_backfill
from scheduler_core.definitions._retry import (
    MAX_RETRY_COUNT,
    MAX_RETRY_INTERVAL,
    MIN_RETRY_INTERVAL,
    read_retry_policy,
    retry_policy_json,
)
from scheduler_core.definitions._versions import API_VERSIONS, CLASSIC_VERSION, PREVIEW_VERSION, Wire, wire_of
from scheduler_core.model.retry import DEFAULT_RETRY_COUNT, DEFAULT_RETRY_INTERVAL

__all__ = [
    "API_VERSIONS",
    "CLASSIC_VERSION",
    "DEFAULT_RETRY_COUNT",
    "DEFAULT_RETRY_INTERVAL",
    "HISTORY_TYPE",
    "ISO",
    "MAX_BODY",
    "MAX_CALENDARS",
    "MAX_CALENDAR_DATES",
    "MAX_DEPTH",
    "MAX_DURATION",
    "MAX_HEADERS",
    "MAX_HEADER_CHARS",
    "MAX_JOB_CHARS",
    "MAX_RETRY_COUNT",
    "MAX_RETRY_INTERVAL",
    "MAX_URI",
    "MIN_RETRY_INTERVAL",
    "PREVIEW_VERSION",
    "TIMESPAN",
    "BackfillSpec",
    "CollectionSpec",
    "DurationStyle",
    "JobSpec",
    "Wire",
    "action_json",
    "calendar_json",
    "calendars_json",
    "check_calendar_limits",
    "collection_json",
    "duration_style",
    "format_duration",
    "format_local_date",
    "history_json",
    "job_action_json",
    "job_json",
    "job_output",
    "job_wire",
    "keep_preview",
    "merge_collection_patch",
    "merge_patch",
    "parse_backfill",
    "parse_calendar",
    "parse_calendar_body",
    "parse_collection",
    "parse_duration",
    "parse_job",
    "parse_local_date",
    "read_action",
    "read_calendars",
    "read_collection_properties",
    "read_collection_retention",
    "read_duration",
    "read_job_action",
    "read_job_definition",
    "read_json",
    "read_retry_policy",
    "recurrence_exceeds_quota",
    "restore_secrets",
    "retry_policy_json",
    "wire_of",
    "written_style",
]
