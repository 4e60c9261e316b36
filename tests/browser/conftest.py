"""Fixtures of the dashboard's browser tests: the real function app on the local host (every trigger, Azurite),
HTTP targets on 127.0.0.1, and Playwright (``playwright-core`` from npm) driving Debian's Chromium.

The scenarios are in ``scenarios.mjs`` (Node): :func:`run_scenario` runs one and returns what it observed, and
the tests check that against the API and the targets. Chromium and playwright-core are installed by
``scripts/install_browser.sh`` (``make test`` runs it); when either is missing the tests fail, never skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.settings import Settings
from tests.e2e.conftest import Api

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = Path(__file__).with_name("scenarios.mjs")
#: Where the browser is looked for (``CHROMIUM`` overrides): Debian's package puts it here.
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
#: Set to 1 to copy the README's screenshot (``docs/images/dashboard.png``) from this run.
SCREENSHOT_ENV = "UPDATE_DASHBOARD_SCREENSHOT"
README_SCREENSHOT = ROOT / "docs" / "images" / "dashboard.png"
SUBSCRIPTION = "sub-dashboard"
GROUP = "ops"
COLLECTION = "nightly"


def chromium_path() -> str:
    """The Chromium executable; the test fails (not skips) when there is none."""
    explicit = os.environ.get("CHROMIUM")
    for candidate in ([explicit] if explicit else []) + list(CHROMIUM_PATHS):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("Chromium is not installed: run scripts/install_browser.sh (apt-get install chromium)")


def node_path() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("Node.js is not installed (the README's requirements: Node.js 20+)")
    if not (ROOT / "node_modules" / "playwright-core" / "package.json").is_file():
        pytest.fail("playwright-core is not installed: run scripts/install_browser.sh (npm ci)")
    return node


@dataclass
class Dashboard:
    """A running function app with its dashboard, and a valid API key."""

    api: Api
    screenshots: Path
    #: A key of the Reader role over every subscription (may read, may not write).
    reader_key: str = field(default="", repr=False)

    @property
    def url(self) -> str:
        return f"{self.api.base_url}/dashboard/"

    def collection_path(self, group: str = GROUP, collection: str = COLLECTION) -> str:
        return (
            f"subscriptions/{SUBSCRIPTION}/resourceGroups/{group}"
            f"/providers/Microsoft.Scheduler/jobCollections/{collection}"
        )

    def job_path(self, job: str, group: str = GROUP, collection: str = COLLECTION) -> str:
        return f"{self.collection_path(group, collection)}/jobs/{job}"

    def put_collection(self, group: str = GROUP, collection: str = COLLECTION, plan: str = "Standard") -> None:
        body = {"location": "westeurope", "properties": {"sku": {"name": plan}}}
        response = self.api.call("PUT", self.collection_path(group, collection), body)
        assert response.status_code in (200, 201), response.text

    def put_job(self, job: str, properties: dict[str, Any], group: str = GROUP, collection: str = COLLECTION) -> None:
        response = self.api.call("PUT", self.job_path(job, group, collection), {"properties": properties})
        assert response.status_code in (200, 201), response.text

    def job(self, job: str) -> dict[str, Any]:
        response = self.api.call("GET", self.job_path(job))
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data

    def history(self, job: str) -> list[dict[str, Any]]:
        response = self.api.call("GET", self.job_path(job) + "/history")
        assert response.status_code == 200, response.text
        rows: list[dict[str, Any]] = response.json()["value"]
        return rows


@pytest.fixture
def dashboard(storage_env: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Dashboard]:
    """The function app on the local host with every trigger (timers and queues too, so jobs fire)."""
    import function_app

    chromium_path()
    node_path()
    key, reader = auth.generate_key(), auth.generate_key()
    keys = f"{auth.hash_entry(key)};{auth.hash_entry(reader, role=auth.Role.READER)}"
    monkeypatch.setenv("SCHEDULER_API_KEYS", keys)
    wiring.reset()
    provision(storage_env)
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port()) as host:
        shots = tmp_path / "screenshots"
        shots.mkdir()
        yield Dashboard(Api(host.base_url, key, storage_env), shots, reader)


def run_scenario(dashboard: Dashboard, name: str, timeout: float = 150, **arguments: Any) -> dict[str, Any]:
    """Run scenario ``name`` of ``scenarios.mjs`` in a fresh browser; its observations (the JSON it prints
    last). A failed step fails the test with the scenario's message and its output."""
    return _run_node(dashboard, [str(SCENARIOS), name], None, arguments, timeout, f"scenario {name}")


def run_module(dashboard: Dashboard, script: str, arguments: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run ``script`` (an ES module driving Chromium with playwright-core, given on standard input so that it
    resolves playwright-core from the repository) with the same environment as a scenario; what it observed
    (the JSON it prints last)."""
    return _run_node(dashboard, ["--input-type=module", "-"], script, arguments, timeout, "the browser's steps")


def _run_node(
    dashboard: Dashboard, args: list[str], script: str | None, arguments: dict[str, Any], timeout: float, what: str
) -> dict[str, Any]:
    """Run node with ``args`` (``script`` on standard input, if any) and the dashboard's address, the API and
    Reader keys, the subscription, Chromium's path, the screenshots folder and ``arguments``
    (``SCENARIO_ARGS``) in its environment; the JSON it prints last, or the test fails saying ``what`` failed."""
    env = {
        **os.environ,
        "DASHBOARD_URL": dashboard.url,
        "API_KEY": dashboard.api.key,
        "READER_KEY": dashboard.reader_key,
        "SUBSCRIPTION": SUBSCRIPTION,
        "CHROMIUM": chromium_path(),
        "SCREENSHOTS": str(dashboard.screenshots),
        "SCENARIO_ARGS": json.dumps(arguments),
    }
    try:
        done = subprocess.run(
            [node_path(), *args],
            input=script,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        output = [part.decode() if isinstance(part, bytes) else part or "" for part in (exc.stdout, exc.stderr)]
        pytest.fail(f"{what} took over {timeout} s; output so far:\n" + "\n".join(output))
    if done.returncode != 0:
        pytest.fail(f"{what} failed (exit {done.returncode}):\n{done.stderr}\n{done.stdout}")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines, f"{what} printed nothing: {done.stderr}"
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def keep_screenshot(dashboard: Dashboard, name: str) -> None:
    """Copy screenshot ``name`` to the README's image when ``UPDATE_DASHBOARD_SCREENSHOT=1``."""
    source = dashboard.screenshots / name
    assert source.is_file() and source.stat().st_size > 10_000, f"no screenshot {name}"
    if os.environ.get(SCREENSHOT_ENV) == "1":
        README_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, README_SCREENSHOT)
