"""The typed actions (``scheduler_core.model.actions``), their retry policy, and the conversions at the wire:
secrets never print; a stored action read back and written again is exactly the canonical output the
parser produced (same JSON, same key order, same secrets) for every example job."""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import pickle
import random
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.definitions import (
    JobSpec,
    format_duration,
    job_action_json,
    job_json,
    parse_collection,
    parse_job,
    read_action,
    read_job_action,
    read_job_definition,
    read_retry_policy,
    restore_secrets,
)
from scheduler_core.definitions._actions import Prior, parse_action
from scheduler_core.model.actions import (
    ActiveDirectoryOAuthAuthentication,
    BasicAuthentication,
    ClientCertificateAuthentication,
    HttpAction,
    JobAction,
    Secret,
    ServiceBusQueueAction,
    ServiceBusTopicAction,
    SharedAccessKeyAuthentication,
    StorageQueueAction,
    TransportType,
)
from scheduler_core.model.retry import DEFAULT_RETRY_POLICY, Duration, RetryPolicy, RetryType
from scheduler_core.service import plans
from tests.unit.seed_examples import seed_jobs
from tests.unit.test_definitions_jobs import ROUND_TRIPS
from tests.unit.test_definitions_secrets import BASIC, OAUTH, make_pfx

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
URI = "https://example.org/hook"


# -------------------------------------------------------------------------------------------- secrets


def test_a_secret_never_prints_but_reveals_its_value() -> None:
    secret = Secret("hunter2-value")
    assert repr(secret) == str(secret) == f"{secret}" == "Secret('***')"
    assert secret.reveal() == "hunter2-value"
    assert secret == Secret("hunter2-value") and secret != Secret("other") and secret != "hunter2-value"
    assert len({secret, Secret("hunter2-value"), Secret("other")}) == 2
    with pytest.raises(AttributeError):
        secret._value = "changed"
    assert pickle.loads(pickle.dumps(secret)) == secret


def test_no_action_shows_its_secrets_in_repr_str_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    secrets = ("PW-111", "OAUTH-222", "PFX-333", "PFXPW-444", "SAS-555", "SBKEY-666")
    actions = JobAction(
        main=HttpAction(URI, "POST", authentication=BasicAuthentication("alice", Secret(secrets[0]))),
        error=HttpAction(
            URI, "GET", authentication=ActiveDirectoryOAuthAuthentication("t", "a", "c", Secret(secrets[1]))
        ),
    )
    others = [
        ClientCertificateAuthentication(Secret(secrets[2]), Secret(secrets[3]), "AB", "CN=x", NOW),
        StorageQueueAction("acct", "q", "m", Secret(secrets[4])),
        ServiceBusQueueAction("ns", "q", authentication=SharedAccessKeyAuthentication("send", Secret(secrets[5]))),
    ]
    caplog.set_level(logging.DEBUG)
    logging.getLogger("test").info("actions %s %r", actions, others)
    for text in (repr(actions), str(actions), repr(others), caplog.text):
        assert "Secret('***')" in text
        for secret in secrets:
            assert secret not in text


# ------------------------------------------------------------------------------------ the model itself


def test_type_names_authentication_and_retry_intervals() -> None:
    https = HttpAction(URI, "GET", https=True, authentication=BasicAuthentication("u", Secret("p")))
    queue = StorageQueueAction("acct", "q", "m")
    topic = ServiceBusTopicAction("ns", "t", transport_type=TransportType.AMQP)
    assert (https.type_name, queue.type_name, topic.type_name) == ("Https", "StorageQueue", "ServiceBusTopic")
    assert ServiceBusQueueAction("ns", "q").type_name == "ServiceBusQueue"
    assert HttpAction(URI, "GET", not_specified_written=True).uses_authentication is False
    job = JobAction(queue, RetryPolicy(retry_interval=Duration(timedelta(hours=2))), https, RetryPolicy.never())
    assert job.action_types == ("StorageQueue", "Https")
    assert job.uses_authentication
    assert job.retry_intervals() == [7200.0]
    assert JobAction(topic).retry_intervals() == [30.0]
    assert JobAction(topic, RetryPolicy(retry_count=0)).retry_intervals() == []
    assert not JobAction(topic, error=queue).uses_authentication


