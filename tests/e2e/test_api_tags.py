"""Job labels (``properties.tags``, ``properties.description``) and the preview's ``$filter`` on jobs (tags,
state and action host, joined by ``and``) over raw HTTP on the local host and Azurite; what api-version
2016-03-01 clients, the real ``azure-mgmt-scheduler`` client among them, see and keep of them."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.e2e.conftest import Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
CLASSIC = "2016-03-01"
JC = "subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc1"


def call(api: Api, method: str, path: str, body: Any = None, version: str = PREVIEW, **query: str) -> requests.Response:
    return api.call(method, path, body, query={"api-version": version, **query})


def job(uri: str = "https://example.org/hook", **extra: Any) -> dict[str, Any]:
    action = {"type": "Https", "request": {"uri": uri, "method": "POST", "body": "x"}}
    return {"properties": {"action": action, "recurrence": {"frequency": "Hour"}, **extra}}


def names(response: requests.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return sorted(item["name"].split("/")[-1] for item in response.json()["value"])


@pytest.fixture
def collection(api: Api) -> Api:
    created = call(api, "PUT", JC, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}, CLASSIC)
    assert created.status_code == 201, created.text
    return api


@pytest.fixture
def labelled(collection: Api) -> Api:
    jobs = {
        "pay-1": job(tags={"team": "payments", "env": "prod"}, description="Settles the day's card payments"),
        "pay-2": job("https://pay.example.com/run", tags={"Team": "payments", "env": "test"}),
        "ops-1": job("https://pay.example.com/ping", tags={"team": "ops", "owner": "O'Brien"}),
        "bare": job(state="Disabled"),
    }
    for name, body in jobs.items():
        put = call(collection, "PUT", f"{JC}/jobs/{name}", body)
        assert put.status_code == 201, put.text
    return collection


def test_tags_and_description_are_answered_as_written_to_the_preview_only(labelled: Api) -> None:
    properties = call(labelled, "GET", f"{JC}/jobs/pay-1").json()["properties"]
    assert properties["tags"] == {"team": "payments", "env": "prod"}
    assert properties["description"] == "Settles the day's card payments"
    classic = call(labelled, "GET", f"{JC}/jobs/pay-1", version=CLASSIC)
    assert "tags" not in classic.json()["properties"] and "description" not in classic.json()["properties"]
    # the 2016-03-01 SDK's read-modify-write keeps them
    client = labelled.sdk()
    model = client.jobs.get("rg1", "jc1", "pay-1")
    model.properties.recurrence.interval = 2
    client.jobs.create_or_update("rg1", "jc1", "pay-1", model)
    after = call(labelled, "GET", f"{JC}/jobs/pay-1").json()["properties"]
    assert after["recurrence"]["interval"] == 2
    assert after["tags"] == {"team": "payments", "env": "prod"} and after["description"].startswith("Settles")
    # a preview PUT without them removes them, as a PUT does
    assert call(labelled, "PUT", f"{JC}/jobs/pay-1", job()).status_code == 200
    assert "tags" not in call(labelled, "GET", f"{JC}/jobs/pay-1").json()["properties"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("tags/team eq 'payments'", ["pay-1", "pay-2"]),  # tag names match without regard to case
        ("tags/TEAM eq 'payments' and tags/env eq 'prod'", ["pay-1"]),
        ("tags/team eq 'Payments'", []),  # values match exactly
        ("tags/owner eq 'O''Brien'", ["ops-1"]),
        ("host eq 'PAY.example.com'", ["ops-1", "pay-2"]),
        ("host eq 'pay.example.com' and tags/team eq 'payments'", ["pay-2"]),
        ("state eq 'disabled'", ["bare"]),
        ("state eq 'Enabled' AND tags/env eq 'test'", ["pay-2"]),
        ("tags/missing eq ''", []),
    ],
)
def test_jobs_are_listed_by_tag_host_and_state(labelled: Api, query: str, expected: list[str]) -> None:
    assert names(call(labelled, "GET", f"{JC}/jobs", **{"$filter": query})) == expected


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("tags/team eq payments", "cannot read from character 1"),
        ("tags/team eq 'payments' or state eq 'Enabled'", "expected 'and' at character 25"),
        ("lastRun eq 'x'", "'lastRun' is not a field a job can be filtered by"),
        ("state eq 'Sleeping'", "state must be one of"),
        ("tags/team eq 'a' and", "cannot read from character 21"),
        ("x" * 2001, "at most 2,000"),
        (" and ".join(["state eq 'Enabled'"] * 21), "at most 20 clauses"),
    ],
)
def test_a_filter_it_cannot_read_is_a_400_naming_it(labelled: Api, query: str, words: str) -> None:
    answer = call(labelled, "GET", f"{JC}/jobs", **{"$filter": query})
    assert answer.status_code == 400, answer.text
    message = answer.json()["error"]["message"]
    assert message.startswith("$filter:") and words in message, message


def test_the_old_api_version_filters_by_state_only(labelled: Api) -> None:
    assert names(call(labelled, "GET", f"{JC}/jobs", version=CLASSIC, **{"$filter": "state eq 'Disabled'"})) == ["bare"]
    refused = call(labelled, "GET", f"{JC}/jobs", version=CLASSIC, **{"$filter": "tags/team eq 'ops'"})
    assert refused.status_code == 400 and refused.json()["error"]["message"].startswith("$filter:")


@pytest.mark.parametrize(
    ("tags", "field", "words"),
    [
        ({f"k{i}": "v" for i in range(51)}, "properties.tags", "at most 50"),
        ({"a/b": "v"}, "properties.tags.a/b", "may not hold /"),
        ({"azure-owner": "v"}, "properties.tags.azure-owner", "reserved"),
        ({"team": "a", "TEAM": "b"}, "properties.tags.TEAM", "not case-sensitive"),
        ({"team": 5}, "properties.tags.team", "a string"),
        ({"team": "v" * 257}, "properties.tags.team", "at most 256"),
        ({"k" * 513: "v"}, "properties.tags." + "k" * 513, "1 to 512"),
        (["team"], "properties.tags", "JSON object"),
    ],
)
def test_tags_break_arm_rules_as_a_400_and_nothing_is_stored(
    collection: Api, tags: Any, field: str, words: str
) -> None:
    answer = call(collection, "PUT", f"{JC}/jobs/j1", job(tags=tags))
    assert answer.status_code == 400, answer.text
    message = answer.json()["error"]["message"]
    assert message.startswith(f"{field}:") and words in message, message
    assert call(collection, "GET", f"{JC}/jobs/j1").status_code == 404
    long = call(collection, "PUT", f"{JC}/jobs/j1", job(description="d" * 1025))
    assert long.status_code == 400 and "properties.description" in long.json()["error"]["message"]
    classic = call(collection, "PUT", f"{JC}/jobs/j1", job(tags={"team": "ops"}), CLASSIC)
    assert classic.status_code == 400 and PREVIEW in classic.json()["error"]["message"]
