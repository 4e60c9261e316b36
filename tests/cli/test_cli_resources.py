"""``collections ...`` and ``jobs ...`` against the real function app on the local host (Azurite)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_core.recurrence import format_instant
from tests.cli.conftest import RG, SUB, Cli
from tests.support.http_target import http_target

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PASSWORD = "pa55-word-never-shown"


def job_file(tmp_path: Path, properties: dict[str, Any], name: str = "job.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"properties": properties}), encoding="utf-8")
    return str(path)


def hourly(uri: str = "https://example.org/ping", **extra: Any) -> dict[str, Any]:
    start = (datetime.now(UTC) + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    return {
        "startTime": format_instant(start),
        "action": {"type": "Https", "request": {"uri": uri, "method": "GET"}},
        "recurrence": {"frequency": "Hour", "interval": 1},
        **extra,
    }


def test_collections_create_list_show_disable_enable_delete(cli: Cli) -> None:
    made = cli("collections", "create", "jc1", "--location", "westeurope", "--max-job-count", "7", "--tag", "team=ops")
    assert made.code == 0, made.err
    assert made.out == "created job collection jc1\n"
    again = cli("collections", "create", "jc1", "--location", "westeurope")
    assert again.code == 1
    assert again.err == f"error: job collection 'jc1' already exists in resource group '{RG}' (Conflict, HTTP 409)\n"

    table = cli("collections", "list")
    assert table.code == 0
    header, row = table.out.splitlines()
    assert header.split() == [
        "NAME",
        "RESOURCE",
        "GROUP",
        "LOCATION",
        "SKU",
        "STATE",
        "MAX",
        "JOBS",
        "MAX",
        "RECURRENCE",
    ]
    assert row.split() == ["jc1", RG, "westeurope", "Standard", "Enabled", "7", "1", "Minute"]

    listed = cli("collections", "list", "-o", "json").json()
    assert [c["name"] for c in listed] == ["jc1"]
    assert (
        listed[0]["id"] == f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/jc1"
    )
    assert listed[0]["tags"] == {"team": "ops"}
    assert listed[0]["properties"]["quota"]["maxJobCount"] == 7

    assert cli("collections", "disable", "jc1").out == "disabled job collection jc1 and its jobs\n"
    assert cli("collections", "show", "jc1", "-o", "json").json()["properties"]["state"] == "Disabled"
    shown = cli("collections", "show", "jc1")
    assert "state:" in shown.out and "Disabled" in shown.out and "jobs:" in shown.out
    assert cli("collections", "enable", "jc1", "-o", "json").json() == {
        "result": "enabled",
        "target": "job collection jc1 and its jobs",
    }

    refused = cli("collections", "delete", "jc1")  # standard input is not a terminal here
    assert refused.code == 2 and "--yes" in refused.err
    assert cli("collections", "delete", "jc1", "--yes").code == 0
    gone = cli("collections", "show", "jc1")
    assert gone.code == 5
    assert gone.err == (
        f"error: job collection 'jc1' was not found in resource group '{RG}' (ResourceNotFound, HTTP 404)\n"
    )


def test_jobs_create_show_update_pause_resume_preview_delete(cli: Cli, tmp_path: Path) -> None:
    assert cli("collections", "create", "jc1", "-l", "westus").code == 0
    auth = {"type": "Basic", "username": "svc", "password": PASSWORD}
    properties = hourly()
    properties["action"]["request"]["authentication"] = auth
    made = cli("jobs", "create", "nightly", "-c", "jc1", "-f", job_file(tmp_path, properties))
    assert made.code == 0, made.err
    assert made.out.startswith("created job nightly (Enabled, next run ")
    twice = cli("jobs", "create", "jc1/nightly", "-f", job_file(tmp_path, properties))
    assert twice.code == 1
    assert "job 'nightly' already exists in job collection 'jc1' (use `jobs update`) (Conflict, HTTP 409)" in twice.err

    shown = cli("jobs", "show", "jc1/nightly")
    assert shown.code == 0
    assert PASSWORD not in shown.out
    fields = dict(line.split(":", 1) for line in shown.out.splitlines())
    assert fields["state"].strip() == "Enabled"
    assert fields["action"].strip() == "Https GET https://example.org/ping"
    assert fields["authentication"].strip() == "Basic (its secret is write-only: never shown)"
    assert fields["recurrence"].strip() == "every hour"
    as_json = cli("jobs", "show", "jc1/nightly", "-o", "json").json()
    assert PASSWORD not in json.dumps(as_json)
    assert as_json["properties"]["action"]["request"]["authentication"] == {"type": "Basic", "username": "svc"}
    next_run = as_json["properties"]["status"]["nextExecutionTime"]
    assert next_run == properties["startTime"]

    listed = cli("jobs", "list", "-c", "jc1")
    assert listed.code == 0
    assert listed.out.splitlines()[1].split()[:3] == ["nightly", "Enabled", "every"]
    assert [j["name"] for j in cli("jobs", "list", "-c", "jc1", "-o", "json").json()] == ["jc1/nightly"]

    preview = cli("jobs", "preview", "jc1/nightly", "--count", "3", "-o", "json")
    assert preview.code == 0, preview.err
    first = datetime.fromisoformat(next_run.replace("Z", "+00:00"))
    assert preview.json() == [format_instant(first + timedelta(hours=h)) for h in range(3)]

    # A replace that omits the password keeps the stored one (same type, username and host).
    changed = hourly(recurrence={"frequency": "Hour", "interval": 2})
    changed["action"]["request"]["authentication"] = {"type": "Basic", "username": "svc"}
    updated = cli("jobs", "update", "jc1/nightly", "-f", job_file(tmp_path, changed, "changed.json"), "-o", "json")
    assert updated.code == 0, updated.err
    assert updated.json()["properties"]["recurrence"] == {"frequency": "Hour", "interval": 2}
    merged = tmp_path / "patch.json"
    merged.write_text(json.dumps({"properties": {"recurrence": {"interval": 3}}}), encoding="utf-8")
    patched = cli("jobs", "update", "jc1/nightly", "-f", str(merged), "--merge", "-o", "json")
    assert patched.code == 0, patched.err
    assert patched.json()["properties"]["recurrence"] == {"frequency": "Hour", "interval": 3}

    paused = cli("jobs", "pause", "jc1/nightly")
    assert paused.out == "paused job nightly (Disabled)\n"
    assert cli("jobs", "show", "jc1/nightly", "-o", "json").json()["properties"]["state"] == "Disabled"
    # A disabled job has no next run, but its preview (computed by the service) shows when it would run.
    would_run = cli("jobs", "preview", "jc1/nightly", "--count", "2", "-o", "json")
    assert would_run.code == 0
    assert would_run.json() == [format_instant(first + timedelta(hours=h)) for h in (0, 3)]
    assert would_run.err == "note: job nightly is Disabled: its schedule would run at these times once resumed\n"
    resumed = cli("jobs", "resume", "jc1/nightly", "-o", "json")
    assert resumed.json()["properties"]["state"] == "Enabled"

    history = cli("jobs", "history", "jc1/nightly", "-o", "json")
    assert history.code == 0 and history.json() == []

    assert cli("jobs", "delete", "jc1/nightly", "--yes").out == "deleted job jc1/nightly\n"
    gone = cli("jobs", "show", "jc1/nightly")
    assert gone.code == 5
    assert gone.err == "error: job 'nightly' was not found in job collection 'jc1' (ResourceNotFound, HTTP 404)\n"


def test_arm_errors_are_passed_through_with_their_exit_status(cli: Cli, tmp_path: Path) -> None:
    assert cli("collections", "create", "jc1", "-l", "westus", "--max-recurrence", "1 Hour").code == 0
    bad = hourly(recurrence={"frequency": "Day", "schedule": {"hours": [24]}})
    refused = cli("jobs", "create", "jc1/bad", "-f", job_file(tmp_path, bad))
    assert refused.code == 1
    assert refused.out == ""
    assert refused.err == (
        "error: properties.recurrence.schedule.hours[0]: must be an integer between 0 and 23, not 24 "
        "(BadRequest, HTTP 400)\n"
    )
    too_often = hourly(recurrence={"frequency": "Minute", "interval": 5})
    quota = cli("jobs", "create", "jc1/often", "-f", job_file(tmp_path, too_often))
    assert quota.code == 1
    assert "(QuotaExceeded, HTTP 409)" in quota.err and "quota.maxRecurrence" in quota.err
    bad_name = cli("jobs", "create", "jc1/a?b", "-f", job_file(tmp_path, hourly()))
    assert bad_name.code == 1
    assert "jobName: 'a?b' is not a valid name" in bad_name.err and "(BadRequest, HTTP 400)" in bad_name.err
    dots = cli("jobs", "show", "jc1/..")
    assert dots.code == 1 and "jobName: '..' is not a valid name" in dots.err  # never the collection itself

    wrong_key = cli("collections", "list", "--api-key", "sks_wrong")
    assert wrong_key.code == 4
    assert wrong_key.err == "error: the API key is not valid (AuthenticationFailed, HTTP 401)\n"
    unreachable = cli("collections", "list", "--endpoint", "http://127.0.0.1:9", "--timeout", "5")
    assert unreachable.code == 3
    assert unreachable.err.startswith("error: cannot reach http://127.0.0.1:9: ")
    no_file = cli("jobs", "create", "jc1/x", "-f", str(tmp_path / "missing.json"))
    assert no_file.code == 2 and no_file.err.startswith("error: cannot read ")
    no_collection = cli("jobs", "show", "x")
    assert no_collection.code == 2
    assert no_collection.err == (
        "error: no job collection: write COLLECTION/JOB, pass --collection (-c) or set SCHEDULER_COLLECTION\n"
    )


def test_as_a_child_process_with_environment_variables_and_json(cli: Cli, tmp_path: Path) -> None:
    assert cli("collections", "create", "jc1", "-l", "westus").code == 0
    made = cli.process(
        "jobs",
        "create",
        "j1",
        "-f",
        "-",
        "-o",
        "json",
        stdin=json.dumps(hourly()),
        env={**cli.env, "SCHEDULER_COLLECTION": "jc1"},
    )
    assert made.code == 0, made.err
    assert json.loads(made.out)["name"] == "jc1/j1"
    listed = cli.process("jobs", "list", "-c", "jc1", "--output", "json")
    assert listed.code == 0 and listed.err == ""
    assert [job["name"] for job in json.loads(listed.out)] == ["jc1/j1"]
    no_subscription = cli.process("collections", "list", env={"SCHEDULER_ENDPOINT": cli.api.base_url})
    assert no_subscription.code == 2
    assert no_subscription.err == "error: no subscription: pass --subscription or set SCHEDULER_SUBSCRIPTION\n"
    key_file = tmp_path / "key"
    key_file.write_text(cli.api.key + "\n", encoding="utf-8")
    by_file = cli.process(
        "collections",
        "list",
        "-o",
        "json",
        env={
            "SCHEDULER_ENDPOINT": cli.api.base_url,
            "SCHEDULER_API_KEY_FILE": str(key_file),
            "SCHEDULER_SUBSCRIPTION": SUB,
        },
    )
    assert by_file.code == 0, by_file.err
    assert [c["name"] for c in json.loads(by_file.out)] == ["jc1"]
    header = cli.process(
        "collections",
        "list",
        "-o",
        "json",
        "--header",
        f"x-functions-key: {cli.api.key}",
        env={"SCHEDULER_ENDPOINT": cli.api.base_url, "SCHEDULER_SUBSCRIPTION": SUB},
    )
    assert header.code == 0, header.err
    functions_key = cli.process("collections", "list", "--functions-key-header", "-o", "json")
    assert functions_key.code == 0, functions_key.err
    usage = cli.process("jobs", "frobnicate")
    assert usage.code == 2 and "invalid choice" in usage.err


def test_run_now_executes_the_job_and_waits_for_its_history(running_cli: Cli, tmp_path: Path) -> None:
    cli = running_cli
    assert cli("collections", "create", "jc1", "-l", "westus").code == 0
    with http_target([200]) as ok, http_target([500]) as failing:
        good = hourly(ok.base_url)
        good["action"]["type"] = "Http"
        assert cli("jobs", "create", "jc1/good", "-f", job_file(tmp_path, good, "good.json")).code == 0
        bad = hourly(failing.base_url)
        bad["action"]["type"] = "Http"
        bad["action"]["retryPolicy"] = {"retryType": "None"}
        assert cli("jobs", "create", "jc1/bad", "-f", job_file(tmp_path, bad, "bad.json")).code == 0

        ran = cli("jobs", "run", "jc1/good", "--wait", "--wait-timeout", "60", "-o", "json")
        assert ran.code == 0, ran.err
        assert ran.json()["properties"]["status"] == "Completed"
        assert len(ok.received) == 1
        assert ok.received[0].headers.get("x-ms-scheduler-jobid") is not None

        failed = cli("jobs", "run", "jc1/bad", "--wait", "--wait-timeout", "60")
        assert failed.code == 1
        header, row = failed.out.splitlines()
        assert header.split()[:3] == ["START", "STATUS", "ACTION"]
        assert row.split()[1:3] == ["Failed", "MainAction"]
        assert len(failing.received) == 1

    started = cli("jobs", "run", "jc1/good", "-o", "json")
    assert started.code == 0 and started.json() == {"result": "started", "target": "job jc1/good"}
    table = cli("jobs", "history", "jc1/good")
    assert table.code == 0
    assert table.out.splitlines()[1].split()[1] == "Completed"
    missing = cli("jobs", "run", "jc1/nope")
    assert missing.code == 5 and "job 'nope' was not found" in missing.err


def test_the_key_goes_in_x_functions_key_when_asked(cli: Cli) -> None:
    """Behind App Service Authentication ``Authorization`` carries the Entra ID token, so the key can go in
    ``x-functions-key`` instead (moved from tests/infra/test_import_jobs.py, now against real servers)."""
    listed = cli("collections", "list", "--functions-key-header", "--output", "json")
    assert listed.code == 0, listed.err  # the API reads the key from x-functions-key
    with http_target([200]) as target:
        cli("collections", "list", "--functions-key-header", "--endpoint", target.base_url, "--api-key", "K-123")
        [request] = target.received
    assert request.headers.get("x-functions-key") == "K-123"
    assert "Authorization" not in request.headers
