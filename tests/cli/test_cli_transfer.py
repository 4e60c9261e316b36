"""``export`` and ``import`` against the real function app on the local host (Azurite): a round trip into
a fresh collection, the dry run's prediction against the real run on a file with good and bad jobs,
finished jobs, exit statuses, and the compatibility wrapper ``scripts/import_jobs.py``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_core.recurrence import format_instant
from tests.cli.conftest import RG, ROOT, SUB, Cli
from tests.support.http_target import http_target
from tests.support.jobs import http_action, job_body

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PASSWORD = "round-trip-pa55word"
SAS_KEY = "c2VjcmV0LXNhcy1rZXk="
OTHER_RG = "rg-restored"


def _start(days: int = 1) -> str:
    return format_instant((datetime.now(UTC) + timedelta(days=days)).replace(minute=0, second=0, microsecond=0))


def http_job(uri: str = "https://example.org/ping", **extra: Any) -> dict[str, Any]:
    return {
        "startTime": _start(),
        "action": {"type": "Https", "request": {"uri": uri, "method": "POST", "body": "hi"}},
        "recurrence": {"frequency": "Hour", "interval": 1},
        **extra,
    }


def put(cli: Cli, path: str, body: dict[str, Any], group: str = RG) -> dict[str, Any]:
    response = cli.api.call(
        "PUT", f"subscriptions/{SUB}/resourceGroups/{group}/providers/Microsoft.Scheduler/jobCollections/{path}", body
    )
    assert response.status_code in (200, 201), response.text
    result: dict[str, Any] = response.json()
    return result


def jobs_of(cli: Cli, collection: str, group: str = RG) -> dict[str, dict[str, Any]]:
    listed = cli("jobs", "list", "-c", collection, "-g", group, "-o", "json")
    assert listed.code == 0, listed.err
    return {job["name"].split("/", 1)[1]: job["properties"] for job in listed.json()}


def without_status(properties: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in properties.items() if k != "status"}


def test_export_then_import_into_a_fresh_collection_round_trips(cli: Cli, tmp_path: Path) -> None:
    put(
        cli, "source", {"location": "westeurope", "tags": {"env": "prod"}, "properties": {"quota": {"maxJobCount": 20}}}
    )
    basic = http_job()
    basic["action"]["request"]["authentication"] = {"type": "Basic", "username": "svc", "password": PASSWORD}
    basic["action"]["retryPolicy"] = {"retryType": "Fixed", "retryInterval": "PT1M", "retryCount": 2}
    jobs: dict[str, dict[str, Any]] = {
        "basic": basic,
        "zoned": {
            "startTime": (datetime.now(UTC) + timedelta(days=30)).strftime("%Y-%m-%dT06:30:00"),
            "action": http_action("http://example.org/a", method="GET", body=None),
            "recurrence": {
                "frequency": "Week",
                "schedule": {"weekDays": ["Monday"], "hours": [6], "minutes": [30]},
                "timeZone": "Europe/Berlin",
            },
        },
        "queue": {
            "action": {
                "type": "StorageQueue",
                "queueMessage": {"storageAccount": "acct1", "queueName": "jobs", "message": "m"},
            },
            "recurrence": {"frequency": "Day", "interval": 1},
            "startTime": _start(2),
        },
        "bus": {
            "action": {
                "type": "ServiceBusQueue",
                "serviceBusQueueMessage": {
                    "namespace": "ns1",
                    "queueName": "q",
                    "message": "m",
                    "transportType": "AMQP",
                    "authentication": {"type": "SharedAccessKey", "sasKeyName": "send", "sasKey": SAS_KEY},
                },
                "errorAction": {"type": "Https", "request": {"uri": "https://example.org/err", "method": "POST"}},
            },
            "recurrence": {"frequency": "Month", "schedule": {"monthDays": [-1]}},
            "startTime": _start(),
        },
        "paused": {**http_job(), "state": "Disabled"},
    }
    for name, properties in jobs.items():
        put(cli, f"source/jobs/{name}", {"properties": properties})

    export_file = tmp_path / "export.json"
    exported = cli("export", str(export_file), "-o", "json")
    assert exported.code == 0, exported.err
    assert exported.json() == {
        "file": str(export_file),
        "apiVersion": "2026-12-01-preview",
        "collections": 1,
        "calendars": 0,
        "jobs": 5,
        "secretsToReenter": 3,
        "requiredSecrets": 1,
        "adjustments": 0,  # every job has a startTime and no count
    }
    assert "export: 1/1" in exported.err  # the counter of a non-terminal
    text = export_file.read_text(encoding="utf-8")
    assert PASSWORD not in text and SAS_KEY not in text
    document = json.loads(text)
    assert document["format"] == "scheduler-export" and document["version"] == 1
    [collection] = document["collections"]
    assert collection["name"] == "source" and collection["tags"] == {"env": "prod"}
    assert sorted(job["name"] for job in collection["jobs"]) == [f"source/{n}" for n in sorted(jobs)]
    reenter = {(entry["job"].rsplit("/", 1)[1], entry["path"]): entry for entry in document["secretsToReenter"]}
    assert sorted(reenter) == [
        ("basic", "properties.action.request.authentication.password"),
        ("bus", "properties.action.serviceBusQueueMessage.authentication.sasKey"),
        ("queue", "properties.action.queueMessage.sasToken"),
    ]
    assert [reenter[k]["required"] for k in sorted(reenter)] == [True, False, False]
    assert all(entry["value"] is None for entry in reenter.values())

    # Without the password, the job that needs it is refused, and the prediction says so; the Service Bus
    # job would be imported without its key (sending with the app's identity), and a warning says so.
    target = ["--collection", "restored", "-g", OTHER_RG]
    dry = cli("import", str(export_file), *target, "--dry-run", "-o", "json")
    assert dry.code == 1
    outcomes = {r["name"]: (r["outcome"], r["code"]) for r in dry.json()["results"]}
    assert outcomes == {
        "restored": ("create", None),
        "basic": ("fail", "BadRequest"),
        "bus": ("create", None),
        "zoned": ("create", None),
        "queue": ("create", None),
        "paused": ("create", None),
    }
    basic_result = next(r for r in dry.json()["results"] if r["name"] == "basic")
    assert basic_result["message"].startswith("properties.action.request.authentication.password: ")
    assert "secretsToReenter" in basic_result["hint"]
    assert dry.json()["warnings"] == [
        "2 optional secret(s) in secretsToReenter have no value: those jobs are imported without them (a Storage "
        "queue or Service Bus action then sends with the function app's identity)"
    ]

    reenter[("basic", "properties.action.request.authentication.password")]["value"] = PASSWORD
    reenter[("bus", "properties.action.serviceBusQueueMessage.authentication.sasKey")]["value"] = SAS_KEY
    export_file.write_text(json.dumps(document), encoding="utf-8")
    dry = cli("import", str(export_file), *target, "--dry-run", "-o", "json")
    assert dry.code == 0, dry.out
    real = cli("import", str(export_file), *target, "-o", "json")
    assert real.code == 0, real.out
    assert real.json()["results"] == dry.json()["results"]
    assert real.json()["summary"]["job"] == {"create": 5, "replace": 0, "keep": 0, "skip": 0, "fail": 0}
    assert "import: 6/6" in real.err

    restored = cli("collections", "show", "restored", "-g", OTHER_RG, "-o", "json").json()
    assert restored["location"] == "westeurope" and restored["tags"] == {"env": "prod"}
    assert restored["properties"] == collection["properties"]
    source_jobs, restored_jobs = jobs_of(cli, "source"), jobs_of(cli, "restored", OTHER_RG)
    assert sorted(restored_jobs) == sorted(source_jobs)
    for name, properties in source_jobs.items():
        assert without_status(restored_jobs[name]) == without_status(properties), name

    # Again: every job exists now, and is kept (the default), or replaced.
    again = cli("import", str(export_file), *target, "-o", "json")
    assert again.code == 0
    assert {r["outcome"] for r in again.json()["results"]} == {"keep", "skip"}
    replaced = cli("import", str(export_file), *target, "--if-exists", "replace", "-o", "json")
    assert replaced.code == 0, replaced.out
    assert replaced.json()["summary"]["job"]["replace"] == 5


def _listing_job(collection: str, name: str, properties: dict[str, Any], group: str = RG) -> dict[str, Any]:
    """A job as Azure Scheduler's REST API listed it."""
    return {
        "id": f"/subscriptions/{SUB}/resourceGroups/{group}/providers/Microsoft.Scheduler/jobCollections/"
        f"{collection}/jobs/{name}",
        "type": "Microsoft.Scheduler/jobCollections/jobs",
        "name": f"{collection}/{name}",
        "properties": {**properties, "status": {"executionCount": 3, "failureCount": 1, "faultedCount": 0}},
    }


