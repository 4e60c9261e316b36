"""The preview properties at the wire (api-version 2026-12-01-preview): parsed into typed values, refused
with 400s naming the field and the rule, answered only by the preview wire, and kept by classic writes."""

from __future__ import annotations

import base64
import copy
import json
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from scheduler_core import definitions
from scheduler_core.definitions import Wire, job_json, job_wire, parse_job, read_job_definition
from scheduler_core.errors import ValidationError
from scheduler_core.model.actions import HttpAction, ManagedServiceIdentityAuthentication, SigningScheme
from scheduler_core.model.job import ExclusionRange, JobDefinition, MissedRunMode, OverlapPolicy
from scheduler_core.model.retry import Duration
from scheduler_core.model.states import JobState

NOW = datetime.now(UTC).replace(microsecond=0)
START = (NOW + timedelta(days=1)).strftime("%Y-%m-%dT%H:00:00Z")
SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
OTHER_SECRET = "whsec_" + base64.b64encode(b"z" * 24).decode()


def classic_body(**properties: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "properties": {
            "startTime": START,
            "action": {"type": "Https", "request": {"uri": "https://example.org/hook?x=1", "method": "POST"}},
            "recurrence": {"frequency": "Hour", "interval": 1},
        }
    }
    body["properties"].update(properties)
    return body


def preview_body() -> dict[str, Any]:
    body = classic_body(
        overlapPolicy="Skip",
        missedRunPolicy={"mode": "RunAll", "window": "PT2H"},
        pauseAfterFailures=3,
        deleteAfterCompletion=True,
    )
    props = body["properties"]
    props["action"]["expandPlaceholders"] = True
    props["action"]["request"].update(
        {
            "body": "run @{jobName} of @{collectionName} at @{scheduledTime}",
            "headers": {"X-Attempt": "@{attempt}"},
            "uri": "https://example.org/hook?at=@{scheduledTime}",
            "authentication": {"type": "ManagedServiceIdentity", "audience": "api://scheduler-target"},
            "signing": {"scheme": "StandardWebhooks", "secret": SECRET},
            "timeout": "PT2M30S",
        }
    )
    props["recurrence"].update(
        {
            "jitter": "PT20M",
            "exclusions": {
                "dates": ["2030-12-25", "2030-01-01"],
                "ranges": [
                    {"start": "2030-07-01", "end": "2030-07-14"},
                    {"start": "2030-02-01T08:30", "end": "2030-02-01T17:00"},
                ],
                "calendars": ["holidays"],
            },
        }
    )
    return body


def parse(body: dict[str, Any], wire: Wire = Wire.PREVIEW, previous: JobDefinition | None = None) -> JobDefinition:
    return parse_job(body, now=NOW, wire=wire, previous=previous).definition


def refused(body: dict[str, Any], wire: Wire = Wire.PREVIEW, previous: JobDefinition | None = None) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        parse_job(body, now=NOW, wire=wire, previous=previous)
    return caught.value


# ---------------------------------------------------------------------------------------------- parsing


def test_every_preview_property_becomes_a_typed_value() -> None:
    definition = parse(preview_body())
    assert definition.overlap_policy is OverlapPolicy.SKIP
    assert definition.missed_run_policy.mode is MissedRunMode.RUN_ALL
    assert definition.missed_run_policy.window_length == timedelta(hours=2)
    assert definition.pause_after_failures == 3
    assert definition.delete_after_completion is True
    assert definition.jitter == Duration(timedelta(minutes=20), "iso")
    exclusions = definition.exclusions
    assert exclusions is not None
    assert exclusions.dates == (date(2030, 12, 25), date(2030, 1, 1))
    assert exclusions.ranges == (
        ExclusionRange(date(2030, 7, 1), date(2030, 7, 14)),
        ExclusionRange(datetime(2030, 2, 1, 8, 30), datetime(2030, 2, 1, 17)),
    )
    assert exclusions.ranges[0].end_wall == datetime(2030, 7, 15)  # a date as end includes the day
    assert exclusions.calendars == ("holidays",)
    action = definition.action
    assert action.expand_placeholders is True
    assert isinstance(action.main, HttpAction)
    assert action.main.authentication == ManagedServiceIdentityAuthentication("api://scheduler-target")
    assert action.main.signing is not None
    assert action.main.signing.scheme is SigningScheme.STANDARD_WEBHOOKS
    assert action.main.signing.secret.reveal() == SECRET
    assert action.main.timeout == Duration(timedelta(minutes=2, seconds=30), "iso")
    assert SECRET not in repr(definition)


