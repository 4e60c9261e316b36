"""scripts/import_jobs.py against a stub of the management API on 127.0.0.1."""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from tests.infra.conftest import ROOT

SCRIPT = ROOT / "scripts" / "import_jobs.py"
SUB = "00000000-0000-0000-0000-000000000001"
KEY = "sks_test-key"


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_jobs", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


class StubApi:
    """Records every request; answers 201 to job PUTs, 400 for jobs named 'bad*', 404 for missing collections."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.collections: set[str] = {"jc1"}
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                url = urlsplit(self.path)
                record = {
                    "method": self.command,
                    "path": unquote(url.path),
                    "raw_path": url.path,
                    "query": parse_qs(url.query),
                    "headers": dict(self.headers),
                    "body": json.loads(raw) if raw else None,
                }
                stub.requests.append(record)
                segments = url.path.strip("/").split("/")
                collection = unquote(segments[7]) if len(segments) > 7 else ""
                if record["query"].get("api-version") != ["2016-03-01"]:
                    self._answer(400, {"error": {"code": "InvalidApiVersion", "message": "bad api-version"}})
                elif self.headers.get("Authorization") != f"Bearer {KEY}":
                    self._answer(401, {"error": {"code": "Unauthorized", "message": "no key"}})
                elif len(segments) == 8:  # the job collection itself
                    if self.command == "PUT":
                        stub.collections.add(collection)
                        self._answer(201, {"name": collection, **(record["body"] or {})})
                    elif collection in stub.collections:
                        self._answer(200, {"name": collection})
                    else:
                        self._answer(404, {"error": {"code": "ResourceNotFound", "message": "no collection"}})
                elif collection not in stub.collections:
                    self._answer(404, {"error": {"code": "ResourceNotFound", "message": "no collection"}})
                elif unquote(segments[-1]).startswith("bad"):
                    self._answer(400, {"error": {"code": "BadRequest", "message": "invalid recurrence"}})
                else:
                    self._answer(201, {"properties": record["body"]["properties"]})

            do_GET = _handle
            do_PUT = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def job_puts(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == "PUT" and "/jobs/" in r["path"]]


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """requests honours proxy variables; the stub is local."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def stub() -> Iterator[StubApi]:
    api = StubApi()
    api.thread.start()
    try:
        yield api
    finally:
        api.server.shutdown()
        api.server.server_close()


def _job(name: str, collection: str = "jc1", **extra: Any) -> dict[str, Any]:
    return {
        "id": f"/subscriptions/{SUB}/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/"
        f"{collection}/jobs/{name}",
        "type": "Microsoft.Scheduler/jobCollections/jobs",
        "name": f"{collection}/{name}",
        "properties": {
            "startTime": "2030-01-01T00:00:00Z",
            "action": {
                "type": "Https",
                "request": {"uri": "https://example.org/ping", "method": "GET"},
                "retryPolicy": {"retryType": "None"},
            },
            "recurrence": {"frequency": "Hour", "interval": 1},
            "state": "Enabled",
            "status": {"executionCount": 3, "failureCount": 0, "faultedCount": 0},
            **extra,
        },
    }


def _write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "backup.json"
    path.write_text(json.dumps(document))
    return path


def _run(argv: list[str]) -> tuple[int, str]:
    args = tool.parse_args(argv)
    out = io.StringIO()
    jobs = tool.load_jobs(args.backup)
    failures = tool.import_jobs(jobs, args, out=out)
    return (1 if failures else 0), out.getvalue()


def test_puts_every_job_with_key_and_properties_without_status(stub: StubApi, tmp_path: Path) -> None:
    backup = _write(tmp_path, [_job("j1"), _job("j 2")])
    code, output = _run([str(backup), "--endpoint", stub.url, "--api-key", KEY])
    assert code == 0, output
    puts = stub.job_puts()
    assert [p["path"] for p in puts] == [
        f"/subscriptions/{SUB}/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc1/jobs/j1",
        f"/subscriptions/{SUB}/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc1/jobs/j 2",
    ]
    assert puts[1]["raw_path"].endswith("/jobs/j%202")
    for put in puts:
        assert put["query"] == {"api-version": ["2016-03-01"]}
        assert put["headers"]["Authorization"] == f"Bearer {KEY}"
        assert set(put["body"]) == {"properties"}
        assert "status" not in put["body"]["properties"]
        assert put["body"]["properties"]["recurrence"] == {"frequency": "Hour", "interval": 1}
        assert put["body"]["properties"]["state"] == "Enabled"
    assert "2 imported, 0 failed" in output


