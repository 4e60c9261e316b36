"""``retryPolicy.retryOn`` and ``retryPolicy.maxRetryDuration`` at the wire (api-version
2026-12-01-preview): read in any casing, answered canonically and as written, kept by a classic client's
read-modify-write and never shown to it, and every hostile value a 400 naming the field."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.definitions import Wire, job_wire, parse_job
from scheduler_core.errors import ValidationError
from scheduler_core.model import JobState
from scheduler_core.model.actions import HttpAction
from scheduler_core.model.job import JobDefinition
from scheduler_core.model.retry import Duration, Failure, RetryPolicy

NOW = datetime.now(UTC).replace(microsecond=0)
START = (NOW + timedelta(days=1)).strftime("%Y-%m-%dT%H:00:00Z")


def body(retry: dict[str, Any], error_retry: dict[str, Any] | None = None) -> dict[str, Any]:
    action: dict[str, Any] = {
        "type": "Https",
        "request": {"uri": "https://example.org/hook", "method": "POST"},
        "retryPolicy": retry,
    }
    if error_retry is not None:
        action["errorAction"] = {
            "type": "Https",
            "request": {"uri": "https://example.org/failed", "method": "POST"},
            "retryPolicy": error_retry,
        }
    return {"properties": {"startTime": START, "action": action, "recurrence": {"frequency": "Hour", "interval": 1}}}


def parse(job: dict[str, Any], wire: Wire = Wire.PREVIEW, previous: JobDefinition | None = None) -> JobDefinition:
    return parse_job(job, now=NOW, wire=wire, previous=previous).definition


def refused(job: dict[str, Any], wire: Wire = Wire.PREVIEW) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        parse_job(job, now=NOW, wire=wire)
    return caught.value


FIXED = {"retryType": "Fixed", "retryInterval": "PT30S", "retryCount": 5}


def test_retry_on_and_max_retry_duration_become_a_typed_policy_answered_as_written() -> None:
    written = {**FIXED, "retryOn": ["5XX", 429, " timeout ", "connectionerror", "408"], "maxRetryDuration": "00:10:00"}
    definition = parse(body(written, error_retry={**FIXED, "retryOn": ["4xx"]}))
    policy = definition.action.retry_policy
    assert policy.retry_on == ("5xx", "429", "Timeout", "ConnectionError", "408")
    assert policy.max_retry_duration == Duration(timedelta(minutes=10), "timespan")
    answered = job_wire(definition, JobState.ENABLED, Wire.PREVIEW)["action"]
    assert answered["retryPolicy"] == {
        **FIXED,
        "retryOn": ["5xx", "429", "Timeout", "ConnectionError", "408"],
        "maxRetryDuration": "00:10:00",
    }
    assert answered["errorAction"]["retryPolicy"]["retryOn"] == ["4xx"]
    classic = json.dumps(job_wire(definition, JobState.ENABLED, Wire.CLASSIC))
    assert "retryOn" not in classic and "maxRetryDuration" not in classic


def test_a_classic_read_modify_write_keeps_them() -> None:
    stored = parse(body({**FIXED, "retryOn": ["5xx"], "maxRetryDuration": "PT1H"}, {**FIXED, "retryOn": ["429"]}))
    edited = job_wire(stored, JobState.ENABLED, Wire.CLASSIC)
    edited["action"]["retryPolicy"]["retryCount"] = 2
    kept = parse({"properties": edited}, Wire.CLASSIC, previous=stored)
    assert kept.action.retry_policy.retry_count == 2
    assert kept.action.retry_policy.retry_on == ("5xx",)
    assert kept.action.retry_policy.max_retry_duration == Duration(timedelta(hours=1))
    assert kept.action.error_retry_policy is not None and kept.action.error_retry_policy.retry_on == ("429",)


def test_null_is_absent_as_for_every_field_so_a_patch_can_remove_them() -> None:
    policy = parse(body({**FIXED, "retryOn": None, "maxRetryDuration": None})).action.retry_policy
    assert (policy.retry_on, policy.max_retry_duration) == (None, None)


def test_retry_type_none_has_neither() -> None:
    definition = parse(body({"retryType": "None", "retryOn": ["5xx"], "maxRetryDuration": "PT1H"}))
    assert definition.action.retry_policy == RetryPolicy.never()
    assert job_wire(definition, JobState.ENABLED, Wire.PREVIEW)["action"]["retryPolicy"] == {"retryType": "None"}


@pytest.mark.parametrize(
    ("value", "path", "rule"),
    [
        ("5xx", "retryOn", "must be a non-empty list"),
        ([], "retryOn", "must be a non-empty list"),
        (["2xx"], "retryOn[0]", 'not "2xx"'),
        (["200"], "retryOn[0]", 'not "200"'),
        ([600], "retryOn[0]", "not 600"),
        (["50x"], "retryOn[0]", 'not "50x"'),
        (["5xx", "Timeout", "5XX"], "retryOn[2]", "repeats '5xx'"),
        ([True], "retryOn[0]", "not true"),
        ([{"status": 500}], "retryOn[0]", 'not {"status": 500}'),
        (["Refused"], "retryOn[0]", 'not "Refused"'),
        (["\u202e5xx"], "retryOn[0]", "must be one of"),
        (["x" * 10_000], "retryOn[0]", "must be one of"),
        ([str(code) for code in range(500, 533)], "retryOn", "at most 32 entries, not 33"),
    ],
)
def test_a_hostile_retry_on_is_a_400_naming_the_entry(value: Any, path: str, rule: str) -> None:
    error = refused(body({**FIXED, "retryOn": value}))
    assert error.path == f"properties.action.retryPolicy.{path}", error
    assert rule in error.rule, error
    assert len(str(error)) < 400  # a long value is not echoed whole


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("PT14S", "must be between PT15S (15 seconds) and P548D (18 months), not PT14S"),
        ("P549D", "must be between"),
        ("soon", ""),
        (60, ""),
    ],
)
def test_a_max_retry_duration_out_of_bounds_is_a_400_naming_the_field(value: Any, rule: str) -> None:
    error = refused(body({**FIXED, "maxRetryDuration": value}))
    assert error.path == "properties.action.retryPolicy.maxRetryDuration", error
    assert rule in error.rule, error


# ----------------------------------------------------------------------------------------------- decisions


@pytest.mark.parametrize(
    ("retry_on", "failure", "status", "retried"),
    [
        (None, Failure.STATUS, 404, True),  # absent: every failure, as Azure Scheduler
        (None, Failure.ERROR, None, True),
        (("5xx",), Failure.STATUS, 503, True),
        (("5xx",), Failure.STATUS, 404, False),
        (("5xx",), Failure.TIMEOUT, None, False),
        (("429",), Failure.STATUS, 429, True),
        (("429",), Failure.STATUS, 428, False),
        (("4xx",), Failure.STATUS, 410, True),  # a queue service's status is read alike
        (("Timeout",), Failure.TIMEOUT, None, True),
        (("Timeout",), Failure.CONNECTION_ERROR, None, False),
        (("ConnectionError",), Failure.CONNECTION_ERROR, None, True),
        (("5xx", "Timeout", "ConnectionError"), Failure.REFUSED, None, False),  # the outbound guard: never
        (("5xx", "Timeout", "ConnectionError"), Failure.NOT_SENT, None, False),
    ],
)
def test_retry_on_names_a_failure_by_its_status_its_class_or_its_kind(
    retry_on: tuple[str, ...] | None, failure: Failure, status: int | None, retried: bool
) -> None:
    assert RetryPolicy(retry_on=retry_on).retries_failure(failure, status) is retried


def test_the_wait_is_the_longer_of_the_policy_delay_and_retry_after_capped() -> None:
    fixed = RetryPolicy()  # 30 s
    assert fixed.wait_after(0, None) == timedelta(seconds=30)
    assert fixed.wait_after(0, timedelta(seconds=10)) == timedelta(seconds=30)
    assert fixed.wait_after(0, timedelta(minutes=5)) == timedelta(minutes=5)
    assert fixed.wait_after(0, timedelta(days=3)) == timedelta(hours=1)
    capped = RetryPolicy(max_retry_interval=Duration(timedelta(minutes=2)))
    assert capped.wait_after(0, timedelta(minutes=5)) == timedelta(minutes=2)


def test_the_budget_counts_from_the_first_attempt_inclusive() -> None:
    policy = RetryPolicy(max_retry_duration=Duration(timedelta(minutes=1)))
    assert policy.in_budget(NOW, NOW + timedelta(minutes=1))
    assert not policy.in_budget(NOW, NOW + timedelta(minutes=1, microseconds=1))
    assert RetryPolicy().in_budget(NOW, NOW + timedelta(days=600))


# ---------------------------------------------------------------------------------------------- asyncPolling


def polled(polling: Any) -> dict[str, Any]:
    job = body(FIXED)
    job["properties"]["action"]["request"]["asyncPolling"] = polling
    return job


def test_async_polling_is_answered_as_written_hidden_from_classic_clients_and_kept_by_them() -> None:
    stored = parse(polled({"maxDuration": "01:30:00"}))
    action = stored.action.main
    assert isinstance(action, HttpAction) and action.async_polling == Duration(timedelta(minutes=90), "timespan")
    answered = job_wire(stored, JobState.ENABLED, Wire.PREVIEW)["action"]["request"]
    assert answered["asyncPolling"] == {"maxDuration": "01:30:00"}
    classic = job_wire(stored, JobState.ENABLED, Wire.CLASSIC)
    assert "asyncPolling" not in json.dumps(classic)
    classic["action"]["request"]["uri"] = "https://elsewhere.example/hook"  # a bound, not a credential: kept
    kept = parse({"properties": classic}, Wire.CLASSIC, previous=stored)
    assert isinstance(kept.action.main, HttpAction) and kept.action.main.async_polling == action.async_polling


@pytest.mark.parametrize(
    ("polling", "path", "rule"),
    [
        ({"maxDuration": "PT59S"}, "asyncPolling.maxDuration", "between PT1M (a minute) and P1D (a day)"),
        ({"maxDuration": "P2D"}, "asyncPolling.maxDuration", "not P2D"),
        ({"maxDuration": 60}, "asyncPolling.maxDuration", ""),
        ({}, "asyncPolling.maxDuration", "is required"),
        ({"maxDuration": "PT5M", "interval": "PT1S"}, "asyncPolling.interval", "not a known field"),
        ("PT5M", "asyncPolling", "JSON object"),
    ],
)
def test_a_hostile_async_polling_is_a_400_naming_the_field(polling: Any, path: str, rule: str) -> None:
    error = refused(polled(polling))
    assert error.path == f"properties.action.request.{path}", error
    assert rule in error.rule, error