def test_defaults_are_those_of_a_2016_job_and_are_not_written() -> None:
    definition = parse(classic_body())
    assert definition.overlap_policy is OverlapPolicy.ALLOW_ALL
    assert definition.missed_run_policy.mode is MissedRunMode.RUN_ONCE
    assert (definition.pause_after_failures, definition.delete_after_completion) == (None, False)
    assert (definition.jitter, definition.exclusions, definition.action.expand_placeholders) == (None, None, False)
    stored, _ = job_json(definition, JobState.ENABLED)
    assert stored == job_wire(definition, JobState.ENABLED, Wire.CLASSIC)
    assert set(stored) == {"startTime", "action", "recurrence", "state"}


def test_enum_values_take_any_casing_and_are_answered_canonically() -> None:
    body = classic_body(overlapPolicy="bufferone", missedRunPolicy={"MODE": "skip"})
    answered = job_wire(parse(body), JobState.ENABLED, Wire.PREVIEW)
    assert answered["overlapPolicy"] == "BufferOne"
    assert answered["missedRunPolicy"] == {"mode": "Skip"}


def test_durations_keep_the_style_they_were_written_in() -> None:
    body = classic_body(missedRunPolicy={"mode": "RunOnce", "window": "01:30:00"})
    body["properties"]["recurrence"]["jitter"] = "00:05:00"
    answered = job_wire(parse(body), JobState.ENABLED, Wire.PREVIEW)
    assert answered["missedRunPolicy"]["window"] == "01:30:00"
    assert answered["recurrence"]["jitter"] == "00:05:00"


# ------------------------------------------------------------------------------------------- the wires


def test_the_classic_wire_refuses_each_preview_property_as_unknown() -> None:
    for name, value in {
        "overlapPolicy": "Skip",
        "missedRunPolicy": {"mode": "Skip"},
        "pauseAfterFailures": 2,
        "deleteAfterCompletion": True,
    }.items():
        error = refused(classic_body(**{name: value}), Wire.CLASSIC)
        assert error.path == f"properties.{name}" and "is not a known field" in error.rule
    for name, value in {"jitter": "PT1M", "exclusions": {"dates": ["2030-01-01"]}}.items():
        body = classic_body()
        body["properties"]["recurrence"][name] = value
        assert refused(body, Wire.CLASSIC).path == f"properties.recurrence.{name}"
    body = classic_body()
    body["properties"]["action"]["expandPlaceholders"] = True
    assert refused(body, Wire.CLASSIC).path == "properties.action.expandPlaceholders"
    body = classic_body()
    body["properties"]["action"]["request"]["signing"] = {"scheme": "StandardWebhooks", "secret": SECRET}
    assert refused(body, Wire.CLASSIC).path == "properties.action.request.signing"
    assert refused(with_request("timeout", "PT30S"), Wire.CLASSIC).path == "properties.action.request.timeout"
    body = classic_body()
    body["properties"]["action"]["request"]["authentication"] = {"type": "ManagedServiceIdentity", "audience": "a"}
    error = refused(body, Wire.CLASSIC)
    assert error.path == "properties.action.request.authentication.type"
    assert "ManagedServiceIdentity" not in error.rule.split("not")[0]  # not offered by the classic wire


def test_the_classic_wire_answers_no_preview_property_and_no_secret() -> None:
    definition = parse(preview_body())
    classic = job_wire(definition, JobState.ENABLED, Wire.CLASSIC)
    text = json.dumps(classic)
    for word in ("overlapPolicy", "missedRunPolicy", "pauseAfterFailures", "deleteAfterCompletion", "jitter"):
        assert word not in text
    for word in ("exclusions", "expandPlaceholders", "signing", "ManagedServiceIdentity", "authentication", "whsec"):
        assert word not in text
    preview = job_wire(definition, JobState.ENABLED, Wire.PREVIEW)
    assert "whsec" not in json.dumps(preview)
    assert preview["action"]["request"]["signing"] == {"scheme": "StandardWebhooks"}
    assert "calendarDates" not in json.dumps(preview)


