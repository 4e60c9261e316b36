"""Job definitions: parsing, canonical output, validation rules and limits (scheduler_core.definitions)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.definitions import (
    MAX_JOB_CHARS,
    JobSpec,
    job_output,
    merge_patch,
    parse_duration,
    parse_job,
    recurrence_exceeds_quota,
    restore_secrets,
)
from scheduler_core.errors import PayloadTooLargeError, ValidationError

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
URI = "https://example.org/hook"


def http_action(**extra: Any) -> dict[str, Any]:
    return {"type": "Http", "request": {"uri": URI, "method": "POST"}, **extra}


def body(action: dict[str, Any] | None = None, **properties: Any) -> dict[str, Any]:
    return {"properties": {"action": action if action is not None else http_action(), **properties}}


def parse(data: dict[str, Any], previous: JobSpec | None = None) -> JobSpec:
    return parse_job(data, previous=previous.definition if previous else None, now=NOW)


def reparse(spec: JobSpec) -> JobSpec:
    """What the service does with a stored job: its properties with the secrets put back."""
    return parse({"properties": restore_secrets(spec.properties, spec.secrets)})


def rejects(data: dict[str, Any], path: str, *words: str, previous: JobSpec | None = None) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        parse(data, previous)
    error = caught.value
    assert error.path == path, error.message
    assert error.message.startswith(f"{path}: ")
    for word in words:
        assert word in error.message
    return error


# ------------------------------------------------------------------------------ round trips per type

STORAGE = {"storageAccount": "acct", "queueName": "jobs", "message": "hello", "sasToken": "?sv=1&sig=SECRET-SAS"}
SB_AUTH = {"type": "SharedAccessKey", "sasKeyName": "send", "sasKey": "SECRET-SB-KEY"}
ROUND_TRIPS: dict[str, dict[str, Any]] = {
    "http": {"type": "http", "request": {"uri": "http://example.org/a?b=c", "method": "get"}},
    "https-basic": {
        "type": "https",
        "request": {
            "uri": URI,
            "method": "PUT",
            "body": "{}",
            "headers": {"Content-Type": "application/json", "X-Trace": "1"},
            "authentication": {"type": "basic", "username": "user", "password": "SECRET-PW"},
        },
    },
    "http-oauth": {
        "type": "Http",
        "request": {
            "uri": URI,
            "method": "POST",
            "authentication": {
                "type": "activedirectoryoauth",
                "tenant": "contoso.onmicrosoft.com",
                "audience": "https://management.core.windows.net/",
                "clientId": "11111111-2222-3333-4444-555555555555",
                "secret": "SECRET-OAUTH",
            },
        },
    },
    "http-notspecified": {
        "type": "Http",
        "request": {"uri": URI, "method": "POST", "authentication": {"type": "notspecified"}},
    },
    "storage": {"type": "storagequeue", "queueMessage": STORAGE},
    "servicebus-queue": {
        "type": "serviceBusQueue",
        "serviceBusQueueMessage": {
            "namespace": "ns1",
            "queueName": "q1",
            "message": "m",
            "transportType": "netMessaging",
            "authentication": SB_AUTH,
            "brokeredMessageProperties": {
                "contentType": "text/plain",
                "forcePersistence": True,
                "timeToLive": "01:00:00",
                "scheduledEnqueueTimeUtc": "2030-02-01T00:00:00+01:00",
                "messageId": "id-1",
            },
            "customMessageProperties": {"app": "scheduler"},
        },
    },
    "servicebus-topic": {
        "type": "SERVICEBUSTOPIC",
        "serviceBusTopicMessage": {
            "namespace": "ns1",
            "topicPath": "t1",
            "message": "m",
            "transportType": "amqp",
            "authentication": SB_AUTH,
        },
    },
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
@pytest.mark.parametrize("error_type", sorted(ROUND_TRIPS))
def test_every_action_type_round_trips_as_main_and_error_action(name: str, error_type: str) -> None:
    action = copy.deepcopy(ROUND_TRIPS[name])
    action["errorAction"] = copy.deepcopy(ROUND_TRIPS[error_type])
    spec = parse(body(action))
    assert reparse(spec) == spec
    # a client that GETs and PUTs the job back (no secrets) keeps the job as it was
    assert parse({"properties": spec.properties}, previous=spec) == spec
    assert len(spec.action_types) == 2
    text = json.dumps(spec.properties)
    assert "SECRET" not in text
    assert "SECRET" not in repr(spec)


def test_canonical_output_uses_swagger_casing_written_durations_and_utc() -> None:
    action = copy.deepcopy(ROUND_TRIPS["servicebus-queue"])
    action["retryPolicy"] = {"retrytype": "FIXED", "retryInterval": "00:00:45", "retryCount": 2}
    spec = parse(
        body(
            action,
            startTime="2030-01-02T08:00:00-05:00",
            state="DISABLED",
            recurrence={
                "frequency": "month",
                "schedule": {"monthlyOccurrences": [{"day": "friday", "occurrence": -1}]},
            },
        )
    )
    props = spec.properties
    assert list(props) == ["startTime", "action", "recurrence", "state"]
    assert props["startTime"] == "2030-01-02T13:00:00Z"
    assert props["state"] == "Disabled"
    assert spec.state == "Disabled"
    assert spec.start_time == datetime(2030, 1, 2, 13, 0, tzinfo=UTC)
    message = props["action"]["serviceBusQueueMessage"]
    assert props["action"]["type"] == "ServiceBusQueue"
    assert message["transportType"] == "NetMessaging"
    assert message["authentication"] == {"type": "SharedAccessKey", "sasKeyName": "send"}
    assert message["brokeredMessageProperties"]["timeToLive"] == "01:00:00"  # TimeSpan in, TimeSpan out
    assert message["brokeredMessageProperties"]["scheduledEnqueueTimeUtc"] == "2030-01-31T23:00:00Z"
    assert props["action"]["retryPolicy"] == {"retryType": "Fixed", "retryInterval": "00:00:45", "retryCount": 2}
    assert props["recurrence"]["schedule"]["monthlyOccurrences"] == [{"day": "Friday", "Occurrence": -1}]
    assert spec.secrets == {"action.serviceBusQueueMessage.authentication.sasKey": "SECRET-SB-KEY"}


def test_old_lowercase_enum_names_and_field_names_in_any_casing() -> None:
    data = {
        "Properties": {
            "Action": {
                "TYPE": "http",
                "Request": {
                    "URI": URI,
                    "Method": "delete",
                    "Authentication": {"Type": "clientcertificate", "pfx": None},
                },
            },
            "State": "enabled",
        }
    }
    # field names match in any casing: the ClientCertificate pfx is found missing under its own path
    rejects(data, "Properties.Action.Request.Authentication.pfx", "'Pfx' is required")
    data["Properties"]["Action"]["Request"]["Authentication"] = {"TYPE": "BASIC", "UserName": "u", "PassWord": "p"}
    spec = parse(data)
    assert spec.properties["action"]["request"]["authentication"] == {"type": "Basic", "username": "u"}
    assert spec.properties["action"]["request"]["method"] == "DELETE"


def test_same_field_twice_in_different_casing_is_an_error() -> None:
    rejects(
        {"properties": {"action": http_action(), "State": "Enabled", "state": "Disabled"}},
        "properties.state",
        "duplicates",
    )


def test_read_only_fields_are_ignored() -> None:
    data = body(state="Enabled")
    data.update({"id": "/subscriptions/x/jobs/j", "type": "Microsoft.Scheduler/jobCollections/jobs", "name": "jc/j"})
    data["properties"]["status"] = {"executionCount": 3, "nextExecutionTime": "2007-03-01T14:00:00Z "}
    spec = parse(data)
    assert "status" not in spec.properties
    assert spec == parse(body(state="Enabled"))


def test_no_start_time_no_recurrence_is_a_one_shot_job() -> None:
    spec = parse(body())
    assert spec.start_time is None
    assert spec.recurrence is None
    assert spec.state == "Enabled"
    assert list(spec.properties) == ["action", "state"]


def test_job_output_adds_status_and_omits_unknown_times() -> None:
    spec = parse(body(startTime="2030-01-05T00:00:00Z"))
    out = job_output(
        spec.properties, {"executionCount": 2, "failureCount": 1, "faultedCount": 0, "lastExecutionTime": None}
    )
    assert out["status"] == {"executionCount": 2, "failureCount": 1, "faultedCount": 0}
    out = job_output(
        spec.properties,
        {"nextExecutionTime": datetime(2030, 1, 5, tzinfo=UTC), "lastExecutionTime": "2030-01-04T00:00:00Z"},
    )
    assert out["status"] == {
        "lastExecutionTime": "2030-01-04T00:00:00Z",
        "nextExecutionTime": "2030-01-05T00:00:00Z",
        "executionCount": 0,
        "failureCount": 0,
        "faultedCount": 0,
    }
    assert out["startTime"] == "2030-01-05T00:00:00Z"
    # the input is not modified
    assert "status" not in spec.properties


# ------------------------------------------------------------------------------------------- retries


def test_no_retry_policy_emits_the_effective_default() -> None:
    spec = parse(body())
    assert spec.properties["action"]["retryPolicy"] == {"retryType": "Fixed", "retryInterval": "PT30S", "retryCount": 4}
    assert spec.definition.action.retry_intervals() == [30.0]


def test_fixed_alone_means_the_defaults() -> None:
    spec = parse(body(http_action(retryPolicy={"retryType": "fixed"})))
    assert spec.properties["action"]["retryPolicy"] == {"retryType": "Fixed", "retryInterval": "PT30S", "retryCount": 4}


def test_none_drops_the_other_fields_so_a_patch_to_none_works() -> None:
    stored = parse(body(http_action(retryPolicy={"retryType": "Fixed", "retryInterval": "PT1H", "retryCount": 3})))
    merged = merge_patch(
        {"properties": stored.properties}, {"properties": {"action": {"retryPolicy": {"retryType": "none"}}}}
    )
    spec = parse(merged, previous=stored)
    assert spec.properties["action"]["retryPolicy"] == {"retryType": "None"}
    assert spec.definition.action.retry_intervals() == []


def test_exponential_keeps_its_cap() -> None:
    policy = {"retryType": "exponential", "retryInterval": "PT20S", "maxRetryInterval": "01:00:00", "retryCount": 6}
    spec = parse(body(http_action(retryPolicy=policy)))
    assert spec.properties["action"]["retryPolicy"] == {
        "retryType": "Exponential",
        "retryInterval": "PT20S",
        "retryCount": 6,
        "maxRetryInterval": "01:00:00",  # each duration in the style it was written in
    }
    assert spec.definition.action.retry_intervals() == [20.0]


def test_max_retry_interval_is_dropped_for_fixed() -> None:
    policy = {"retryType": "Fixed", "retryInterval": "PT20S", "maxRetryInterval": "PT1H"}
    spec = parse(body(http_action(retryPolicy=policy)))
    assert "maxRetryInterval" not in spec.properties["action"]["retryPolicy"]


def test_retry_intervals_lists_main_and_error_actions_that_retry() -> None:
    error = http_action(retryPolicy={"retryInterval": "PT2H", "retryCount": 1})
    spec = parse(body(http_action(retryPolicy={"retryCount": 0}, errorAction=error)))
    assert spec.definition.action.retry_intervals() == [7200.0]
    assert "retryPolicy" not in parse(body(http_action(errorAction=http_action()))).properties["action"]["errorAction"]


@pytest.mark.parametrize(
    ("policy", "field", "words"),
    [
        ({"retryInterval": "PT14S"}, "retryInterval", ("15 seconds",)),
        ({"retryInterval": "549.00:00:00"}, "retryInterval", ("18 months",)),
        ({"retryInterval": "P1M"}, "retryInterval", ("years and months",)),
        ({"retryInterval": "soon"}, "retryInterval", ("ISO 8601", "TimeSpan")),
        ({"retryInterval": 30}, "retryInterval", ("duration",)),
        ({"retryCount": 21}, "retryCount", ("between 0 and 20",)),
        ({"retryCount": -1}, "retryCount", ("between 0 and 20",)),
        ({"retryCount": "4"}, "retryCount", ("integer", "a string")),
        ({"retryCount": True}, "retryCount", ("integer", "a boolean")),
        ({"retryType": "linear"}, "retryType", ("None, Fixed, Exponential", "'linear'")),
        (
            {"retryType": "Exponential", "retryInterval": "PT1M", "maxRetryInterval": "PT30S"},
            "maxRetryInterval",
            ("shorter",),
        ),
        ({"retries": 3}, "retries", ("not a known field", "retryCount")),
    ],
)
def test_retry_policy_rules(policy: dict[str, Any], field: str, words: tuple[str, ...]) -> None:
    rejects(body(http_action(retryPolicy=policy)), f"properties.action.retryPolicy.{field}", *words)


def test_retry_policy_of_the_error_action_is_checked_with_its_path() -> None:
    error = http_action(retryPolicy={"retryCount": 99})
    rejects(body(http_action(errorAction=error)), "properties.action.errorAction.retryPolicy.retryCount", "20")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("PT30S", 30),
        ("pt15s", 15),
        ("PT1H30M", 5400),
        ("P1D", 86400),
        ("P1W", 7 * 86400),
        ("P1DT0.5S", 86400.5),
        ("00:00:30", 30),
        ("01:00", 3600),
        ("1.00:00:00", 86400),
        ("2.03:04:05.5", 2 * 86400 + 3 * 3600 + 4 * 60 + 5.5),
        ("00:00:00.0000001", 0),
    ],
)
def test_durations_iso_and_timespan(text: str, seconds: float) -> None:
    assert parse_duration(text, "x").total_seconds() == pytest.approx(seconds, abs=1e-6)


@pytest.mark.parametrize("text", ["", "P", "PT", "30", "-PT30S", "00:60:00", "24:00:00", "1:2:3:4", "P1Y"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_duration(text, "properties.x")
    assert caught.value.path == "properties.x"


def test_timespan_retry_interval_is_answered_as_timespan() -> None:
    spec = parse(body(http_action(retryPolicy={"retryInterval": "1.02:00:00"})))
    assert spec.properties["action"]["retryPolicy"]["retryInterval"] == "1.02:00:00"


# ------------------------------------------------------------------------------------ action rules


@pytest.mark.parametrize(
    ("action", "path", "words"),
    [
        ({"request": {"uri": URI, "method": "GET"}}, "properties.action.type", ("required", "Http")),
        ({"type": "ftp", "request": {}}, "properties.action.type", ("Http, Https, StorageQueue",)),
        ({"type": "Http"}, "properties.action.request", ("required", "Http")),
        (
            {"type": "StorageQueue", "request": {"uri": URI, "method": "GET"}},
            "properties.action.request",
            ("does not belong",),
        ),
        (
            {"type": "ServiceBusQueue", "serviceBusTopicMessage": {}},
            "properties.action.serviceBusTopicMessage",
            ("does not belong",),
        ),
        ({"type": "ServiceBusTopic"}, "properties.action.serviceBusTopicMessage", ("required",)),
        ({"type": "Http", "request": {"method": "GET"}}, "properties.action.request.uri", ("required",)),
        (
            {"type": "Http", "request": {"uri": "/relative", "method": "GET"}},
            "properties.action.request.uri",
            ("absolute",),
        ),
        (
            {"type": "Http", "request": {"uri": "ftp://x.org/", "method": "GET"}},
            "properties.action.request.uri",
            ("http",),
        ),
        (
            {"type": "Http", "request": {"uri": "https://x.org:99999/", "method": "GET"}},
            "properties.action.request.uri",
            ("port",),
        ),
        (
            {"type": "Http", "request": {"uri": "https://x.org/a b", "method": "GET"}},
            "properties.action.request.uri",
            ("spaces",),
        ),
        (
            {"type": "Https", "request": {"uri": "http://x.org/", "method": "GET"}},
            "properties.action.request.uri",
            ("https",),
        ),
        ({"type": "Http", "request": {"uri": URI}}, "properties.action.request.method", ("required",)),
        (
            {"type": "Http", "request": {"uri": URI, "method": "GE T"}},
            "properties.action.request.method",
            ("HTTP method",),
        ),
        (
            {"type": "Http", "request": {"uri": URI, "method": "GET", "body": {}}},
            "properties.action.request.body",
            ("string",),
        ),
        (
            {"type": "Http", "request": {"uri": URI, "method": "GET", "headers": []}},
            "properties.action.request.headers",
            ("object",),
        ),
        (
            {"type": "Http", "request": {"uri": URI, "method": "GET", "headers": {"A": 1}}},
            "properties.action.request.headers.A",
            ("string",),
        ),
        (
            {"type": "Http", "request": {"uri": URI, "method": "GET", "headers": {"A": "x\r\nB: y"}}},
            "properties.action.request.headers.A",
            ("line breaks",),
        ),
        (
            {"type": "Http", "request": {"uri": URI, "method": "GET", "headers": {"Bad Name": "x"}}},
            "properties.action.request.headers",
            ("token",),
        ),
        (
            {"type": "Http", "request": {"uri": URI, "method": "GET", "timeout": 5}},
            "properties.action.request.timeout",
            ("not a known field",),
        ),
        (
            {"type": "Http", "request": {"uri": URI, "method": "GET", "authentication": {"username": "u"}}},
            "properties.action.request.authentication.type",
            ("required",),
        ),
        (
            {"type": "Http", "request": {"uri": URI, "method": "GET", "authentication": {"type": "Digest"}}},
            "properties.action.request.authentication.type",
            ("ClientCertificate, ActiveDirectoryOAuth, Basic",),
        ),
        (
            {
                "type": "Http",
                "request": {"uri": URI, "method": "GET", "authentication": {"type": "Basic", "username": "u"}},
            },
            "properties.action.request.authentication.password",
            ("'Username' and 'Password' are required for 'Basic' type of Authentication.",),
        ),
        (
            {"type": "Http", "request": {"uri": URI, "method": "GET", "authentication": {"type": "Basic"}}},
            "properties.action.request.authentication.username",
            ("'Username' and 'Password' are required for 'Basic' type of Authentication.",),
        ),
        (
            {
                "type": "Http",
                "request": {
                    "uri": URI,
                    "method": "GET",
                    "authentication": {"type": "Basic", "username": "u", "password": "p", "secret": "s"},
                },
            },
            "properties.action.request.authentication.secret",
            ("not a known field", "Basic"),
        ),
        (
            {
                "type": "Http",
                "request": {
                    "uri": URI,
                    "method": "GET",
                    "authentication": {"type": "ActiveDirectoryOAuth", "tenant": "t", "clientId": "c", "secret": "s"},
                },
            },
            "properties.action.request.authentication.audience",
            ("'Tenant', 'Audience', 'ClientId' and 'Secret' are required",),
        ),
        (
            {"type": "StorageQueue", "queueMessage": {"queueName": "q1x", "message": ""}},
            "properties.action.queueMessage.storageAccount",
            ("required",),
        ),
        (
            {
                "type": "StorageQueue",
                "queueMessage": {"storageAccount": "my-account", "queueName": "q1x", "message": ""},
            },
            "properties.action.queueMessage.storageAccount",
            ("3 to 24",),
        ),
        (
            {"type": "StorageQueue", "queueMessage": {"storageAccount": "acct", "queueName": "Upper", "message": ""}},
            "properties.action.queueMessage.queueName",
            ("lower-case",),
        ),
        (
            {"type": "StorageQueue", "queueMessage": {"storageAccount": "acct", "queueName": "a--b", "message": ""}},
            "properties.action.queueMessage.queueName",
            ("single hyphens",),
        ),
        (
            {"type": "StorageQueue", "queueMessage": {"storageAccount": "acct", "queueName": "jobs"}},
            "properties.action.queueMessage.message",
            ("required",),
        ),
        (
            {"type": "ServiceBusQueue", "serviceBusQueueMessage": {"queueName": "q"}},
            "properties.action.serviceBusQueueMessage.namespace",
            ("required",),
        ),
        (
            {"type": "ServiceBusQueue", "serviceBusQueueMessage": {"namespace": "ns"}},
            "properties.action.serviceBusQueueMessage.queueName",
            ("required",),
        ),
        (
            {"type": "ServiceBusTopic", "serviceBusTopicMessage": {"namespace": "ns", "queueName": "q"}},
            "properties.action.serviceBusTopicMessage.queueName",
            ("not a known field", "topicPath"),
        ),
        (
            {
                "type": "ServiceBusTopic",
                "serviceBusTopicMessage": {"namespace": "ns", "topicPath": "t", "transportType": "tcp"},
            },
            "properties.action.serviceBusTopicMessage.transportType",
            ("NotSpecified, NetMessaging, AMQP",),
        ),
        (
            {
                "type": "ServiceBusTopic",
                "serviceBusTopicMessage": {
                    "namespace": "ns",
                    "topicPath": "t",
                    "authentication": {"type": "SharedAccessKey", "sasKey": "k"},
                },
            },
            "properties.action.serviceBusTopicMessage.authentication.sasKeyName",
            ("required",),
        ),
        (
            {
                "type": "ServiceBusTopic",
                "serviceBusTopicMessage": {
                    "namespace": "ns",
                    "topicPath": "t",
                    "brokeredMessageProperties": {"forcePersistence": "yes"},
                },
            },
            "properties.action.serviceBusTopicMessage.brokeredMessageProperties.forcePersistence",
            ("true or false",),
        ),
        (
            {
                "type": "ServiceBusTopic",
                "serviceBusTopicMessage": {
                    "namespace": "ns",
                    "topicPath": "t",
                    "brokeredMessageProperties": {"timeToLive": "PT0S"},
                },
            },
            "properties.action.serviceBusTopicMessage.brokeredMessageProperties.timeToLive",
            ("longer than zero",),
        ),
        (
            {
                "type": "ServiceBusTopic",
                "serviceBusTopicMessage": {
                    "namespace": "ns",
                    "topicPath": "t",
                    "brokeredMessageProperties": {"priority": 1},
                },
            },
            "properties.action.serviceBusTopicMessage.brokeredMessageProperties.priority",
            ("not a known field",),
        ),
        (
            {
                "type": "ServiceBusTopic",
                "serviceBusTopicMessage": {"namespace": "ns", "topicPath": "t", "customMessageProperties": {"n": 1}},
            },
            "properties.action.serviceBusTopicMessage.customMessageProperties.n",
            ("string",),
        ),
        (
            http_action(errorAction=http_action(errorAction=http_action())),
            "properties.action.errorAction.errorAction",
            ("own",),
        ),
        ("http", "properties.action", ("JSON object", "a string")),
    ],
)
def test_action_rules_name_the_path(action: Any, path: str, words: tuple[str, ...]) -> None:
    rejects(body(action), path, *words)


def test_http_type_accepts_an_https_uri() -> None:
    assert parse(body({"type": "Http", "request": {"uri": "https://x.org/", "method": "GET"}})).action_types == (
        "Http",
    )


def test_sas_token_and_sas_key_are_optional() -> None:
    storage = {
        "type": "StorageQueue",
        "queueMessage": {"storageAccount": "myStorageAccount", "queueName": "myqueue", "message": ""},
    }
    assert parse(body(storage)).secrets == {}
    bus = {
        "type": "ServiceBusQueue",
        "serviceBusQueueMessage": {"namespace": "ns", "queueName": "q", "authentication": {"sasKeyName": "k"}},
    }
    spec = parse(body(bus))
    assert spec.secrets == {}
    # the type is inferred from the key name
    assert spec.properties["action"]["serviceBusQueueMessage"]["authentication"] == {
        "type": "SharedAccessKey",
        "sasKeyName": "k",
    }


def test_uses_authentication() -> None:
    assert not parse(body()).uses_authentication
    assert not parse(body(ROUND_TRIPS["http-notspecified"])).uses_authentication
    assert not parse(body(ROUND_TRIPS["servicebus-topic"])).uses_authentication  # Service Bus keys are not HTTP auth
    assert parse(body(http_action(errorAction=ROUND_TRIPS["https-basic"]))).uses_authentication


# ---------------------------------------------------------------------------------------- job rules


@pytest.mark.parametrize(
    ("data", "path", "words"),
    [
        ({}, "properties", ("required",)),
        ({"properties": []}, "properties", ("JSON object", "an array")),
        ({"properties": {}}, "properties.action", ("required",)),
        ({"properties": {"action": http_action()}, "startTime": "2030-01-01"}, "startTime", ("inside 'properties'",)),
        (body(extra=1), "properties.extra", ("not a known field", "startTime, action, recurrence, state")),
        (body(state="Completed"), "properties.state", ("set by the service", "Enabled or Disabled")),
        (body(state="faulted"), "properties.state", ("set by the service",)),
        (body(state="paused"), "properties.state", ("Enabled, Disabled",)),
        (body(state=1), "properties.state", ("a number",)),
        (body(startTime="tomorrow"), "properties.startTime", ("ISO 8601",)),
        (body(startTime="2031-07-02T00:00:00Z"), "properties.startTime", ("18 months",)),
        (body(recurrence={"frequency": "fortnight"}), "properties.recurrence.frequency", ()),
        (
            body(recurrence={"frequency": "Day", "endTime": "2029-12-31T00:00:00Z"}),
            "properties.recurrence.endTime",
            ("future",),
        ),
        (
            body(startTime="2030-03-01T00:00:00Z", recurrence={"frequency": "Day", "endTime": "2030-02-01T00:00:00Z"}),
            "properties.recurrence.endTime",
            ("properties.startTime",),
        ),
        (
            body(startTime="2030-03-01T00:00:00Z", recurrence={"frequency": "Day", "endTime": "2031-09-02T00:00:00Z"}),
            "properties.recurrence.endTime",
            ("18 months",),
        ),
        (
            body(recurrence={"frequency": "Day", "endTime": "2031-07-02T00:00:00Z"}),
            "properties.recurrence.endTime",
            ("18 months",),
        ),
    ],
)
def test_job_rules_name_the_path(data: dict[str, Any], path: str, words: tuple[str, ...]) -> None:
    rejects(data, path, *words)


def test_time_windows_at_their_edges() -> None:
    parse(body(startTime="2031-07-01T12:00:00Z"))  # exactly 18 months ahead
    parse(body(startTime="2001-01-01T00:00:00Z"))  # the past is fine: the engine finds the next occurrence
    parse(body(startTime="2031-01-01T00:00:00Z", recurrence={"frequency": "Day", "endTime": "2032-07-01T00:00:00Z"}))
    # a start in the past spans from now
    parse(body(startTime="2020-01-01T00:00:00Z", recurrence={"frequency": "Day", "endTime": "2031-07-01T00:00:00Z"}))


def test_stored_jobs_skip_time_windows_and_accept_final_states() -> None:
    data = body(
        startTime="2001-01-01T00:00:00Z", state="Completed", recurrence={"frequency": "Day", "endTime": "2002-01-01"}
    )
    spec = parse_job(data, now=NOW, validate_limits=False)
    assert spec.state == "Completed"
    with pytest.raises(ValidationError):
        parse_job(data, now=NOW)


def test_start_time_without_offset_is_wall_time_of_the_recurrence_time_zone() -> None:
    spec = parse(body(startTime="2030-07-01T09:00:00", recurrence={"frequency": "Day", "timeZone": "Europe/Berlin"}))
    assert spec.properties["startTime"] == "2030-07-01T07:00:00Z"
    assert reparse(spec) == spec


# ------------------------------------------------------------------------------------------- limits


def test_definition_size_limit_is_400() -> None:
    data = body(http_action())
    data["properties"]["action"]["request"]["body"] = "b" * 8000
    data["properties"]["action"]["errorAction"] = {
        "type": "Http",
        "request": {"uri": URI, "method": "POST", "body": "c" * 8000},
    }
    with pytest.raises(ValidationError) as caught:
        parse(data)
    assert caught.value.status == 400  # Azure Scheduler's answer to an oversize job (spec 4.2)
    assert not isinstance(caught.value, PayloadTooLargeError)
    assert "16,000" in caught.value.message
    # read-only parts echoed back by a client do not count
    small = body(http_action())
    small["properties"]["status"] = {"message": "s" * MAX_JOB_CHARS}
    parse(small)


def test_body_uri_and_header_limits() -> None:
    def request(**fields: Any) -> dict[str, Any]:
        return body({"type": "Http", "request": {"uri": URI, "method": "POST", **fields}})

    parse(request(body="x" * 8192))
    rejects(request(body="x" * 8193), "properties.action.request.body", "8192")
    long_uri = "https://example.org/" + "a" * (2048 - len("https://example.org/"))
    parse(request(uri=long_uri))
    rejects(request(uri=long_uri + "a"), "properties.action.request.uri", "2048")
    parse(request(headers={f"h{i}": "v" for i in range(50)}))
    rejects(request(headers={f"h{i}": "v" for i in range(51)}), "properties.action.request.headers", "50")
    parse(request(headers={"h": "v" * 4095}))
    rejects(request(headers={"h": "v" * 4096}), "properties.action.request.headers", "4096")


def test_stored_jobs_skip_size_limits() -> None:
    data = body({"type": "Http", "request": {"uri": URI, "method": "POST", "body": "x" * 9000}})
    assert parse_job(data, now=NOW, validate_limits=False).properties["action"]["request"]["body"] == "x" * 9000


# ------------------------------------------------------------------------------------ the quota


def test_recurrence_exceeds_quota() -> None:
    every_minute = parse(body(recurrence={"frequency": "Minute", "interval": 1})).recurrence
    hourly = parse(body(recurrence={"frequency": "Hour", "interval": 1})).recurrence
    quarter_hours = parse(body(recurrence={"frequency": "Day", "schedule": {"minutes": [0, 15, 30, 45]}})).recurrence
    assert recurrence_exceeds_quota(every_minute, ("Hour", 1))
    assert not recurrence_exceeds_quota(hourly, ("Hour", 1))
    assert recurrence_exceeds_quota(quarter_hours, ("Hour", 1))
    assert not recurrence_exceeds_quota(quarter_hours, ("Minute", 15))
    assert not recurrence_exceeds_quota(None, ("Hour", 1))


# ------------------------------------------------------------------------------- restore_secrets


def test_restore_secrets_puts_every_secret_back_without_touching_the_input() -> None:
    action = copy.deepcopy(ROUND_TRIPS["https-basic"])
    action["errorAction"] = copy.deepcopy(ROUND_TRIPS["storage"])
    spec = parse(body(action))
    before = copy.deepcopy(spec.properties)
    full = restore_secrets(spec.properties, spec.secrets)
    assert full["action"]["request"]["authentication"]["password"] == "SECRET-PW"
    assert full["action"]["errorAction"]["queueMessage"]["sasToken"] == "?sv=1&sig=SECRET-SAS"
    assert spec.properties == before


def test_restore_secrets_skips_a_secret_whose_parent_is_gone() -> None:
    assert restore_secrets({"action": {"type": "Http"}}, {"action.request.authentication.password": "p"}) == {
        "action": {"type": "Http"}
    }


def test_definition_is_returned_fresh() -> None:
    data = body(ROUND_TRIPS["https-basic"])
    snapshot = copy.deepcopy(data)
    spec = parse(data)
    spec.properties["action"]["request"]["headers"]["X-Trace"] = "changed"
    assert data == snapshot


def test_spec_properties_survive_json() -> None:
    spec = parse(body(ROUND_TRIPS["servicebus-queue"], startTime="2030-01-02T00:00:00Z"))
    assert json.loads(json.dumps(spec.properties)) == spec.properties


def test_now_defaults_to_the_real_clock() -> None:
    soon = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert parse_job(body(startTime=soon)).start_time is not None
    far = (datetime.now(UTC) + timedelta(days=600)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with pytest.raises(ValidationError):
        parse_job(body(startTime=far))
