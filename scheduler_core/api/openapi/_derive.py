"""How ``microsoft-scheduler-2026-12-01-preview.json`` is made from Microsoft's 2016-03-01 document.

The preview document is the 2016-03-01 one (every path, operation and definition as published) with the
version changed and :func:`derive` adding what api-version 2026-12-01-preview carries: the job policies, tags,
the recurrence's jitter, exclusions and cron strings, placeholders, ManagedServiceIdentity authentication and
request signing, the status's ``disabledReason``, the history status ``Skipped`` and a history entry's
``trigger``, the calendar and occurrence resources, the job's backfill, an action's flow control and a
collection's history retention. The file is committed; ``tests/unit/test_openapi_preview.py`` checks that it
is exactly what :func:`derive` makes of the 2016-03-01 document, so neither can drift. To regenerate it:
``python -m scheduler_core.api.openapi._derive``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

__all__ = ["derive", "render"]

VERSION = "2026-12-01-preview"
_JC = (
    "/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.Scheduler"
    "/jobCollections/{jobCollectionName}"
)
_LOCAL_TIME_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?)?$"
_DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/definitions/{name}"}


def _enum(name: str, values: list[str], description: str) -> dict[str, Any]:
    return {
        "type": "string",
        "description": description,
        "enum": values,
        "x-ms-enum": {"name": name, "modelAsString": False},
    }


_RETENTION_KIND = (
    "A duration of P1D to P365D (entries that started longer ago go; at most the newest 10,000 stay) or a count "
    "of 1 to 10,000 (the newest that many stay, whatever their age). Absent: 60 days, at most 1,000."
)

_DEFINITIONS: dict[str, dict[str, Any]] = {
    "FlowControl": {
        "type": "object",
        "description": (
            "Limits on the job's action's calls (every attempt: retries, runs on demand, backfills, replays, "
            "polls; not the error action or notifications), shared by every job of the subscription that names "
            "the same key. Work over a limit waits, in order within a job; at least one limit."
        ),
        "properties": {
            "key": {
                "type": "string",
                "minLength": 1,
                "maxLength": 256,
                "description": "What the limits are shared by (any casing). Absent: the target: an HTTP action's "
                "host (and port), a Storage queue's account/queue, a Service Bus namespace.",
            },
            "ratePerSecond": {
                "type": "number",
                "minimum": 0.01,
                "maximum": 1000,
                "description": "At most this many calls a second, evenly spaced.",
            },
            "parallelism": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "description": "At most this many calls at once.",
            },
        },
    },
    "HistoryRetention": {
        "type": "object",
        "description": (
            "How long the daily cleanup keeps each job's history entries, each kind counted apart. Absent: 60 "
            "days and at most the newest 1,000 entries of both kinds together (Azure Scheduler's rule)."
        ),
        "properties": {
            "succeeded": {"description": f"Entries that did not fail (Completed, Skipped). {_RETENTION_KIND}"},
            "failed": {"description": f"Entries with status Failed. {_RETENTION_KIND}"},
        },
    },
    "MissedRunPolicy": {
        "type": "object",
        "description": "What happens to occurrences missed while the service was down.",
        "required": ["mode"],
        "properties": {
            "mode": _enum(
                "MissedRunMode",
                ["RunOnce", "RunAll", "Skip"],
                "RunOnce (default): one late run stands for all; RunAll: each runs, in order; Skip: none runs.",
            ),
            "window": {
                "type": "string",
                "format": "duration",
                "description": "How old a missed occurrence may be and still run (RunOnce and RunAll; 1 s to 30 days).",
            },
        },
    },
    "JobRecurrenceExclusions": {
        "type": "object",
        "description": (
            "Occurrences on these local dates or within these local ranges (in the job's time zone), or on a "
            "date of the named calendars of the job collection, do not fire and do not count towards count."
        ),
        "properties": {
            "dates": {
                "type": "array",
                "maxItems": 1000,
                "items": {"type": "string", "format": "date", "pattern": _DATE_PATTERN},
                "description": "Local dates, YYYY-MM-DD.",
            },
            "ranges": {"type": "array", "maxItems": 100, "items": _ref("JobRecurrenceExclusionRange")},
            "calendars": {
                "type": "array",
                "maxItems": 20,
                "items": {"type": "string", "minLength": 1},
                "description": "Names of calendars of the job collection (PUT .../calendars/{calendarName}).",
            },
            "onExcluded": {
                "type": "string",
                "enum": ["Skip", "NextBusinessDay", "PreviousBusinessDay"],
                "description": (
                    "What an occurrence on an excluded date does: Skip (default), or move to the nearest business "
                    "day at the same wall time (schedules firing at most once a day)."
                ),
            },
        },
    },
    "JobRecurrenceExclusionRange": {
        "type": "object",
        "description": (
            "A local range [start, end) in the job's time zone; a date alone as end includes that whole day."
        ),
        "required": ["start", "end"],
        "properties": {
            "start": {"type": "string", "pattern": _LOCAL_TIME_PATTERN, "description": "A local date or date-time."},
            "end": {"type": "string", "pattern": _LOCAL_TIME_PATTERN, "description": "A local date or date-time."},
        },
    },
    "ManagedServiceIdentityAuthentication": {
        "x-ms-discriminator-value": "ManagedServiceIdentity",
        "description": "A bearer token of the app's own identity for the audience (https URIs, or loopback).",
        "required": ["audience"],
        "properties": {
            "audience": {"type": "string", "minLength": 1, "maxLength": 256, "description": "The token's resource."}
        },
        "allOf": [_ref("HttpAuthentication")],
    },
    "RequestSigning": {
        "type": "object",
        "description": "Signs each request (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature).",
        "required": ["scheme"],
        "properties": {
            "scheme": _enum("SigningScheme", ["StandardWebhooks"], "The signing scheme."),
            "secret": {
                "type": "string",
                "description": (
                    "whsec_ and the base64 of 24 to 64 random bytes; write-only (never returned; kept when a "
                    "write omits it while the scheme and the URI's host stay the same)."
                ),
            },
        },
    },
    "CalendarProperties": {
        "type": "object",
        "description": "At least one of dates, recurringDates, weekDays, holidays and iCalendar.",
        "properties": {
            "dates": {
                "type": "array",
                "maxItems": 1000,
                "items": {"type": "string", "format": "date", "pattern": _DATE_PATTERN},
                "description": "Local dates, YYYY-MM-DD (read in each job's time zone).",
            },
            "recurringDates": {
                "type": "array",
                "maxItems": 366,
                "items": {"type": "string", "pattern": "^[0-9]{2}-[0-9]{2}$"},
                "description": "Dates every year, MM-DD (02-29 in leap years only).",
            },
            "weekDays": {
                "type": "array",
                "maxItems": 6,
                "items": {"type": "string"},
                "description": "Day names (Monday to Sunday, any casing); at most six.",
            },
            "holidays": _ref("CalendarHolidays"),
            "iCalendar": {
                "type": "string",
                "description": "An iCalendar file of all-day events, read into dates and recurringDates (write-only).",
            },
        },
    },
    "CalendarHolidays": {
        "type": "object",
        "required": ["country"],
        "description": "A country's public holidays every year, as the holidays library lists them.",
        "properties": {
            "country": {"type": "string", "description": "ISO 3166-1 alpha-2 code (DE, US)."},
            "subdivision": {"type": "string", "description": "A subdivision of the country (BY, CA)."},
        },
    },
    "Calendar": {
        "type": "object",
        "properties": {
            "id": {"type": "string", "readOnly": True, "description": "Gets the calendar resource identifier."},
            "type": {"type": "string", "readOnly": True, "description": "Gets the calendar resource type."},
            "name": {"type": "string", "readOnly": True, "description": "Gets the calendar resource name."},
            "properties": _ref("CalendarProperties"),
        },
    },
    "CalendarListResult": {
        "type": "object",
        "properties": {
            "value": {"type": "array", "items": _ref("Calendar"), "description": "Gets the calendars."},
            "nextLink": {"type": "string", "description": "Gets or sets the URL to get the next set of calendars."},
        },
    },
    "JobBackfillRequest": {
        "type": "object",
        "description": "A past window whose occurrences the job runs now, in order (at most 1,000).",
        "required": ["startTime", "endTime"],
        "additionalProperties": False,
        "properties": {
            "startTime": {
                "type": "string",
                "format": "date-time",
                "description": "The window's start (included), at or after 1900-01-01T00:00:00Z.",
            },
            "endTime": {
                "type": "string",
                "format": "date-time",
                "description": "The window's end (excluded): after startTime and not in the future.",
            },
            "overlapPolicy": _enum(
                "OverlapPolicy",
                ["AllowAll", "Skip", "BufferOne"],
                "The overlap policy of the backfill's occurrences (default: the job's).",
            ),
        },
    },
    "JobNotifications": {
        "type": "object",
        "description": (
            "What the job sends about its scheduled occurrences: each an action of any type (its placeholders "
            "always expanded), retried under its retryPolicy; a notification that fails is recorded (actionName "
            "NotificationAction) and never fails the job."
        ),
        "properties": {
            "onFailure": {
                **_ref("JobErrorAction"),
                "description": (
                    "Sent once per failure streak: when an occurrence faults after one that did not; it knows "
                    "@{failure.status}, @{failure.reason}, @{failure.body}, @{failure.executionId} and "
                    "@{failure.attempts}."
                ),
            },
            "onRecovery": {
                **_ref("JobErrorAction"),
                "description": "Sent when an occurrence completes after one or more faulted ones in a row.",
            },
            "deadline": _ref("JobNotificationDeadline"),
        },
    },
    "JobNotificationDeadline": {
        "type": "object",
        "required": ["after", "action"],
        "description": (
            "Sent when a scheduled occurrence has not succeeded 'after' past its scheduled time, whether its "
            "attempts failed, still run or never ran (a replay that succeeded in time counts)."
        ),
        "properties": {
            "after": {
                "type": "string",
                "format": "duration",
                "description": "How long after the scheduled time the occurrence must have succeeded (PT1M to P6D).",
            },
            "action": _ref("JobErrorAction"),
        },
    },
    "JobRerunResult": {
        "type": "object",
        "required": ["scheduledTime", "executionId"],
        "properties": {
            "scheduledTime": {
                "type": "string",
                "format": "date-time",
                "readOnly": True,
                "description": "The occurrence run again (the history entry's expected execution time).",
            },
            "executionId": {
                "type": "string",
                "readOnly": True,
                "description": "The execution id of the replay's first attempt (its history entry's name).",
            },
        },
    },
    "JobBackfillResult": {
        "type": "object",
        "required": ["count"],
        "properties": {
            "count": {
                "type": "integer",
                "minimum": 0,
                "maximum": 1000,
                "readOnly": True,
                "description": "How many occurrences of the window were sent (0 when it holds none).",
            }
        },
    },
    "JobOccurrence": {
        "type": "object",
        "properties": {
            "scheduledTime": {"type": "string", "format": "date-time", "description": "The scheduled instant."},
            "fireTime": {"type": "string", "format": "date-time", "description": "When it fires (jitter added)."},
        },
    },
    "JobOccurrenceListResult": {
        "type": "object",
        "properties": {
            "value": {"type": "array", "items": _ref("JobOccurrence"), "description": "The next occurrences."},
            "nextLink": {"type": "string", "description": "The URL of the occurrences that follow."},
        },
    },
}


def _path_parameter(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "type": "string", "description": description}


def _parameters(*path: dict[str, Any], extra: tuple[dict[str, Any], ...] = ()) -> list[dict[str, Any]]:
    """Microsoft's order: the subscription, group and collection, ``path``, api-version, then ``extra``."""
    return [
        {"$ref": "#/parameters/subscriptionId"},
        _path_parameter("resourceGroupName", "The resource group name."),
        _path_parameter("jobCollectionName", "The job collection name."),
        *path,
        {"$ref": "#/parameters/apiVersion"},
        *extra,
    ]