def test_one_set_of_retry_defaults() -> None:
    assert DEFAULT_RETRY_POLICY == RetryPolicy() == read_retry_policy(None)
    assert (RetryPolicy().kind, RetryPolicy().retry_count, RetryPolicy().interval) == (
        RetryType.FIXED,
        4,
        timedelta(seconds=30),
    )
    never = RetryPolicy.never()
    assert not never.retries and not never.has_retry_after(0) and never.retry_count == 0


def test_exponential_delay_is_deterministic_with_a_seeded_source() -> None:
    policy = RetryPolicy(
        RetryType.EXPONENTIAL, 5, Duration(timedelta(seconds=10)), Duration(timedelta(seconds=30), "timespan")
    )
    first = [policy.delay(a, random.Random(1)) for a in range(4)]
    assert first == [policy.delay(a, random.Random(1)) for a in range(4)]
    assert policy.max_interval == timedelta(seconds=30)
    assert first[3] <= timedelta(seconds=33)


# -------------------------------------------------------------------------------------- round trips

PFX, _CERT = make_pfx(b"pfx-pass")
NO_PASSWORD_PFX, _ = make_pfx(None)


def _http(authentication: dict[str, Any] | None = None, **request: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "Http", "request": {"uri": URI, "method": "post", **request}}
    if authentication is not None:
        out["request"]["authentication"] = authentication
    return out


EXTRA_ACTIONS: dict[str, dict[str, Any]] = {
    "basic": _http(BASIC),
    "oauth": _http(OAUTH),
    "certificate": _http({"type": "ClientCertificate", "pfx": PFX, "password": "pfx-pass"}),
    "certificate-no-password": _http({"type": "ClientCertificate", "pfx": NO_PASSWORD_PFX}),
    "empty-headers-and-body": _http(headers={}, body=""),
    "timespan-policy": {**_http(), "retryPolicy": {"retryType": "fixed", "retryInterval": "00:01:30"}},
    "exponential": {
        **_http(),
        "retryPolicy": {"retryType": "Exponential", "retryInterval": "PT20S", "maxRetryInterval": "00:10:00"},
    },
    "exponential-without-cap": {**_http(), "retryPolicy": {"retryType": "Exponential", "retryCount": 0}},
    "fixed-drops-its-cap": {**_http(), "retryPolicy": {"retryType": "Fixed", "maxRetryInterval": "PT1H"}},
    "none": {**_http(), "retryPolicy": {"retryType": "none", "retryCount": 3}},
    "storage-without-token": {
        "type": "StorageQueue",
        "queueMessage": {"storageAccount": "acct", "queueName": "jobs", "message": ""},
    },
    "storage-empty-token": {
        "type": "StorageQueue",
        "queueMessage": {"storageAccount": "acct", "queueName": "jobs", "message": "m", "sasToken": ""},
    },
    "servicebus-bare": {"type": "ServiceBusQueue", "serviceBusQueueMessage": {"namespace": "ns", "queueName": "q"}},
    "servicebus-notspecified": {
        "type": "ServiceBusTopic",
        "serviceBusTopicMessage": {"namespace": "ns", "topicPath": "t", "authentication": {}},
    },
    "servicebus-key-name-only": {
        "type": "ServiceBusTopic",
        "serviceBusTopicMessage": {"namespace": "ns", "topicPath": "t", "authentication": {"sasKeyName": "send"}},
    },
    "servicebus-every-property": {
        "type": "ServiceBusQueue",
        "serviceBusQueueMessage": {
            "namespace": "ns",
            "queueName": "q",
            "message": "m",
            "transportType": "notspecified",
            "authentication": {"type": "SharedAccessKey", "sasKeyName": "send", "sasKey": ""},
            "brokeredMessageProperties": {
                "viaPartitionKey": "v",
                "to": "t",
                "timeToLive": "P1DT0.5S",
                "sessionId": "s",
                "scheduledEnqueueTimeUtc": "2030-05-06T07:08:09.120+02:00",
                "replyToSessionId": "rs",
                "replyTo": "r",
                "partitionKey": "s",
                "messageId": "id",
                "label": "l",
                "forcePersistence": False,
                "correlationId": "c",
                "contentType": "text/plain",
            },
            "customMessageProperties": {},
        },
    },
    "servicebus-empty-brokered": {
        "type": "ServiceBusQueue",
        "serviceBusQueueMessage": {"namespace": "ns", "queueName": "q", "brokeredMessageProperties": {}},
    },
}

