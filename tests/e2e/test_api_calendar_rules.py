"""Recurring calendars over raw HTTP on the local host and Azurite (api-version 2026-12-01-preview):
``recurringDates``, ``weekDays``, a country's public ``holidays`` and an imported ``iCalendar`` file, the
occurrences of the jobs that name them, a calendar's change reaching those jobs, and hostile input refused
in bounded time."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta
from typing import Any

import holidays
import pytest
import requests

from scheduler_core.recurrence import format_instant, parse_instant
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
CLASSIC = "2016-03-01"
JC = "subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc1"
START = (datetime.now(UTC) + timedelta(days=1)).replace(hour=9, minute=0, second=0, microsecond=0)


def call(api: Api, method: str, path: str, body: Any = None, version: str = PREVIEW, **query: str) -> requests.Response:
    return api.call(method, path, body, query={"api-version": version, **query})


def put_calendar(api: Api, name: str, properties: dict[str, Any]) -> requests.Response:
    return call(api, "PUT", f"{JC}/calendars/{name}", {"properties": properties})


def daily_job(calendars: list[str], zone: str = "Europe/Berlin") -> dict[str, Any]:
    action = {"type": "Https", "request": {"uri": "https://example.org/hook", "method": "POST", "body": "x"}}
    recurrence = {"frequency": "Day", "timeZone": zone, "exclusions": {"calendars": calendars}}
    return {
        "properties": {"startTime": START.strftime("%Y-%m-%dT%H:%M:%S"), "action": action, "recurrence": recurrence}
    }


def fired_days(api: Api, job: str, n: int = 60) -> list[date]:
    listed = call(api, "GET", f"{JC}/jobs/{job}/occurrences", **{"$top": str(n)})
    assert listed.status_code == 200, listed.text
    return [parse_instant(item["fireTime"], "fire").date() for item in listed.json()["value"]]


def ics(*lines: str) -> str:
    """An iCalendar file of one event made of ``lines``."""
    return "\r\n".join(["BEGIN:VCALENDAR", "BEGIN:VEVENT", *lines, "END:VEVENT", "END:VCALENDAR"])


EVERY_DAY = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


@pytest.fixture
def collection(api: Api) -> Api:
    created = call(api, "PUT", JC, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}, CLASSIC)
    assert created.status_code == 201, created.text
    return api


def test_weekends_and_holidays_are_skipped_and_a_change_reaches_the_job(collection: Api) -> None:
    put = put_calendar(
        collection, "work", {"weekDays": ["saturday", "SUNDAY"], "holidays": {"country": "de", "subdivision": "by"}}
    )
    assert put.status_code == 201, put.text
    assert put.json()["properties"] == {
        "dates": [],
        "weekDays": ["Saturday", "Sunday"],
        "holidays": {"country": "DE", "subdivision": "BY"},
    }
    assert call(collection, "PUT", f"{JC}/jobs/j1", daily_job(["work"])).status_code == 201
    bavaria = holidays.country_holidays("DE", subdiv="BY", years=range(START.year, START.year + 2))
    days = fired_days(collection, "j1")
    assert days and all(day.weekday() < 5 and day not in bavaria for day in days)
    expected, day = [], START.date()
    while len(expected) < len(days):
        if day.weekday() < 5 and day not in bavaria:
            expected.append(day)
        day += timedelta(days=1)
    assert days == expected
    # the calendar changes: the job that names it is written again with the new rules
    assert (
        put_calendar(
            collection, "work", {"recurringDates": [f"{d.month:02d}-{d.day:02d}" for d in days[:2]]}
        ).status_code
        == 200
    )
    after = fired_days(collection, "j1", 10)
    every_day = [START.date() + timedelta(days=n) for n in range(14)]
    assert after == [day for day in every_day if day not in days[:2]][:10]  # weekends and holidays fire again


def test_an_icalendar_file_becomes_dates_and_recurring_dates(collection: Api) -> None:
    year = START.year + 1
    text = "\r\n".join(
        [
            "BEGIN:VCALENDAR",
            "VERSION:2.0",
            "PRODID:-//test//calendar//EN",
            "BEGIN:VEVENT",
            "UID:a",
            f"DTSTART;VALUE=DATE:{year}1224",
            f"DTEND;VALUE=DATE:{year}1227",
            "RRULE:FREQ=YEARLY",
            "SUMMARY:Christmas",
            "END:VEVENT",
            "BEGIN:VEVENT",
            "UID:b",
            f"DTSTART;VALUE=DATE:{year}0704",
            "SUMMARY:Offsite",
            "END:VEVENT",
            "BEGIN:VEVENT",
            "UID:c",
            f"DTSTART;VALUE=DATE:{year}1101",
            "RRULE:FREQ=YEARLY;BYMONTH=11;BYDAY=4TH;COUNT=2",
            "SUMMARY:Thanksgiving",
            "END:VEVENT",
            "END:VCALENDAR",
        ]
    )
    put = put_calendar(collection, "ics", {"iCalendar": text})
    assert put.status_code == 201, put.text
    properties = put.json()["properties"]
    assert properties["recurringDates"] == ["12-24", "12-25", "12-26"]
    thanksgivings = [
        d for d in holidays.US(years=[year, year + 1]) if holidays.US(years=[year, year + 1])[d] == "Thanksgiving Day"
    ]
    assert properties["dates"] == [f"{year}-07-04", *(d.isoformat() for d in sorted(thanksgivings))]
    assert "iCalendar" not in properties  # read into dates, not kept


@pytest.mark.parametrize(
    ("properties", "field", "words"),
    [
        ({"recurringDates": ["02-30"]}, "properties.recurringDates[0]", "MM-DD"),
        ({"recurringDates": ["12/25"]}, "properties.recurringDates[0]", "MM-DD"),
        (
            {"weekDays": EVERY_DAY},
            "properties.weekDays",
            "every day of the week",
        ),
        ({"weekDays": ["Caturday"]}, "properties.weekDays[0]", "day name"),
        ({"holidays": {"country": "XX"}}, "properties.holidays.country", "not a country"),
        ({"holidays": {"country": "DE", "subdivision": "ZZ"}}, "properties.holidays.subdivision", "BY"),
        ({"holidays": {}}, "properties.holidays.country", "is required"),
        ({}, "properties.dates", "is required"),
        ({"iCalendar": "not a calendar"}, "properties.iCalendar", "not an iCalendar file"),
        (
            {"iCalendar": ics("DTSTART:20270101T090000Z", "SUMMARY:Standup")},
            "properties.iCalendar: event 1 ('Standup')",
            "not an all-day event",
        ),
        (
            {"iCalendar": ics("DTSTART;VALUE=DATE:20270101", "RRULE:FREQ=SECONDLY")},
            "properties.iCalendar: event 1",
            "finer than daily",
        ),
        (
            {"iCalendar": ics("DTSTART;VALUE=DATE:20270101", "RRULE:FREQ=DAILY")},
            "properties.iCalendar: event 1",
            "more than 1,000 times",
        ),
        (
            {"iCalendar": ics("DTSTART;VALUE=DATE:20270101", "DTEND;VALUE=DATE:20290101")},
            "properties.iCalendar: event 1",
            "more than 366 days",
        ),
    ],
)
def test_a_calendar_that_breaks_a_rule_is_a_400_naming_it_and_nothing_is_stored(
    collection: Api, properties: dict[str, Any], field: str, words: str
) -> None:
    started = time.perf_counter()
    answer = put_calendar(collection, "bad", properties)
    elapsed = time.perf_counter() - started
    assert answer.status_code == 400, answer.text
    message = answer.json()["error"]["message"]
    assert message.startswith(field) and words in message, message
    assert call(collection, "GET", f"{JC}/calendars/bad").status_code == 404
    assert elapsed < 10  # bounded: the worst rule is cut at the horizon


def test_hostile_icalendar_files_are_refused_in_bounded_time(collection: Api) -> None:
    event = "BEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20270101\r\nRRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30\r\nEND:VEVENT\r\n"
    never = "BEGIN:VCALENDAR\r\n" + event + "END:VCALENDAR"
    many = (
        "BEGIN:VCALENDAR\r\n" + "BEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20270101\r\nEND:VEVENT\r\n" * 2001 + "END:VCALENDAR"
    )
    nested = "BEGIN:VCALENDAR\r\n" + "BEGIN:VALARM\r\n" * 1200 + "END:VALARM\r\n" * 1200 + "END:VCALENDAR"
    for text, status in ((never, 201), (many, 413), (nested, None)):
        started = time.perf_counter()
        answer = put_calendar(collection, "hostile", {"iCalendar": text})
        assert time.perf_counter() - started < 10
        assert answer.status_code in ((status,) if status else (200, 400)), answer.text
        assert answer.status_code < 500
    # the never-matching rule gave no date; two thousand and one events are over the API's 64 KB body cap
    assert call(collection, "GET", f"{JC}/calendars/hostile").status_code == 200


def test_a_job_written_with_the_old_version_and_the_collection_keep_the_rules(collection: Api) -> None:
    assert put_calendar(collection, "weekend", {"weekDays": ["Saturday", "Sunday"]}).status_code == 201
    assert call(collection, "PUT", f"{JC}/jobs/j1", daily_job(["weekend"], "UTC")).status_code == 201
    before = fired_days(collection, "j1", 10)
    classic = call(collection, "GET", f"{JC}/jobs/j1", version=CLASSIC).json()
    assert call(collection, "PUT", f"{JC}/jobs/j1", classic, CLASSIC).status_code == 200
    again = call(collection, "PUT", JC, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}, CLASSIC)
    assert again.status_code == 200
    assert fired_days(collection, "j1", 10) == before
    assert all(day.weekday() < 5 for day in before)
    assert call(collection, "GET", f"{JC}/calendars/weekend").json()["properties"]["weekDays"] == ["Saturday", "Sunday"]
    assert format_instant(START)  # the job's start is a whole hour tomorrow


def test_calendars_of_ten_thousand_entries_are_refused_in_bounded_time(collection: Api) -> None:
    years = [date(2030, 1, 1) + timedelta(days=n) for n in range(10_000)]
    for properties in (
        {"dates": [day.isoformat() for day in years]},
        {"recurringDates": [f"{day.month:02d}-{day.day:02d}" for day in years]},
        {"dates": [day.isoformat() for day in years[:1001]]},
        {"recurringDates": [f"{day.month:02d}-{day.day:02d}" for day in years[:367]]},
    ):
        started = time.perf_counter()
        answer = put_calendar(collection, "big", properties)
        assert time.perf_counter() - started < 10
        assert answer.status_code in (400, 413), answer.text
        message = answer.json()["error"]["message"]
        assert ("at most" in message) if answer.status_code == 400 else ("larger than 65536 bytes" in message)
    assert call(collection, "GET", f"{JC}/calendars/big").status_code == 404