def _calendars_path() -> dict[str, Any]:
    """The operations of ``.../calendars``: the list of a job collection's calendars (pageable)."""
    return {
        "get": {
            "tags": ["Calendars"],
            "operationId": "Calendars_List",
            "description": "Lists the calendars of a job collection.",
            "parameters": _parameters(),
            "responses": {"200": {"description": "The calendars.", "schema": _ref("CalendarListResult")}},
            "x-ms-pageable": {"nextLinkName": "nextLink"},
        }
    }


def _calendar_path() -> dict[str, Any]:
    """The operations of ``.../calendars/{calendarName}``: get, create or replace, and delete one calendar."""
    calendar = _path_parameter("calendarName", "The calendar name.")
    returned = {"description": "The calendar has been returned.", "schema": _ref("Calendar")}
    body = {
        "name": "calendar",
        "in": "body",
        "required": True,
        "schema": _ref("Calendar"),
        "description": "The calendar.",
    }
    return {
        "get": {
            "tags": ["Calendars"],
            "operationId": "Calendars_Get",
            "description": "Gets a calendar.",
            "parameters": _parameters(calendar),
            "responses": {"200": returned},
        },
        "put": {
            "tags": ["Calendars"],
            "operationId": "Calendars_CreateOrUpdate",
            "description": "Creates or replaces a calendar; the jobs naming it are written again with its dates.",
            "parameters": _parameters(calendar, extra=(body,)),
            "responses": {
                "200": {"description": "The calendar has been replaced.", "schema": _ref("Calendar")},
                "201": {"description": "The calendar has been created.", "schema": _ref("Calendar")},
            },
        },
        "delete": {
            "tags": ["Calendars"],
            "operationId": "Calendars_Delete",
            "description": "Deletes a calendar that no unfinished job names.",
            "parameters": _parameters(calendar),
            "responses": {"200": {"description": "The calendar has been deleted."}},
        },
    }


