"""The local host serves HTTP functions, fires timers and runs queue triggers with host.json semantics, on
as many threads as the Python worker in Azure; ``make run`` starts it on the ports it is given, or says in
one line which option to change."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import azure.functions as func
import pytest
import requests
from azure.storage.queue import QueueClient, QueueSasPermissions, generate_queue_sas

from local_host.azurite import DEV_ACCOUNT, DEV_KEY, Azurite, AzuritePorts, free_port, free_ports
from local_host.hostjson import HostConfig, QueueOptions
from local_host.ports import is_free
from local_host.runtime import LocalHost
from scheduler_core import auth
from scheduler_core.adapters.azure.clients import queue_client
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.conftest import sample_settings
from tests.e2e import sample_app

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]

CONFIG = HostConfig(
    route_prefix="api",
    queues=QueueOptions(
        batch_size=4, new_batch_threshold=2, max_dequeue_count=2, visibility_timeout=0.0, max_polling_interval=0.5
    ),
)


def wait_for(condition: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.fixture
def host(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalHost]:
    monkeypatch.setenv("SAMPLE_TIMER_SCHEDULE", "* * * * * *")
    monkeypatch.setenv("SAMPLE_QUEUE", f"sample-{uuid.uuid4().hex[:8]}")
    with sample_app.lock:
        sample_app.timer_calls.clear()
        sample_app.queue_calls.clear()
    with LocalHost(sample_app.app, CONFIG, port=free_port()) as running:
        yield running


def test_http_function_with_route_parameters_query_and_headers(host: LocalHost) -> None:
    response = requests.get(f"{host.base_url}/API/Items/42?q=x", headers={"x-test": "yes"}, timeout=5)
    assert response.status_code == 200
    assert response.headers["x-handled"] == "item"
    assert response.json() == {"id": 42, "q": "x", "agent": "yes"}


def test_catch_all_route_comes_last_and_gets_the_body(host: LocalHost) -> None:
    response = requests.post(f"{host.base_url}/api/items/abc/more", data=b"payload", timeout=5)
    assert response.status_code == 404
    assert response.text == "catch-all items/abc/more payload"
    # A method the specific route does not allow falls through to the catch-all, which allows it.
    assert requests.post(f"{host.base_url}/api/items/1", timeout=5).text == "catch-all items/1 "
    # Outside the route prefix nothing matches.
    assert requests.get(f"{host.base_url}/items/1", timeout=5).status_code == 404


def test_timer_fires_on_its_ncrontab_schedule(host: LocalHost) -> None:
    wait_for(lambda: len(sample_app.timer_calls) >= 2, timeout=5)
    assert sample_app.timer_calls[:2] == [False, False]


def test_queue_message_is_delivered_once_and_deleted(host: LocalHost, storage_env: Settings) -> None:
    queue = queue_client(storage_env, host.pollers[0].queue_name)
    queue.send_message("hello")
    wait_for(lambda: ("hello", 1) in sample_app.queue_calls)
    time.sleep(1.5)  # the poller would have seen it again by now if it had not been deleted
    assert sample_app.queue_calls.count(("hello", 1)) == 1
    assert queue.get_queue_properties().approximate_message_count == 0


def test_failing_message_is_retried_then_moved_to_poison(host: LocalHost, storage_env: Settings) -> None:
    name = host.pollers[0].queue_name
    queue_client(storage_env, name).send_message("fail-always")
    poison = queue_client(storage_env, name + "-poison")
    wait_for(lambda: poison.get_queue_properties().approximate_message_count == 1, timeout=20)
    tries = [count for body, count in sample_app.queue_calls if body == "fail-always"]
    assert tries == [1, 2]  # maxDequeueCount = 2
    [moved] = poison.receive_messages(max_messages=1)
    assert moved.content == "fail-always"


# ------------------------------------------------------------------------------- queue function threads

#: A queue app whose two functions hold each message for a while and record how many run at once.
workers_app = func.FunctionApp()


class Concurrency:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self, hold: float = 0.4) -> None:
        self.hold = hold
        self.active = 0
        self.peak = 0
        self.done = 0
        self.threads: set[str] = set()

    def run(self) -> None:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.threads.add(threading.current_thread().name)
        time.sleep(self.hold)
        with self.lock:
            self.active -= 1
            self.done += 1


seen = Concurrency()


@workers_app.queue_trigger(arg_name="msg", queue_name="%WORKERS_QUEUE_A%", connection="AzureWebJobsStorage")
def hold_a(msg: func.QueueMessage) -> None:
    seen.run()


@workers_app.queue_trigger(arg_name="msg", queue_name="%WORKERS_QUEUE_B%", connection="AzureWebJobsStorage")
def hold_b(msg: func.QueueMessage) -> None:
    seen.run()


@pytest.fixture
def worker_queues(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    seen.reset()
    names = (f"workers-a-{uuid.uuid4().hex[:8]}", f"workers-b-{uuid.uuid4().hex[:8]}")
    monkeypatch.setenv("WORKERS_QUEUE_A", names[0])
    monkeypatch.setenv("WORKERS_QUEUE_B", names[1])
    return names


def test_queue_functions_share_python_threadpool_thread_count_threads(
    worker_queues: tuple[str, str], storage_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHON_THREADPOOL_THREAD_COUNT", "3")
    config = HostConfig(queues=QueueOptions(batch_size=8, new_batch_threshold=8, max_polling_interval=0.2))
    with LocalHost(workers_app, config, port=free_port(), enable=frozenset({"queue"})) as host:
        assert host.worker_threads == 3
        for name in worker_queues:  # 16 in flight on each queue at once (batchSize + newBatchThreshold)
            client = queue_client(storage_env, name)
            for i in range(8):
                client.send_message(f"m{i}")
        wait_for(lambda: seen.done == 16, timeout=30)
    # Both functions on one pool of 3, as sync functions share the Python worker's pool in Azure.
    assert seen.peak == 3
    assert len(seen.threads) == 3 and all(name.startswith("worker") for name in seen.threads)


def test_queue_functions_run_on_as_many_threads_as_in_azure_by_default(
    worker_queues: tuple[str, str], storage_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHON_THREADPOOL_THREAD_COUNT", raising=False)
    seen.reset(hold=1.0)
    # The project's host.json lets up to batchSize 16 + newBatchThreshold 24 messages be in flight on each
    # queue: 64 and more at once over both, for the 40 threads the Bicep gives the worker in Azure.
    with LocalHost(workers_app, ROOT / "host.json", port=free_port(), enable=frozenset({"queue"})) as host:
        assert host.worker_threads == 40
        for name in worker_queues:
            client = queue_client(storage_env, name)
            for i in range(40):
                client.send_message(f"m{i}")
        wait_for(lambda: seen.done == 80, timeout=60)
    assert seen.peak == 40


# ------------------------------------------------------------------------------------------- make run

MAKE_LINE = re.compile(r"^make(\[\d+\])?: \*\*\* ")


def make_run(*variables: str) -> subprocess.CompletedProcess[str]:
    """``make run VAR=...`` as a user types it, with this interpreter and without reinstalling anything."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES")}
    command = ["make", "--no-print-directory", "-o", ".venv/.installed", "-o", "node_modules/.installed", "run"]
    return subprocess.run(
        [*command, f"PY={sys.executable}", *variables],
        cwd=ROOT,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another program listens on (a real listening socket) for the length of one test."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        yield int(listener.getsockname()[1])


def settings_file_state() -> float | None:
    path = ROOT / "local.settings.json"
    return path.stat().st_mtime if path.exists() else None


def only_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line the host printed (make adds its own ``make: *** ... Error 2``); nothing else, no traceback."""
    assert result.returncode != 0
    assert result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if not MAKE_LINE.match(line)]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_make_run_on_a_busy_http_port_is_one_line_naming_port(busy_port: int) -> None:
    before = settings_file_state()
    line = only_error_line(make_run(f"PORT={busy_port}", "AZURITE_PORTS=" + str(AzuritePorts.free())))
    match = re.fullmatch(
        rf"error: port {busy_port} on 127\.0\.0\.1 \(HTTP\) is already in use; choose another: make run PORT=(\d+)",
        line,
    )
    assert match, line
    assert is_free(int(match.group(1)))
    assert settings_file_state() == before  # nothing was started or written


@pytest.mark.parametrize("service", ["blob", "queue", "table"])
def test_make_run_on_a_busy_azurite_port_is_one_line_naming_azurite_ports(busy_port: int, service: str) -> None:
    http_port, blob, queue, table = free_ports(4)
    ports = AzuritePorts(**{**AzuritePorts(blob, queue, table).by_service(), service: busy_port})
    before = settings_file_state()
    line = only_error_line(make_run(f"PORT={http_port}", f"AZURITE_PORTS={ports}"))
    match = re.fullmatch(
        rf"error: port {busy_port} on 127\.0\.0\.1 \(Azurite {service}\) is already in use; "
        r"choose others: make run AZURITE_PORTS=(\d+),(\d+),(\d+)",
        line,
    )
    assert match, line
    assert all(is_free(int(port)) for port in match.groups())
    assert settings_file_state() == before


def test_the_command_on_a_busy_port_names_its_own_option(busy_port: int) -> None:
    command = [sys.executable, "-m", "local_host", "run", "--azurite", "--in-memory", "--port", str(busy_port)]
    result = subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert re.fullmatch(
        rf"error: port {busy_port} on 127\.0\.0\.1 \(HTTP\) is already in use; choose another: --port \d+\n",
        result.stderr,
    ), result.stderr


def test_custom_azurite_ports_reach_the_storage_queue_endpoint(azurite: Azurite, tmp_path: Path) -> None:
    """The trap of the issue: local.settings.json names the Storage queue endpoint of an Azurite on other ports
    (here the session's, which answers). The host started on AZURITE_PORTS sends its actions to its own
    Azurite; the HTTP port comes from Host.LocalHttpPort and the thread count from the file's Values."""
    key = auth.generate_key()
    http_port, blob, queue, table = free_ports(4)  # four different ports: see free_ports
    ports = AzuritePorts(blob, queue, table)
    # A file written before SCHEDULER_CLEANUP_QUEUE existed: the host gives the binding its default.
    values = {
        **{k: v for k, v in sample_settings().items() if k != "SCHEDULER_CLEANUP_QUEUE"},
        "SCHEDULER_API_KEYS": auth.hash_entry(key),
        "SCHEDULER_STORAGE_QUEUE_ENDPOINT": f"http://127.0.0.1:{azurite.ports.queue}/{{account}}",
        "SCHEDULER_STORAGE_QUEUE_MESSAGE_FORMAT": "text",
        "PYTHON_THREADPOOL_THREAD_COUNT": "5",
    }
    settings_json = {"IsEncrypted": False, "Values": values, "Host": {"LocalHttpPort": http_port}}
    (tmp_path / "local.settings.json").write_text(json.dumps(settings_json))
    shutil.copy(ROOT / "host.json", tmp_path / "host.json")
    env = {k: v for k, v in os.environ.items() if k not in values and k != "AzureWebJobsStorage"}
    log = tmp_path / "host.log"
    command = [sys.executable, "-m", "local_host", "run", "--root", str(tmp_path), "--azurite", "--in-memory"]
    command += ["--azurite-ports", str(ports), "--state-dir", str(tmp_path / "state")]
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "Press Ctrl-C to stop." in log.read_text() or process.poll() is not None, timeout=60)
        banner = log.read_text()
        assert process.poll() is None, banner
        base = f"http://127.0.0.1:{http_port}"
        assert f"Scheduler API listening on {base} (ready in " in banner
        assert f"Dashboard: {base}/dashboard" in banner
        assert requests.get(f"{base}/dashboard", timeout=30).status_code == 200  # the address answers
        assert f"Storage queue actions go to http://127.0.0.1:{ports.queue}/{{account}}" in banner
        assert "Queue functions run on 5 threads (PYTHON_THREADPOOL_THREAD_COUNT" in banner
        cleanup = QueueClient.from_connection_string(ports.connection_string(), "scheduler-cleanup")
        assert cleanup.get_queue_properties().approximate_message_count == 0  # provisioned, the default name

        queue_name = f"landing-{uuid.uuid4().hex[:8]}"
        own = QueueClient.from_connection_string(ports.connection_string(), queue_name)
        other = QueueClient.from_connection_string(azurite.connection_string, queue_name)
        for queue in (own, other):  # both would accept it
            queue.create_queue()
        sas = generate_queue_sas(
            DEV_ACCOUNT,
            queue_name,
            DEV_KEY,
            permission=QueueSasPermissions(add=True),
            expiry=datetime.now(UTC) + timedelta(hours=1),
            start=datetime.now(UTC) - timedelta(minutes=5),
        )
        headers = {"Authorization": f"Bearer {key}"}
        jc = f"{base}/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"
        put = requests.put(f"{jc}?api-version=2016-03-01", json={"location": "westus"}, headers=headers, timeout=30)
        assert put.status_code == 201, put.text
        job = {
            "properties": {
                "startTime": format_instant((datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)),
                "action": {
                    "type": "StorageQueue",
                    "queueMessage": {
                        "storageAccount": DEV_ACCOUNT,
                        "queueName": queue_name,
                        "sasToken": sas,
                        "message": "to the azurite of this run",
                    },
                },
            }
        }
        put = requests.put(f"{jc}/jobs/j?api-version=2016-03-01", json=job, headers=headers, timeout=30)
        assert put.status_code == 201, put.text
        wait_for(lambda: own.get_queue_properties().approximate_message_count == 1, timeout=30)
        assert [m.content for m in own.peek_messages()] == ["to the azurite of this run"]
        assert other.get_queue_properties().approximate_message_count == 0
        other.delete_queue()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert process.returncode == 0, log.read_text()
