"""``jobs preview`` against the real function app on the local host: the occurrences come from the
dashboard's read-only job API, so the recurrence's ``count`` (counted from the job's creation, which the
management API does not return) is applied by the service; a service without that API gets the local
computation with a note."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import azure.functions as func
import pytest

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.cli.conftest import ROOT, Cli, _cli
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


def job_file(tmp_path: Path, properties: dict[str, Any], name: str = "job.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"properties": properties}), encoding="utf-8")
    return str(path)


def tomorrow_at(hour: int) -> datetime:
    return (datetime.now(UTC) + timedelta(days=1)).replace(hour=hour, minute=0, second=0, microsecond=0)


def hourly(start: datetime, **recurrence: Any) -> dict[str, Any]:
    return {
        "startTime": format_instant(start),
        "action": {"type": "Https", "request": {"uri": "https://example.org/ping", "method": "GET"}},
        "recurrence": {"frequency": "Hour", "interval": 1, **recurrence},
    }


def test_count_is_applied_by_the_service(cli: Cli, tmp_path: Path) -> None:
    assert cli("collections", "create", "jc1", "-l", "westus").code == 0
    start = tomorrow_at(6)
    assert cli("jobs", "create", "jc1/three", "-f", job_file(tmp_path, hourly(start, count=3))).code == 0
    shown = cli("jobs", "preview", "jc1/three", "--count", "10", "-o", "json")
    assert shown.code == 0, shown.err
    # Three occurrences, not ten: the series ends after its count (the old client-side preview gave ten).
    assert shown.json() == [format_instant(start + timedelta(hours=h)) for h in range(3)]
    assert "note:" not in shown.err

    table = cli("jobs", "preview", "jc1/three", "--count", "2")
    assert table.code == 0
    assert table.out.splitlines() == [format_instant(start), format_instant(start + timedelta(hours=1))]


def test_after_and_time_zone(cli: Cli, tmp_path: Path) -> None:
    assert cli("collections", "create", "jc1", "-l", "westus").code == 0
    start = tomorrow_at(6)
    daily = {**hourly(start), "recurrence": {"frequency": "Day", "interval": 1, "timeZone": "W. Europe Standard Time"}}
    daily["startTime"] = start.strftime("%Y-%m-%dT%H:%M:%S")  # wall-clock time in the zone
    assert cli("jobs", "create", "jc1/daily", "-f", job_file(tmp_path, daily)).code == 0
    berlin = ZoneInfo("Europe/Berlin")
    first = start.replace(tzinfo=berlin).astimezone(UTC)

    later = first + timedelta(days=3, hours=1)
    shown = cli("jobs", "preview", "jc1/daily", "--count", "2", "--after", format_instant(later), "-o", "json")
    assert shown.code == 0, shown.err
    expected = [(start + timedelta(days=d)).replace(tzinfo=berlin) for d in (4, 5)]
    assert shown.json() == [format_instant(e.astimezone(UTC)) for e in expected]

    table = cli("jobs", "preview", "jc1/daily", "--count", "1")
    utc_text, local_text = table.out.split()
    assert utc_text == format_instant(first)
    assert datetime.fromisoformat(local_text) == first and local_text.endswith(("+01:00", "+02:00"))


def test_a_cron_job_is_previewed_and_shown_with_its_cron(cli: Cli, tmp_path: Path) -> None:
    assert cli("collections", "create", "jc1", "-l", "westus").code == 0
    start = tomorrow_at(0)
    properties = {**hourly(start), "recurrence": {"cron": ["0 30 9 * * *", "0 15 * * * *"], "count": 4}}
    assert cli("jobs", "create", "jc1/cron", "-f", job_file(tmp_path, properties)).code == 0
    shown = cli("jobs", "preview", "jc1/cron", "--count", "10", "-o", "json")
    assert shown.code == 0, shown.err
    expected = [start + timedelta(hours=h, minutes=15) for h in range(4)]  # the union, four times (count)
    assert shown.json() == [format_instant(instant) for instant in expected]
    described = cli("jobs", "show", "jc1/cron")
    assert described.code == 0, described.err
    assert "cron 0 30 9 * * * | 0 15 * * * *, 4 times" in described.out


def test_a_disabled_job_shows_when_it_would_run_and_a_missing_job_is_404(cli: Cli, tmp_path: Path) -> None:
    assert cli("collections", "create", "jc1", "-l", "westus").code == 0
    start = tomorrow_at(7)
    properties = {**hourly(start), "state": "Disabled"}
    assert cli("jobs", "create", "jc1/off", "-f", job_file(tmp_path, properties)).code == 0
    shown = cli("jobs", "preview", "jc1/off", "--count", "2")
    assert shown.code == 0
    assert shown.out.splitlines() == [format_instant(start), format_instant(start + timedelta(hours=1))]
    assert shown.err == "note: job off is Disabled: its schedule would run at these times once resumed\n"

    missing = cli("jobs", "preview", "jc1/nope")
    assert missing.code == 5
    assert missing.err == "error: job 'nope' was not found in job collection 'jc1' (ResourceNotFound, HTTP 404)\n"
    with pytest.raises(SystemExit) as too_many:
        cli("jobs", "preview", "jc1/off", "--count", "51")
    assert too_many.value.code == 2


def test_the_request_asks_the_service_for_count(cli: Cli, tmp_path: Path) -> None:
    """The count travels to the service: the dashboard API refuses what it refuses, with its ARM error."""
    assert cli("collections", "create", "jc1", "-l", "westus").code == 0
    assert cli("jobs", "create", "jc1/j", "-f", job_file(tmp_path, hourly(tomorrow_at(8)))).code == 0
    answer = cli.api.call(
        "GET",
        f"{cli.api.base_url}/dashboard/api/job/subscriptions/{cli.env['SCHEDULER_SUBSCRIPTION']}/resourceGroups/"
        f"{cli.env['SCHEDULER_RESOURCE_GROUP']}/providers/Microsoft.Scheduler/jobCollections/jc1/jobs/j?count=4",
    )
    assert answer.status_code == 200 and len(answer.json()["occurrences"]) == 4
    five = cli("jobs", "preview", "jc1/j", "--count", "5", "-o", "json")
    assert len(five.json()) == 5


@pytest.fixture
def older_api(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    """A service as deployed before the dashboard existed: the real management API function of this app
    and nothing else (the host answers 404 without an ARM body for /dashboard/...)."""
    import function_app

    older = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
    handler = function_app.management_api._function.get_user_function()
    older.function_name("management_api")(older.route(route="subscriptions/{*resource}")(handler))
    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    wiring.reset()
    provision(storage_env)
    with LocalHost(older, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
        yield Api(host.base_url, key, storage_env)


def test_an_older_service_gets_the_local_preview_with_a_note(
    older_api: Api, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cli = _cli(older_api, monkeypatch, capsys)
    assert cli.api.call("GET", f"{older_api.base_url}/dashboard/").status_code == 404
    assert cli("collections", "create", "jc1", "-l", "westus").code == 0
    start = tomorrow_at(6)
    assert cli("jobs", "create", "jc1/three", "-f", job_file(tmp_path, hourly(start, count=3))).code == 0
    shown = cli("jobs", "preview", "jc1/three", "--count", "5", "-o", "json")
    assert shown.code == 0
    assert shown.json() == [format_instant(start + timedelta(hours=h)) for h in range(5)]
    assert shown.err.splitlines() == [
        "note: this service has no dashboard job API (a version older than the dashboard): the occurrences are "
        "computed here from the job's next execution time",
        "note: count is counted from the job's creation, which the API does not return: not applied",
    ]
