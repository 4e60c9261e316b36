"""Durations of job definitions: every bad or out-of-range value is a ValidationError naming the field and
the rule (never an overflow), and each duration is answered in the style it was written in (TimeSpan in,
TimeSpan out; ISO 8601 in, ISO 8601 out), readable by the plain and by the patched SDK client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.mgmt.scheduler import SchedulerManagementClient
from azure.mgmt.scheduler.patch import patch_client

from scheduler_core.definitions import (
    ISO,
    MAX_DURATION,
    TIMESPAN,
    JobSpec,
    format_duration,
    job_output,
    merge_patch,
    parse_duration,
    parse_job,
    read_duration,
    restore_secrets,
)
from scheduler_core.errors import ValidationError

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
URI = "https://example.org/hook"
RETRY = "properties.action.retryPolicy"
TTL = "properties.action.serviceBusTopicMessage.brokeredMessageProperties.timeToLive"


def http_job(policy: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    action: dict[str, Any] = {"type": "Http", "request": {"uri": URI, "method": "POST"}, **extra}
    if policy is not None:
        action["retryPolicy"] = policy
    return {"properties": {"action": action}}


def topic_job(ttl: object, **extra: Any) -> dict[str, Any]:
    message = {
        "namespace": "ns1",
        "topicPath": "t1",
        "authentication": {"type": "SharedAccessKey", "sasKeyName": "send", "sasKey": "SECRET"},
        "brokeredMessageProperties": {"timeToLive": ttl},
    }
    return {"properties": {"action": {"type": "ServiceBusTopic", "serviceBusTopicMessage": message, **extra}}}


def parse(data: dict[str, Any], previous: JobSpec | None = None) -> JobSpec:
    return parse_job(data, previous=previous.definition if previous else None, now=NOW)


def refused(data: dict[str, Any], path: str, *words: str) -> str:
    with pytest.raises(ValidationError) as caught:
        parse(data)
    assert caught.value.path == path, caught.value.message
    for word in words:
        assert word in caught.value.message
    return caught.value.message


# ---------------------------------------------------------------------------------- bad values

HUGE = [
    "PT99999999999999999999S",
    "99999999.00:00:00",
    "10675200.00:00:00",
    "P10675200D",
    "P99999999999999999999999W",
    "P" + "9" * 5000 + "D",
    "9" * 5000 + ".00:00:00",
    "PT" + "9" * 400 + "." + "9" * 400 + "S",
]


@pytest.mark.parametrize("text", HUGE, ids=lambda text: text[:24])
@pytest.mark.parametrize("field", ["retryInterval", "maxRetryInterval"])
def test_a_huge_retry_interval_is_a_validation_error_naming_the_field(field: str, text: str) -> None:
    policy = {"retryType": "Exponential", "retryInterval": "PT20S", "maxRetryInterval": "PT1H", field: text}
    message = refused(http_job(policy), f"{RETRY}.{field}")
    assert "at most" in message


@pytest.mark.parametrize("text", HUGE, ids=lambda text: text[:24])
def test_a_huge_time_to_live_is_a_validation_error_naming_the_field(text: str) -> None:
    refused(topic_job(text), TTL, "at most", "largest .NET TimeSpan")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("-PT30S", ("negative",)),
        ("-00:00:30", ("negative",)),
        ("-1.00:00:00", ("negative",)),
        ("PT-30S", ("ISO 8601",)),
        ("NaN", ("ISO 8601", "TimeSpan")),
        ("PTNaNS", ("ISO 8601",)),
        ("PTinfS", ("ISO 8601",)),
        ("Infinity", ("ISO 8601",)),
        ("PT1e400S", ("ISO 8601",)),
        ("1e400", ("ISO 8601",)),
        ("P1M", ("years and months",)),
        ("00:00:60", ("out of range",)),
        ("\u0661\u0662:00:00", ("ISO 8601",)),  # Arabic-Indic digits are not digits of a duration
    ],
)
@pytest.mark.parametrize("field", ["retryInterval", "timeToLive"])
def test_negative_nan_and_malformed_durations_name_the_field_and_the_rule(
    field: str, text: str, words: tuple[str, ...]
) -> None:
    if field == "retryInterval":
        refused(http_job({"retryInterval": text}), f"{RETRY}.retryInterval", *words)
    else:
        refused(topic_job(text), TTL, *words)


@pytest.mark.parametrize("value", [30, 30.5, float("nan"), float("inf"), True, None, ["PT30S"], {"s": 1}])
def test_a_duration_that_is_not_a_string_is_refused(value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_duration(value, "x.retryInterval")
    assert caught.value.path == "x.retryInterval"


def test_the_largest_duration_is_the_largest_dotnet_timespan() -> None:
    assert parse_duration("10675199.02:48:05.4775807", "x") == MAX_DURATION
    assert parse_duration("P10675199DT2H48M5.47758S", "x") == MAX_DURATION
    with pytest.raises(ValidationError):
        parse_duration("P10675199DT2H48M5.477581S", "x")
    # a long time to live is accepted up to that bound, and kept in its style
    spec = parse(topic_job("10675199.02:48:05"))
    ttl = spec.properties["action"]["serviceBusTopicMessage"]["brokeredMessageProperties"]["timeToLive"]
    assert ttl == "10675199.02:48:05"


def test_a_retry_interval_beyond_18_months_is_refused_in_its_own_style() -> None:
    message = refused(http_job({"retryInterval": "600.00:00:00"}), f"{RETRY}.retryInterval", "18 months")
    assert "548.00:00:00" in message and "600.00:00:00" in message


# ----------------------------------------------------------------------------------- the style


@pytest.mark.parametrize(
    ("text", "style", "answered"),
    [
        ("PT30S", ISO, "PT30S"),
        ("pt90s", ISO, "PT1M30S"),
        ("P1DT2H", ISO, "P1DT2H"),
        ("PT0.5S", ISO, "PT0.5S"),
        ("00:00:30", TIMESPAN, "00:00:30"),
        ("0:1", TIMESPAN, "00:01:00"),
        ("1.02:00:00", TIMESPAN, "1.02:00:00"),
        ("60.00:00:00", TIMESPAN, "60.00:00:00"),
        ("00:00:20.5", TIMESPAN, "00:00:20.5000000"),
    ],
)
def test_a_duration_is_answered_in_the_style_it_was_written_in(text: str, style: str, answered: str) -> None:
    value, read_style = read_duration(text, "x")
    assert read_style == style
    assert format_duration(value, read_style) == answered
    policy = parse(http_job({"retryInterval": text}) if value >= timedelta(seconds=15) else topic_job(text))
    action = policy.properties["action"]
    written = (
        action["retryPolicy"]["retryInterval"]
        if "request" in action
        else action["serviceBusTopicMessage"]["brokeredMessageProperties"]["timeToLive"]
    )
    assert written == answered


def test_a_default_retry_interval_takes_the_style_of_the_jobs_durations() -> None:
    timespan = parse(
        http_job({"retryType": "Fixed", "retryCount": 2}, errorAction=topic_job("00:05:00")["properties"]["action"])
    )
    assert timespan.duration_style == TIMESPAN
    assert timespan.properties["action"]["retryPolicy"]["retryInterval"] == "00:00:30"
    no_policy = parse(topic_job("01:00:00"))
    assert no_policy.properties["action"]["retryPolicy"] == {
        "retryType": "Fixed",
        "retryInterval": "00:00:30",
        "retryCount": 4,
    }
    iso = parse(topic_job("PT1H"))
    assert iso.properties["action"]["retryPolicy"]["retryInterval"] == "PT30S"
    # with no duration written, or with both styles, ISO 8601 (what the API documents)
    assert parse(http_job()).properties["action"]["retryPolicy"]["retryInterval"] == "PT30S"
    mixed = parse(topic_job("01:00:00", retryPolicy={"retryType": "Exponential", "maxRetryInterval": "PT2H"}))
    assert mixed.duration_style == ISO
    assert mixed.properties["action"]["retryPolicy"]["retryInterval"] == "PT30S"
    assert mixed.properties["action"]["retryPolicy"]["maxRetryInterval"] == "PT2H"


def test_a_patch_of_one_duration_keeps_the_others_styles() -> None:
    policy = {"retryType": "Exponential", "retryInterval": "00:00:20", "maxRetryInterval": "01:00:00"}
    stored = parse(topic_job("00:10:00", retryPolicy=policy))
    patch = {"properties": {"action": {"retryPolicy": {"maxRetryInterval": "PT2H"}}}}
    merged = merge_patch({"properties": stored.properties}, patch)
    patched = parse(merged, previous=stored)
    action = patched.properties["action"]
    assert action["retryPolicy"]["retryInterval"] == "00:00:20"
    assert action["retryPolicy"]["maxRetryInterval"] == "PT2H"
    assert action["serviceBusTopicMessage"]["brokeredMessageProperties"]["timeToLive"] == "00:10:00"
    # a stored job read back (as the service does) keeps every style
    again = parse_job({"properties": restore_secrets(stored.properties, stored.secrets)}, validate_limits=False)
    assert again.properties == stored.properties


# ------------------------------------------------------------------------------ both SDK clients


def _client(patched: bool) -> SchedulerManagementClient:
    client = SchedulerManagementClient(object(), "sub", base_url="http://127.0.0.1:9")  # never called
    if patched:
        patch_client(client)
    return client


def _read(client: SchedulerManagementClient, spec: JobSpec) -> Any:
    data = {"id": "/x/jobs/j", "name": "jc/j", "properties": job_output(spec.properties, {})}
    return client._deserialize("JobDefinition", data)


def test_the_patched_client_reads_back_what_it_wrote() -> None:
    from azure.mgmt.scheduler import models

    client = _client(patched=True)
    job = models.JobDefinition(
        properties=models.JobProperties(
            action=models.JobAction(
                type="Http",
                request=models.HttpRequest(uri=URI, method="GET"),
                retry_policy=models.RetryPolicy(
                    retry_type="Fixed", retry_interval=timedelta(seconds=20), retry_count=2
                ),
            )
        )
    )
    sent = client._serialize.body(job, "JobDefinition")
    assert sent["properties"]["action"]["retryPolicy"]["retryInterval"] == "00:00:20"
    back = _read(client, parse(sent))
    assert back.properties.action.retry_policy.retry_interval == timedelta(seconds=20)
    # the plain client reads what it writes, too
    plain = _client(patched=False)
    sent = plain._serialize.body(job, "JobDefinition")
    assert sent["properties"]["action"]["retryPolicy"]["retryInterval"] == "PT20S"
    assert _read(plain, parse(sent)).properties.action.retry_policy.retry_interval == timedelta(seconds=20)


def test_the_patched_client_reads_a_default_retry_interval_of_a_timespan_job() -> None:
    back = _read(_client(patched=True), parse(topic_job("00:05:00")))
    assert back.properties.action.retry_policy.retry_interval == timedelta(seconds=30)
    ttl = back.properties.action.service_bus_topic_message.brokered_message_properties.time_to_live
    assert ttl == timedelta(minutes=5)