def _job_backfill_path() -> dict[str, Any]:
    """The operations of ``.../jobs/{jobName}/backfill``: running a past window's occurrences now."""
    job = _path_parameter("jobName", "The job name.")
    backfill = {
        "name": "backfill",
        "in": "body",
        "required": True,
        "schema": _ref("JobBackfillRequest"),
        "description": "The window.",
    }
    return {
        "post": {
            "tags": ["Jobs"],
            "operationId": "Jobs_Backfill",
            "description": (
                "Runs each occurrence the job's schedule has in a past window, in order (history: trigger "
                "Backfill); more than 1,000 is a 400. Each backfill is its own: two over one window each run "
                "every occurrence once (each run with its own execution id), and a repeated request backfills "
                "again. A backfill keeps to its plan's limits on outstanding occurrences (per job and per "
                "collection) and starts one job's occurrences at the plan's pace; one that would exceed a limit "
                "is refused whole with 409 QuotaExceeded naming the limit."
            ),
            "parameters": _parameters(job, extra=(backfill,)),
            "responses": {
                "202": {"description": "The occurrences have been sent.", "schema": _ref("JobBackfillResult")},
                "409": {"description": "A backfill limit of the plan would be exceeded (QuotaExceeded)."},
            },
        }
    }


def _job_rerun_path() -> dict[str, Any]:
    """The operation of ``.../jobs/{jobName}/history/{historyId}/rerun``: running an occurrence again."""
    job = _path_parameter("jobName", "The job name.")
    history = _path_parameter("historyId", "The history entry's name (its execution id).")
    return {
        "post": {
            "tags": ["Jobs"],
            "operationId": "JobHistory_Rerun",
            "description": (
                "Runs the occurrence of a history entry again now: the job's main action with the occurrence's "
                "own scheduledTime, a new execution id, under the job's retry policy and error action, whatever "
                "the job's state (history: trigger Replay). It never changes the job's count or state. Each "
                "request runs the occurrence once more."
            ),
            "parameters": _parameters(job, extra=(history,)),
            "responses": {
                "202": {"description": "The occurrence has been sent.", "schema": _ref("JobRerunResult")},
                "404": {"description": "The job has no such history entry."},
            },
        }
    }