def test_the_stores_read_back_exactly_what_was_written() -> None:
    definition = parse(preview_body())
    exclusions = definition.exclusions
    assert exclusions is not None
    with_dates = JobDefinition(
        **{
            **definition.__dict__,
            "exclusions": type(exclusions)(
                exclusions.dates, exclusions.ranges, exclusions.calendars, (date(2030, 5, 1), date(2030, 6, 2))
            ),
        }
    )
    stored, secrets = job_json(with_dates, JobState.ENABLED)
    assert secrets["action.request.signing.secret"] == SECRET
    assert SECRET not in json.dumps(stored)
    assert read_job_definition(json.loads(json.dumps(stored)), secrets) == with_dates


def test_a_preview_answer_parses_back_to_the_same_definition() -> None:
    definition = parse(preview_body())
    answered = job_wire(definition, JobState.ENABLED, Wire.PREVIEW)
    again = parse({"properties": answered}, previous=definition)  # the secret is kept from the stored job
    assert again == definition


# -------------------------------------------------------------------------------- classic writes keep them


def test_a_classic_put_of_what_a_classic_get_answered_keeps_every_preview_property() -> None:
    stored = parse(preview_body())
    answered = job_wire(stored, JobState.ENABLED, Wire.CLASSIC)
    assert parse({"properties": answered}, Wire.CLASSIC, previous=stored) == stored


def test_a_classic_edit_keeps_the_preview_properties_around_what_it_changes() -> None:
    stored = parse(preview_body())
    answered = job_wire(stored, JobState.ENABLED, Wire.CLASSIC)
    edited = copy.deepcopy(answered)
    edited["action"]["request"]["body"] = "changed"
    edited["recurrence"]["interval"] = 2
    kept = parse({"properties": edited}, Wire.CLASSIC, previous=stored)
    assert kept.jitter == stored.jitter and kept.exclusions == stored.exclusions
    assert kept.overlap_policy is OverlapPolicy.SKIP and kept.pause_after_failures == 3
    assert isinstance(kept.action.main, HttpAction)
    assert kept.action.main.body == "changed"
    assert kept.action.main.signing == stored.action.main.signing  # type: ignore[union-attr]
    assert kept.action.main.authentication == ManagedServiceIdentityAuthentication("api://scheduler-target")


def test_a_classic_write_to_another_host_drops_the_signing_and_the_identity() -> None:
    stored = parse(preview_body())
    edited = job_wire(stored, JobState.ENABLED, Wire.CLASSIC)
    edited["action"]["request"]["uri"] = "https://elsewhere.example/hook"
    kept = parse({"properties": edited}, Wire.CLASSIC, previous=stored)
    assert isinstance(kept.action.main, HttpAction)
    assert kept.action.main.signing is None and kept.action.main.authentication is None
    assert kept.action.main.timeout == Duration(timedelta(minutes=2, seconds=30), "iso")  # a bound, not a credential


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("PT0.5S", "must be between PT1S and PT9M"),
        ("PT9M1S", "must be between PT1S and PT9M"),
        ("PT1H", "must be between PT1S and PT9M"),
        ("00:09:01", "must be between 00:00:01 and 00:09:00"),
        ("P1Y", ""),
        (30, ""),
        ("soon", ""),
    ],
)
def test_a_request_timeout_outside_one_second_to_nine_minutes_is_refused_naming_the_field(
    value: Any, rule: str
) -> None:
    body = preview_body()
    body["properties"]["action"]["request"]["timeout"] = value
    error = refused(body)
    assert error.path == "properties.action.request.timeout", error
    assert rule in error.rule, error


