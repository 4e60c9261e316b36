"""``calendars list|put|delete`` against the real function app on the local host: a calendar from an
iCalendar file, week days and a country's holidays, replaced and deleted; the service's 400 printed as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import Cli

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ICS = "\r\n".join(
    [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//test//cli//EN",
        "BEGIN:VEVENT",
        "UID:x",
        "DTSTART;VALUE=DATE:20271224",
        "DTEND;VALUE=DATE:20271226",
        "RRULE:FREQ=YEARLY",
        "SUMMARY:Christmas",
        "END:VEVENT",
        "BEGIN:VEVENT",
        "UID:y",
        "DTSTART;VALUE=DATE:20270704",
        "SUMMARY:Offsite",
        "END:VEVENT",
        "END:VCALENDAR",
    ]
)


def test_a_calendar_is_put_from_options_and_an_icalendar_file_listed_and_deleted(cli: Cli, tmp_path: Path) -> None:
    assert cli("collections", "create", "jc1", "-l", "westus").code == 0
    ics = tmp_path / "holidays.ics"
    ics.write_text(ICS, encoding="utf-8")
    put = cli(
        "calendars",
        "put",
        "-c",
        "jc1",
        "closed",
        "--ics",
        str(ics),
        "--weekday",
        "Sunday",
        "--holidays",
        "DE/BY",
        "-o",
        "json",
    )
    assert put.code == 0, put.err
    assert put.json()["properties"] == {
        "dates": ["2027-07-04"],
        "recurringDates": ["12-24", "12-25"],
        "weekDays": ["Sunday"],
        "holidays": {"country": "DE", "subdivision": "BY"},
    }
    listed = cli("calendars", "list", "-c", "jc1")
    assert listed.code == 0, listed.err
    assert listed.out.splitlines()[1].split() == ["closed", "1", "12-24,", "12-25", "Sunday", "DE/BY"]
    replaced = cli("calendars", "put", "-c", "jc1", "closed", "--recurring", "01-01")
    assert replaced.code == 0 and replaced.out.startswith("calendar jc1/closed replaced")
    refused = cli("calendars", "put", "-c", "jc1", "closed", "--holidays", "XX")
    assert (
        refused.code == 1 and "properties.holidays.country: is not a country with known public holidays" in refused.err
    )
    nothing = cli("calendars", "put", "-c", "jc1", "empty")
    assert nothing.code == 2 and "give at least one of" in nothing.err
    assert cli("calendars", "delete", "-c", "jc1", "closed").code == 0
    assert cli("calendars", "list", "-c", "jc1", "-o", "json").json() == []
