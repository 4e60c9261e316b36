"""Faults: storage lost in the middle of ``python -m scheduler_core export`` and ``import``.

The function app runs on the local host (HTTP triggers) and reaches Azurite only through fault-injecting TCP
proxies (``tests/support/fault_proxy.py``, as ``tests/e2e/test_faults_storage.py`` points a host at proxied
Azurite). The command line runs as a child process, as a person runs it, and talks to the host through a
small HTTP front in the test that forwards every request unchanged and counts them, so that storage is cut
at an exact point of the command's work (when its k-th job write, or its k-th read, reaches the front)
rather than after a guessed delay. The front also says when no request is in flight any more.

The promises: an import that loses storage fails with a clear message (no traceback, a non-zero exit
status, every job that was not written named), and once storage is back the same command run again ends
with every job exactly once and, field by field, as it was exported (as ``tests/cli/test_cli_lossless_
transfer.py`` compares: the preview API's definition, the next execution time, the next ten occurrences);
an export that loses storage fails clearly and writes no file at all (a file already there is left as it
was, and no temporary file is left behind). The import's tests are here, the export's in
``tests/e2e/test_faults_transfer_export.py`` (a module of its own, so that the two run side by side), over
this module's ``transfer`` fixture and jobs.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
import requests

from local_host.azurite import Azurite, AzuritePorts, free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.definitions import PREVIEW_VERSION
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.cli.conftest import CLI_VARIABLES
from tests.support.fault_proxy import FaultProxy, fault_proxy
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
SUB = "00000000-0000-0000-0000-0000000000f7"
RG = "rg-faults"
#: Two collections: 20 jobs in the first (with a calendar), 10 in the second, whose quota is exactly 10.
BIG, FULL = "ops 'prod' | Ωmega", "zeta-full"
BIG_JOBS, FULL_JOBS = 20, 10
JOBS = BIG_JOBS + FULL_JOBS
#: The import loses storage when its this-th job write reaches the front (so JOBS - CUT_AT + 1 are not written).
CUT_AT = 26


# ---------------------------------------------------------------------------------------------- the front


@dataclass
class Front:
    """An HTTP front on 127.0.0.1 that forwards every request to ``upstream`` as it came, and calls ``hook``
    with each request's method and path before forwarding it."""

    upstream: tuple[str, int]
    hook: Callable[[str, str], None] = lambda method, path: None
    seen: list[tuple[str, str]] = field(default_factory=list)
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def count(self, method: str, fragment: str) -> int:
        with self.lock:
            return sum(1 for m, path in self.seen if m == method and fragment in path)

    def idle(self) -> bool:
        with self.lock:
            return self.in_flight == 0