def test_a_request_timeout_is_answered_as_written_and_bounds_the_error_action_too() -> None:
    body = preview_body()
    body["properties"]["action"]["request"]["timeout"] = "00:00:45"
    body["properties"]["action"]["errorAction"] = {
        "type": "Http",
        "request": {"uri": "https://example.org/failed", "method": "POST", "timeout": "PT1S"},
    }
    definition = parse(body)
    answered = job_wire(definition, JobState.ENABLED, Wire.PREVIEW)["action"]
    assert answered["request"]["timeout"] == "00:00:45" and answered["errorAction"]["request"]["timeout"] == "PT1S"
    assert "timeout" not in json.dumps(job_wire(definition, JobState.ENABLED, Wire.CLASSIC))
    assert isinstance(definition.action.error, HttpAction)
    assert definition.action.error.timeout == Duration(timedelta(seconds=1), "iso")


def test_a_classic_not_specified_authentication_removes_the_identity() -> None:
    stored = parse(preview_body())
    edited = job_wire(stored, JobState.ENABLED, Wire.CLASSIC)
    edited["action"]["request"]["authentication"] = {"type": "NotSpecified"}
    kept = parse({"properties": edited}, Wire.CLASSIC, previous=stored)
    assert isinstance(kept.action.main, HttpAction)
    assert kept.action.main.authentication is None


def test_a_classic_write_without_recurrence_drops_jitter_and_exclusions() -> None:
    stored = parse(preview_body())
    edited = job_wire(stored, JobState.ENABLED, Wire.CLASSIC)
    del edited["recurrence"]
    kept = parse({"properties": edited}, Wire.CLASSIC, previous=stored)
    assert kept.jitter is None and kept.exclusions is None
    assert kept.overlap_policy is OverlapPolicy.SKIP


def test_a_kept_jitter_is_checked_against_the_schedule_a_classic_write_gives() -> None:
    stored = parse(preview_body())  # hourly, jitter 20 minutes
    edited = job_wire(stored, JobState.ENABLED, Wire.CLASSIC)
    edited["recurrence"] = {"frequency": "Minute", "interval": 30}
    error = refused({"properties": edited}, Wire.CLASSIC, previous=stored)
    assert error.path.startswith("properties.recurrence.jitter") and "half the smallest gap" in error.rule


def test_a_preview_put_that_leaves_a_property_out_resets_it() -> None:
    stored = parse(preview_body())
    assert parse(classic_body(), Wire.PREVIEW, previous=stored).overlap_policy is OverlapPolicy.ALLOW_ALL


# ----------------------------------------------------------------------------------------- bad values


def with_property(name: str, value: Any) -> dict[str, Any]:
    return classic_body(**{name: value})


def with_recurrence(name: str, value: Any) -> dict[str, Any]:
    body = classic_body()
    body["properties"]["recurrence"][name] = value
    return body


def with_request(name: str, value: Any) -> dict[str, Any]:
    body = classic_body()
    body["properties"]["action"]["request"][name] = value
    return body


def with_placeholders(**request: Any) -> dict[str, Any]:
    body = classic_body()
    body["properties"]["action"]["expandPlaceholders"] = True
    body["properties"]["action"]["request"].update(request)
    return body


