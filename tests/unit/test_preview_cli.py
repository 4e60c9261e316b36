"""``python -m scheduler_core preview``, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler_core", *args],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def write(tmp_path: Path, document: Any) -> str:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


#: The action every definition needs: ``preview`` validates a file as ``jobs create`` does.
ACTION = {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}}

ARM_JOB = {
    "id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc/jobs/j1",
    "name": "jc/j1",
    "properties": {
        "startTime": "2024-05-01T12:00:00Z",
        "action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
        "recurrence": {
            "frequency": "Month",
            "schedule": {"minutes": [0], "hours": [6], "monthDays": [-1]},
        },
        "state": "Enabled",
    },
}


def test_arm_job_prints_one_instant_per_line(tmp_path: Path) -> None:
    result = run("preview", write(tmp_path, ARM_JOB), "--count", "3", "--now", "2024-04-01T00:00:00Z")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "2024-05-31T06:00:00Z\n2024-06-30T06:00:00Z\n2024-07-31T06:00:00Z\n"
    assert result.stderr == ""


def test_properties_only_and_after(tmp_path: Path) -> None:
    job = write(tmp_path, ARM_JOB["properties"])
    result = run("preview", job, "--count", "2", "--now", "2024-04-01T00:00:00Z", "--after", "2025-02-01T00:00:00Z")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["2025-02-28T06:00:00Z", "2025-03-31T06:00:00Z"]


def test_phase_example_from_standard_input() -> None:
    job = {"startTime": "2015-04-07T14:00:00Z", "recurrence": {"frequency": "day", "interval": 2}, "action": ACTION}
    result = run("preview", "-", "--count", "3", "--now", "2015-04-08T13:00:00Z", stdin=json.dumps(job))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["2015-04-09T14:00:00Z", "2015-04-11T14:00:00Z", "2015-04-13T14:00:00Z"]


def test_count_limits_the_series(tmp_path: Path) -> None:
    job = {"startTime": "2024-05-01T00:00:00Z", "recurrence": {"frequency": "hour", "count": 2}, "action": ACTION}
    result = run("preview", write(tmp_path, job), "--count", "10", "--now", "2024-05-01T00:00:00Z")
    assert result.stdout.splitlines() == ["2024-05-01T00:00:00Z", "2024-05-01T01:00:00Z"]


def test_time_zone_job(tmp_path: Path) -> None:
    job = {
        "startTime": "2024-03-29T02:30:00",
        "recurrence": {"frequency": "day", "timeZone": "Europe/Berlin"},
        "action": ACTION,
    }
    result = run("preview", write(tmp_path, job), "--count", "3", "--now", "2024-03-01T00:00:00Z")
    assert result.stdout.splitlines() == ["2024-03-29T01:30:00Z", "2024-03-30T01:30:00Z", "2024-04-01T00:30:00Z"]


def test_one_shot_job_without_recurrence(tmp_path: Path) -> None:
    job = {"startTime": "2024-06-01T00:00:00Z", "action": ACTION}
    result = run("preview", write(tmp_path, job), "--now", "2024-01-01T00:00:00Z")
    assert result.returncode == 0
    assert result.stdout == "2024-06-01T00:00:00Z\n"


def test_default_now_is_the_current_time(tmp_path: Path) -> None:
    job = {"recurrence": {"frequency": "minute"}, "action": ACTION}
    result = run("preview", write(tmp_path, job), "--count", "2")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert all(line.endswith("Z") and len(line) == 20 for line in lines)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {"properties": {"recurrence": {"frequency": "day", "schedule": {"hours": [24]}}, "action": ACTION}},
            "error: properties.recurrence.schedule.hours[0]: must be an integer between 0 and 23, not 24\n",
        ),
        (
            {"recurrence": {"frequency": "daily"}, "action": ACTION},
            "error: properties.recurrence.frequency: must be one of Minute, Hour, Day, Week, Month, Year (any casing), "
            "not 'daily'\n",
        ),
        (
            {"properties": {"startTime": "yesterday", "recurrence": {"frequency": "day"}, "action": ACTION}},
            None,
        ),
    ],
)
def test_bad_definition_exits_2_with_error_on_stderr(tmp_path: Path, document: Any, message: str | None) -> None:
    result = run("preview", write(tmp_path, document), "--now", "2024-01-01T00:00:00Z")
    assert result.returncode == 2
    assert result.stdout == ""
    if message is not None:
        assert result.stderr == message
    else:
        assert result.stderr.startswith("error: properties.startTime: must be an ISO 8601 date-time")


def test_invalid_json_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    result = run("preview", str(bad))
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {bad} is not valid JSON")
    missing = run("preview", str(tmp_path / "missing.json"))
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: cannot read")


def test_bad_arguments_exit_2() -> None:
    result = run("preview", "job.json", "--count", "0")
    assert result.returncode == 2
    assert "--count" in result.stderr
    assert run().returncode == 2