@dataclass
class Transfer:
    """The host behind proxied storage, the front before it, and the command line."""

    base_url: str
    key: str
    front: Front
    proxies: list[FaultProxy]

    def storage(self, mode: str) -> None:
        for proxy in self.proxies:
            proxy.set_mode(mode)

    def call(self, method: str, path: str, body: Any = None, **query: str) -> Any:
        """One request straight to the host (not through the front), preview api-version; its JSON."""
        url = f"{self.base_url}/{path}"
        params = {"api-version": PREVIEW_VERSION, **query}
        headers = {"Authorization": f"Bearer {self.key}"}
        response = requests.request(method, url, params=params, json=body, headers=headers, timeout=60)
        assert response.status_code < 300, f"{method} {path}: {response.status_code} {response.text[:300]}"
        return response.json() if response.content else None

    def cli(self, *argv: str, timeout: float = 240) -> tuple[int, str, str]:
        """``python -m scheduler_core`` in a child process, against the front; exit status, output, errors."""
        env = {k: v for k, v in os.environ.items() if k not in CLI_VARIABLES}
        env.update(
            SCHEDULER_ENDPOINT=self.front.url,
            SCHEDULER_API_KEY=self.key,
            SCHEDULER_SUBSCRIPTION=SUB,
            SCHEDULER_RESOURCE_GROUP=RG,
            NO_PROXY="127.0.0.1,localhost",
        )
        done = subprocess.run(
            [sys.executable, "-m", "scheduler_core", *argv],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return done.returncode, done.stdout, done.stderr


HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


def _front_server(front: Front) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            path = urlsplit(self.path).path
            with front.lock:
                front.seen.append((self.command, path))
                front.in_flight += 1
            try:
                front.hook(self.command, path)
                upstream = http.client.HTTPConnection(*front.upstream, timeout=300)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                payload = answer.read()
                upstream.close()
            finally:
                with front.lock:
                    front.in_flight -= 1
            try:
                self.send_response(answer.status, answer.reason)
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:  # the command gave up waiting (its timeout) and closed the connection
                pass

        do_GET = do_PUT = do_POST = do_PATCH = do_DELETE = do_HEAD = _forward

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    return server


@pytest.fixture
def transfer(storage_env: Settings, azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> Iterator[Transfer]:
    import function_app

    provision(storage_env)  # straight to Azurite
    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    with (
        fault_proxy(("127.0.0.1", azurite.ports.table)) as tables,
        fault_proxy(("127.0.0.1", azurite.ports.queue)) as queues,
    ):
        proxied = AzuritePorts(blob=azurite.ports.blob, queue=queues.port, table=tables.port)
        monkeypatch.setenv("AzureWebJobsStorage", proxied.connection_string())
        wiring.reset()
        with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
            parts = urlsplit(host.base_url)
            front = Front((parts.hostname or "127.0.0.1", parts.port or 80))
            server = _front_server(front)
            front.url = f"http://127.0.0.1:{server.server_address[1]}"
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            thread.start()
            try:
                yield Transfer(host.base_url, key, front, [tables, queues])
            finally:
                for proxy in (tables, queues):
                    proxy.set_mode("pass")
                server.shutdown()
                server.server_close()
        wiring.reset()


# ---------------------------------------------------------------------------------------------- the jobs


def _path(*names: str) -> str:
    base = f"subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections"
    return "/".join([base, *(quote(name, safe="") for name in names)])


def _job(index: int, start: datetime) -> dict[str, Any]:
    """Job ``index``'s properties: each starts in three days and differs from the others (its recurrence, its
    preview properties, its action), so a field lost or mixed up shows."""
    kinds: list[dict[str, Any]] = [
        {"recurrence": {"frequency": "Minute", "interval": 15 + index, "jitter": "PT2M"}, "overlapPolicy": "Skip"},
        {
            "recurrence": {
                "frequency": "Day",
                "schedule": {"hours": [index % 24], "minutes": [index]},
                "timeZone": "Europe/Berlin",
                "count": 5 + index,
            },
            "missedRunPolicy": {"mode": "RunAll", "window": "PT1H"},
        },
        {
            "recurrence": {"frequency": "Week", "schedule": {"weekDays": ["Monday", "Thursday"], "hours": [6]}},
            "pauseAfterFailures": 2 + index,
            "state": "Disabled",
        },
        {"recurrence": {"frequency": "Hour", "interval": 1 + index % 5}, "deleteAfterCompletion": False},
    ]
    properties: dict[str, Any] = {
        "startTime": format_instant(start + timedelta(minutes=index)),
        "action": {
            "type": "Http",
            "request": {
                "uri": f"http://127.0.0.1:9/job-{index}?q={index}",
                "method": ("GET", "POST", "PUT")[index % 3],
                "headers": {"X-Index": str(index), "X-Odd": "välue 'q' | 🎉"},
                **({"body": f"body of {index} \u2028 </script>"} if index % 3 else {}),
            },
            "retryPolicy": {"retryType": "Fixed", "retryInterval": f"PT{20 + index}S", "retryCount": index % 4},
        },
        **kinds[index % len(kinds)],
    }
    if index < BIG_JOBS and index % 5 == 0:
        properties["recurrence"]["exclusions"] = {"calendars": ["holidays"], "dates": [f"2030-01-0{1 + index % 9}"]}
    return properties


def _names() -> list[tuple[str, str]]:
    return [(BIG, f"job {i:02d} ü") for i in range(BIG_JOBS)] + [(FULL, f"z-{i:02d}") for i in range(FULL_JOBS)]


def build(transfer: Transfer) -> None:
    transfer.call("PUT", _path(BIG), {"location": "westeurope", "tags": {"odd": "ü | '"}, "properties": {}})
    transfer.call("PUT", _path(FULL), {"location": "westeurope", "properties": {"quota": {"maxJobCount": FULL_JOBS}}})
    far = (datetime.now(UTC) + timedelta(days=60)).strftime("%Y-%m-%d")
    transfer.call("PUT", _path(BIG, "calendars", "holidays"), {"properties": {"dates": [far]}})
    start = (datetime.now(UTC) + timedelta(days=3)).replace(second=0, microsecond=0)
    for index, (collection, name) in enumerate(_names()):
        transfer.call("PUT", _path(collection, "jobs", name), {"properties": _job(index, start)})


def snapshot(transfer: Transfer) -> dict[str, Any]:
    """Every collection (with its calendars) and every job as the preview API shows them: each job's
    definition, its next execution time and its next ten occurrences, and each collection's list of job names
    (a job twice would show there)."""
    shot: dict[str, Any] = {"collections": {}, "lists": {}, "jobs": {}}
    for collection in (BIG, FULL):
        shot["collections"][collection] = (
            transfer.call("GET", _path(collection)),
            transfer.call("GET", _path(collection, "calendars"))["value"],
        )
        listed = transfer.call("GET", _path(collection, "jobs"))
        assert "nextLink" not in listed
        shot["lists"][collection] = sorted(job["name"] for job in listed["value"])
    for collection, name in _names():
        job = transfer.call("GET", _path(collection, "jobs", name))
        status = job["properties"].pop("status")
        occurrences = transfer.call("GET", _path(collection, "jobs", name, "occurrences"), **{"$top": "10"})["value"]
        shot["jobs"][f"{collection}/{name}"] = (job, status.get("nextExecutionTime"), occurrences)
    return shot


def wipe(transfer: Transfer) -> None:
    for collection in (BIG, FULL):
        transfer.call("DELETE", _path(collection))
    assert transfer.call("GET", f"subscriptions/{SUB}/providers/Microsoft.Scheduler/jobCollections")["value"] == []


def no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text and 'File "' not in text, text[-2000:]


def job_rows(out: str) -> list[tuple[str, str]]:
    """The import table's job rows, in order: (collection/job, result and detail)."""
    rows = []
    for line in out.splitlines():
        if not line.startswith("job "):
            continue
        for collection, name in _names():
            label = f"{RG}/{collection}/{name}"
            start = line.find(label)
            if start > 0 and line[start + len(label) : start + len(label) + 2] == "  ":
                rows.append((f"{collection}/{name}", line[start + len(label) :].strip()))
    return rows


# --------------------------------------------------------------------------------------------- the tests


def exported(transfer: Transfer, tmp_path: Path) -> Path:
    file = tmp_path / "export.json"
    code, out, err = transfer.cli("export", str(file), "--no-progress", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["jobs"] == JOBS
    document = json.loads(file.read_text(encoding="utf-8"))
    # Every job has a startTime and no secret: the file is the jobs as they are, nothing to fill in.
    assert document["adjustments"] == [] and document["secretsToReenter"] == []
    return file


def assert_as_exported(after: dict[str, Any], before: dict[str, Any]) -> None:
    assert after["collections"] == before["collections"]
    assert after["lists"] == before["lists"]  # every job exactly once
    assert len(after["jobs"]) == JOBS
    for label, (job, next_time, occurrences) in before["jobs"].items():
        assert after["jobs"][label] == (job, next_time, occurrences), label


@pytest.mark.parametrize(
    ("mode", "timeout", "status", "words"),
    [
        # Storage refuses connections: the host answers each write that needs it with its 500, the import goes
        # on to the end and reports every job it could not write.
        ("down", "60", 1, "internal error"),
        # Storage hangs (a partition): the write does not come back within the command's timeout, and the
        # import stops there, saying so.
        ("blackhole", "5", 3, "did not answer within 5 s"),
    ],
)
def test_an_import_that_loses_storage_fails_clearly_and_running_it_again_completes_it(
    transfer: Transfer, tmp_path: Path, mode: str, timeout: str, status: int, words: str
) -> None:
    build(transfer)
    before = snapshot(transfer)
    file = exported(transfer, tmp_path)
    wipe(transfer)

    def cut_at_the_kth_job_write(method: str, path: str) -> None:
        if method == "PUT" and "/jobs/" in path and transfer.front.count("PUT", "/jobs/") == CUT_AT:
            transfer.storage(mode)

    transfer.front.hook = cut_at_the_kth_job_write
    started = time.monotonic()
    code, out, err = transfer.cli("import", str(file), "--no-progress", "--timeout", timeout)
    took = time.monotonic() - started
    transfer.front.hook = lambda method, path: None
    assert transfer.front.count("PUT", "/jobs/") >= CUT_AT, "storage was never cut"
    assert code == status, (code, out[-3000:], err[-3000:])
    no_traceback(out, err)
    if mode == "down":
        # Every job is named, in the order they were sent: those sent before the cut as created, the one that
        # met it and each later one as failed, with the service's status and message; and a summary that
        # says how many failed.
        rows = job_rows(out)
        assert sorted(label for label, _ in rows) == sorted(f"{c}/{n}" for c, n in _names()), out
        for number, (label, result) in enumerate(rows, start=1):
            if number < CUT_AT:
                assert result == "created", (label, result)
            else:
                assert result.startswith("FAILED   500 InternalError: ") and words in result, (label, result)
        assert f"jobs: {CUT_AT - 1} created, {JOBS - CUT_AT + 1} FAILED" in out, out[-500:]
        assert err == ""
    else:
        # One error line, on standard error, naming the endpoint that did not answer.
        assert out == "" and err.startswith("error: ") and words in err and err.count("\n") == 1, err
    assert took < 200

    # Storage back: what the cut request still held moves on (its answer goes nowhere). Run the same import
    # again at once: it creates what is missing and skips what exists.
    transfer.storage("pass")
    code, out, err = transfer.cli("import", str(file), "--no-progress", "-o", "json")
    no_traceback(out, err)
    assert code == 0, out[-3000:]
    outcomes = {(r["kind"], r["outcome"]) for r in json.loads(out)["results"]}
    assert outcomes <= {("collection", "keep"), ("calendar", "skip"), ("job", "create"), ("job", "skip")}, outcomes
    summary = json.loads(out)["summary"]["job"]
    assert summary["create"] + summary["skip"] == JOBS and summary["fail"] == 0, summary
    assert summary["skip"] >= CUT_AT - 1
    # Nothing is in flight any more (the request the cut held has come back), then: every job once, as it was.
    wait_until(transfer.front.idle, timeout=120, what="the requests held by the outage came back")
    assert_as_exported(snapshot(transfer), before)
