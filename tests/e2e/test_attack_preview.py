"""Attacks on the wire of api-version 2026-12-01-preview (issue 16), each kept as a test: hostile values for
every new property, oversized bodies, hostile calendar names, a calendar of another collection, a calendar
deleted while jobs are written to use it (threads against the local host on Azurite), placeholders, signing
secrets and api-version spellings.

The rule for each: a 400 whose message names the field and the rule (or an answer the rule allows), never
a 5xx, nothing stored on a refusal (every entity of every table and the execution queue compared), and a
2016-03-01 client never sees a preview property nor a secret.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests
from azure.data.tables import TableServiceClient

from scheduler_core.adapters.azure.clients import queue_client
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.names import table_names
from tests.e2e.conftest import Api, give_back_slots_ahead

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
CLASSIC = "2016-03-01"
JC = "subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc1"
OTHER_JC = "subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc2"
START = (datetime.now(UTC) + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
SECRET_BYTES = b"attack-secret-32-bytes-long!!!!!"
SECRET = "whsec_" + base64.b64encode(SECRET_BYTES).decode()


def call(
    api: Api, method: str, path: str, body: Any = None, version: str | None = PREVIEW, **query: str
) -> requests.Response:
    params = {"api-version": version, **query} if version is not None else dict(query)
    return api.call(method, path, body, query=params)


def job(recurrence: dict[str, Any] | None = None, action: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "startTime": format_instant(START),
        "action": action or {"type": "Https", "request": {"uri": "https://example.org/hook?a=1", "method": "POST"}},
        "recurrence": recurrence or {"frequency": "Hour"},
        **extra,
    }
    return {"properties": properties}


def http(request: dict[str, Any], expand: Any = True) -> dict[str, Any]:
    action: dict[str, Any] = {
        "type": "Https",
        "request": {"uri": "https://example.org/hook?a=1", "method": "POST", **request},
    }
    if expand is not None:
        action["expandPlaceholders"] = expand
    return job(action=action)


def secret_of(raw: bytes) -> str:
    return "whsec_" + base64.b64encode(raw).decode()


def snapshot(api: Api) -> dict[str, Any]:
    """Every entity of the deployment's tables (with ETags) and the execution queue."""
    give_back_slots_ahead()
    assert api.settings.storage_connection_string is not None
    service = TableServiceClient.from_connection_string(api.settings.storage_connection_string)
    state: dict[str, Any] = {}
    for name in table_names(api.settings):
        rows = service.get_table_client(name).list_entities()
        state[name] = sorted(
            (e["PartitionKey"], e["RowKey"], e.metadata.get("etag"), str(sorted(e.items()))) for e in rows
        )
    queue = queue_client(api.settings, api.settings.execution_queue)
    state["executions"] = queue.get_queue_properties().approximate_message_count
    return state


@pytest.fixture
def collection(api: Api) -> Api:
    for path in (JC, OTHER_JC):
        created = call(api, "PUT", path, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}, CLASSIC)
        assert created.status_code == 201, created.text
    return api


def refused_with(answer: requests.Response, field: str, *rule: str) -> None:
    assert answer.status_code == 400, (field, answer.status_code, answer.text[:300])
    message = answer.json()["error"]["message"]
    assert answer.json()["error"]["code"] == "BadRequest"
    assert message.startswith(f"{field}:"), (field, message)
    for part in rule:
        assert part in message, (part, message)


# ------------------------------------------------------------------------------------ hostile values

RANGE = "properties.recurrence.exclusions.ranges[0]"
DATES = "properties.recurrence.exclusions.dates"
JITTER = "properties.recurrence.jitter"
REQUEST = "properties.action.request"
SIGNING = "properties.action.request.signing.secret"

