"""An action's ``flowControl`` at the wire (api-version 2026-12-01-preview): what it accepts and answers, the key
each action type defaults to, every hostile value a 400 naming the field and the rule, and a classic client's
writes keeping what it cannot see."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.definitions import Wire, job_wire, keep_preview, parse_job, read_job_definition
from scheduler_core.errors import ValidationError
from scheduler_core.model import JobState
from scheduler_core.model.actions import FlowControl

NOW = datetime.now(UTC).replace(microsecond=0)
START = (NOW + timedelta(days=1)).strftime("%Y-%m-%dT%H:00:00Z")
HTTP = {"type": "Https", "request": {"uri": "https://API.example.org/hook", "method": "POST"}}


def job(flow: Any, action: dict[str, Any] | None = None) -> dict[str, Any]:
    body = {"properties": {"startTime": START, "action": {**(action or HTTP)}}}
    body["properties"]["action"]["flowControl"] = flow
    return body


def parsed(flow: Any, action: dict[str, Any] | None = None, wire: Wire = Wire.PREVIEW) -> Any:
    return parse_job(job(flow, action), now=NOW, wire=wire)


@pytest.mark.parametrize(
    ("written", "model", "answered"),
    [
        ({"ratePerSecond": 5}, FlowControl(None, 5.0, None), {"ratePerSecond": 5}),
        ({"parallelism": 2}, FlowControl(None, None, 2), {"parallelism": 2}),
        (
            {"KEY": " Payments-API ", "ratePerSecond": 0.5, "parallelism": 3},
            FlowControl("Payments-API", 0.5, 3),
            {"key": "Payments-API", "ratePerSecond": 0.5, "parallelism": 3},
        ),
        ({"ratePerSecond": 1000.0, "parallelism": 1000}, FlowControl(None, 1000.0, 1000), None),
        ({"ratePerSecond": 0.01}, FlowControl(None, 0.01, None), {"ratePerSecond": 0.01}),
    ],
)
def test_the_preview_takes_and_answers_it(written: Any, model: FlowControl, answered: Any) -> None:
    spec = parsed(written)
    assert spec.definition.action.flow_control == model
    shown = spec.properties["action"]["flowControl"]
    assert shown == (answered if answered is not None else {"ratePerSecond": 1000, "parallelism": 1000})
    stored = json.loads(json.dumps(spec.properties))
    assert read_job_definition(stored, spec.secrets).action.flow_control == model  # as the stores read it back


@pytest.mark.parametrize(
    ("action", "key"),
    [
        (HTTP, "api.example.org"),
        (
            {"type": "Http", "request": {"uri": "http://api.example.org:8080/x", "method": "GET"}},
            "api.example.org:8080",
        ),
        ({"type": "Https", "request": {"uri": "https://api.example.org:443/x", "method": "GET"}}, "api.example.org"),
        (
            {"type": "StorageQueue", "queueMessage": {"storageAccount": "Acct", "queueName": "jobs", "message": "m"}},
            "acct/jobs",
        ),
        (
            {
                "type": "ServiceBusQueue",
                "serviceBusQueueMessage": {
                    "namespace": "Contoso",
                    "queueName": "q",
                    "message": "m",
                    "authentication": {"type": "SharedAccessKey", "sasKeyName": "k", "sasKey": "s"},
                },
            },
            "contoso",
        ),
    ],
)
def test_the_key_defaults_to_the_target(action: dict[str, Any], key: str) -> None:
    assert parsed({"parallelism": 1}, action).definition.action.flow_key == key
    assert parsed({"key": "Shared", "parallelism": 1}, action).definition.action.flow_key == "shared"


@pytest.mark.parametrize(
    ("flow", "path", "rule"),
    [
        ({}, "properties.action.flowControl", "must set ratePerSecond, parallelism or both"),
        ({"key": "k"}, "properties.action.flowControl", "must set ratePerSecond, parallelism or both"),
        ([], "properties.action.flowControl", "must be a JSON object"),
        ({"rate": 1}, "properties.action.flowControl.rate", "is not a known field (allowed: key, ratePerSecond"),
        ({"ratePerSecond": 0}, "properties.action.flowControl.ratePerSecond", "from 0.01 to 1000, not 0"),
        ({"ratePerSecond": -1}, "properties.action.flowControl.ratePerSecond", "not -1"),
        ({"ratePerSecond": 1001}, "properties.action.flowControl.ratePerSecond", "not 1001"),
        ({"ratePerSecond": 10**400}, "properties.action.flowControl.ratePerSecond", "a number of 401 digits"),
        ({"ratePerSecond": "5"}, "properties.action.flowControl.ratePerSecond", "not a string"),
        ({"ratePerSecond": True}, "properties.action.flowControl.ratePerSecond", "not a boolean"),
        ({"parallelism": 0}, "properties.action.flowControl.parallelism", "between 1 and 1000, not 0"),
        ({"parallelism": 1.5}, "properties.action.flowControl.parallelism", "between 1 and 1000"),
        ({"parallelism": 1001}, "properties.action.flowControl.parallelism", "not 1001"),
        ({"parallelism": 1, "key": ""}, "properties.action.flowControl.key", "1 to 256 printable"),
        ({"parallelism": 1, "key": "   "}, "properties.action.flowControl.key", "1 to 256 printable"),
        ({"parallelism": 1, "key": "k" * 257}, "properties.action.flowControl.key", "1 to 256 printable"),
        ({"parallelism": 1, "key": "a\r\nb"}, "properties.action.flowControl.key", "no control characters"),
        ({"parallelism": 1, "key": "a\u0000b"}, "properties.action.flowControl.key", "no control characters"),
        ({"parallelism": 1, "key": 7}, "properties.action.flowControl.key", "not a number"),
        ({"parallelism": 1, "PARALLELISM": 2}, "properties.action.flowControl.PARALLELISM", "duplicates"),
    ],
)
def test_a_hostile_value_is_a_400_naming_the_field_and_the_rule(flow: Any, path: str, rule: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parsed(flow)
    assert caught.value.status == 400
    assert (caught.value.path, rule in caught.value.rule) == (path, True), caught.value.rule
    assert len(str(caught.value)) < 400


def test_a_non_finite_rate_is_refused_without_an_overflow() -> None:
    for value in (float("inf"), float("nan")):
        with pytest.raises(ValidationError) as caught:
            parsed({"ratePerSecond": value})
        assert caught.value.path == "properties.action.flowControl.ratePerSecond"


def test_the_error_action_has_none_and_the_classic_version_names_the_one_that_takes_it() -> None:
    action = {**HTTP, "errorAction": {**HTTP, "flowControl": {"parallelism": 1}}}
    for wire in Wire:
        with pytest.raises(ValidationError) as caught:
            parse_job({"properties": {"startTime": START, "action": action}}, now=NOW, wire=wire)
        assert caught.value.path == "properties.action.errorAction.flowControl"
        assert caught.value.rule.startswith("is not a known field")
    with pytest.raises(ValidationError) as caught:
        parsed({"parallelism": 1}, wire=Wire.CLASSIC)
    assert caught.value.path == "properties.action.flowControl"
    assert "accepted with api-version=2026-12-01-preview" in caught.value.rule


def test_a_classic_write_keeps_the_flow_control_it_cannot_see() -> None:
    stored = parsed({"key": "api", "ratePerSecond": 2}).definition
    classic = parse_job({"properties": {"startTime": START, "action": dict(HTTP)}}, now=NOW).definition
    assert classic.action.flow_control is None
    assert keep_preview(classic, stored).action.flow_control == FlowControl("api", 2.0, None)
    assert "flowControl" not in job_wire(stored, JobState.ENABLED, Wire.CLASSIC)["action"]  # never shown to it
    assert job_wire(stored, JobState.ENABLED, Wire.PREVIEW)["action"]["flowControl"] == {
        "key": "api",
        "ratePerSecond": 2,
    }
