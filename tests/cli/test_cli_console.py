"""The operator's console fixes, against the real function app on the local host (Azurite): ``--api-version``
and ``jobs show`` with every property that shapes a job's schedule or call; ``preview`` refusing what
``jobs create`` refuses, with the same message; the endpoint ``make run`` listens on; the command line run
from another directory; and imports under attack: into a collection with another plan, stopped half way and
run again, two at once."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from local_host.__main__ import _remove_endpoint, _write_endpoint
from local_host.azurite import free_ports
from local_host.http_server import HttpHost
from scheduler_core.cli.common import DEFAULT_ENDPOINT, local_endpoint
from scheduler_core.definitions import PREVIEW_VERSION
from tests.cli.conftest import CLI_VARIABLES, RG, ROOT, SUB, Cli

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

#: The first of next month's next month: a start within the 18 months the service takes, weeks ahead.
AHEAD = (datetime.now(UTC).replace(day=1) + timedelta(days=62)).replace(day=1)
YEAR_MONTH = AHEAD.strftime("%Y-%m")

ACTION = {"type": "Https", "request": {"uri": "https://example.org/hook", "method": "POST", "body": "x"}}


def _path(*names: str) -> str:
    return "/".join([f"subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections", *names])


def put(cli: Cli, path: str, body: dict[str, Any]) -> None:
    response = cli.api.call("PUT", _path(path), body, query={"api-version": PREVIEW_VERSION})
    assert response.status_code in (200, 201), response.text


def job_file(tmp_path: Path, properties: dict[str, Any], name: str = "job.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"properties": properties}), encoding="utf-8")
    return str(path)


# ------------------------------------------------------------------------------- show, api-version


def test_jobs_show_shows_every_property_that_shapes_the_schedule_or_the_call(cli: Cli, tmp_path: Path) -> None:
    put(cli, "jc1", {"location": "westus"})
    put(cli, "jc1/calendars/holidays", {"properties": {"dates": [f"{YEAR_MONTH}-25"]}})
    signed: dict[str, Any] = {"uri": "https://example.org/hook", "method": "POST", "body": "x"}
    signed["signing"] = {"scheme": "StandardWebhooks", "secret": "whsec_" + "A" * 32}
    signed["authentication"] = {"type": "ManagedServiceIdentity", "audience": "api://hooks"}
    put(
        cli,
        "jc1/jobs/full",
        {
            "properties": {
                "action": {"type": "Https", "request": signed, "expandPlaceholders": True},
                "recurrence": {
                    "frequency": "Hour",
                    "jitter": "PT5M",
                    "exclusions": {
                        "dates": [f"{YEAR_MONTH}-01"],
                        "ranges": [{"start": f"{YEAR_MONTH}-10", "end": f"{YEAR_MONTH}-12"}],
                        "calendars": ["holidays"],
                    },
                },
                "startTime": f"{YEAR_MONTH}-01T00:00:00Z",
                "overlapPolicy": "BufferOne",
                "missedRunPolicy": {"mode": "RunAll", "window": "PT1H"},
                "pauseAfterFailures": 4,
                "deleteAfterCompletion": True,
            }
        },
    )
    shown = cli("jobs", "show", "jc1/full")
    assert shown.code == 0, shown.err
    fields = {name: value.strip() for name, _, value in (line.partition(":") for line in shown.out.splitlines())}
    assert fields["jitter"] == "PT5M"
    assert fields["exclusions"] == f"dates {YEAR_MONTH}-01; from {YEAR_MONTH}-10 to {YEAR_MONTH}-12; calendars holidays"
    assert fields["overlap policy"] == "BufferOne"
    assert fields["missed runs"] == "RunAll, window PT1H"
    assert fields["pause after failures"] == "after 4 faulted occurrences in a row"
    assert fields["delete after completion"] == "yes"
    assert fields["placeholders"] == "expanded"
    assert fields["signing"] == "StandardWebhooks (its secret is write-only: never shown)"
    assert fields["authentication"] == "ManagedServiceIdentity: the function app's identity, audience api://hooks"
    assert "whsec_" not in shown.out

    as_json = cli("jobs", "show", "jc1/full", "-o", "json").json()["properties"]
    assert as_json["overlapPolicy"] == "BufferOne" and as_json["recurrence"]["jitter"] == "PT5M"

    classic = cli("jobs", "show", "jc1/full", "--api-version", "2016-03-01")
    assert classic.code == 0
    classic_fields = {line.partition(":")[0] for line in classic.out.splitlines()}
    assert "jitter" not in classic_fields and "overlap policy" not in classic_fields
    assert "2016-03-01: jitter, policies, exclusions, signing and identity not shown" in classic.out
    classic_json = cli("jobs", "show", "jc1/full", "--api-version", "2016-03-01", "-o", "json").json()["properties"]
    assert "overlapPolicy" not in classic_json and "jitter" not in classic_json["recurrence"]

    with pytest.raises(SystemExit) as bad:
        cli("jobs", "show", "jc1/full", "--api-version", "2099-01-01")
    assert bad.value.code == 2
    assert "--api-version: must be one of 2014-08-01-preview, 2016-01-01, 2016-03-01, 2026-12-01-preview" in (
        cli.capsys.readouterr().err
    )


# ------------------------------------------------------------------------ preview validates as create


@pytest.mark.parametrize(
    "properties",
    [
        {"recurrence": {"frequency": "Hour"}},  # no action
        {"recurrence": {"frequency": "Hour", "jitter": "PT2H"}, "action": ACTION},  # jitter over half the gap
        {"startTime": "2099-01-01T00:00:00Z", "action": ACTION},  # beyond 18 months
        {"recurrence": {"frequency": "Hour"}, "action": ACTION, "colour": "red"},  # unknown field
        {"recurrence": {"frequency": "Hour", "endTime": "2001-01-01T00:00:00Z"}, "action": ACTION},  # past end
        {"action": {"type": "Https", "request": {"uri": "ftp://example.org/", "method": "GET"}}},
    ],
)
def test_preview_refuses_what_create_refuses_with_the_same_message(
    cli: Cli, tmp_path: Path, properties: dict[str, Any]
) -> None:
    put(cli, "jc1", {"location": "westus"})
    path = job_file(tmp_path, properties)
    previewed = cli("preview", path)
    created = cli("jobs", "create", "jc1/j", "-f", path)
    assert previewed.code == 2 and created.code == 1
    assert previewed.out == "" and previewed.err.startswith("error: ")
    message = previewed.err.removeprefix("error: ").rstrip("\n")
    assert created.err == f"error: {message} (BadRequest, HTTP 400)\n"


def test_preview_takes_the_preview_properties_create_takes(cli: Cli, tmp_path: Path) -> None:
    put(cli, "jc1", {"location": "westus"})
    properties = {
        "startTime": f"{YEAR_MONTH}-01T00:00:00Z",
        "action": ACTION,
        "recurrence": {"frequency": "Day", "jitter": "PT1H", "exclusions": {"dates": [f"{YEAR_MONTH}-02"]}},
        "overlapPolicy": "Skip",
    }
    path = job_file(tmp_path, properties)
    previewed = cli("preview", path, "--count", "2")
    assert previewed.code == 0, previewed.err
    assert previewed.out.splitlines() == [f"{YEAR_MONTH}-01T00:00:00Z", f"{YEAR_MONTH}-03T00:00:00Z"]  # 2nd excluded
    assert previewed.err == (
        "note: scheduled instants; with jitter each fires up to PT1H later (a stable offset of the job's identity)\n"
    )
    assert cli("jobs", "create", "jc1/j", "-f", path).code == 0


# ------------------------------------------------------------------------------ where make run listens


def test_the_endpoint_is_the_one_make_run_wrote_else_local_settings_port(tmp_path: Path) -> None:
    endpoint_file, settings = tmp_path / ".run" / "endpoint", tmp_path / "local.settings.json"
    assert local_endpoint(endpoint_file, settings) == DEFAULT_ENDPOINT  # neither file
    settings.write_text(json.dumps({"IsEncrypted": False, "Host": {"LocalHttpPort": 7072}}), encoding="utf-8")
    assert local_endpoint(endpoint_file, settings) == "http://127.0.0.1:7072"
    written = _write_endpoint(endpoint_file, 7085)  # what `make run PORT=7085` writes once it listens
    assert written == "http://127.0.0.1:7085" and local_endpoint(endpoint_file, settings) == written
    _remove_endpoint(endpoint_file, "http://127.0.0.1:9999")  # another run's: kept
    assert endpoint_file.exists()
    _remove_endpoint(endpoint_file, written)  # its own, when it stops: removed
    assert not endpoint_file.exists() and local_endpoint(endpoint_file, settings) == "http://127.0.0.1:7072"
    endpoint_file.write_text("https://evil.example.org\n", encoding="utf-8")  # not this machine: passed over
    settings.write_text("{not json", encoding="utf-8")
    assert local_endpoint(endpoint_file, settings) == DEFAULT_ENDPOINT


def test_after_make_run_on_another_port_the_command_line_needs_no_setting(tmp_path: Path) -> None:
    """``python -m local_host run --init --port P`` (what ``make run PORT=P`` runs) in a project directory; the
    command line, run there with no endpoint, key or port given, finds the host on P and its key."""
    for name in ("host.json", "local.settings.sample.json"):
        shutil.copy(ROOT / name, tmp_path / name)
    http_port, blob, queue, table = free_ports(4)
    environment = {k: v for k, v in os.environ.items() if k not in CLI_VARIABLES and k != "AzureWebJobsStorage"}
    environment.update({"NO_PROXY": "127.0.0.1,localhost", "PYTHONPATH": str(ROOT)})
    command = [sys.executable, "-m", "local_host", "run", "--root", str(tmp_path), "--init", "--azurite"]
    command += ["--in-memory", "--port", str(http_port), "--azurite-ports", f"{blob},{queue},{table}"]
    command += ["--state-dir", str(tmp_path / "state")]
    log = tmp_path / "host.log"
    with log.open("w") as out:
        host = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT)
    endpoint_file = tmp_path / ".run" / "endpoint"
    try:
        deadline = time.monotonic() + 90
        while "Press Ctrl-C to stop." not in log.read_text() and host.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert host.poll() is None, log.read_text()
        assert endpoint_file.read_text(encoding="utf-8") == f"http://127.0.0.1:{http_port}\n"
        listed = subprocess.run(
            [sys.executable, "-m", "scheduler_core", "collections", "list", "--subscription", "s1", "-o", "json"],
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert listed.returncode == 0, listed.stderr
        assert json.loads(listed.stdout) == []
    finally:
        host.send_signal(signal.SIGINT)
        host.wait(timeout=60)
    assert not endpoint_file.exists()  # removed when the host stopped


def test_the_command_line_runs_from_any_directory(cli: Cli, tmp_path: Path) -> None:
    put(cli, "jc1", {"location": "westus"})
    environment = {k: v for k, v in os.environ.items() if k not in CLI_VARIABLES}
    environment.update(cli.env)
    environment["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "scheduler_core", "collections", "list", "-o", "json"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [c["name"] for c in json.loads(done.stdout)] == ["jc1"]


# ------------------------------------------------------------------------------------ imports attacked


def _export(cli: Cli, tmp_path: Path, jobs: int, collection: str = "src") -> Path:
    put(cli, collection, {"location": "westus", "properties": {"quota": {"maxJobCount": 50}}})
    put(cli, f"{collection}/calendars/days", {"properties": {"dates": [f"{YEAR_MONTH}-24"]}})
    for number in range(jobs):
        recurrence = {"frequency": "Minute", "interval": 1 + number % 3, "exclusions": {"calendars": ["days"]}}
        put(
            cli,
            f"{collection}/jobs/j{number:02d}",
            {"properties": {"action": ACTION, "recurrence": recurrence, "state": "Disabled"}},
        )
    path = tmp_path / "export.json"
    assert cli("export", str(path), "--collection", collection, "--no-progress").code == 0
    return path


def _exported(path: Path, collection: str) -> list[dict[str, Any]]:
    """The jobs of an export file as they are to be imported into ``collection`` (the start written out)."""
    [entry] = json.loads(path.read_text(encoding="utf-8"))["collections"]
    return [
        {
            "name": f"{collection}/{job['name'].split('/', 1)[1]}",
            "properties": {k: v for k, v in job["properties"].items() if k != "status"},
        }
        for job in entry["jobs"]
    ]


def _jobs(cli: Cli, collection: str) -> list[dict[str, Any]]:
    listed = cli("jobs", "list", "-c", collection, "-o", "json")
    assert listed.code == 0, listed.err
    return [
        {"name": j["name"], "properties": {k: v for k, v in j["properties"].items() if k != "status"}}
        for j in listed.json()
    ]


def test_an_import_into_a_collection_with_another_plan_is_predicted_as_it_is_done(cli: Cli, tmp_path: Path) -> None:
    path = _export(cli, tmp_path, 4)
    put(cli, "free", {"location": "westus", "properties": {"sku": {"name": "Free"}}})  # 5 jobs, hourly at most
    dry = cli("import", str(path), "--collection", "free", "--dry-run", "-o", "json")
    real = cli("import", str(path), "--collection", "free", "--no-progress", "-o", "json")
    assert dry.code == real.code == 1

    def outcomes(ran: Any) -> list[tuple[Any, ...]]:
        return [
            (r["kind"], r["name"], r["outcome"], r["status"], r["code"], r["message"]) for r in ran.json()["results"]
        ]

    assert outcomes(dry) == outcomes(real)
    kinds = {(r["kind"], r["outcome"]) for r in real.json()["results"]}
    assert kinds == {("collection", "keep"), ("calendar", "create"), ("job", "fail")}
    assert {r["code"] for r in real.json()["results"] if r["kind"] == "job"} == {
        "QuotaExceeded"
    }  # Free: hourly at most
    shown = cli("collections", "show", "free", "-o", "json").json()
    assert shown["properties"]["sku"]["name"] == "Free"  # kept as it was


def _server_of(cli: Cli) -> HttpHost:
    assert cli.api.host is not None and cli.api.host.http is not None
    return cli.api.host.http


def _served_to_the_end(cli: Cli, server: HttpHost, before: set[tuple[str, int]]) -> None:
    """Wait until the host has closed every connection opened since ``before`` was taken: each request a
    killed client had sent has been answered (or its answer found the client gone), so what is stored no
    longer changes by it. A request of our own goes first: the host accepts connections in order, so once it
    is answered, a connection the client made before it died is being watched. (Connections this process
    keeps alive were open before and are left out; the requests here ask the host to close theirs.)"""
    cli.api.call("GET", _path("dst", "jobs"), headers={"Connection": "close"})
    deadline = time.monotonic() + 30
    while server.peers() - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not server.peers() - before


def test_an_import_stopped_half_way_and_run_again_doubles_nothing(cli: Cli, tmp_path: Path) -> None:
    total = 40
    path = _export(cli, tmp_path, total)
    expected = _exported(path, "dst")
    assert all("startTime" in job["properties"] for job in expected)  # anchored at their creation
    environment = {k: v for k, v in os.environ.items() if k not in CLI_VARIABLES}
    environment.update(cli.env)
    server = _server_of(cli)
    before = server.peers()
    child = subprocess.Popen(
        [sys.executable, "-m", "scheduler_core", "import", str(path), "--collection", "dst", "--no-progress"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            response = cli.api.call("GET", _path("dst", "jobs"), headers={"Connection": "close"})  # none left open
            if response.status_code == 200 and response.json()["value"]:
                break
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    _served_to_the_end(cli, server, before)  # a PUT the child had sent before it died is still written
    stopped_with = len(_jobs(cli, "dst"))
    assert 0 < stopped_with < total  # really stopped half way

    again = cli("import", str(path), "--collection", "dst", "--no-progress", "-o", "json")
    assert again.code == 0, again.out
    summary = again.json()["summary"]
    assert summary["job"] == {"create": total - stopped_with, "replace": 0, "keep": 0, "skip": stopped_with, "fail": 0}
    assert summary["collection"]["keep"] == 1 and summary["calendar"]["skip"] == 1
    assert _jobs(cli, "dst") == expected
    third = cli("import", str(path), "--collection", "dst", "--no-progress", "-o", "json")
    assert third.json()["summary"]["job"]["skip"] == total and third.json()["summary"]["job"]["create"] == 0


def test_two_imports_at_once_leave_every_job_once(cli: Cli, tmp_path: Path) -> None:
    total = 20
    path = _export(cli, tmp_path, total)
    expected = _exported(path, "both")
    environment = {k: v for k, v in os.environ.items() if k not in CLI_VARIABLES}
    environment.update(cli.env)
    command = [
        sys.executable,
        "-m",
        "scheduler_core",
        "import",
        str(path),
        "--collection",
        "both",
        "--no-progress",
        "-o",
        "json",
    ]
    children = [
        subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    answers = [child.communicate(timeout=120) for child in children]
    for child, (out, err) in zip(children, answers, strict=True):
        # each succeeds; a job both sent is created by one and replaced, unchanged, by the other
        assert child.returncode == 0, (out, err)
        assert {r["outcome"] for r in json.loads(out)["results"] if r["kind"] == "job"} <= {"create", "replace", "skip"}
    assert _jobs(cli, "both") == expected
    calendars = cli.api.call("GET", _path("both", "calendars"), query={"api-version": PREVIEW_VERSION}).json()
    assert [c["name"] for c in calendars["value"]] == ["both/days"]