SEEDS = {example.label: example.body for example in seed_jobs(NOW)}
PAIRS = {f"{main}+{error}": (main, error) for main in ROUND_TRIPS for error in (None, *ROUND_TRIPS)}


def _job(action: dict[str, Any]) -> dict[str, Any]:
    return {"properties": {"action": action}}


def assert_round_trips(spec: JobSpec) -> JobAction:
    """Reading the stored action and writing it again gives exactly the parser's output and secrets."""
    typed = read_job_action(spec.properties, spec.secrets)
    output, secrets = job_action_json(typed)
    assert json.dumps(output) == json.dumps(spec.properties["action"])  # same values, same key order
    assert secrets == spec.secrets
    # and the stored action read back is the very value the parser built
    style = spec.duration_style
    parsed = parse_action(
        spec.properties["action"],
        "action",
        Prior(spec.properties, spec.secrets).sub("action"),
        limits=False,
        style=style,
    )
    assert parsed.action == typed
    assert (spec.action_types, spec.uses_authentication) == (typed.action_types, typed.uses_authentication)
    assert spec.definition.action == typed
    # the whole stored job read back without validating or opening a certificate: what re-parsing gives
    stored = {"properties": restore_secrets(spec.properties, spec.secrets)}
    definition = read_job_definition(spec.properties, spec.secrets)
    assert definition == parse_job(stored, validate_limits=False).definition == spec.definition
    # and written again: the very JSON (same key order) and secrets the parser answered
    properties, secrets = job_json(definition, spec.state)
    assert (json.dumps(properties), secrets) == (json.dumps(spec.properties), spec.secrets)
    return typed


@pytest.mark.parametrize("label", sorted(SEEDS))
def test_every_seed_example_round_trips(label: str) -> None:
    assert_round_trips(parse_job(SEEDS[label], now=NOW))


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_every_action_type_round_trips_as_main_and_error_action(name: str) -> None:
    main, error = PAIRS[name]
    action = copy.deepcopy(ROUND_TRIPS[main])
    if error is not None:
        action["errorAction"] = {**copy.deepcopy(ROUND_TRIPS[error]), "retryPolicy": {"retryType": "None"}}
    assert_round_trips(parse_job(_job(action), now=NOW))


@pytest.mark.parametrize("name", sorted(EXTRA_ACTIONS))
def test_every_optional_field_round_trips(name: str) -> None:
    typed = assert_round_trips(parse_job(_job(copy.deepcopy(EXTRA_ACTIONS[name])), now=NOW))
    assert typed.main.type_name == EXTRA_ACTIONS[name]["type"]


def test_the_typed_values_say_what_the_json_says() -> None:
    spec = parse_job(_job(EXTRA_ACTIONS["certificate"]), now=NOW)
    main = read_job_action(spec.properties, spec.secrets).main
    assert isinstance(main, HttpAction) and isinstance(main.authentication, ClientCertificateAuthentication)
    assert main.method == "POST" and main.authentication.password == Secret("pfx-pass")
    assert main.authentication.expiration == datetime(2030, 1, 1, tzinfo=UTC)
    spec = parse_job(_job(EXTRA_ACTIONS["servicebus-every-property"]), now=NOW)
    bus = read_job_action(spec.properties, spec.secrets).main
    assert isinstance(bus, ServiceBusQueueAction) and bus.brokered_properties is not None
    assert bus.sas_key == Secret("")  # written, if empty: not the app's identity
    assert bus.brokered_properties.time_to_live == Duration(timedelta(days=1, milliseconds=500), "iso")
    assert bus.brokered_properties.scheduled_enqueue_time_utc == datetime(2030, 5, 6, 5, 8, 9, 120000, tzinfo=UTC)
    spec = parse_job(_job(EXTRA_ACTIONS["servicebus-key-name-only"]), now=NOW)
    topic = read_job_action(spec.properties, spec.secrets).main
    assert isinstance(topic, ServiceBusTopicAction) and topic.sas_key is None  # the app's identity
    spec = parse_job(_job(ROUND_TRIPS["http-notspecified"]), now=NOW)
    plain = read_job_action(spec.properties, spec.secrets).main
    assert isinstance(plain, HttpAction) and plain.authentication is None and plain.not_specified_written