def test_accepts_the_rest_list_shape_and_retargets(stub: StubApi, tmp_path: Path) -> None:
    backup = _write(tmp_path, {"value": [_job("j1", collection="old")], "nextLink": None})
    code, output = _run(
        [
            str(backup),
            "--endpoint",
            stub.url + "/",
            "--api-key",
            KEY,
            "--subscription",
            "sub2",
            "--resource-group",
            "rg2",
            "--job-collection",
            "jc1",
        ]
    )
    assert code == 0, output
    (put,) = stub.job_puts()
    assert put["path"] == (
        "/subscriptions/sub2/resourceGroups/rg2/providers/Microsoft.Scheduler/jobCollections/jc1/jobs/j1"
    )


def test_reports_each_failure_and_exits_non_zero(stub: StubApi, tmp_path: Path) -> None:
    backup = _write(tmp_path, [_job("good1"), _job("bad1"), _job("good2"), {"name": "broken"}])
    code, output = _run([str(backup), "--endpoint", stub.url, "--api-key", KEY])
    assert code == 1
    assert "OK      jc1/good1" in output and "OK      jc1/good2" in output
    assert "FAILED  jc1/bad1: HTTP 400 BadRequest: invalid recurrence" in output
    assert "FAILED  broken" in output
    assert "2 imported, 2 failed" in output
    assert len(stub.job_puts()) == 3  # one failure does not stop the others


def test_missing_collection_fails_unless_created(stub: StubApi, tmp_path: Path) -> None:
    backup = _write(tmp_path, [_job("j1", collection="newjc")])
    code, output = _run([str(backup), "--endpoint", stub.url, "--api-key", KEY])
    assert code == 1 and "HTTP 404" in output
    stub.requests.clear()
    code, output = _run([str(backup), "--endpoint", stub.url, "--api-key", KEY, "--create-collection", "westus"])
    assert code == 0, output
    methods = [(r["method"], r["path"].rsplit("/", 1)[-1]) for r in stub.requests]
    assert methods == [("GET", "newjc"), ("PUT", "newjc"), ("PUT", "j1")]
    assert stub.requests[1]["body"]["location"] == "westus"


def test_dry_run_sends_nothing(stub: StubApi, tmp_path: Path) -> None:
    backup = _write(tmp_path, [_job("j1")])
    code, output = _run([str(backup), "--dry-run", "--endpoint", stub.url])
    assert code == 0
    assert stub.requests == []
    assert f"DRY-RUN PUT {stub.url}/subscriptions/{SUB}/" in output
    assert '"status"' not in output
    assert "1 would import, 0 failed" in output


def test_warns_about_secrets_a_backup_cannot_hold(tmp_path: Path) -> None:
    job = _job("j1")
    job["properties"]["action"]["request"]["authentication"] = {"type": "Basic", "username": "u"}
    backup = _write(tmp_path, [job])
    code, output = _run([str(backup), "--dry-run"])
    assert code == 0
    assert "WARNING jc1/j1: the backup has no action.request.authentication.password" in output


def test_functions_key_header_option(stub: StubApi, tmp_path: Path) -> None:
    backup = _write(tmp_path, [_job("j1")])
    code, _ = _run([str(backup), "--endpoint", stub.url, "--api-key", KEY, "--functions-key-header"])
    assert code == 1  # the stub wants Authorization: Bearer
    (put,) = stub.job_puts()
    assert put["headers"]["x-functions-key"] == KEY
    assert "Authorization" not in put["headers"]


def test_command_line_exit_codes(stub: StubApi, tmp_path: Path) -> None:
    """The real command: exit 0 when all jobs are imported, 1 when one fails, 2 for a bad backup."""
    good = _write(tmp_path, [_job("j1")])
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(good), "--endpoint", stub.url],
        capture_output=True,
        text=True,
        env={"SCHEDULER_API_KEY": KEY, "PATH": "/usr/bin:/bin"},
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 imported, 0 failed" in done.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([_job("bad1")]))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(bad), "--endpoint", stub.url, "--api-key", KEY],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1 and "FAILED  jc1/bad1" in done.stdout
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(broken), "--dry-run"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "not JSON" in done.stderr
    done = subprocess.run([sys.executable, str(SCRIPT), str(good)], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "--endpoint" in done.stderr