def _wait_for_state(cli: Cli, job: str, state: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        shown = cli("jobs", "show", job, "-o", "json")
        if shown.code == 0 and shown.json()["properties"]["state"] == state:
            return
        time.sleep(0.3)
    raise AssertionError(f"{job} did not become {state}")


def test_dry_run_predicts_exactly_what_the_real_run_does(running_cli: Cli, tmp_path: Path) -> None:
    cli = running_cli
    put(
        cli,
        "small",
        {
            "location": "westus",
            "properties": {"quota": {"maxJobCount": 5, "maxRecurrence": {"frequency": "Hour", "interval": 1}}},
        },
    )
    put(cli, "free1", {"location": "westus", "properties": {"sku": {"name": "Free"}}})
    stored = http_job()
    stored["action"]["request"]["authentication"] = {"type": "Basic", "username": "svc", "password": PASSWORD}
    put(cli, "small/jobs/stored", {"properties": stored})
    with http_target([200]) as target:
        once = job_body(None, http_action(target.base_url, method="GET", body=None))
        put(cli, "small/jobs/finished", once)  # no recurrence and no start: runs now, then Completed
        _wait_for_state(cli, "small/finished", "Completed")

    keep_secret = http_job(recurrence={"frequency": "Hour", "interval": 2})
    keep_secret["action"]["request"]["authentication"] = {"type": "Basic", "username": "svc"}  # stored one kept
    other_user = http_job()
    other_user["action"]["request"]["authentication"] = {"type": "Basic", "username": "other"}  # not kept
    past_end = http_job(recurrence={"frequency": "Hour", "endTime": "2020-01-01T00:00:00Z"})
    listing = {
        "value": [
            {
                "id": f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/free2",
                "type": "Microsoft.Scheduler/jobCollections",
                "name": "free2",
                "location": "westus",
                "properties": {"sku": {"name": "Free"}, "state": "Enabled"},
            },
            _listing_job("small", "good1", http_job()),
            _listing_job("small", "too-often", http_job(recurrence={"frequency": "Minute", "interval": 5})),
            _listing_job("small", "past-end", past_end),
            _listing_job("small", "was-completed", {**http_job(), "state": "Completed"}),
            _listing_job("small", "stored", keep_secret),
            _listing_job("small", "other-user", other_user),
            _listing_job("small", "finished", http_job()),
            _listing_job("small", "bad?name", http_job()),
            _listing_job("small", "good2", http_job()),
            _listing_job("small", "good1", http_job(recurrence={"frequency": "Hour", "interval": 3})),
            _listing_job("small", "good3", http_job()),
            _listing_job("small", "one-too-many", http_job()),
            _listing_job("missing", "orphan", http_job()),
            _listing_job("free2", "in-free2", http_job()),
            {"name": "", "properties": http_job()},
        ]
    }
    path = tmp_path / "listing.json"
    path.write_text(json.dumps(listing), encoding="utf-8")

    dry = cli("import", str(path), "--if-exists", "replace", "--dry-run", "-o", "json")
    real = cli("import", str(path), "--if-exists", "replace", "-o", "json")
    assert (dry.code, real.code) == (1, 1)
    predicted, happened = dry.json(), real.json()
    assert predicted["dryRun"] is True and happened["dryRun"] is False
    assert happened["results"] == predicted["results"]
    assert happened["summary"] == predicted["summary"]

    by_source = [(r["name"], r["outcome"], r["status"], r["code"]) for r in happened["results"]]
    assert by_source == [
        ("free2", "fail", 409, "QuotaExceeded"),
        ("good1", "create", 201, None),
        ("too-often", "fail", 409, "QuotaExceeded"),
        ("past-end", "fail", 400, "BadRequest"),
        ("was-completed", "fail", 400, "BadRequest"),
        ("stored", "replace", 200, None),
        ("other-user", "fail", 400, "BadRequest"),
        ("finished", "fail", 409, "Conflict"),
        ("bad?name", "fail", 400, "BadRequest"),
        ("good2", "create", 201, None),
        ("good1", "replace", 200, None),
        ("good3", "create", 201, None),
        ("one-too-many", "fail", 409, "QuotaExceeded"),  # stored + finished + good1..3 = maxJobCount 5
        ("orphan", "fail", 404, "ResourceNotFound"),
        ("in-free2", "fail", 404, "ResourceNotFound"),
        (None, "fail", None, "InvalidInput"),
    ]
    messages = {r["name"]: r["message"] for r in happened["results"]}
    assert messages["free2"] == (
        f"properties.sku.name: subscription '{SUB}' already has a Free job collection (the Free plan allows 1)"
    )
    assert messages["finished"] == "job 'finished' is Completed; a finished job cannot be updated, only deleted"
    assert messages["one-too-many"] == "job collection 'small' already has 5 jobs, its quota.maxJobCount"
    assert messages["orphan"] == f"job collection 'missing' was not found in resource group '{RG}'"
    assert messages["past-end"] == "properties.recurrence.endTime: must be in the future"
    hints = {r["name"]: r["hint"] for r in happened["results"]}
    assert "--completed-as" in hints["was-completed"]
    assert "secretsToReenter" in hints["other-user"]
    assert sorted(jobs_of(cli, "small")) == ["finished", "good1", "good2", "good3", "stored"]

    table = cli("import", str(path), "--if-exists", "replace", "--dry-run")
    assert table.code == 1
    lines = table.out.splitlines()
    assert lines[0].split() == ["KIND", "TARGET", "RESULT", "DETAIL"]
    assert any(line.split()[:4] == ["job", f"{RG}/small/good1", "would", "replace"] for line in lines)
    assert lines[-1].startswith("dry run (nothing sent): collections: 1 would fail; jobs: ")


def test_finished_jobs_are_imported_as_told(cli: Cli, tmp_path: Path) -> None:
    put(cli, "jc1", {"location": "westus"})
    listing = [
        _listing_job("jc1", "done", {**http_job(), "state": "Completed"}),
        _listing_job("jc1", "broke", {**http_job(), "state": "faulted"}),
        _listing_job("jc1", "live", http_job()),
    ]
    path = tmp_path / "listing.json"
    path.write_text(json.dumps(listing), encoding="utf-8")
    refused = cli("import", str(path), "-o", "json")
    assert refused.code == 1
    assert [r["outcome"] for r in refused.json()["results"]] == ["fail", "fail", "create"]
    assert refused.json()["results"][0]["message"] == (
        "properties.state: 'Completed' is set by the service when a job ends; a client may set only Enabled or Disabled"
    )
    skipped = cli("import", str(path), "--completed-as", "skip", "-o", "json")
    assert skipped.code == 0
    assert [r["outcome"] for r in skipped.json()["results"]] == ["skip", "skip", "skip"]
    disabled = cli("import", str(path), "--completed-as", "Disabled")
    assert disabled.code == 0, disabled.out
    assert disabled.out.splitlines()[-1] == "collections: none; jobs: 2 created, 1 skipped"
    states = {name: props["state"] for name, props in jobs_of(cli, "jc1").items()}
    assert states == {"done": "Disabled", "broke": "Disabled", "live": "Enabled"}


def test_import_exit_statuses_and_offline_dry_run(cli: Cli, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    bad_json = cli("import", str(broken))
    assert bad_json.code == 2 and bad_json.err.startswith(f"error: {broken} is not valid JSON")
    wrong_shape = tmp_path / "shape.json"
    wrong_shape.write_text('{"jobs": 1}', encoding="utf-8")
    shape = cli("import", str(wrong_shape))
    assert shape.code == 2 and "expected an export file" in shape.err

    listing = tmp_path / "listing.json"
    listing.write_text(json.dumps([_listing_job("jc1", "a", http_job()), _listing_job("jc1", "b", {"x": 1})]))
    wrong_key = cli("import", str(listing), "--api-key", "sks_nope")
    assert wrong_key.code == 4 and "(AuthenticationFailed, HTTP 401)" in wrong_key.err
    unreachable = cli("import", str(listing), "--endpoint", "http://127.0.0.1:9", "--timeout", "5")
    assert unreachable.code == 3 and unreachable.err.startswith("error: cannot reach http://127.0.0.1:9")
    not_offline = cli("import", str(listing), "--offline")
    assert not_offline.code == 2

    offline = cli.process(
        "import", str(listing), "--dry-run", "--offline", "-o", "json", env={"SCHEDULER_ENDPOINT": "http://127.0.0.1:9"}
    )
    assert offline.code == 1, offline.err
    report = json.loads(offline.out)
    assert report["offline"] is True
    assert [(r["name"], r["outcome"]) for r in report["results"]] == [("a", "create"), ("b", "fail")]
    assert report["results"][1]["message"] == (
        "properties.x: is not a known field (allowed: startTime, action, recurrence, state)"
    )

    missing_collection = cli("import", str(listing), "-o", "json")  # jc1 does not exist
    assert missing_collection.code == 1
    assert [r["code"] for r in missing_collection.json()["results"]] == ["ResourceNotFound", "ResourceNotFound"]
    created = cli("import", str(listing), "--create-collection", "westus", "--no-progress")
    assert created.code == 1
    assert created.err == ""
    assert created.out.splitlines()[-1] == "collections: 1 created; jobs: 1 created, 1 FAILED"


def test_import_jobs_script_is_a_wrapper_of_import(cli: Cli, tmp_path: Path) -> None:
    listing = tmp_path / "backup.json"
    listing.write_text(json.dumps({"value": [_listing_job("old", "j1", http_job())]}), encoding="utf-8")
    script = ROOT / "scripts" / "import_jobs.py"
    env = {"SCHEDULER_API_KEY": cli.api.key, "PATH": "/usr/bin:/bin", "NO_PROXY": "127.0.0.1"}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script), *argv], capture_output=True, text=True, env=env, check=False, timeout=120
        )

    offline = run(str(listing), "--dry-run")
    assert offline.returncode == 0, offline.stderr
    assert "would create" in offline.stdout
    done = run(str(listing), "--endpoint", cli.api.base_url, "--job-collection", "new", "--create-collection", "westus")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(jobs_of(cli, "new")) == ["j1"]
    twice = run(str(listing), "--endpoint", cli.api.base_url, "--job-collection", "new")  # replaces, as before
    assert twice.returncode == 0 and "replaced" in twice.stdout
    no_endpoint = run(str(listing))
    assert no_endpoint.returncode == 2 and "--endpoint" in no_endpoint.stderr


