"""A lossless ``export`` / ``import`` on real storage (the local host over Azurite, with its queue triggers, so
a job due at once would run): collections with calendars and jobs using every preview property and hostile
names, exported, wiped, imported, and compared field by field through the preview API; the effective start
and runs left the export writes out keep each recurring job's next occurrences, and nothing fires during the
import. The dry run's next hour, an import into a collection with another plan, an import stopped half way
and run again, and two imports at once.

The round trip writes every writable property of the preview OpenAPI document (each (definition, property)
pair, the discriminated authentication types and the error action's kinds included): cron strings and their
union with ``CRON_TZ=``, tags and descriptions, business days, calendars of fixed dates, recurring dates, week
days, public holidays and iCalendar text; a property the document gains that the round trip does not write
fails :func:`test_the_round_trip_writes_every_property_of_the_preview_document`. The exceptions are named:
the write-only secrets (never answered, re-entered through ``secretsToReenter``), a calendar's ``iCalendar``
(answered as the dates it was read into), and the certificate facts the service derives from a PFX."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

import pytest

from scheduler_core.api import openapi
from scheduler_core.definitions import PREVIEW_VERSION
from scheduler_core.recurrence import format_instant, parse_instant
from tests.cli.conftest import RG, SUB, Cli, Ran
from tests.support.http_target import HttpTarget, http_target
from tests.support.tls import TestCa

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

SIGNING_SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SAS_KEY = "c2VjcmV0LXNhcy1rZXk="
URI_SIG = "sv=2024&sig=s3cr3t-Sig"
#: Hostile but valid names (docs/names.md): spaces, quotes, pipes, Greek, emoji, a leading dot.
OPS = "ops 'prod' | Ωmega"
BATCH = ".batch ünï (2)"
HOLIDAYS = "Ferien |Ω| 'x'"
ODD_JOB = "Pay 'roll' | ~(x)! ΟΔΟΣ 🎉"
ODD_TEXT = 'quote " backslash \\ line\u2028sep </script> 🎉 \x7f'
IDLE = "idle ‹zzz› 'off'"
COLLECTIONS = (OPS, BATCH, IDLE)
WORKDAYS = "Arbeitstage 'BY' | ✓"
US_DAYS = "us ⟨ics⟩"
NEXT_DAYS = "días ‹next›"
CRON_JOB = "cron 'Berlin' ⏰"
BUSINESS_JOB = "business ⟨days⟩"
PASSWORD = "pa55 'word' | Ω"
OAUTH_SECRET = "oauth-cl1ent-s3cret"
SAS_TOKEN = "sv=2024-11-04&ss=q&sig=c2FzLXRva2Vu"
PFX_PASSWORD = "pfx-pa55"
BERLIN = ZoneInfo("Europe/Berlin")
WEEK_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
#: Hostile but valid tags (ARM's rules): quotes, pipes, Greek, emoji, spaces at the ends, an empty value, the
#: longest name and value, and in the values what a name may not hold (control characters, <, >, %, &, ?, /
#: and the backslash).
TAGS = {
    "team 'ops' \"q\" | Ωmega 🎉": "välue </script>\u2028\x7f\t<&%?/\\>",
    "Env": "",
    " lead and trail ": "  spaced  ",
    "n" * 512: "v" * 256,
    "notazure.microsoft": "ΟΔΟΣ",
}
DESCRIPTION = ODD_TEXT + "\r\n\ttab \u202eright-to-left\u202c zero\u200bwidth " + "ü" * 900
#: Every brokered message property of a Service Bus message.
BROKERED = {
    "contentType": "application/json; charset=utf-8",
    "correlationId": "corr 'x' | Ω",
    "forcePersistence": True,
    "label": "label </script>",
    "messageId": "m-1",
    "partitionKey": "pk",
    "replyTo": "reply-queue",
    "replyToSessionId": "reply-session",
    "scheduledEnqueueTimeUtc": "2030-01-01T00:00:00Z",
    "sessionId": "pk",
    "timeToLive": "P1DT2H",
    "to": "somewhere",
    "viaPartitionKey": "via",
}
SHARED_ACCESS_KEY = {"type": "SharedAccessKey", "sasKeyName": "send", "sasKey": SAS_KEY}
OAUTH = {
    "type": "ActiveDirectoryOAuth",
    "tenant": "contoso.onmicrosoft.com",
    "audience": "https://management.core.windows.net/",
    "clientId": "00000000-0000-0000-0000-00000000000a",
    "secret": OAUTH_SECRET,
}
#: A Service Bus topic message with every field.
TOPIC_MESSAGE = {
    "namespace": "ns1",
    "topicPath": "errors",
    "message": ODD_TEXT,
    "transportType": "NetMessaging",
    "authentication": SHARED_ACCESS_KEY,
    "brokeredMessageProperties": BROKERED,
    "customMessageProperties": {"odd 'key' | Ω": ODD_TEXT, "empty": ""},
}


def _path(*names: str) -> str:
    base = f"subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections"
    return "/".join([base, *(quote(name, safe="") for name in names)])


def call(cli: Cli, method: str, path: str, body: Any = None, **query: str) -> Any:
    """One request with the preview api-version; its JSON answer (None for an empty one)."""
    response = cli.api.call(method, path, body, query={"api-version": PREVIEW_VERSION, **query})
    assert response.status_code < 300, f"{method} {path}: {response.status_code} {response.text}"
    return response.json() if response.content else None


def _soon(minutes: int) -> datetime:
    return (datetime.now(UTC) + timedelta(minutes=minutes)).replace(second=0, microsecond=0)


def _far_date(days: int) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).strftime("%Y-%m-%d")


@dataclass(frozen=True)
class Put:
    """One PUT of the round trip's setup: the resource's names below the resource group (:func:`_path`), the
    preview OpenAPI definition of its body, and the body."""

    names: tuple[str, ...]
    definition: str
    body: dict[str, Any]


def _near_week_days(now: datetime) -> list[str]:
    """The week days of today and tomorrow (UTC) and of the two days after today in Berlin: a calendar of them
    leaves a UTC job nothing in the next hour and moves the first two runs of a Berlin job that starts tomorrow."""
    berlin = now.astimezone(BERLIN).date()
    days = {now.date(), now.date() + timedelta(days=1), berlin + timedelta(days=1), berlin + timedelta(days=2)}
    return [WEEK_DAYS[number] for number in sorted({day.weekday() for day in days})]


def _ics(year: int) -> str:
    """An iCalendar text of all-day events: a yearly date, a fixed span, and a rule expanded into dates."""
    return "\r\n".join(
        [
            "BEGIN:VCALENDAR",
            "VERSION:2.0",
            "PRODID:-//lossless//round trip//EN",
            "BEGIN:VEVENT",
            "UID:eve",
            f"DTSTART;VALUE=DATE:{year}1231",
            "RRULE:FREQ=YEARLY",
            "SUMMARY:Silvester 'x' | Ω",
            "END:VEVENT",
            "BEGIN:VEVENT",
            "UID:offsite",
            f"DTSTART;VALUE=DATE:{year}0704",
            f"DTEND;VALUE=DATE:{year}0706",
            "SUMMARY:Offsite",
            "END:VEVENT",
            "BEGIN:VEVENT",
            "UID:thanks",
            f"DTSTART;VALUE=DATE:{year}1101",
            "RRULE:FREQ=YEARLY;BYMONTH=11;BYDAY=4TH;COUNT=3",
            "SUMMARY:Thanksgiving",
            "END:VEVENT",
            "END:VCALENDAR",
        ]
    )


def _collections_and_calendars(now: datetime) -> list[Put]:
    """Three collections (one disabled, with every quota field) and their calendars: fixed dates, and every
    recurring rule (recurring dates, week days, public holidays with and without a subdivision, iCalendar)."""
    rules = {
        "dates": [_far_date(45)],
        "recurringDates": ["02-29", "12-24"],
        "weekDays": _near_week_days(now),
        "holidays": {"country": "DE", "subdivision": "BY"},
        "iCalendar": _ics(now.year + 1),
    }
    next_days = [WEEK_DAYS[(now.date() + timedelta(days=n)).weekday()] for n in (1, 2)]
    idle = {
        "name": IDLE,
        "location": "eastus",
        "tags": {"purpose": "standby 'x' | Ω"},
        "properties": {
            "sku": {"name": "P20Premium"},
            "state": "Disabled",
            "quota": {
                "maxJobCount": 12,
                "maxJobOccurrence": 500,
                "maxRecurrence": {"frequency": "Hour", "interval": 1},
            },
        },
    }
    ops = {
        "location": "westeurope",
        "tags": {"env": "prod", "odd": ODD_TEXT},
        "properties": {"quota": {"maxJobCount": 40}, "historyRetention": {"succeeded": 100, "failed": "P90D"}},
    }
    return [
        Put((OPS,), "JobCollectionDefinition", ops),
        Put(
            (BATCH,),
            "JobCollectionDefinition",
            {"location": "northeurope", "properties": {"sku": {"name": "P10Premium"}}},
        ),
        Put((IDLE,), "JobCollectionDefinition", idle),
        Put((OPS, "calendars", HOLIDAYS), "Calendar", {"properties": {"dates": [_far_date(40), _far_date(41)]}}),
        Put((OPS, "calendars", "audit"), "Calendar", {"properties": {"dates": [_far_date(90)]}}),
        Put((OPS, "calendars", WORKDAYS), "Calendar", {"properties": rules}),
        Put((BATCH, "calendars", "quarter-end"), "Calendar", {"properties": {"dates": [_far_date(60)]}}),
        Put((BATCH, "calendars", NEXT_DAYS), "Calendar", {"properties": {"weekDays": next_days}}),
        Put(
            (BATCH, "calendars", US_DAYS),
            "Calendar",
            {"properties": {"iCalendar": _ics(now.year), "holidays": {"country": "US"}}},
        ),
    ]


def _jobs(url: str) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """The jobs using every policy, exclusion and action option of the first preview properties: label ->
    (collection, job, properties)."""
    due = _soon(30)

    jobs: dict[str, tuple[str, str, dict[str, Any]]] = {
        # recurring, no startTime, every policy and exclusion, signed: anchored by the export
        "anchored": (
            OPS,
            ODD_JOB,
            {
                "action": {
                    "type": "Http",
                    "expandPlaceholders": True,
                    "flowControl": {"key": "Odd 'Key' | Ω", "ratePerSecond": 0.5, "parallelism": 3},
                    "request": {
                        "uri": f"{url}?job=@{{jobName}}",
                        "method": "POST",
                        "body": ODD_TEXT,
                        "headers": {"X-Odd": "välue 'q' | 🎉"},
                        "signing": {"scheme": "StandardWebhooks", "secret": SIGNING_SECRET},
                        "timeout": "00:00:45",
                        "asyncPolling": {"maxDuration": "01:00:00"},
                    },
                    "retryPolicy": {
                        "retryType": "Fixed",
                        "retryInterval": "PT30S",
                        "retryCount": 2,
                        "retryOn": ["5xx", "429", "Timeout"],
                        "maxRetryDuration": "00:30:00",
                    },
                },
                "recurrence": {
                    "frequency": "Minute",
                    "interval": 20,
                    "jitter": "PT5M",
                    "exclusions": {
                        "dates": [_far_date(20)],
                        "ranges": [{"start": f"{_far_date(30)}T08:00", "end": _far_date(31)}],
                        "calendars": [HOLIDAYS, "audit"],
                    },
                },
                "overlapPolicy": "Skip",
                "missedRunPolicy": {"mode": "RunAll", "window": "PT2H"},
                "pauseAfterFailures": 3,
            },
        ),
        # recurring, no startTime, a count: its runs left are written out; next one in 30 minutes
        "counted": (
            OPS,
            "counted",
            {
                "action": {"type": "Http", "request": {"uri": url, "method": "GET"}},
                "recurrence": {
                    "frequency": "Day",
                    "count": 4,
                    "schedule": {"hours": [due.hour], "minutes": [due.minute]},
                },
                "missedRunPolicy": {"mode": "Skip"},
                "notifications": {
                    "onFailure": {
                        "type": "Http",
                        "request": {"uri": f"{url}/failed?status=@{{failure.status}}", "method": "POST"},
                        "retryPolicy": {"retryType": "Fixed", "retryInterval": "PT20S", "retryCount": 1},
                    },
                    "onRecovery": {"type": "Http", "request": {"uri": f"{url}/recovered", "method": "GET"}},
                    "deadline": {
                        "after": "01:30:00",
                        "action": {"type": "Http", "request": {"uri": f"{url}/late", "method": "POST"}},
                    },
                },
            },
        ),
        # one-time in the future, removed once done, Service Bus with a key (a secret to re-enter)
        "once": (
            OPS,
            "once",
            {
                "startTime": format_instant(_soon(24 * 60)),
                "action": {
                    "type": "ServiceBusQueue",
                    "serviceBusQueueMessage": {
                        "namespace": "ns1",
                        "queueName": "q",
                        "message": ODD_TEXT,
                        "transportType": "AMQP",
                        "authentication": {"type": "SharedAccessKey", "sasKeyName": "send", "sasKey": SAS_KEY},
                    },
                },
                "deleteAfterCompletion": True,
            },
        ),
        # disabled, managed identity, BufferOne, no startTime: anchored though disabled
        "identity": (
            OPS,
            "identity",
            {
                "state": "Disabled",
                "action": {
                    "type": "Http",
                    "request": {
                        "uri": url,
                        "method": "POST",
                        "body": "{}",
                        "authentication": {"type": "ManagedServiceIdentity", "audience": "api://hooks"},
                    },
                },
                "recurrence": {"frequency": "Minute", "interval": 10},
                "overlapPolicy": "BufferOne",
            },
        ),
        # a past startTime (its phase), a zone, a calendar, credentials in the URI's query
        "weekly": (
            BATCH,
            "weekly",
            {
                "startTime": "2024-01-01T06:30:00",
                "action": {"type": "Http", "request": {"uri": f"{url}?{URI_SIG}", "method": "GET"}},
                "recurrence": {
                    "frequency": "Week",
                    "schedule": {"weekDays": ["Monday"], "hours": [6], "minutes": [30]},
                    "timeZone": "Europe/Berlin",
                    "jitter": "PT10M",
                    "exclusions": {"calendars": ["quarter-end"]},
                },
            },
        ),
    }
    return jobs


def _cron_jobs(url: str) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """A cron string with ``CRON_TZ=`` and ``timeZone`` and an array of them, with tags and descriptions."""
    action = {"type": "Http", "request": {"uri": url, "method": "POST", "body": ODD_TEXT}}
    return {
        # no startTime, a count, moved to the previous business day: anchored by the export
        "cron": (
            OPS,
            CRON_JOB,
            {
                "action": action,
                "recurrence": {
                    "cron": "CRON_TZ=Europe/Berlin 45 6 * * MON-FRI",
                    "timeZone": "Europe/Berlin",
                    "count": 12,
                    "exclusions": {"calendars": [WORKDAYS], "onExcluded": "PreviousBusinessDay"},
                },
                "tags": TAGS,
                "description": DESCRIPTION,
            },
        ),
        # a union of cron strings, due once in the next hour, past a calendar of an iCalendar and holidays
        "union": (
            BATCH,
            "union",
            {
                "startTime": "2025-01-01T00:00:00Z",
                "action": {"type": "Http", "request": {"uri": url, "method": "GET"}},
                "recurrence": {
                    "cron": [f"{_soon(30).minute} * * * *", "0 3 * * SUN", "@monthly"],
                    "exclusions": {"calendars": [US_DAYS]},
                },
                "tags": {"only": ""},
                "description": "'",
            },
        ),
    }


def _business_day_jobs(url: str, now: datetime) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """Business days (``onExcluded``) and counts over calendars of recurring rules."""
    tomorrow = now.astimezone(BERLIN).date() + timedelta(days=1)
    action = {"type": "Http", "request": {"uri": url, "method": "POST", "body": ODD_TEXT}}
    return {
        # daily from tomorrow, its first runs on excluded week days moved to the next business day; a count
        "business": (
            OPS,
            BUSINESS_JOB,
            {
                "startTime": f"{tomorrow.isoformat()}T06:30:00",
                "action": action,
                "recurrence": {
                    "frequency": "Day",
                    "count": 5,
                    "timeZone": "Europe/Berlin",
                    "exclusions": {"calendars": [WORKDAYS], "onExcluded": "NextBusinessDay"},
                },
            },
        ),
        # no startTime, daily, a count, and the next two days excluded by their week days: after its run at
        # creation, 3 runs are left, the first in three days
        "counted-rules": (
            BATCH,
            "counted-rules",
            {
                "action": {"type": "Http", "request": {"uri": url, "method": "GET"}},
                "recurrence": {"frequency": "Day", "count": 4, "exclusions": {"calendars": [NEXT_DAYS]}},
            },
        ),
        # every 15 minutes, but today and tomorrow are excluded week days: nothing in the next hour
        "skipped": (
            OPS,
            "skipped",
            {
                "startTime": "2024-01-01T00:00:00Z",
                "action": action,
                "recurrence": {
                    "frequency": "Minute",
                    "interval": 15,
                    "exclusions": {"calendars": [WORKDAYS, "audit"], "onExcluded": "Skip"},
                },
            },
        ),
    }


def _secrets(target: HttpTarget) -> dict[tuple[str, str], tuple[bool, str]]:
    """Each secret the setup writes, by job and path as ``secretsToReenter`` names them: whether the service
    requires it, and its value."""
    action = "properties.action"
    return {
        (ODD_JOB, f"{action}.request.signing.secret"): (True, SIGNING_SECRET),
        ("once", f"{action}.serviceBusQueueMessage.authentication.sasKey"): (False, SAS_KEY),
        ("weekly", f"{action}.request.uri"): (True, f"{target.base_url}/hook?{URI_SIG}"),
        ("basic", f"{action}.request.authentication.password"): (True, PASSWORD),
        ("basic", f"{action}.errorAction.queueMessage.sasToken"): (False, SAS_TOKEN),
        ("oauth", f"{action}.request.authentication.secret"): (True, OAUTH_SECRET),
        ("oauth", f"{action}.errorAction.serviceBusTopicMessage.authentication.sasKey"): (False, SAS_KEY),
        ("cert", f"{action}.request.authentication.pfx"): (True, _pfx()),
        ("cert", f"{action}.request.authentication.password"): (False, PFX_PASSWORD),
        ("cert", f"{action}.errorAction.serviceBusQueueMessage.authentication.sasKey"): (False, SAS_KEY),
        ("storage", f"{action}.queueMessage.sasToken"): (False, SAS_TOKEN),
    }


@functools.cache
def _pfx() -> str:
    """A client certificate as base64 PFX, protected by :data:`PFX_PASSWORD`."""
    return TestCa().issue("lossless client", server=False).pfx_base64(PFX_PASSWORD)


def _authenticated_jobs(url: str, now: datetime) -> dict[str, dict[str, Any]]:
    """HTTP jobs with the Basic and ActiveDirectoryOAuth authentications, each with an error action of another
    kind, and the monthly and end-time schedule fields: job -> properties."""
    return {
        "basic": {
            "action": {
                "type": "Http",
                "request": {
                    "uri": f"{url}/basic",
                    "method": "PUT",
                    "body": "b",
                    "authentication": {"type": "Basic", "username": "svc 'ops'", "password": PASSWORD},
                },
                "errorAction": {
                    "type": "StorageQueue",
                    "queueMessage": {
                        "storageAccount": "acct1",
                        "queueName": "errors",
                        "sasToken": SAS_TOKEN,
                        "message": ODD_TEXT,
                    },
                    "retryPolicy": {"retryType": "None"},
                },
            },
            "recurrence": {
                "frequency": "Month",
                "interval": 1,
                "endTime": format_instant((now + timedelta(days=400)).replace(microsecond=0)),
                "schedule": {"monthDays": [1, 15, -1], "hours": [5], "minutes": [0]},
            },
        },
        "oauth": {
            "action": {
                "type": "Https",
                "request": {"uri": "https://127.0.0.1:9/oauth", "method": "POST", "body": "o", "authentication": OAUTH},
                "errorAction": {"type": "ServiceBusTopic", "serviceBusTopicMessage": TOPIC_MESSAGE},
            },
            "recurrence": {
                "frequency": "Month",
                "schedule": {
                    "monthlyOccurrences": [{"day": "Friday", "Occurrence": -1}, {"day": "Monday", "Occurrence": 1}]
                },
            },
        },
    }


def _certificate_job() -> dict[str, Any]:
    """An HTTPS job with ClientCertificate authentication and a Service Bus queue error action: its properties."""
    return {
        "action": {
            "type": "Https",
            "request": {
                "uri": "https://127.0.0.1:9/cert",
                "method": "GET",
                "authentication": {"type": "ClientCertificate", "pfx": _pfx(), "password": PFX_PASSWORD},
            },
            "errorAction": {
                "type": "ServiceBusQueue",
                "serviceBusQueueMessage": {
                    "namespace": "ns1",
                    "queueName": "errors",
                    "message": "",
                    "transportType": "NotSpecified",
                    "authentication": SHARED_ACCESS_KEY,
                },
                "retryPolicy": {"retryType": "Fixed", "retryInterval": "PT1M", "retryCount": 3},
            },
        },
        "recurrence": {"frequency": "Hour", "interval": 6},
    }


def _message_jobs(url: str) -> dict[str, dict[str, Any]]:
    """Storage queue and Service Bus topic jobs (the latter with the app's identity): job -> properties."""
    return {
        "storage": {
            "action": {
                "type": "StorageQueue",
                "queueMessage": {
                    "storageAccount": "acct2",
                    "queueName": "jobs",
                    "sasToken": SAS_TOKEN,
                    "message": ODD_TEXT,
                },
                "errorAction": {
                    "type": "Http",
                    "request": {"uri": f"{url}/error", "method": "DELETE", "headers": {"X-Err": "1"}},
                },
            },
            "recurrence": {
                "frequency": "Week",
                "interval": 2,
                "schedule": {"weekDays": ["Tuesday", "Saturday"], "hours": [4, 16], "minutes": [5]},
            },
        },
        "topic": {
            "action": {
                "type": "ServiceBusTopic",
                "serviceBusTopicMessage": {
                    "namespace": "ns1",
                    "topicPath": "events",
                    "message": ODD_TEXT,
                    "transportType": "AMQP",
                    "brokeredMessageProperties": {"label": "only"},
                    "customMessageProperties": {"k": "v"},
                },
            },
            "recurrence": {"frequency": "Day", "interval": 3},
        },
    }


def _classic_jobs(url: str, now: datetime) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """Jobs in the disabled collection using every action, authentication, error action and schedule field of
    the 2016-03-01 document, with a secret in each place one goes; none due for two days."""
    start = format_instant((now + timedelta(days=2)).replace(minute=0, second=0, microsecond=0))
    jobs = {**_authenticated_jobs(url, now), "cert": _certificate_job(), **_message_jobs(url)}
    return {name: (IDLE, name, {"startTime": start, **properties}) for name, properties in jobs.items()}


def _setup(url: str, now: datetime) -> tuple[list[Put], dict[str, tuple[str, str]]]:
    """Every PUT of the round trip's setup, in order (collections, calendars, jobs), and job label ->
    (collection, job)."""
    jobs = {**_jobs(url), **_cron_jobs(url), **_business_day_jobs(url, now), **_classic_jobs(url, now)}
    puts = _collections_and_calendars(now)
    puts.extend(
        Put((collection, "jobs", name), "JobDefinition", {"properties": properties})
        for collection, name, properties in jobs.values()
    )
    return puts, {label: (collection, name) for label, (collection, name, _) in jobs.items()}


def _build(cli: Cli, target: HttpTarget, now: datetime) -> tuple[dict[str, tuple[str, str]], list[Put]]:
    """Three collections with calendars, and jobs using every property, written at about ``now``; returns job
    label -> (collection, job), and the PUTs sent."""
    puts, jobs = _setup(f"{target.base_url}/hook", now)
    for put in puts:
        call(cli, "PUT", _path(*put.names), put.body)
    return jobs, puts


def _wait_for_history(cli: Cli, collection: str, job: str, count: int = 1, timeout: float = 30.0) -> list[Any]:
    deadline = time.monotonic() + timeout
    while True:
        rows = call(cli, "GET", _path(collection, "jobs", job, "history"))["value"]
        if len(rows) >= count or time.monotonic() > deadline:
            return list(rows)
        time.sleep(0.2)


def _snapshot(cli: Cli, jobs: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """Every collection (with its calendars) and job as the preview API shows them, each job's next
    execution time and its next occurrences."""
    shot: dict[str, Any] = {"collections": {}, "jobs": {}}
    for collection in COLLECTIONS:
        shot["collections"][collection] = (
            call(cli, "GET", _path(collection)),
            call(cli, "GET", _path(collection, "calendars"))["value"],
        )
    for label, (collection, name) in jobs.items():
        job = call(cli, "GET", _path(collection, "jobs", name))
        status = job["properties"].pop("status")
        occurrences = call(cli, "GET", _path(collection, "jobs", name, "occurrences"), **{"$top": "10"})["value"]
        shot["jobs"][label] = (job, status.get("nextExecutionTime"), occurrences)
    return shot


def _import(cli: Cli, path: Path, *extra: str) -> Ran:
    return cli("import", str(path), "--no-progress", "-o", "json", *extra)


# ---------------------------------------------------------------- what the preview OpenAPI document holds

PREVIEW_DOCUMENT: dict[str, Any] = json.loads(openapi.document(openapi.PREVIEW_DOCUMENT_NAME))
#: Write-only secrets: never answered, so never exported; each is listed in ``secretsToReenter`` instead.
WRITE_ONLY = frozenset(
    {
        ("BasicAuthentication", "password"),
        ("ClientCertAuthentication", "password"),
        ("ClientCertAuthentication", "pfx"),
        ("OAuthAuthentication", "secret"),
        ("RequestSigning", "secret"),
        ("ServiceBusAuthentication", "sasKey"),
        ("StorageQueueMessage", "sasToken"),
    }
)
#: Read into the calendar's ``dates`` and ``recurringDates``, which are answered (and exported) instead.
READ_INTO_DATES = frozenset({("CalendarProperties", "iCalendar")})
#: Derived by the service from the PFX and answered (so exported and compared), never needed in a body.
DERIVED = frozenset(
    {
        ("ClientCertAuthentication", "certificateThumbprint"),
        ("ClientCertAuthentication", "certificateExpirationDate"),
        ("ClientCertAuthentication", "certificateSubjectName"),
    }
)
#: What the service accepts that the preview document does not describe.
UNDOCUMENTED = frozenset({("JobRecurrence", "timeZone")})


def _ref(schema: Mapping[str, Any]) -> str | None:
    """The definition a property's schema refers to, itself or as its array's items."""
    ref = schema.get("$ref") or (schema.get("items") or {}).get("$ref")
    return str(ref).rsplit("/", 1)[-1] if ref else None


def _members(name: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """The properties of a definition with those of the definitions it extends (``allOf``): name ->
    (the definition that declares it, its schema)."""
    definition = PREVIEW_DOCUMENT["definitions"][name]
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for part in definition.get("allOf", []):
        found.update(_members(str(_ref(part))))
    found.update({key: (name, schema) for key, schema in definition.get("properties", {}).items()})
    return found


def _subtypes(name: str) -> dict[str, str]:
    """The definitions discriminated from ``name`` (``x-ms-discriminator-value`` -> definition)."""
    return {
        definition["x-ms-discriminator-value"]: other
        for other, definition in PREVIEW_DOCUMENT["definitions"].items()
        if "x-ms-discriminator-value" in definition and any(_ref(part) == name for part in definition.get("allOf", []))
    }


def documented(name: str, seen: set[str] | None = None) -> set[tuple[str, str]]:
    """Every (definition, property) a body of definition ``name`` may write: read-only ones left out, each
    discriminated type's own included."""
    seen = set() if seen is None else seen
    if name in seen:
        return set()
    seen.add(name)
    found: set[tuple[str, str]] = set()
    for each in (name, *_subtypes(name).values()):
        for key, (owner, schema) in _members(each).items():
            if schema.get("readOnly"):
                continue
            found.add((owner, key))
            inner = _ref(schema)
            if inner is not None:
                found |= documented(inner, seen)
    return found


def used(name: str, value: Any, found: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Add to ``found`` every (definition, property) that ``value``, a body of definition ``name``, holds (a
    property the definition lacks under its own name) and return it."""
    if not isinstance(value, Mapping):
        return found
    name = _subtypes(name).get(str(value.get("type")), name)
    members = _members(name)
    for key, item in value.items():
        owner, schema = members.get(key, (name, {}))
        found.add((owner, key))
        inner = _ref(schema)
        for element in item if isinstance(item, list) else [item]:
            if inner is not None:
                used(inner, element, found)
    return found


def _sent(puts: Iterable[Put]) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for put in puts:
        used(put.definition, put.body, found)
    return found


def _shown(shot: Mapping[str, Any]) -> set[tuple[str, str]]:
    """Every (definition, property) the API answered in a snapshot (:func:`_snapshot`)."""
    found: set[tuple[str, str]] = set()
    for collection, calendars in shot["collections"].values():
        used("JobCollectionDefinition", collection, found)
        for calendar in calendars:
            used("Calendar", calendar, found)
    for job, _, _ in shot["jobs"].values():
        used("JobDefinition", job, found)
    return found


def test_the_round_trip_writes_every_property_of_the_preview_document() -> None:
    """Every writable property of the preview OpenAPI document's collection, calendar and job bodies (the
    certificate facts the service derives aside), and what the service accepts beyond it, is in a body the
    round trip sends; nothing else is."""
    puts, _ = _setup("http://127.0.0.1:9/hook", datetime.now(UTC))
    writable = documented("JobCollectionDefinition") | documented("Calendar") | documented("JobDefinition")
    assert {("JobRecurrence", "cron"), ("JobProperties", "tags"), ("JobRecurrenceExclusions", "onExcluded")} <= writable
    assert {("CalendarProperties", key) for key in ("recurringDates", "weekDays", "holidays", "iCalendar")} <= writable
    assert writable >= WRITE_ONLY | READ_INTO_DATES | DERIVED
    assert not UNDOCUMENTED & writable  # documented now: drop it from UNDOCUMENTED
    sent = _sent(puts)
    required = (writable - DERIVED) | UNDOCUMENTED
    assert required <= sent, sorted(required - sent)
    assert sent <= writable | UNDOCUMENTED, sorted(sent - writable - UNDOCUMENTED)


def _assert_every_sent_property_is_compared(puts: list[Put], before: Mapping[str, Any]) -> None:
    """Every property the setup wrote is answered, and so exported and compared field by field, but the
    write-only secrets and the iCalendar text; the derived certificate facts are answered too."""
    shown = _shown(before)
    missing = _sent(puts) - WRITE_ONLY - READ_INTO_DATES - shown
    assert not missing, sorted(missing)
    assert shown >= DERIVED
    assert not shown & (WRITE_ONLY | READ_INTO_DATES)


def _assert_the_rules_applied(planned: Mapping[str, Any], before: Mapping[str, Any], now: datetime) -> None:
    """The calendars' recurring rules hold in the service's answers and in the dry run: nothing in the next
    hour of the job every 15 minutes (today and tomorrow are excluded week days); the business days' job runs
    its 5 times, none on an excluded week day, the first after two excluded days."""
    assert planned["skipped"] == {"count": 0, "instants": []}
    assert before["jobs"]["skipped"][2] and before["jobs"]["business"][0]["properties"]["recurrence"]["count"] == 5
    calendars = {item["name"].rsplit("/", 1)[-1]: item["properties"] for item in before["collections"][OPS][1]}
    business = [parse_instant(o["scheduledTime"], "s").astimezone(BERLIN) for o in before["jobs"]["business"][2]]
    assert len(business) == 5 and all(WEEK_DAYS[t.weekday()] not in calendars[WORKDAYS]["weekDays"] for t in business)
    assert business[0].date() >= now.astimezone(BERLIN).date() + timedelta(days=3)


def _assert_next_hour_as_listed(
    planned: Mapping[str, Any],
    before: Mapping[str, Any],
    jobs: Mapping[str, tuple[str, str]],
    window: tuple[datetime, datetime],
) -> None:
    """The dry run predicted, for each job, exactly the fire times the service lists for the next hour (none
    for a job that is not enabled)."""
    dry_from, dry_until = window
    hour = timedelta(hours=1)
    for label, (_, name) in jobs.items():
        job, _, occurrences = before["jobs"][label]
        predicted = [parse_instant(t, "instant") for t in planned[name]["instants"]]
        assert planned[name]["count"] == len(predicted), label
        if job["properties"].get("state") != "Enabled":
            assert predicted == [], label
            continue
        fires = [parse_instant(o["fireTime"], "fireTime") for o in occurrences]
        assert all(t in fires and dry_from - timedelta(seconds=1) <= t <= dry_until + hour for t in predicted), (
            label,
            predicted,
            fires,
        )
        assert all(t in predicted for t in fires if dry_until <= t <= dry_from + hour), (label, predicted, fires)


def test_export_wipe_import_keeps_every_field_and_every_schedule(running_cli: Cli, tmp_path: Path) -> None:
    cli = running_cli
    with http_target([200]) as target:
        built_at = datetime.now(UTC)
        jobs, puts = _build(cli, target, built_at)
        # the recurring jobs without startTime ran once at creation: wait for it, so nothing is left in flight
        assert len(_wait_for_history(cli, OPS, ODD_JOB)) == 1
        assert len(_wait_for_history(cli, OPS, "counted")) == 1
        assert len(_wait_for_history(cli, BATCH, "counted-rules")) == 1
        before = _snapshot(cli, jobs)
        export_file = tmp_path / "export.json"
        exported = cli("export", str(export_file), "--no-progress", "-o", "json")
        assert exported.code == 0, exported.err
        assert exported.json()["calendars"] == 6 and exported.json()["jobs"] == 15
        document = json.loads(export_file.read_text(encoding="utf-8"))
        assert document["apiVersion"] == PREVIEW_VERSION
        assert SIGNING_SECRET not in export_file.read_text(encoding="utf-8")
        assert SAS_KEY not in export_file.read_text(encoding="utf-8") and "s3cr3t" not in export_file.read_text()
        text = export_file.read_text(encoding="utf-8")
        assert all(secret not in text for secret in (PASSWORD, OAUTH_SECRET, SAS_TOKEN, _pfx(), PFX_PASSWORD))

        # the secrets to re-enter, each named by job and path
        listed = {(s["job"].rsplit("/", 1)[1], s["path"], s["required"]) for s in document["secretsToReenter"]}
        assert listed == {
            (ODD_JOB, "properties.action.request.signing.secret", True),
            ("once", "properties.action.serviceBusQueueMessage.authentication.sasKey", False),
            ("weekly", "properties.action.request.uri", True),
            *((job, path, required) for (job, path), (required, _) in _secrets(target).items()),
        }
        # the effective start of the jobs without startTime, and the runs left of the counted one
        anchors = {a["job"].rsplit("/", 1)[1]: a for a in document["adjustments"]}
        assert sorted(anchors) == sorted([ODD_JOB, "counted", "identity", CRON_JOB, "counted-rules"])
        assert "count" not in anchors[CRON_JOB]  # none ran: all 12 left (and all 5 of the business days' job)
        assert anchors["counted-rules"]["count"] == {"was": 4, "now": 3}  # the excluded days are no runs
        for label in ("anchored", "counted", "identity"):
            job, _, occurrences = before["jobs"][label]
            assert "startTime" not in job["properties"]
            assert anchors[job["name"].split("/", 1)[1]]["startTime"]["was"] is None
        assert anchors["counted"]["count"] == {"was": 4, "now": 3}  # one ran (at creation): 3 left

        values = _secrets(target)
        for secret in document["secretsToReenter"]:
            secret["value"] = values[(secret["job"].rsplit("/", 1)[1], secret["path"])][1]
        export_file.write_text(json.dumps(document), encoding="utf-8")

        # wipe
        for collection in COLLECTIONS:
            assert cli("collections", "delete", collection, "--yes").code == 0
        assert cli("collections", "list", "-o", "json").json() == []

        calls_before = len(target.received)
        dry_from = datetime.now(UTC)
        dry = _import(cli, export_file, "--dry-run")
        dry_until = datetime.now(UTC)
        assert dry.code == 0, dry.out
        dry_table = cli("import", str(export_file), "--dry-run")
        assert dry_table.code == 0, dry_table.out
        real_started = time.time()
        imported = _import(cli, export_file)
        assert imported.code == 0, imported.out
        results = imported.json()["results"]
        assert {(r["kind"], r["outcome"]) for r in results} == {
            ("collection", "create"),
            ("calendar", "create"),
            ("job", "create"),
        }
        assert imported.json()["summary"]["calendar"]["create"] == 6

        time.sleep(3)  # an occurrence due at once would have run by now (queue triggers on)
        assert [r for r in target.received[calls_before:] if r.at >= real_started] == []
        after = _snapshot(cli, jobs)
        for label, (collection, name) in jobs.items():
            assert call(cli, "GET", _path(collection, "jobs", name, "history"))["value"] == [], label

    # every collection and calendar as it was
    assert after["collections"] == before["collections"]
    # every job field by field, the written-out start and count aside; the same next occurrences
    for label, (job, next_time, occurrences) in before["jobs"].items():
        new_job, new_next, new_occurrences = after["jobs"][label]
        expected = json.loads(json.dumps(job))
        anchor = anchors.get(job["name"].split("/", 1)[1])
        if anchor is not None:
            expected["properties"]["startTime"] = anchor["startTime"]["now"]
            if "count" in anchor:
                expected["properties"]["recurrence"]["count"] = anchor["count"]["now"]
        assert new_job == expected, label
        assert new_next == next_time, label
        assert new_occurrences == occurrences, label
    # the counted job: 3 left, the first in 30 minutes, as before
    assert len(after["jobs"]["counted"][2]) == 3
    # the anchored start is the original's first occurrence (its creation), not the import's
    start = parse_instant(after["jobs"]["anchored"][0]["properties"]["startTime"], "startTime")
    assert start < datetime.fromtimestamp(real_started, UTC) - timedelta(seconds=3)

    # the dry run listed, per job, exactly the occurrences of the next hour
    planned = {r["name"]: r["nextHour"] for r in dry.json()["results"] if r["kind"] == "job"}
    assert planned["identity"] == {"count": 0, "instants": []}  # disabled
    assert planned["once"] == {"count": 0, "instants": []}  # tomorrow
    counted_next = before["jobs"]["counted"][2][0]["fireTime"]
    assert planned["counted"] == {"count": 1, "instants": [counted_next]}
    table = [line for line in dry_table.out.splitlines() if line.startswith("job ") and "/counted " in line]
    assert len(table) == 1 and table[0].endswith(f"would create  fires 1 time in the next hour: {counted_next}")
    hourly = [parse_instant(o["fireTime"], "fireTime") for o in before["jobs"]["anchored"][2]]
    listed = [parse_instant(t, "instant") for t in planned[ODD_JOB]["instants"]]
    hour = timedelta(hours=1)
    assert planned[ODD_JOB]["count"] == len(listed) >= 1, (planned, hourly, dry_from)  # hourly: one or two an hour
    assert all(t in hourly and dry_from - timedelta(seconds=1) <= t <= dry_until + hour for t in listed)
    assert all(t in listed for t in hourly if dry_until <= t <= dry_from + hour)
    _assert_next_hour_as_listed(planned, before, jobs, (dry_from, dry_until))
    _assert_the_rules_applied(planned, before, built_at)

    # every property the setup wrote was answered, so exported and compared above
    _assert_every_sent_property_is_compared(puts, before)