def _job_occurrences_path() -> dict[str, Any]:
    """The operations of ``.../jobs/{jobName}/occurrences``: the job's next occurrences (pageable)."""
    job = _path_parameter("jobName", "The job name.")
    top = {
        "name": "$top",
        "in": "query",
        "required": False,
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "description": "How many occurrences, in the range [1..100] (default 10).",
    }
    after = {
        "name": "after",
        "in": "query",
        "required": False,
        "type": "string",
        "format": "date-time",
        "description": "Occurrences firing after this instant (default: from the first not yet run).",
    }
    return {
        "get": {
            "tags": ["Jobs"],
            "operationId": "Jobs_ListOccurrences",
            "description": "Lists the job's next occurrences, with its jitter and exclusions applied.",
            "parameters": _parameters(job, extra=(top, after)),
            "responses": {"200": {"description": "The occurrences.", "schema": _ref("JobOccurrenceListResult")}},
            "x-ms-pageable": {"nextLinkName": "nextLink"},
        }
    }


def _paths() -> dict[str, Any]:
    """The paths the preview adds to the 2016-03-01 ones, in the document's order (calendars, then jobs)."""
    return {
        f"{_JC}/calendars": _calendars_path(),
        f"{_JC}/calendars/{{calendarName}}": _calendar_path(),
        f"{_JC}/jobs/{{jobName}}/backfill": _job_backfill_path(),
        f"{_JC}/jobs/{{jobName}}/occurrences": _job_occurrences_path(),
        f"{_JC}/jobs/{{jobName}}/history/{{historyId}}/rerun": _job_rerun_path(),
    }