def test_the_function_app_does_not_import_the_command_line() -> None:
    probe = "import sys, function_app; print([m for m in sys.modules if m.startswith('scheduler_core.cli')])"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_export_of_one_collection_to_standard_output(cli: Cli) -> None:
    put(cli, "one", {"location": "westus"})
    put(cli, "two", {"location": "westus"})
    put(cli, "one/jobs/j1", {"properties": http_job()})
    exported = cli("export", "-", "--collection", "one", "--no-progress")
    assert exported.code == 0, exported.err
    document = json.loads(exported.out)
    assert [c["name"] for c in document["collections"]] == ["one"]
    assert [j["name"] for j in document["collections"][0]["jobs"]] == ["one/j1"]
    assert exported.err == (
        "exported 1 collections (0 calendars) and 1 jobs to - with api-version 2026-12-01-preview; 0 secret places "
        "to re-enter (0 required): see secretsToReenter; 0 jobs' effective start or runs left written out: see "
        "adjustments\n"
    )
    missing = cli("export", "-", "--collection", "three")
    assert missing.code == 5 and missing.out == ""
    assert (
        missing.err
        == f"error: job collection 'three' was not found in resource group '{RG}' (ResourceNotFound, HTTP 404)\n"
    )


def test_a_listing_page_with_a_next_link_warns_that_jobs_are_missing(cli: Cli, tmp_path: Path) -> None:
    """Azure Scheduler listed jobs in pages; a saved page with a nextLink is not the whole collection."""
    page = {
        "value": [_listing_job("jc1", "a", http_job())],
        "nextLink": f"https://management.azure.com/subscriptions/{SUB}/resourceGroups/{RG}/providers/"
        "Microsoft.Scheduler/jobCollections/jc1/jobs?api-version=2016-03-01&$skiptoken=abc",
    }
    listing = tmp_path / "page1.json"
    listing.write_text(json.dumps(page), encoding="utf-8")
    planned = cli("import", str(listing), "--dry-run", "--offline", "-o", "json")
    assert planned.code == 0, planned.err
    assert planned.json()["warnings"] == [
        f"{listing} is one page of a longer listing: its nextLink names more, which are not in the file "
        "(save every page and join their 'value' arrays into one JSON list)"
    ]
    whole = tmp_path / "all.json"
    whole.write_text(json.dumps(page["value"]), encoding="utf-8")
    assert cli("import", str(whole), "--dry-run", "--offline", "-o", "json").json()["warnings"] == []
