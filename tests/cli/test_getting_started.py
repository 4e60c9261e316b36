"""docs/getting-started.md, run: its shell and Python blocks in order, as a newcomer would type them in a
second terminal, against the function app on the local host with every trigger (what ``make run`` serves),
and the outputs it shows compared with what they print; then the facts of its gotchas box, each checked
on the running app.

The blocks run in a temporary directory that looks like the project directory to them: ``.venv`` is a link
to this interpreter's environment, ``.run/api-key`` holds the host's key (as ``make run`` writes it, so the
command line finds it by itself), and ``SCHEDULER_ENDPOINT`` names the host (its port is free, not 7071).
Nothing else of the test's environment reaches them. A block preceded by ``<!-- doc-test: skip: ... -->``
is not run (only ``make run`` itself is: the test starts the same app instead); a ``text`` block preceded by
``<!-- doc-test: output -->`` is the standard output of the block before it."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from azure.storage.queue import QueueClient

from local_host.azurite import DEV_ACCOUNT, Azurite, free_port
from local_host.hostjson import load_host_json
from local_host.runtime import LocalHost
from scheduler_core import auth, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.pipeline.attempts import EARLY_MARGIN_SECONDS, visibility_seconds
from scheduler_core.pipeline.execute import MAX_EARLY_WAIT
from scheduler_core.settings import Settings
from tests.e2e.conftest import Api
from tests.support.http_target import http_target
from tests.support.jobs import http_action

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "getting-started.md"
SUB, RG = "demo", "rg-demo"
FENCE = re.compile(r"(?:<!-- doc-test: (?P<marker>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)\n```", re.DOTALL)


@dataclass
class Block:
    lang: str
    body: str
    marker: str  # "" or the doc-test marker before it ("skip: why", "output")
    line: int


def blocks() -> list[Block]:
    text = DOC.read_text(encoding="utf-8")
    return [
        Block(m["lang"], m["body"], (m["marker"] or "").strip(), text.count("\n", 0, m.start()) + 1)
        for m in FENCE.finditer(text)
    ]


@pytest.fixture
def host(storage_env: Settings, azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    """The function app with every trigger (API, dispatch timer, queues), Storage queue actions sent to the
    session's Azurite as ``make run`` sends them to its own."""
    import function_app

    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    monkeypatch.setenv("SCHEDULER_STORAGE_QUEUE_ENDPOINT", azurite.ports.queue_endpoint())
    wiring.reset()
    provision(storage_env)
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port()) as running:
        yield Api(running.base_url, key, storage_env)
    wiring.reset()