BAD: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "overlap",
        with_property("overlapPolicy", "Replace"),
        "properties.overlapPolicy",
        "must be one of AllowAll",
    ),
    (
        "missed mode",
        with_property("missedRunPolicy", {"mode": "All"}),
        "properties.missedRunPolicy.mode",
        "RunAll",
    ),
    (
        "missed no mode",
        with_property("missedRunPolicy", {"window": "PT1H"}),
        "properties.missedRunPolicy.mode",
        "required",
    ),
    (
        "missed field",
        with_property("missedRunPolicy", {"mode": "RunOnce", "age": 1}),
        "properties.missedRunPolicy.age",
        "known",
    ),
    (
        "window skip",
        with_property("missedRunPolicy", {"mode": "Skip", "window": "PT1H"}),
        "properties.missedRunPolicy.window",
        "RunOnce and RunAll",
    ),
    (
        "window long",
        with_property("missedRunPolicy", {"mode": "RunAll", "window": "P31D"}),
        "properties.missedRunPolicy.window",
        "30 days",
    ),
    (
        "window zero",
        with_property("missedRunPolicy", {"mode": "RunAll", "window": "PT0S"}),
        "properties.missedRunPolicy.window",
        "between",
    ),
    (
        "window text",
        with_property("missedRunPolicy", {"mode": "RunAll", "window": "soon"}),
        "properties.missedRunPolicy.window",
        "duration",
    ),
    (
        "pause zero",
        with_property("pauseAfterFailures", 0),
        "properties.pauseAfterFailures",
        "between 1 and 1000",
    ),
    (
        "pause text",
        with_property("pauseAfterFailures", "3"),
        "properties.pauseAfterFailures",
        "integer",
    ),
    (
        "pause big",
        with_property("pauseAfterFailures", 1001),
        "properties.pauseAfterFailures",
        "between 1 and 1000",
    ),
    (
        "delete text",
        with_property("deleteAfterCompletion", "yes"),
        "properties.deleteAfterCompletion",
        "true or false",
    ),
    (
        "jitter zero",
        with_recurrence("jitter", "PT0S"),
        "properties.recurrence.jitter",
        "longer than zero",
    ),
    (
        "jitter text",
        with_recurrence("jitter", 30),
        "properties.recurrence.jitter",
        "duration",
    ),
    (
        "jitter half",
        with_recurrence("jitter", "PT31M"),
        "properties.recurrence.jitter",
        "PT30M",
    ),
    (
        "exclusions type",
        with_recurrence("exclusions", []),
        "properties.recurrence.exclusions",
        "JSON object",
    ),
    (
        "exclusion field",
        with_recurrence("exclusions", {"days": []}),
        "properties.recurrence.exclusions.days",
        "known",
    ),
    (
        "date form",
        with_recurrence("exclusions", {"dates": ["25/12/2030"]}),
        "properties.recurrence.exclusions.dates[0]",
        "YYYY-MM-DD",
    ),
    (
        "date time",
        with_recurrence("exclusions", {"dates": ["2030-12-25T00:00"]}),
        "properties.recurrence.exclusions.dates[0]",
        "YYYY-MM-DD",
    ),
    (
        "date day",
        with_recurrence("exclusions", {"dates": ["2030-02-30"]}),
        "properties.recurrence.exclusions.dates[0]",
        "day is out of range",
    ),
    (
        "dates many",
        with_recurrence("exclusions", {"dates": ["2030-01-01"] * 1001}),
        "properties.recurrence.exclusions.dates",
        "at most 1000",
    ),
    (
        "range end",
        with_recurrence("exclusions", {"ranges": [{"start": "2030-01-02"}]}),
        "properties.recurrence.exclusions.ranges[0].end",
        "required",
    ),
    (
        "range order",
        with_recurrence("exclusions", {"ranges": [{"start": "2030-01-02T10:00", "end": "2030-01-02T09:00"}]}),
        "properties.recurrence.exclusions.ranges[0].end",
        "must be after",
    ),
    (
        "range offset",
        with_recurrence("exclusions", {"ranges": [{"start": "2030-01-02T10:00Z", "end": "2030-01-03"}]}),
        "properties.recurrence.exclusions.ranges[0].start",
        "without offset",
    ),
    (
        "calendar name",
        with_recurrence("exclusions", {"calendars": [""]}),
        "properties.recurrence.exclusions.calendars[0]",
        "name of a calendar",
    ),
    (
        "calendars many",
        with_recurrence("exclusions", {"calendars": [f"c{i}" for i in range(21)]}),
        "properties.recurrence.exclusions.calendars",
        "at most 20",
    ),
    (
        "msi audience",
        with_request("authentication", {"type": "ManagedServiceIdentity"}),
        "properties.action.request.authentication.audience",
        "required",
    ),
    (
        "msi field",
        with_request("authentication", {"type": "ManagedServiceIdentity", "audience": "a", "secret": "s"}),
        "properties.action.request.authentication.secret",
        "known",
    ),
    (
        "signing scheme",
        with_request("signing", {"scheme": "HMAC", "secret": SECRET}),
        "properties.action.request.signing.scheme",
        "StandardWebhooks",
    ),
    (
        "signing none",
        with_request("signing", {"scheme": "StandardWebhooks"}),
        "properties.action.request.signing.secret",
        "required",
    ),
    (
        "signing prefix",
        with_request("signing", {"scheme": "StandardWebhooks", "secret": "sekrit"}),
        "properties.action.request.signing.secret",
        "whsec_",
    ),
    (
        "signing base64",
        with_request("signing", {"scheme": "StandardWebhooks", "secret": "whsec_not base64!"}),
        "properties.action.request.signing.secret",
        "not base64",
    ),
    (
        "signing short",
        with_request(
            "signing", {"scheme": "StandardWebhooks", "secret": "whsec_" + base64.b64encode(b"k" * 8).decode()}
        ),
        "properties.action.request.signing.secret",
        "not 8 bytes",
    ),
    (
        "placeholder",
        with_placeholders(body="@{jobname} @{when}"),
        "properties.action.request.body",
        "'when'",
    ),
    (
        "unterminated",
        with_placeholders(body="@{jobName"),
        "properties.action.request.body",
        "without a closing",
    ),
    (
        "header",
        with_placeholders(headers={"X-A": "@{nope}"}),
        "properties.action.request.headers.X-A",
        "unknown placeholder",
    ),
    (
        "uri path",
        with_placeholders(uri="https://example.org/@{jobName}?a=1"),
        "properties.action.request.uri",
        "query only",
    ),
]