HOSTILE: dict[str, tuple[dict[str, Any], str, tuple[str, ...]]] = {
    # jitter
    "jitter far too long": (job({"frequency": "Minute", "jitter": "P100000D"}), JITTER, ("half the smallest gap",)),
    "jitter TimeSpan max": (
        job({"frequency": "Minute", "jitter": "10675199.02:48:05.4775807"}),
        JITTER,
        ("half the smallest gap",),
    ),
    "jitter negative": (job({"frequency": "Minute", "jitter": "-PT1M"}), JITTER, ("negative",)),
    "jitter zero": (job({"frequency": "Minute", "jitter": "PT0S"}), JITTER, ("longer than zero",)),
    "jitter zero TimeSpan": (job({"frequency": "Minute", "jitter": "00:00:00"}), JITTER, ("longer than zero",)),
    "jitter in years": (job({"frequency": "Minute", "jitter": "P9999999999Y"}), JITTER, ("years and months",)),
    "jitter number": (job({"frequency": "Minute", "jitter": 30}), JITTER, ("duration",)),
    "jitter empty": (job({"frequency": "Minute", "jitter": ""}), JITTER, ("duration",)),
    # exclusions
    "range backwards": (
        job({"frequency": "Hour", "exclusions": {"ranges": [{"start": "2031-01-01", "end": "2030-01-01"}]}}),
        f"{RANGE}.end",
        ("must be after",),
    ),
    "range empty": (
        job(
            {"frequency": "Hour", "exclusions": {"ranges": [{"start": "2031-01-01T05:00", "end": "2031-01-01T05:00"}]}}
        ),
        f"{RANGE}.end",
        ("must be after",),
    ),
    "range end on the last day of the calendar": (
        job({"frequency": "Hour", "exclusions": {"ranges": [{"start": "2030-01-01", "end": "9999-12-31"}]}}),
        f"{RANGE}.end",
        ("1900", "9998"),
    ),
    "range end near the last instant in a zone west of UTC": (
        job(
            {
                "frequency": "Hour",
                "timeZone": "America/Los_Angeles",
                "exclusions": {"ranges": [{"start": "2030-01-01", "end": "9999-12-31T23:00:00"}]},
            }
        ),
        f"{RANGE}.end",
        ("1900", "9998"),
    ),
    "range start at year 1 in a zone east of UTC": (
        job(
            {
                "frequency": "Hour",
                "timeZone": "Asia/Tokyo",
                "exclusions": {"ranges": [{"start": "0001-01-01T01:00:00", "end": "2000-01-01"}]},
            }
        ),
        f"{RANGE}.start",
        ("1900", "9998"),
    ),
    "date on the last day of the calendar": (
        job({"frequency": "Hour", "exclusions": {"dates": ["9999-12-31"]}}),
        f"{DATES}[0]",
        ("1900", "9998"),
    ),
    "date at year 1 in a zone east of UTC": (
        job({"frequency": "Hour", "timeZone": "Asia/Tokyo", "exclusions": {"dates": ["0001-01-01"]}}),
        f"{DATES}[0]",
        ("1900", "9998"),
    ),
    "date year 0": (
        job({"frequency": "Hour", "exclusions": {"dates": ["0000-01-01"]}}),
        f"{DATES}[0]",
        ("YYYY-MM-DD",),
    ),
    "date fullwidth digits": (
        job({"frequency": "Hour", "exclusions": {"dates": ["\uff12\uff10\uff13\uff10-01-01"]}}),
        f"{DATES}[0]",
        ("YYYY-MM-DD",),
    ),
    "1001 dates": (
        job({"frequency": "Hour", "exclusions": {"dates": ["2030-01-01"] * 1001}}),
        DATES,
        ("at most 1000",),
    ),
    "101 ranges": (
        job({"frequency": "Hour", "exclusions": {"ranges": [{"start": "2030-01-01", "end": "2030-01-02"}] * 101}}),
        "properties.recurrence.exclusions.ranges",
        ("at most 100",),
    ),
    "range with seven fraction digits": (
        job(
            {
                "frequency": "Hour",
                "exclusions": {"ranges": [{"start": "2030-01-01T00:00:00.1234567", "end": "2031-01-01"}]},
            }
        ),
        f"{RANGE}.start",
        ("local date",),
    ),
    "range at 24:00": (
        job({"frequency": "Hour", "exclusions": {"ranges": [{"start": "2030-01-01T24:00:00", "end": "2031-01-01"}]}}),
        f"{RANGE}.start",
        ("hour must be",),
    ),
    "range with an offset": (
        job({"frequency": "Hour", "exclusions": {"ranges": [{"start": "2030-01-01T00:00:00Z", "end": "2031-01-01"}]}}),
        f"{RANGE}.start",
        ("without offset",),
    ),
    "exclusions as an array": (
        job({"frequency": "Hour", "exclusions": []}),
        "properties.recurrence.exclusions",
        ("JSON object",),
    ),
    "21 calendars": (
        job({"frequency": "Hour", "exclusions": {"calendars": [f"c{i}" for i in range(21)]}}),
        "properties.recurrence.exclusions.calendars",
        ("at most 20",),
    ),
    "a calendar named by a number": (
        job({"frequency": "Hour", "exclusions": {"calendars": [5]}}),
        "properties.recurrence.exclusions.calendars[0]",
        ("name of a calendar",),
    ),
    "a calendar with a hostile name": (
        job({"frequency": "Hour", "exclusions": {"calendars": ["../x\u0000\r\n" + "A" * 300]}}),
        "properties.recurrence.exclusions.calendars[0]",
        ("names no calendar",),
    ),
    # policies
    "overlap policy unknown": (job(overlapPolicy="Replace"), "properties.overlapPolicy", ("AllowAll",)),
    "pause after zero failures": (job(pauseAfterFailures=0), "properties.pauseAfterFailures", ("between 1 and 1000",)),
    "pause after a huge number": (
        job(pauseAfterFailures=10**40),
        "properties.pauseAfterFailures",
        ("between 1 and 1000",),
    ),
    "pause after a fraction": (job(pauseAfterFailures=1.5), "properties.pauseAfterFailures", ("integer",)),
    "missed-run window too long": (
        job(missedRunPolicy={"mode": "RunOnce", "window": "P31D"}),
        "properties.missedRunPolicy.window",
        ("30 days",),
    ),
    "missed-run without a mode": (
        job(missedRunPolicy={"window": "PT1H"}),
        "properties.missedRunPolicy.mode",
        ("required",),
    ),
    # placeholders
    "placeholder unterminated": (http({"body": "x @{jobName"}), f"{REQUEST}.body", ("closing",)),
    "placeholder at the very end": (http({"body": "x @{"}), f"{REQUEST}.body", ("closing",)),
    "placeholder nested": (http({"body": "@{@{jobName}}"}), f"{REQUEST}.body", ("@{",)),
    "placeholder nested inside a name": (http({"body": "@{job@{Name}}"}), f"{REQUEST}.body", ("@{",)),
    "placeholder unknown": (http({"body": "@{secret}"}), f"{REQUEST}.body", ("unknown placeholder",)),
    "placeholder with a NUL": (http({"body": "@{jobName\u0000}"}), f"{REQUEST}.body", ("unknown placeholder",)),
    "placeholder in a header name": (http({"headers": {"X-@{jobName}": "v"}}), f"{REQUEST}.headers", ("HTTP tokens",)),
    "placeholder in a header name without expansion": (
        http({"headers": {"X-@{jobName}": "v"}}, expand=False),
        f"{REQUEST}.headers",
        ("HTTP tokens",),
    ),
    "placeholder unterminated in a header value": (
        http({"headers": {"X-A": "@{jobName"}}),
        f"{REQUEST}.headers.X-A",
        ("closing",),
    ),
    "placeholder in the URI path": (
        http({"uri": "https://example.org/@{jobName}?a=1"}),
        f"{REQUEST}.uri",
        ("query only",),
    ),
    "placeholder in the URI host": (
        http({"uri": "https://@{jobName}.example.org/?a=1"}),
        f"{REQUEST}.uri",
        ("query only",),
    ),
    "placeholder in the URI fragment": (
        http({"uri": "https://example.org/?a=1#@{jobName}"}),
        f"{REQUEST}.uri",
        ("query only",),
    ),
    "placeholder in an error action": (
        job(
            action={
                "type": "Https",
                "expandPlaceholders": True,
                "request": {"uri": "https://example.org/x", "method": "GET"},
                "errorAction": {
                    "type": "Https",
                    "request": {"uri": "https://example.org/y", "method": "POST", "body": "@{oops"},
                },
            }
        ),
        "properties.action.errorAction.request.body",
        ("closing",),
    ),
    "expandPlaceholders as a string": (
        http({"body": "x"}, expand="true"),
        "properties.action.expandPlaceholders",
        ("true or false",),
    ),
    # signing
    "signing secret without its prefix": (
        http({"signing": {"scheme": "StandardWebhooks", "secret": base64.b64encode(SECRET_BYTES).decode()}}, None),
        SIGNING,
        ("whsec_",),
    ),
    "signing secret with an upper-case prefix": (
        http(
            {"signing": {"scheme": "StandardWebhooks", "secret": "WHSEC_" + base64.b64encode(SECRET_BYTES).decode()}},
            None,
        ),
        SIGNING,
        ("whsec_",),
    ),
    "signing secret too short": (
        http({"signing": {"scheme": "StandardWebhooks", "secret": secret_of(SECRET_BYTES[:8])}}, None),
        SIGNING,
        ("24 to 64", "not 8 bytes"),
    ),
    "signing secret too long": (
        http({"signing": {"scheme": "StandardWebhooks", "secret": secret_of(SECRET_BYTES * 3)}}, None),
        SIGNING,
        ("24 to 64", "not 96 bytes"),
    ),
    "signing secret not base64": (
        http({"signing": {"scheme": "StandardWebhooks", "secret": "whsec_!!attack!!attack!!attack!!attack!!"}}, None),
        SIGNING,
        ("not base64",),
    ),
    "signing secret in the URL-safe alphabet": (
        http(
            {
                "signing": {
                    "scheme": "StandardWebhooks",
                    "secret": "whsec_" + base64.urlsafe_b64encode(b"\xfb\xff" * 16).decode(),
                }
            },
            None,
        ),
        SIGNING,
        ("not base64",),
    ),
    "signing secret with a line break": (
        http({"signing": {"scheme": "StandardWebhooks", "secret": SECRET[:20] + "\n" + SECRET[20:]}}, None),
        SIGNING,
        ("not base64",),
    ),
    "signing secret as a number": (
        http({"signing": {"scheme": "StandardWebhooks", "secret": 12345}}, None),
        SIGNING,
        ("string",),
    ),
    "signing scheme unknown": (
        http({"signing": {"scheme": "HMAC", "secret": SECRET}}, None),
        "properties.action.request.signing.scheme",
        ("StandardWebhooks",),
    ),
}