def test_read_action_takes_one_object_with_its_secrets_in_place() -> None:
    spec = parse_job(_job(ROUND_TRIPS["https-basic"]), now=NOW)
    action = read_action(restore_secrets(spec.properties, spec.secrets)["action"])
    assert action == HttpAction(
        URI,
        "PUT",
        https=True,
        headers={"Content-Type": "application/json", "X-Trace": "1"},
        body="{}",
        authentication=BasicAuthentication("user", Secret("SECRET-PW")),
    )
    with pytest.raises(KeyError):
        read_action({"type": "Ftp"})


def test_a_stored_job_without_a_policy_reads_as_the_default() -> None:
    typed = read_job_action({"action": {"type": "Http", "request": {"uri": URI, "method": "GET"}}}, {})
    assert typed.retry_policy == DEFAULT_RETRY_POLICY and typed.error is None
    assert read_retry_policy({"retryType": "None"}) == RetryPolicy.never()


# ------------------------------------------------------------------------------------- plan defaults

FREE = parse_collection({"location": "westus", "properties": {"sku": {"name": "Free"}}}, name="free")
PLAN_BODIES = {
    "no-policy": _http(),
    "timespan-no-interval": {
        **_http(),
        "retryPolicy": {"retryType": "Fixed", "retryCount": 2, "maxRetryInterval": "01:00:00"},
    },
    "given-interval": {**_http(), "retryPolicy": {"retryInterval": "PT2H"}},
    "none": {**_http(), "retryPolicy": {"retryType": "None"}},
    "error-without-policy": {**_http(), "errorAction": _http()},
    "error-policy-without-interval": {**_http(), "errorAction": {**_http(), "retryPolicy": {"retryCount": 1}}},
    "exponential-error": {
        **_http(),
        "retryPolicy": {"retryInterval": "P1D"},
        "errorAction": {**_http(), "retryPolicy": {"retryType": "Exponential", "maxRetryInterval": "P2D"}},
    },
}


def _free_plan_rule_on_json(spec: JobSpec, body: Mapping[str, Any]) -> JobSpec:
    """The Free plan's default retry interval as the service applied it before the parser took it over
    (JSON rewritten after parsing), kept as the oracle of the test below."""
    given = body.get("properties") if isinstance(body, Mapping) else None
    given_action = given.get("action") if isinstance(given, Mapping) else None
    action = dict(spec.properties.get("action") or {})
    changed = False
    for key in ("main", "errorAction"):
        target = action if key == "main" else dict(action.get("errorAction") or {})
        source = given_action if key == "main" else (given_action or {}).get("errorAction")
        policy = target.get("retryPolicy")
        if not target or not isinstance(policy, Mapping) or policy.get("retryType") == "None":
            continue
        given_policy = source.get("retryPolicy") if isinstance(source, Mapping) else None
        if isinstance(given_policy, Mapping) and "retryInterval" in given_policy:
            continue
        interval = format_duration(plans.FREE_DEFAULT_RETRY_INTERVAL, spec.duration_style)
        target["retryPolicy"] = {**policy, "retryInterval": interval}
        changed = True
        if key == "errorAction":
            action["errorAction"] = target
    if not changed:
        return spec
    properties = {**spec.properties, "action": action}
    return dataclasses.replace(spec, definition=read_job_definition(properties, spec.secrets))


@pytest.mark.parametrize("name", sorted(PLAN_BODIES))
def test_a_plans_default_retry_interval_is_filled_in_by_the_parser(name: str) -> None:
    """``parse_job(default_retry_interval=...)`` gives what the Free plan's rule on JSON gave, and the
    service asks for it in a Free collection."""
    body = _job(copy.deepcopy(PLAN_BODIES[name]))
    expected = _free_plan_rule_on_json(parse_job(body, now=NOW), body)
    assert parse_job(body, now=NOW, default_retry_interval=plans.FREE_DEFAULT_RETRY_INTERVAL) == expected
    assert plans.default_retry_interval(FREE) == plans.FREE_DEFAULT_RETRY_INTERVAL