@pytest.mark.parametrize(
    ("body", "path", "rule"), [case[1:] for case in BAD if case[2]], ids=[c[0] for c in BAD if c[2]]
)
def test_a_bad_value_is_a_400_naming_the_field_and_the_rule(body: dict[str, Any], path: str, rule: str) -> None:
    error = refused(body)
    assert error.path == path, error
    assert rule in error.rule, error
    assert SECRET not in str(error) and "whsec_not" not in str(error)


def test_a_managed_identity_token_never_goes_out_in_clear_text() -> None:
    body = classic_body()
    body["properties"]["action"] = {
        "type": "Http",
        "request": {
            "uri": "http://example.org/hook",
            "method": "GET",
            "authentication": {"type": "ManagedServiceIdentity", "audience": "api://x"},
        },
    }
    error = refused(body)
    assert error.path == "properties.action.request.authentication.type" and "https" in error.rule
    body["properties"]["action"]["request"]["uri"] = "http://127.0.0.1:8080/hook"  # loopback: allowed
    assert isinstance(parse(body).action.main, HttpAction)


def test_placeholders_are_free_text_while_expansion_is_off() -> None:
    body = classic_body()
    body["properties"]["action"]["request"]["body"] = "@{anything} @{"
    assert parse(body).action.expand_placeholders is False
    expanded = with_placeholders(body="@{ScheduledTime} @{EXECUTIONID}", uri="https://example.org/a?id=@{executionId}")
    assert parse(expanded).action.expand_placeholders is True  # names in any casing


def test_placeholders_of_queue_messages_and_error_actions_are_checked() -> None:
    body = with_placeholders()
    body["properties"]["action"]["errorAction"] = {
        "type": "StorageQueue",
        "queueMessage": {"storageAccount": "acct", "queueName": "errors", "sasToken": "?sv=1", "message": "@{bogus}"},
    }
    error = refused(body)
    assert error.path == "properties.action.errorAction.queueMessage.message"


def test_a_stored_signing_secret_is_kept_while_the_origin_stays() -> None:
    stored = parse(preview_body())
    answered = job_wire(stored, JobState.ENABLED, Wire.PREVIEW)
    answered["action"]["request"]["uri"] = "https://example.org/other-path?at=@{scheduledTime}"
    kept = parse({"properties": answered}, previous=stored)
    assert kept.action.main.signing == stored.action.main.signing  # type: ignore[union-attr]
    answered["action"]["request"]["uri"] = "https://example.net/hook"
    error = refused({"properties": answered}, previous=stored)
    assert error.path == "properties.action.request.signing.secret"
    answered["action"]["request"]["signing"]["secret"] = OTHER_SECRET
    assert parse({"properties": answered}, previous=stored).action.main.signing.secret.reveal() == OTHER_SECRET  # type: ignore[union-attr]


def test_the_preview_api_versions() -> None:
    assert definitions.wire_of("2016-03-01") is Wire.CLASSIC
    assert definitions.wire_of("2014-08-01-preview") is Wire.CLASSIC
    assert definitions.wire_of("2026-12-01-preview") is Wire.PREVIEW
    assert set(definitions.API_VERSIONS) == {"2014-08-01-preview", "2016-01-01", "2016-03-01", "2026-12-01-preview"}