def test_hostile_preview_values_are_400s_naming_field_and_rule_and_store_nothing(
    collection: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    before = snapshot(collection)
    for name, (body, field, rule) in HOSTILE.items():
        answer = call(collection, "PUT", f"{JC}/jobs/hostile", body)
        assert answer.status_code < 500, (name, answer.text)
        refused_with(answer, field, *rule)
        assert "attack-secret" not in answer.text and base64.b64encode(SECRET_BYTES).decode() not in answer.text, name
    assert snapshot(collection) == before
    assert call(collection, "GET", f"{JC}/jobs/hostile").status_code == 404
    assert base64.b64encode(SECRET_BYTES).decode() not in caplog.text and "attack-secret" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "an error was logged"


def test_values_the_rules_allow_are_accepted(collection: Api) -> None:
    allowed = {
        "overlapping ranges": job(
            {
                "frequency": "Hour",
                "exclusions": {
                    "ranges": [
                        {"start": "2030-01-01", "end": "2031-01-01"},
                        {"start": "2030-06-01", "end": "2030-07-01"},
                    ]
                },
            }
        ),
        "a one-day range": job(
            {"frequency": "Hour", "exclusions": {"ranges": [{"start": "2031-01-01", "end": "2031-01-01"}]}}
        ),
        "repeated dates": job({"frequency": "Hour", "exclusions": {"dates": ["2030-01-01", "2030-01-01"]}}),
        "dates at the edges of the rule": job(
            {"frequency": "Hour", "exclusions": {"dates": ["1900-01-01", "9998-12-31"]}}
        ),
        "a range to the end of the rule in a zone west of UTC": job(
            {
                "frequency": "Hour",
                "timeZone": "Pacific/Pago_Pago",
                "exclusions": {"ranges": [{"start": "2035-01-01", "end": "9998-12-31"}]},
            }
        ),
        "a range from the start of the rule in a zone east of UTC": job(
            {
                "frequency": "Hour",
                "timeZone": "Pacific/Kiritimati",
                "exclusions": {"ranges": [{"start": "1900-01-01", "end": "2000-01-01"}]},
            }
        ),
        "the shortest jitter": job({"frequency": "Minute", "jitter": "PT0.000001S"}),
        "the longest jitter of an hourly job": job({"frequency": "Hour", "jitter": "PT30M"}),
        "a doubled closing brace": http({"body": "@{jobName}}"}),
        "a placeholder name in another case": http({"body": "@{JOBNAME}"}),
        "the signing scheme in another case": http({"signing": {"scheme": "standardwebhooks", "secret": SECRET}}, None),
        "signing an http call": job(
            action={
                "type": "Http",
                "request": {
                    "uri": "http://example.org/x",
                    "method": "GET",
                    "signing": {"scheme": "StandardWebhooks", "secret": SECRET},
                },
            }
        ),
    }
    for name, body in allowed.items():
        answer = call(collection, "PUT", f"{JC}/jobs/ok", body)
        assert answer.status_code == 201, (name, answer.text)
        occurrences = call(collection, "GET", f"{JC}/jobs/ok/occurrences", **{"$top": "3"})
        assert occurrences.status_code == 200, (name, occurrences.text)
        assert call(collection, "DELETE", f"{JC}/jobs/ok").status_code == 200


def test_a_range_that_excludes_occurrences_until_the_last_day_of_the_rule_leaves_them_after_it(collection: Api) -> None:
    body = job({"frequency": "Minute", "exclusions": {"ranges": [{"start": "2000-01-01", "end": "9998-12-31"}]}})
    made = call(collection, "PUT", f"{JC}/jobs/late", body)
    assert made.status_code == 201, made.text
    assert made.json()["properties"]["status"]["nextExecutionTime"] == "9999-01-01T00:00:00Z"
    listed = call(collection, "GET", f"{JC}/jobs/late/occurrences", **{"$top": "2"})
    assert [item["scheduledTime"] for item in listed.json()["value"]] == [
        "9999-01-01T00:00:00Z",
        "9999-01-01T00:01:00Z",
    ]


# --------------------------------------------------------------------------------------- big bodies


def test_bodies_with_100k_or_1m_dates_are_refused_without_a_5xx_and_store_nothing(collection: Api) -> None:
    before = snapshot(collection)
    many = [f"2030-01-{day:02d}" for day in range(1, 29)] * 3572  # 100,016 dates
    answer = call(collection, "PUT", f"{JC}/jobs/big", job({"frequency": "Hour", "exclusions": {"dates": many}}))
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"]["code"] and "larger than" in answer.json()["error"]["message"]
    million = {"properties": {"dates": ["2030-01-01"] * 1_000_000}}
    answer = call(collection, "PUT", f"{JC}/calendars/big", million)
    assert answer.status_code == 413, answer.text
    assert "larger than" in answer.json()["error"]["message"]
    refused_with(
        call(collection, "PUT", f"{JC}/calendars/big", {"properties": {"dates": ["2030-01-01"] * 1001}}),
        "properties.dates",
        "at most 1000",
    )
    assert snapshot(collection) == before


def test_the_calendars_of_a_collection_hold_at_most_1000_dates_together(collection: Api) -> None:
    days = [(datetime(2030, 1, 1) + timedelta(days=i)).strftime("%Y-%m-%d") for i in range(1000)]
    assert call(collection, "PUT", f"{JC}/calendars/a", {"properties": {"dates": days[:600]}}).status_code == 201
    before = snapshot(collection)
    refused_with(
        call(collection, "PUT", f"{JC}/calendars/b", {"properties": {"dates": days[600:] + days[:1]}}),
        "properties.dates",
        "at most 1000 dates in all",
    )
    assert snapshot(collection) == before


# ----------------------------------------------------------------------------------------- calendars


@pytest.mark.parametrize(
    "name",
    [
        "%2E%2E",
        "...",
        "a%2Fb",
        "a%3Fb",
        "a%23b",
        "a%25b",
        "%00",
        "a%0Ab",
        "ends-with-space%20",
        "ends-with-dot.",
        "x" * 300,
        "%FF",
    ],
)
def test_hostile_calendar_names_in_the_path_are_400s_naming_the_name(collection: Api, name: str) -> None:
    before = snapshot(collection)
    for method in ("PUT", "GET", "DELETE"):
        answer = call(
            collection, method, f"{JC}/calendars/{name}", {"properties": {"dates": []}} if method == "PUT" else None
        )
        assert answer.status_code == 400, (name, method, answer.text)
        assert answer.json()["error"]["message"].startswith("calendarName:"), answer.text
    assert snapshot(collection) == before


def test_a_calendar_with_dates_beyond_the_rule_is_refused_so_no_job_can_break_on_it(collection: Api) -> None:
    before = snapshot(collection)
    for dates in (["9999-12-31"], ["0001-01-01"], ["1899-12-31"]):
        refused_with(
            call(collection, "PUT", f"{JC}/calendars/far", {"properties": {"dates": dates}}),
            "properties.dates[0]",
            "1900",
            "9998",
        )
    assert snapshot(collection) == before


def test_a_job_cannot_name_a_calendar_of_another_collection(collection: Api) -> None:
    assert (
        call(collection, "PUT", f"{OTHER_JC}/calendars/theirs", {"properties": {"dates": ["2030-12-25"]}}).status_code
        == 201
    )
    before = snapshot(collection)
    body = job({"frequency": "Day", "exclusions": {"calendars": ["theirs"]}})
    refused_with(
        call(collection, "PUT", f"{JC}/jobs/j", body),
        "properties.recurrence.exclusions.calendars[0]",
        "names no calendar of job collection 'jc1'",
    )
    assert snapshot(collection) == before


def test_deleting_a_calendar_while_jobs_are_written_to_use_it_never_leaves_a_job_naming_a_missing_calendar(
    collection: Api,
) -> None:
    """A calendar DELETE and job PUTs naming that calendar, sent at the same instant from threads, round after
    round. Whatever wins, afterwards no job names a calendar the collection lacks: either the delete was
    refused (409: in use), or each job PUT that names it was refused (400: no such calendar)."""
    outcomes: dict[tuple[int, int], int] = {}
    for round_ in range(20):
        calendar = f"{JC}/calendars/hol{round_}"
        assert call(collection, "PUT", calendar, {"properties": {"dates": ["2030-12-25"]}}).status_code == 201
        body = job({"frequency": "Day", "exclusions": {"calendars": [f"hol{round_}"]}})
        gate = threading.Barrier(4)
        answers: dict[str, int] = {}

        def send(
            label: str,
            method: str,
            path: str,
            payload: Any,
            gate: threading.Barrier = gate,
            answers: dict[str, int] = answers,
        ) -> None:
            gate.wait()
            answers[label] = call(collection, method, path, payload).status_code

        workers = [
            threading.Thread(target=send, args=("delete", "DELETE", calendar, None)),
            *(
                threading.Thread(target=send, args=(f"job{i}", "PUT", f"{JC}/jobs/r{round_}-{i}", body))
                for i in range(3)
            ),
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        assert all(status < 500 for status in answers.values()), answers
        outcomes[(answers["delete"], max(answers[f"job{i}"] for i in range(3)))] = round_
        exists = call(collection, "GET", calendar).status_code == 200
        for i in range(3):
            stored = call(collection, "GET", f"{JC}/jobs/r{round_}-{i}")
            if stored.status_code == 200 and not exists:
                pytest.fail(
                    f"round {round_}: job r{round_}-{i} names calendar hol{round_}, which was deleted ({answers})"
                )
            if answers[f"job{i}"] in (200, 201):
                assert stored.status_code == 200, answers
            call(collection, "DELETE", f"{JC}/jobs/r{round_}-{i}")
        if answers["delete"] == 200:
            assert not exists
        call(collection, "DELETE", calendar)
    assert outcomes  # every round was judged


def test_hostile_occurrence_queries_are_400s_naming_the_parameter(collection: Api) -> None:
    body = job({"frequency": "Minute", "jitter": "PT10S", "exclusions": {"dates": ["2030-01-01"]}})
    assert call(collection, "PUT", f"{JC}/jobs/j", body).status_code == 201
    path = f"{JC}/jobs/j/occurrences"
    for query, field, rule in [
        ({"$top": "0"}, "$top", "between 1 and 100"),
        ({"$top": "101"}, "$top", "between 1 and 100"),
        ({"$top": "1e3"}, "$top", "ASCII digits"),
        ({"$top": "\uff15"}, "$top", "ASCII digits"),
        ({"$skip": "1"}, "$skip", "after"),
        ({"after": "garbage"}, "after", "ISO 8601"),
        ({"after": ""}, "after", "ISO 8601"),
        ({"after": "0001-01-01T00:00:00Z"}, "after", "from 1900-01-01T00:00:00Z"),
        ({"after": "1899-12-31T23:59:59Z"}, "after", "from 1900-01-01T00:00:00Z"),
        ({"after": "9999-12-31T23:59:00Z"}, "after", "to 9998-12-31T23:59:59Z"),
        ({"after": "0001-01-01T00:00:00%2B14:00"}, "after", "out of range"),  # %2B: the test client does not encode
        ({"after": "2030-13-01T00:00:00Z"}, "after", "month"),
    ]:
        refused_with(call(collection, "GET", path, **query), field, rule)
    west = call(collection, "GET", path, after="2030-01-01T00:00:00-14:00", **{"$top": "1"})
    assert west.status_code == 200 and west.json()["value"][0]["scheduledTime"] == "2030-01-02T00:00:00Z"


# ------------------------------------------------------------------------------------- api-version


@pytest.mark.parametrize(
    "version",
    [
        "2026-12-01-PREVIEW",
        " 2026-12-01-preview",
        "2026-12-01-preview ",
        "2026-12-01-preview\u0000",
        "2026-12-01",
        "2026-12-01-preview;2016-03-01",
        "",
        "x" * 3000,
    ],
)
def test_api_version_spellings_other_than_the_published_ones_are_400s(collection: Api, version: str) -> None:
    before = snapshot(collection)
    body = {"properties": {"dates": ["2030-01-01"]}}
    for method, path, payload in [
        ("PUT", f"{JC}/calendars/c", body),
        ("GET", f"{JC}/calendars", None),
        ("GET", JC, None),
    ]:
        answer = call(collection, method, path, payload, version=version)
        refused_with(answer, "api-version", "is not supported", PREVIEW)
        message = answer.json()["error"]["message"]
        assert len(message) < 400 and all(ch >= " " for ch in message), message
    assert snapshot(collection) == before


def test_two_api_version_parameters_are_a_400_that_says_so(collection: Api) -> None:
    url = collection.url(JC).split("?")[0]
    for query in (f"api-version={PREVIEW}&api-version={CLASSIC}", f"api-version={CLASSIC}&api-version={CLASSIC}"):
        answer = requests.get(f"{url}?{query}", headers={"Authorization": f"Bearer {collection.key}"}, timeout=30)
        refused_with(answer, "api-version", "more than once")


def test_the_api_version_parameter_name_is_exact_and_the_400_says_which_was_sent(collection: Api) -> None:
    url = collection.url(JC).split("?")[0]
    answer = requests.get(
        f"{url}?API-Version={CLASSIC}", headers={"Authorization": f"Bearer {collection.key}"}, timeout=30
    )
    refused_with(answer, "api-version", "is required", "'API-Version'")


# ----------------------------------------------------------------------------- what old clients see


def test_classic_clients_never_see_preview_properties_nor_secrets(
    collection: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    assert call(collection, "PUT", f"{JC}/calendars/hol", {"properties": {"dates": ["2030-12-25"]}}).status_code == 201
    body = http(
        {
            "body": "@{jobName} at @{scheduledTime}",
            "headers": {"X-Attempt": "@{attempt}"},
            "uri": "https://example.org/hook?at=@{scheduledTime}",
            "signing": {"scheme": "StandardWebhooks", "secret": SECRET},
            "authentication": {"type": "ManagedServiceIdentity", "audience": "api://target"},
        }
    )
    body["properties"]["recurrence"] = {
        "frequency": "Hour",
        "jitter": "PT10M",
        "exclusions": {
            "dates": ["2030-01-01"],
            "ranges": [{"start": "2030-02-01", "end": "2030-02-02"}],
            "calendars": ["hol"],
        },
    }
    body["properties"].update(
        overlapPolicy="Skip",
        missedRunPolicy={"mode": "RunAll", "window": "PT2H"},
        pauseAfterFailures=3,
        deleteAfterCompletion=True,
    )
    made = call(collection, "PUT", f"{JC}/jobs/full", body)
    assert made.status_code == 201, made.text
    preview_words = (
        "overlapPolicy",
        "missedRunPolicy",
        "pauseAfterFailures",
        "deleteAfterCompletion",
        "jitter",
        "exclusions",
        "calendars",
        "expandPlaceholders",
        "signing",
        "ManagedServiceIdentity",
        "calendarDates",
    )
    secret_texts = (SECRET, base64.b64encode(SECRET_BYTES).decode(), "whsec_")
    checks: list[tuple[str, Callable[[], requests.Response]]] = [
        ("get", lambda: call(collection, "GET", f"{JC}/jobs/full", version=CLASSIC)),
        ("list", lambda: call(collection, "GET", f"{JC}/jobs", version=CLASSIC)),
        ("collection", lambda: call(collection, "GET", JC, version=CLASSIC)),
        (
            "collections",
            lambda: call(
                collection, "GET", "subscriptions/sub1/providers/Microsoft.Scheduler/jobCollections", version=CLASSIC
            ),
        ),
        ("patch", lambda: call(collection, "PATCH", f"{JC}/jobs/full", {"properties": {"state": "Disabled"}}, CLASSIC)),
        ("older version", lambda: call(collection, "GET", f"{JC}/jobs/full", version="2014-08-01-preview")),
    ]
    for name, check in checks:
        answer = check()
        assert answer.status_code == 200, (name, answer.text)
        for word in preview_words + secret_texts:
            assert word not in answer.text, (name, word)
    # the preview shows the properties, never the secret nor the dates its calendars carry
    for answer in (made, call(collection, "GET", f"{JC}/jobs/full"), call(collection, "GET", f"{JC}/jobs")):
        assert "overlapPolicy" in answer.text
        for word in ("calendarDates", *secret_texts):
            assert word not in answer.text, word
    # the classic write kept them all
    kept = call(collection, "GET", f"{JC}/jobs/full").json()["properties"]
    assert kept["recurrence"]["jitter"] == "PT10M" and kept["action"]["request"]["signing"] == {
        "scheme": "StandardWebhooks"
    }
    assert kept["state"] == "Disabled" and kept["overlapPolicy"] == "Skip"
    # a preview property sent with the classic version is refused as it always was, naming the field
    sneaky = job({"frequency": "Hour", "jitter": "PT1M"})
    refused_with(
        call(collection, "PUT", f"{JC}/jobs/full", sneaky, CLASSIC), "properties.recurrence.jitter", "not a known field"
    )
    assert json.loads(call(collection, "GET", f"{JC}/jobs/full").text)["properties"]["recurrence"]["jitter"] == "PT10M"
    assert base64.b64encode(SECRET_BYTES).decode() not in caplog.text and collection.key not in caplog.text
