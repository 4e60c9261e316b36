"""``recurrence.cron`` over raw HTTP on the local host and Azurite (api-version 2026-12-01-preview), and what
api-version 2016-03-01 clients, the real ``azure-mgmt-scheduler`` client among them, see and keep of it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import requests

from scheduler_core.recurrence import format_instant, parse_instant
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
CLASSIC = "2016-03-01"
JC = "subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc1"
BERLIN = ZoneInfo("Europe/Berlin")
ACTION = {"type": "Https", "request": {"uri": "https://example.org/hook", "method": "POST", "body": "x"}}


def call(api: Api, method: str, path: str, body: Any = None, version: str = PREVIEW, **query: str) -> requests.Response:
    return api.call(method, path, body, query={"api-version": version, **query})


def cron_job(recurrence: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"properties": {"action": ACTION, "recurrence": recurrence, **extra}}


def error_of(response: requests.Response) -> str:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "BadRequest"
    return str(error["message"])


@pytest.fixture
def collection(api: Api) -> Api:
    created = call(api, "PUT", JC, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}, CLASSIC)
    assert created.status_code == 201, created.text
    return api


def _berlin_workdays_at_nine(after: datetime, n: int) -> list[datetime]:
    """The next ``n`` weekdays at 09:00 Berlin time after ``after``, computed day by day."""
    found: list[datetime] = []
    day = after.astimezone(BERLIN).date()
    while len(found) < n:
        instant = datetime(day.year, day.month, day.day, 9, tzinfo=BERLIN).astimezone(UTC)
        if day.weekday() < 5 and instant > after:
            found.append(instant)
        day += timedelta(days=1)
    return found


def test_a_cron_job_answers_its_cron_as_written_and_lists_its_instants(collection: Api) -> None:
    recurrence = {"cron": ["CRON_TZ=Europe/Berlin 0 9 * * MON-FRI"], "count": 30}
    before = datetime.now(UTC)
    put = call(collection, "PUT", f"{JC}/jobs/j1", cron_job(recurrence))
    assert put.status_code == 201, put.text
    answered = put.json()["properties"]["recurrence"]
    assert answered == recurrence  # the array, the prefix and the count as written; no frequency added
    expected = _berlin_workdays_at_nine(before, 6)
    assert parse_instant(put.json()["properties"]["status"]["nextExecutionTime"], "next") == expected[0]
    listed = call(collection, "GET", f"{JC}/jobs/j1/occurrences", **{"$top": "6"})
    assert listed.status_code == 200, listed.text
    assert [parse_instant(item["scheduledTime"], "s") for item in listed.json()["value"]] == expected


def test_an_old_client_sees_no_cron_and_keeps_it_when_it_writes_the_job_back(collection: Api) -> None:
    put = call(collection, "PUT", f"{JC}/jobs/j1", cron_job({"cron": "30 6 L * *", "timeZone": "Europe/Berlin"}))
    assert put.status_code == 201, put.text
    following = put.json()["properties"]["status"]["nextExecutionTime"]
    classic = call(collection, "GET", f"{JC}/jobs/j1", version=CLASSIC)
    assert classic.status_code == 200
    assert classic.json()["properties"]["recurrence"] == {"timeZone": "Europe/Berlin"}
    assert classic.json()["properties"]["status"]["nextExecutionTime"] == following
    # the real 2016-03-01 SDK reads it, and its read-modify-write (a new count) keeps the cron
    client = collection.sdk()
    job = client.jobs.get("rg1", "jc1", "j1")
    assert job.properties.recurrence.frequency is None
    job.properties.recurrence.count = 12
    client.jobs.create_or_update("rg1", "jc1", "j1", job)
    after = call(collection, "GET", f"{JC}/jobs/j1").json()["properties"]
    assert after["recurrence"] == {"cron": "30 6 L * *", "count": 12, "timeZone": "Europe/Berlin"}
    assert after["status"]["nextExecutionTime"] == following
    # an old client that gives a frequency replaces the schedule, as a 2016-03-01 write always did
    body = classic.json()
    body["properties"]["recurrence"] = {"frequency": "Day"}
    assert call(collection, "PUT", f"{JC}/jobs/j1", body, CLASSIC).status_code == 200
    assert "cron" not in call(collection, "GET", f"{JC}/jobs/j1").json()["properties"]["recurrence"]


@pytest.mark.parametrize(
    ("recurrence", "field", "words"),
    [
        ({"cron": "0 9 * * 8"}, "properties.recurrence.cron", "at position 9 (day-of-week): 8 is outside 0-7"),
        ({"cron": ["0 9 * * *", "0 25 * * *"]}, "properties.recurrence.cron[1]", "at position 3 (hour)"),
        ({"cron": "0 9 * *"}, "properties.recurrence.cron", "has 4 fields"),
        ({"cron": "0 9 * * *", "frequency": "Day"}, "properties.recurrence.frequency", "cannot be given with cron"),
        ({"cron": "0 0 30 2 *"}, "properties.recurrence.cron", "can never fire"),
        ({"cron": "TZ=Mars/Olympus 0 9 * * *"}, "properties.recurrence.cron", "unknown time zone"),
        (
            {"cron": "CRON_TZ=Europe/Berlin 0 9 * * *", "timeZone": "America/New_York"},
            "properties.recurrence.cron",
            "but properties.recurrence.timeZone names America/New_York",
        ),
        ({"cron": [f"{n} 0 * * *" for n in range(51)]}, "properties.recurrence.cron", "1 to 50 cron strings"),
        ({"cron": "x" * 1001}, "properties.recurrence.cron", "at most 1,000"),
    ],
)
def test_a_bad_cron_is_a_400_naming_the_field_and_nothing_is_stored(
    collection: Api, recurrence: dict[str, Any], field: str, words: str
) -> None:
    message = error_of(call(collection, "PUT", f"{JC}/jobs/j1", cron_job(recurrence)))
    assert message.startswith(f"{field}:"), message
    assert words in message, message
    assert call(collection, "GET", f"{JC}/jobs/j1").status_code == 404


def test_a_cron_firing_more_often_than_the_quota_is_refused_as_every_schedule_is(collection: Api) -> None:
    refused = call(collection, "PUT", f"{JC}/jobs/j1", cron_job({"cron": "*/10 * * * * *"}))
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "QuotaExceeded", refused.text
    assert "at most once every 1 minute" in refused.json()["error"]["message"]
    assert call(collection, "GET", f"{JC}/jobs/j1").status_code == 404
    # second 30 of every minute is once a minute: it fits
    assert call(collection, "PUT", f"{JC}/jobs/j1", cron_job({"cron": "30 * * * * *"})).status_code == 201


def test_the_old_api_version_refuses_a_cron_by_name(collection: Api) -> None:
    message = error_of(call(collection, "PUT", f"{JC}/jobs/j1", cron_job({"cron": "0 9 * * *"}), CLASSIC))
    assert message.startswith("properties.recurrence.cron:") and PREVIEW in message
    assert call(collection, "GET", f"{JC}/jobs/j1").status_code == 404


def test_a_cron_with_seconds_fires_at_its_second(collection: Api) -> None:
    now = datetime.now(UTC)
    put = call(collection, "PUT", f"{JC}/jobs/j1", cron_job({"cron": "42 */5 * * * *"}))
    assert put.status_code == 201, put.text
    following = parse_instant(put.json()["properties"]["status"]["nextExecutionTime"], "next")
    assert following > now and following - now <= timedelta(minutes=5)
    assert following.second == 42 and following.minute % 5 == 0 and following.microsecond == 0
    assert format_instant(following) == put.json()["properties"]["status"]["nextExecutionTime"]
