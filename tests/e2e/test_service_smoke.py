"""The real function app on the local host: the management API answers in ARM form and needs a key.

The last test starts the service the way ``make run`` does (a child process that starts its own Azurite)
and stops it with Ctrl-C (SIGINT).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from local_host.azurite import free_port, free_ports
from local_host.runtime import LocalHost
from scheduler_core import auth
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.settings import Settings
from tests.conftest import sample_settings

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
LIST_PATH = "/subscriptions/x/providers/Microsoft.Scheduler/jobCollections?api-version=2016-03-01"


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    return key


@pytest.fixture
def service(storage_env: Settings, api_key: str) -> Iterator[str]:
    import function_app

    provision(storage_env)
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
        yield host.base_url


def test_list_by_subscription_answers_an_arm_list(service: str, api_key: str) -> None:
    response = requests.get(service + LIST_PATH, headers={"Authorization": f"Bearer {api_key}"}, timeout=10)
    assert response.status_code == 200, response.text
    assert response.json() == {"value": []}
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.headers["x-ms-request-id"]


def test_requests_without_a_valid_key_are_refused(service: str) -> None:
    for headers in ({}, {"Authorization": "Bearer sks_not-a-key"}):
        response = requests.get(service + LIST_PATH, headers=headers, timeout=10)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "AuthenticationFailed"


def test_missing_api_version_is_an_arm_400(service: str, api_key: str) -> None:
    path = LIST_PATH.split("?", maxsplit=1)[0]
    response = requests.get(service + path, headers={"x-functions-key": api_key}, timeout=10)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "BadRequest"
    assert "api-version" in error["message"]


def test_unknown_path_is_an_arm_404(service: str, api_key: str) -> None:
    response = requests.get(
        service + "/subscriptions/x/providers/Microsoft.Nope/things?api-version=2016-03-01",
        headers={"x-functions-key": api_key},
        timeout=10,
    )
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "ResourceNotFound"


@pytest.mark.parametrize(
    ("stop_signal", "started_ignoring_sigint"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)],
    ids=["ctrl-c", "kill", "kill-int-started-in-the-background"],
)
def test_service_command_starts_azurite_serves_and_stops(
    tmp_path: Path, api_key: str, stop_signal: int, started_ignoring_sigint: bool
) -> None:
    port, *ports = free_ports(4)
    env = {
        **os.environ,
        **sample_settings(),
        "SCHEDULER_TABLE_PREFIX": "smoke",
        "SCHEDULER_API_KEYS": auth.hash_entry(api_key),
    }
    env.pop("AzureWebJobsStorage", None)
    command = [
        sys.executable,
        "-m",
        "local_host",
        "run",
        "--azurite",
        "--in-memory",
        "--port",
        str(port),
        "--azurite-ports",
        ",".join(map(str, ports)),
    ]
    # A script's shell starts a background job with SIGINT ignored, and the child inherits that.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if started_ignoring_sigint else None
    try:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    finally:
        if started_ignoring_sigint:
            signal.signal(signal.SIGINT, previous)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        response = None
        while time.monotonic() < deadline:
            try:
                response = requests.get(base + LIST_PATH, headers={"x-functions-key": api_key}, timeout=5)
                break
            except requests.ConnectionError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                time.sleep(0.2)
        assert response is not None, "the service did not start listening"
        assert response.status_code == 200, response.text
        assert response.json() == {"value": []}
    finally:
        process.send_signal(stop_signal)
        output = stopped_output(process, 30)
    assert process.returncode == 0, output
    assert f"Scheduler API listening on http://127.0.0.1:{port}" in output
    assert "Azurite stopped." in output
    assert "function=management_api trigger=http GET /subscriptions/x/providers" in output
    for azurite_port in ports:
        with pytest.raises(requests.ConnectionError):
            requests.get(f"http://127.0.0.1:{azurite_port}", timeout=2)


def stopped_output(process: subprocess.Popen[str], timeout: float) -> str:
    """The host's output once it has stopped; a host still running after ``timeout`` s fails the test with
    every thread's stack (``kill -USR1``) and the end of its output."""
    try:
        return process.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGUSR1)
        time.sleep(2)
        process.kill()
        output = process.communicate()[0]
        raise AssertionError(
            f"the host did not stop within {timeout:g} s; its threads and output:\n{output[-12000:]}"
        ) from None