def _history_properties(properties: dict[str, Any]) -> None:
    """A history entry's preview properties: ``trigger`` and ``dueTime`` (read-only), and the action name of
    a notification's entries."""
    properties["actionName"]["enum"].append("NotificationAction")
    properties["trigger"] = {
        **_enum(
            "JobHistoryTrigger",
            ["Scheduled", "Manual", "Backfill", "Replay"],
            "What started the occurrence: its schedule (its retries and error action too), a run on demand "
            "(POST .../run), a backfill (POST .../backfill) or a replay (POST .../history/{historyId}/rerun).",
        ),
        "readOnly": True,
    }
    properties["dueTime"] = {
        "type": "string",
        "format": "date-time",
        "readOnly": True,
        "description": "When the attempt was due to start, where that is not its expectedExecutionTime: a "
        "retry's retry time, an error action's send, a backfill's start slot (its lateness is measured "
        "against it); absent otherwise.",
    }
    properties["flowWait"] = {
        "type": "string",
        "format": "duration",
        "readOnly": True,
        "description": "How long the attempt waited for its action's flowControl limits before it started (not "
        "part of its lateness); absent when it did not wait.",
    }


def _recurrence_properties(recurrence: dict[str, Any]) -> None:
    """The preview's additions to ``JobRecurrence``: jitter, exclusions and cron strings."""
    recurrence["jitter"] = {
        "type": "string",
        "format": "duration",
        "description": "Each occurrence fires at a stable offset in [0, jitter); at most half the smallest gap.",
    }
    recurrence["exclusions"] = _ref("JobRecurrenceExclusions")
    recurrence["cron"] = {
        "description": (
            "A cron string or an array of 1 to 50 (their union fires), instead of frequency, interval and "
            "schedule: 5 fields (minute hour day-of-month month day-of-week) or 6 (second first); L, W, LW, #, "
            "?, names, @hourly-style macros and a CRON_TZ= prefix. Read in timeZone; see docs/recurrence.md."
        ),
        "x-nullable": True,
    }


def _retry_properties(retry: dict[str, Any]) -> None:
    """The preview's ``retryOn`` and ``maxRetryDuration`` of a ``RetryPolicy``."""
    retry["retryOn"] = {
        "type": "array",
        "minItems": 1,
        "maxItems": 32,
        "items": {"type": "string"},
        "description": (
            "The failures that are retried: statuses of 300 to 599 ('429'), status classes ('5xx', '4xx', "
            "'3xx'), 'Timeout' and 'ConnectionError'; any other failure ends the occurrence at once (its error "
            "action runs). Queue actions' statuses are the storage service's, or those Service Bus's REST API "
            "answers (401, 403, 410, 503). Absent: every failure is retried. Recommended: "
            "['5xx', '429', '408', 'Timeout', 'ConnectionError']."
        ),
    }
    retry["maxRetryDuration"] = {
        "type": "string",
        "format": "duration",
        "description": (
            "No retry starts later than this after the occurrence's first attempt started (PT15S to P548D); "
            "retries end at whichever of retryCount and this comes first."
        ),
    }


def _job_properties(job: dict[str, Any]) -> None:
    """The preview's properties of a job: its policies, labels and notifications."""
    job["overlapPolicy"] = _enum(
        "OverlapPolicy",
        ["AllowAll", "Skip", "BufferOne"],
        "What an occurrence does while the previous one is unfinished (default AllowAll).",
    )
    job["missedRunPolicy"] = _ref("MissedRunPolicy")
    job["pauseAfterFailures"] = {
        "type": "integer",
        "minimum": 1,
        "maximum": 1000,
        "description": "After this many consecutive faulted occurrences the job is disabled.",
    }
    job["deleteAfterCompletion"] = {"type": "boolean", "description": "Remove the job when it completes."}
    job["tags"] = {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": "Labels by ARM's tag rules (at most 50); list jobs with $filter=tags/<name> eq '<value>'.",
    }
    job["description"] = {"type": "string", "maxLength": 1024, "description": "What the job is for, for people."}
    job["notifications"] = _ref("JobNotifications")


