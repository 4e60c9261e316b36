"""``import --dry-run`` (offline, or reading the target) and ``export`` read a collection's calendars as the
service does: a job that names a calendar in ``recurrence.exclusions.calendars`` skips its fixed dates and the
dates of its recurring rules (``recurringDates``, ``weekDays``, ``holidays``, ``iCalendar``), so the dry run's
"fires in the next hour" and the export's runs left are the service's."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from scheduler_core.cli import main
from scheduler_core.cli.client import SchedulerClient
from scheduler_core.cli.import_plan import Options, Planner, Result, TargetState, identity_scope, plan
from scheduler_core.cli.series import calendars_by_name, nominal_series
from scheduler_core.cli.transfer import FORMAT, FORMAT_VERSION, load_source
from scheduler_core.definitions import PREVIEW_VERSION, wire_of

SUB = "00000000-0000-0000-0000-0000000000c1"
RG = "rg-rules"
JC = "jc 'rules'"
CALENDAR = "days ‹off›"
#: A Friday evening; the next day, 2027-12-25, is a Saturday and a public holiday in Bavaria (so is the 26th).
NOW = datetime(2027, 12, 24, 23, 30, tzinfo=UTC)
CHRISTMAS = "\r\n".join(
    [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//rules//test//EN",
        "BEGIN:VEVENT",
        "UID:x",
        "DTSTART;VALUE=DATE:20201225",
        "RRULE:FREQ=YEARLY",
        "SUMMARY:Christmas",
        "END:VEVENT",
        "END:VCALENDAR",
    ]
)
#: A calendar of each kind that names 2027-12-25 (the fixed date as the control the prediction always read).
EXCLUDING_CHRISTMAS: dict[str, dict[str, Any]] = {
    "dates": {"dates": ["2027-12-25"]},
    "recurringDates": {"recurringDates": ["12-25"]},
    "weekDays": {"weekDays": ["Saturday"]},
    "holidays": {"holidays": {"country": "DE", "subdivision": "BY"}},
    "iCalendar": {"iCalendar": CHRISTMAS},
}
#: The same kinds naming other days: the job fires at 00:00, 00:15 and 00:30 of the 25th.
NOT_EXCLUDING: dict[str, dict[str, Any]] = {
    "dates": {"dates": ["2027-12-27"]},
    "recurringDates": {"recurringDates": ["12-27"]},
    "weekDays": {"weekDays": ["Monday"]},
    "holidays": {"holidays": {"country": "JP"}},
    "iCalendar": {"iCalendar": CHRISTMAS.replace("1225", "1227")},
}
WEEK_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
EVERY_QUARTER_HOUR = {
    "startTime": "2027-12-25T00:00:00Z",
    "action": {"type": "Https", "request": {"uri": "https://example.org/hook", "method": "POST", "body": "x"}},
    "recurrence": {"frequency": "Minute", "interval": 15, "exclusions": {"calendars": [CALENDAR]}},
}


def _export(calendar: dict[str, Any] | None) -> dict[str, Any]:
    """An export file of one collection with the calendar ``calendar`` (none: the file creates no calendar)
    and a job every 15 minutes from 2027-12-25 that names it."""
    collection_id = f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/{JC}"
    calendars = [] if calendar is None else [{"name": CALENDAR, "properties": calendar}]
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "apiVersion": PREVIEW_VERSION,
        "collections": [
            {
                "id": collection_id,
                "name": JC,
                "location": "westeurope",
                "tags": {},
                "properties": {"sku": {"name": "Standard"}},
                "calendars": calendars,
                "jobs": [{"id": f"{collection_id}/jobs/j", "name": f"{JC}/j", "properties": EVERY_QUARTER_HOUR}],
            }
        ],
        "secretsToReenter": [],
        "adjustments": [],
    }


class _Target:
    """A target that holds the collection with the calendar ``calendar`` (as the API answers it) and no job."""

    preview = True

    def __init__(self, calendar: dict[str, Any]) -> None:
        self.calendar = calendar

    def find_collection(self, group: str, name: str) -> dict[str, Any]:
        return {"name": name, "location": "westeurope", "properties": {"sku": {"name": "Standard"}}}

    def list_jobs(self, group: str, name: str) -> list[dict[str, Any]]:
        return []

    def list_calendars(self, group: str, name: str) -> list[dict[str, Any]]:
        return [{"name": f"{name}/{CALENDAR}", "properties": {"dates": [], **self.calendar}}]


def _job_result(document: dict[str, Any], target: _Target | None = None) -> Result:
    """The dry run's result for the job of ``document`` planned at :data:`NOW`: offline (``target`` None),
    or reading ``target``."""
    options = Options()
    source = load_source(document, "export.json", options)
    clients = None if target is None else (lambda subscription: cast("SchedulerClient", target))
    planner = Planner(TargetState(clients), options, identity_scope({}), wire_of(source.api_version), NOW)
    results = plan(source.collections, source.calendars, source.jobs, planner)
    [job] = [result for result in results if result.kind == "job"]
    assert job.outcome == "create", job
    return job


@pytest.mark.parametrize("kind", sorted(EXCLUDING_CHRISTMAS))
def test_the_offline_dry_run_skips_the_days_of_every_rule_of_a_calendar_the_file_creates(kind: str) -> None:
    excluded = _job_result(_export(EXCLUDING_CHRISTMAS[kind]))
    assert excluded.next_hour == {"count": 0, "instants": []}
    fires = _job_result(_export(NOT_EXCLUDING[kind]))
    instants = ["2027-12-25T00:00:00Z", "2027-12-25T00:15:00Z", "2027-12-25T00:30:00Z"]
    assert fires.next_hour == {"count": 3, "instants": instants}


@pytest.mark.parametrize("kind", sorted(EXCLUDING_CHRISTMAS))
def test_the_dry_run_skips_the_days_of_every_rule_of_a_calendar_the_target_holds(kind: str) -> None:
    excluded = _job_result(_export(None), _Target(EXCLUDING_CHRISTMAS[kind]))
    assert excluded.next_hour == {"count": 0, "instants": []}
    assert _job_result(_export(None), _Target(NOT_EXCLUDING[kind])).next_hour["count"] == 3


@pytest.mark.parametrize("kind", sorted(EXCLUDING_CHRISTMAS))
def test_the_exports_series_counts_no_run_on_a_day_a_calendar_rule_excludes(kind: str) -> None:
    """The series the export counts a job's runs left by (:func:`nominal_series`) has no occurrence on a day
    a rule of a calendar the job names excludes, and counts none there."""
    calendars = calendars_by_name([{"name": f"{JC}/{CALENDAR}", "properties": EXCLUDING_CHRISTMAS[kind]}])
    daily = {**EVERY_QUARTER_HOUR, "startTime": "2027-12-23T09:00:00Z"}
    daily["recurrence"] = {**EVERY_QUARTER_HOUR["recurrence"], "frequency": "Day", "interval": 1}
    series = nominal_series(daily, calendars, datetime(2027, 12, 23, 9, tzinfo=UTC))
    third = series.after(datetime(2027, 12, 24, 9, tzinfo=UTC))
    assert third is not None and third.date() > datetime(2027, 12, 25).date()
    assert series.ordinal(third) == 3


def test_the_offline_dry_run_on_the_command_line_predicts_no_run_on_excluded_week_days(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``import --dry-run --offline`` now: a job every 15 minutes naming a calendar of today's and tomorrow's
    week days (UTC) fires 0 times in the next hour."""
    now = datetime.now(UTC)
    days = [WEEK_DAYS[(now + timedelta(days=n)).weekday()] for n in (0, 1)]
    document = _export({"weekDays": days})
    job = document["collections"][0]["jobs"][0]
    job["properties"] = {**EVERY_QUARTER_HOUR, "startTime": "2024-01-01T00:00:00Z"}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    capsys.readouterr()
    code = main(["import", str(path), "--dry-run", "--offline", "-o", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    [planned] = [result for result in report["results"] if result["kind"] == "job"]
    assert planned["outcome"] == "create" and planned["nextHour"] == {"count": 0, "instants": []}
