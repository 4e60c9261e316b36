"""api-version 2026-12-01-preview over raw HTTP on the local host and Azurite: the preview properties, the
calendars of a collection, a job's occurrences, and the 2016-03-01 answers beside them."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from scheduler_core.recurrence import format_instant, parse_instant
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
CLASSIC = "2016-03-01"
JC = "subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc1"
SECRET = "whsec_" + base64.b64encode(b"s" * 32).decode()
START = (datetime.now(UTC) + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)


def call(api: Api, method: str, path: str, body: Any = None, version: str = PREVIEW, **query: str) -> requests.Response:
    return api.call(method, path, body, query={"api-version": version, **query})


def job_body(**extra: Any) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "startTime": format_instant(START),
        "action": {"type": "Https", "request": {"uri": "https://example.org/hook", "method": "POST", "body": "x"}},
        "recurrence": {"frequency": "Hour", "jitter": "PT20M", "exclusions": {"dates": [START.date().isoformat()]}},
        "overlapPolicy": "Skip",
        **extra,
    }
    return {"properties": properties}


@pytest.fixture
def collection(api: Api) -> Api:
    created = call(api, "PUT", JC, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}, CLASSIC)
    assert created.status_code == 201, created.text
    return api


def test_a_preview_job_is_answered_in_full_to_the_preview_and_as_2016_to_the_old_version(collection: Api) -> None:
    body = job_body()
    body["properties"]["action"]["request"]["signing"] = {"scheme": "StandardWebhooks", "secret": SECRET}
    put = call(collection, "PUT", f"{JC}/jobs/j1", body)
    assert put.status_code == 201, put.text
    properties = put.json()["properties"]
    assert properties["overlapPolicy"] == "Skip"
    assert properties["recurrence"]["jitter"] == "PT20M"
    assert properties["recurrence"]["exclusions"] == {"dates": [START.date().isoformat()]}
    assert properties["action"]["request"]["signing"] == {"scheme": "StandardWebhooks"}
    assert "whsec_" not in put.text
    # the first occurrence's day is excluded: the next one fires on the following day, jittered
    following = parse_instant(properties["status"]["nextExecutionTime"], "next")
    midnight = datetime.combine(START.date() + timedelta(days=1), datetime.min.time(), UTC)
    assert midnight <= following < midnight + timedelta(minutes=20)
    classic = call(collection, "GET", f"{JC}/jobs/j1", version=CLASSIC)
    assert classic.status_code == 200
    for word in ("overlapPolicy", "jitter", "exclusions", "signing", "whsec_"):
        assert word not in classic.text
    assert classic.json()["properties"]["status"]["nextExecutionTime"] == properties["status"]["nextExecutionTime"]
    listed = call(collection, "GET", f"{JC}/jobs")
    assert listed.json()["value"][0]["properties"]["overlapPolicy"] == "Skip"


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"overlapPolicy": "Replace"}, "properties.overlapPolicy"),
        ({"missedRunPolicy": {"mode": "Skip", "window": "PT1H"}}, "properties.missedRunPolicy.window"),
        ({"pauseAfterFailures": 0}, "properties.pauseAfterFailures"),
        ({"deleteAfterCompletion": "yes"}, "properties.deleteAfterCompletion"),
        ({"recurrence": {"frequency": "Hour", "jitter": "PT31M"}}, "properties.recurrence.jitter"),
        (
            {"recurrence": {"frequency": "Day", "exclusions": {"calendars": ["nope"]}}},
            "properties.recurrence.exclusions.calendars[0]",
        ),
    ],
)
def test_a_bad_preview_value_is_a_400_naming_the_field_and_stores_nothing(
    collection: Api, extra: dict[str, Any], field: str
) -> None:
    refused = call(collection, "PUT", f"{JC}/jobs/bad", job_body(**extra))
    assert refused.status_code == 400
    assert refused.json()["error"]["message"].startswith(f"{field}:")
    assert call(collection, "GET", f"{JC}/jobs/bad").status_code == 404


def test_the_preview_resources_need_the_preview_version(collection: Api) -> None:
    call(collection, "PUT", f"{JC}/jobs/j1", job_body())
    for path in (f"{JC}/calendars", f"{JC}/calendars/c1", f"{JC}/jobs/j1/occurrences"):
        refused = call(collection, "GET", path, version=CLASSIC)
        assert refused.status_code == 400
        assert refused.json()["error"]["message"].startswith("api-version:")
    unknown = call(collection, "GET", JC, version="2027-01-01")
    assert unknown.status_code == 400 and PREVIEW in unknown.json()["error"]["message"]


def test_calendars_of_a_collection(collection: Api) -> None:
    path = f"{JC}/calendars/Holidays"
    created = call(collection, "PUT", path, {"properties": {"dates": ["2031-12-25", "2031-01-01"]}})
    assert created.status_code == 201, created.text
    assert created.json() == {
        "id": f"/{JC}/calendars/Holidays",
        "type": "Microsoft.Scheduler/jobCollections/calendars",
        "name": "jc1/Holidays",
        "properties": {"dates": ["2031-12-25", "2031-01-01"]},
    }
    replaced = call(collection, "PUT", f"{JC}/calendars/holidays", {"properties": {"dates": ["2031-12-26"]}})
    assert replaced.status_code == 200 and replaced.json()["name"] == "jc1/Holidays"
    assert call(collection, "GET", path).json()["properties"] == {"dates": ["2031-12-26"]}
    assert [item["name"] for item in call(collection, "GET", f"{JC}/calendars").json()["value"]] == ["jc1/Holidays"]
    body = job_body(recurrence={"frequency": "Day", "exclusions": {"calendars": ["HOLIDAYS"]}})
    assert call(collection, "PUT", f"{JC}/jobs/j1", body).status_code == 201
    in_use = call(collection, "DELETE", path)
    assert in_use.status_code == 409 and "'j1'" in in_use.json()["error"]["message"]
    assert call(collection, "DELETE", f"{JC}/jobs/j1").status_code == 200
    assert call(collection, "DELETE", path).status_code == 200
    assert call(collection, "GET", path).status_code == 404
    bad = call(collection, "PUT", path, {"properties": {"dates": ["31.12.2031"]}})
    assert bad.status_code == 400 and bad.json()["error"]["message"].startswith("properties.dates[0]:")
    # a collection PUT by an old client keeps its calendars
    call(collection, "PUT", path, {"properties": {"dates": ["2031-12-25"]}})
    call(collection, "PUT", JC, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}, CLASSIC)
    assert call(collection, "GET", path).status_code == 200


def test_the_occurrences_of_a_job_page_by_instant(collection: Api) -> None:
    call(collection, "PUT", f"{JC}/jobs/j1", job_body())
    first = call(collection, "GET", f"{JC}/jobs/j1/occurrences", **{"$top": "3"})
    assert first.status_code == 200, first.text
    page = first.json()
    assert len(page["value"]) == 3 and "nextLink" in page
    for item in page["value"]:
        scheduled, fire = parse_instant(item["scheduledTime"], "s"), parse_instant(item["fireTime"], "f")
        assert scheduled.date() != START.date()  # excluded
        assert scheduled <= fire < scheduled + timedelta(minutes=20)
    following = requests.get(page["nextLink"], headers={"Authorization": f"Bearer {collection.key}"}, timeout=30)
    assert following.status_code == 200
    nominal = [parse_instant(item["scheduledTime"], "s") for item in page["value"] + following.json()["value"]]
    assert nominal == [nominal[0] + timedelta(hours=i) for i in range(6)]