def _request_properties(request: dict[str, Any]) -> None:
    """The preview's properties of an HTTP request: signing, timeout and asyncPolling."""
    request["signing"] = _ref("RequestSigning")
    request["timeout"] = {
        "type": "string",
        "format": "duration",
        "description": (
            "How long each attempt's call may take, redirects included (ISO 8601 or TimeSpan, PT1S to PT9M); "
            "absent: the app's SCHEDULER_HTTP_TIMEOUT_SECONDS."
        ),
    }
    request["asyncPolling"] = {
        "type": "object",
        "required": ["maxDuration"],
        "description": (
            "A 202 Accepted with Location is an operation still running: it is polled with GET (Retry-After "
            "honoured, 10 s without one; the job's authentication only at its own scheme, host and port) until "
            "another answer, the attempt's outcome, or maxDuration after it began (a Timeout). The history "
            "records the operation once. Absent: a 202 is the answer."
        ),
        "properties": {
            "maxDuration": {
                "type": "string",
                "format": "duration",
                "description": "How long the operation may be polled (PT1M to P1D).",
            }
        },
    }


def derive(classic: dict[str, Any]) -> dict[str, Any]:
    """The preview document made from the 2016-03-01 one (which is not modified)."""
    document = copy.deepcopy(classic)
    document["info"]["version"] = VERSION
    document["info"]["description"] = (
        "Microsoft.Scheduler 2016-03-01 (Microsoft's document, MIT) with the additions of api-version "
        f"{VERSION} of the self-hosted successor: see docs/openapi.md."
    )
    definitions = document["definitions"]
    _job_properties(definitions["JobProperties"]["properties"])
    definitions["JobCollectionProperties"]["properties"]["historyRetention"] = _ref("HistoryRetention")
    _recurrence_properties(definitions["JobRecurrence"]["properties"])
    definitions["JobAction"]["properties"]["expandPlaceholders"] = {
        "type": "boolean",
        "description": (
            "Expands @{scheduledTime}, @{actualTime}, @{executionId}, @{attempt}, @{jobName}, "
            "@{collectionName} and @{historyUrl} (the dashboard's page of the job) in bodies, header values, URI "
            "queries and messages (default false); in the "
            "errorAction also @{failure.status}, @{failure.reason}, @{failure.body}, @{failure.executionId} and "
            "@{failure.attempts} (how the main action's last attempt failed)."
        ),
    }
    definitions["JobAction"]["properties"]["flowControl"] = _ref("FlowControl")
    _request_properties(definitions["HttpRequest"]["properties"])
    _retry_properties(definitions["RetryPolicy"]["properties"])
    definitions["HttpAuthentication"]["properties"]["type"]["enum"].append("ManagedServiceIdentity")
    definitions["JobExecutionStatus"]["enum"].append("Skipped")
    definitions["JobExecutionStatus"]["description"] += (
        " Skipped: an occurrence overlapPolicy or missedRunPolicy did not run (the message says why)."
    )
    _history_properties(definitions["JobHistoryDefinitionProperties"]["properties"])
    definitions["JobStatus"]["properties"]["disabledReason"] = {
        "type": "string",
        "readOnly": True,
        "description": "Why the service disabled the job (pauseAfterFailures); absent otherwise.",
    }
    definitions.update(copy.deepcopy(_DEFINITIONS))
    document["paths"].update(_paths())
    return document


def render(document: dict[str, Any]) -> bytes:
    """The committed file's bytes: two-space indents, keys in the order built, a final newline."""
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def main() -> None:
    here = Path(__file__).resolve().parent
    classic = json.loads((here / "microsoft-scheduler-2016-03-01.json").read_bytes())
    (here / f"microsoft-scheduler-{VERSION}.json").write_bytes(render(derive(classic)))


if __name__ == "__main__":
    main()