def workdir(tmp_path: Path, api: Api) -> tuple[Path, dict[str, str]]:
    """A directory that looks like the project directory to the blocks, and their environment."""
    work = tmp_path / "project"
    (work / ".run").mkdir(parents=True)
    (work / ".run" / "api-key").write_text(api.key + "\n", encoding="utf-8")
    (work / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    env = {
        "PATH": f"{Path(sys.prefix) / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(ROOT),  # the project's code, as in the project directory
        "SCHEDULER_ENDPOINT": api.base_url,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    return work, env


def run_block(block: Block, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """One block; a shell block sees the variables the earlier ones exported (as in one terminal)."""
    if block.lang == "python":
        script = work / f"block-{block.line}.py"
        script.write_text(block.body + "\n", encoding="utf-8")
        argv = [str(work / ".venv" / "bin" / "python"), script.name]
    else:
        state = work / ".doc-test-env"
        wrapped = f"set -eo pipefail\n[ -f {state} ] && . {state}\n{block.body}\nexport -p > {state}\n"
        argv = ["bash", "-c", wrapped]
    return subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=180, check=False)


def tidy(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def test_every_block_of_the_page_runs_and_prints_what_the_page_shows(host: Api, tmp_path: Path) -> None:
    work, env = workdir(tmp_path, host)
    found = blocks()
    runnable = [b for b in found if b.lang in ("sh", "python")]
    skipped = [b.body for b in runnable if b.marker.startswith("skip")]
    assert skipped == ["make run"], "only the server itself may be left out"
    text = DOC.read_text(encoding="utf-8")
    assert len(runnable) == text.count("```sh\n") + text.count("```python\n")  # none missed by the parser
    previous: subprocess.CompletedProcess[str] | None = None
    outputs = 0
    for block in found:
        if block.marker == "output":
            assert previous is not None, f"line {block.line}: an output block with nothing run before it"
            assert tidy(previous.stdout) == tidy(block.body), f"line {block.line}: the output differs"
            outputs += 1
            continue
        if block.lang not in ("sh", "python") or block.marker.startswith("skip"):
            continue
        previous = run_block(block, work, env)
        assert previous.returncode == 0, (
            f"line {block.line} exited {previous.returncode}:\n{block.body}\n{previous.stdout}\n{previous.stderr}"
        )
        assert "the-password" not in previous.stdout + previous.stderr
    assert outputs == 2

    # What the page says happened did happen.
    def get(path: str) -> Any:
        response = host.call("GET", f"subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/{path}")
        assert response.status_code == 200, response.text
        return response.json()

    history = get("jobCollections/demo/jobs/ping/history")["value"]
    assert len(history) >= 2 and {row["properties"]["status"] for row in history} == {"Completed"}
    imported = {job["name"]: job["properties"]["state"] for job in get("jobCollections/imported/jobs")["value"]}
    assert imported == {
        "imported/archive": "Enabled",
        "imported/migrate-once": "Disabled",
        "imported/report": "Enabled",
    }
    report = get("jobCollections/imported/jobs/report")["properties"]
    assert report["action"]["request"]["authentication"] == {"type": "Basic", "username": "scheduler"}
    assert "status" in report and report["status"]["executionCount"] == 0  # the listing's counters stay behind


# ----------------------------------------------------------------------------------------------- gotchas


def _put(api: Api, name: str, properties: dict[str, Any]) -> requests.Response:
    path = f"subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/facts/jobs/{name}"
    return api.call("PUT", path, {"properties": properties})


def _collection(api: Api) -> None:
    path = f"subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/facts"
    assert api.call("PUT", path, {"location": "westeurope"}).status_code in (200, 201)


def _history(api: Api, name: str, count: int, timeout: float = 30) -> list[dict[str, Any]]:
    path = f"subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/facts/jobs/{name}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows: list[dict[str, Any]] = api.call("GET", f"{path}/history").json()["value"]
        if len(rows) >= count:
            return rows
        time.sleep(0.2)
    raise AssertionError(f"{name}: fewer than {count} history rows after {timeout} s")


def _offset(instant: datetime) -> float:
    """Seconds past the minute, with the fraction."""
    return instant.second + instant.microsecond / 1e6


def test_no_start_time_means_now_to_the_second(host: Api) -> None:
    _collection(host)
    with http_target() as target:
        action = http_action(f"{target.base_url}/once", method="GET", body=None)
        created = time.monotonic()
        assert _put(host, "once", {"action": action}).status_code == 201
        target.wait_for(1, timeout=10)  # a one-time job without startTime runs at once
        assert time.monotonic() - created < 10

        # A daily schedule at 06:00 keeps the creation's seconds and fraction.
        daily = {
            "action": action,
            "recurrence": {"frequency": "Day", "interval": 1, "schedule": {"hours": [6], "minutes": [0]}},
        }
        for _ in range(5):  # the creation second must not straddle a minute, to be bracketed
            before = datetime.now(UTC)
            assert _put(host, "daily", daily).status_code in (200, 201)
            after = datetime.now(UTC)
            if before.minute == after.minute:
                break
        insight = host.call(
            "GET",
            f"{host.base_url}/dashboard/api/job/subscriptions/{SUB}/resourceGroups/{RG}/providers/"
            "Microsoft.Scheduler/jobCollections/facts/jobs/daily?count=3",
        ).json()
    occurrences = [datetime.fromisoformat(o["utc"].replace("Z", "+00:00")) for o in insight["occurrences"]]
    assert len(occurrences) == 3
    for occurrence in occurrences:
        assert (occurrence.hour, occurrence.minute) == (6, 0)
        assert _offset(before) - 0.001 <= _offset(occurrence) <= _offset(after) + 0.001, (occurrence, before, after)
    assert any(_offset(o) != 0 for o in occurrences)  # not rounded to the minute (true but for 1 in 60,000)


def test_storage_queue_without_sas_token_needs_https(host: Api, azurite: Azurite) -> None:
    _collection(host)
    queue = f"gs-{os.urandom(4).hex()}"
    client = QueueClient.from_connection_string(azurite.connection_string, queue)
    client.create_queue()
    message = {"storageAccount": DEV_ACCOUNT, "queueName": queue, "message": "hello"}
    one_time = {"retryPolicy": {"retryType": "None"}}

    # Accepted (the queue endpoint's host may receive the app's identity), then every run fails.
    keyless = {"action": {"type": "StorageQueue", "queueMessage": message, **one_time}}
    assert _put(host, "keyless", keyless).status_code == 201
    [row] = _history(host, "keyless", 1)
    assert row["properties"]["status"] == "Failed"
    assert row["properties"]["message"].startswith("Message not added: Token credential is only supported with HTTPS.")

    # With a SAS token made with Azurite's well-known account key, the message arrives.
    made = subprocess.run(  # as the page says: python -m local_host sas --queue NAME
        [sys.executable, "-m", "local_host", "sas", "--queue", queue],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    sas = made.stdout.strip()
    keyed = {"action": {"type": "StorageQueue", "queueMessage": {**message, "sasToken": sas}, **one_time}}
    assert _put(host, "keyed", keyed).status_code == 201
    [row] = _history(host, "keyed", 1)
    assert row["properties"]["status"] == "Completed", row["properties"]["message"]
    assert sas not in json.dumps(row)
    assert len(list(client.receive_messages(max_messages=32))) == 1


def test_polling_interval_facts() -> None:
    page = DOC.read_text(encoding="utf-8")
    document = json.loads((ROOT / "host.json").read_text(encoding="utf-8"))
    configured = document["extensions"]["queues"]["maxPollingInterval"]
    assert configured == "00:00:01" and "`00:00:01` in this project" in page
    polling = load_host_json(ROOT / "host.json").queues.max_polling_interval
    assert polling == 1.0

    bare = Path(os.environ.get("TMPDIR", "/tmp")) / f"host-{os.getpid()}.json"
    bare.write_text(json.dumps({"version": "2.0"}), encoding="utf-8")
    try:
        assert load_host_json(bare).queues.max_polling_interval == 60.0  # "one minute when it is not set"
    finally:
        bare.unlink()

    # Visible 1 to 2 s before the due second, held to the instant: a 1 s poll is soon enough.
    assert EARLY_MARGIN_SECONDS == 1 and polling <= EARLY_MARGIN_SECONDS
    now = datetime(2030, 1, 1, 12, 0, 0, 300_000, tzinfo=UTC)
    for lead in (2.0, 10.7, 59.9):
        due = now + timedelta(seconds=lead)
        visible = now + timedelta(seconds=visibility_seconds(due, now))
        early = (due - visible).total_seconds()
        assert 1 <= early < 2 and early <= MAX_EARLY_WAIT.total_seconds()
    assert math.isclose(24 * 3600 / polling, 86_400) and "86,400" in page
