"""The local host's language worker (local_host/worker.py), as the Functions host runs its Python worker:

- an invocation past host.json's ``functionTimeout`` fails, and the worker running it is restarted after the
  grace period, failing every invocation in flight on it (``OnTimeoutExceptionAsync`` ->
  ``RestartWorkerWithInvocationIdAsync`` -> ``TryFailExecutions``); their queue messages come back after
  ``visibilityTimeout`` with their dequeue count raised, and the late results of a worker of threads are
  discarded;
- with a worker process, the real function app records each of those executions once and runs it again
  (the claim's lease: ``tests/e2e/test_faults_worker.py``), after a timeout's restart as after a worker that
  died, and the host runs on: ``tests/e2e/test_host_worker_app.py`` (a module of its own, so that its
  real-time waits run beside this one's);
- ``plan="elastic-premium"`` runs HTTP and timer invocations on the worker's one pool, behind queue work.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import azure.functions as func
import pytest
import requests

from local_host.azurite import free_port
from local_host.hostjson import HostConfig, QueueOptions
from local_host.runtime import LocalHost
from scheduler_core import auth
from scheduler_core.adapters.azure.clients import queue_client
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.settings import Settings
from tests.e2e.host_process import HostProcess
from tests.support.http_target import HttpTarget
from tests.support.jobs import http_action, job_body
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]

# ------------------------------------------------------------------- a worker of threads, a sample app

hold_app = func.FunctionApp()


class Holds:
    """What the held function saw: (body, dequeue count, thread) at each start; first deliveries wait for
    their gate (released by the test), later ones return at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.started: list[tuple[str, int, float]] = []
        self.finished: list[tuple[str, int]] = []
        self.gate = threading.Event()

    def runs(self, body: str) -> list[int]:
        with self.lock:
            return [count for seen, count, _ in self.started if seen == body]


holds = Holds()


@hold_app.queue_trigger(arg_name="msg", queue_name="%HOLD_QUEUE%", connection="AzureWebJobsStorage")
def hold(msg: func.QueueMessage) -> None:
    body, count = msg.get_body().decode(), msg.dequeue_count or 0
    with holds.lock:
        holds.started.append((body, count, time.monotonic()))
    if count == 1:
        holds.gate.wait(60)
    with holds.lock:
        holds.finished.append((body, count))


FUNCTION_TIMEOUT = 5.0
GRACE = 0.5


@pytest.fixture
def hold_queue(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"hold-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HOLD_QUEUE", name)
    holds.reset()
    yield name
    holds.gate.set()  # let the threads the restart could not stop end


def test_a_timed_out_invocation_restarts_its_worker_and_fails_every_invocation_in_flight_on_it(
    storage_env: Settings, hold_queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="local_host")
    config = HostConfig(
        queues=QueueOptions(
            batch_size=8, new_batch_threshold=8, max_dequeue_count=5, visibility_timeout=0.0, max_polling_interval=0.2
        ),
        function_timeout=FUNCTION_TIMEOUT,
    )
    queue = queue_client(storage_env, hold_queue)
    with LocalHost(
        hold_app, config, port=free_port(), enable=frozenset({"queue"}), worker_threads=4, timeout_grace=GRACE
    ) as host:
        queue.send_message("hang")
        wait_until(lambda: holds.runs("hang") == [1], 10, "the first invocation started")
        hang_started = holds.started[0][2]
        time.sleep(1.5)  # the others start well after it: they are in flight when it times out
        for body in ("slow-1", "slow-2"):
            queue.send_message(body)
        wait_until(lambda: all(holds.runs(b) == [1] for b in ("slow-1", "slow-2")), 10, "two more in flight")
        # The timeout (5 s), the grace period, the restart: all three fail; their messages, released at once
        # (visibilityTimeout 0), run again on the new worker with dequeue count 2.
        wait_until(
            lambda: all(holds.runs(b) == [1, 2] for b in ("hang", "slow-1", "slow-2")), 20, "all three run again"
        )
        rerun = {body: at for body, count, at in holds.started if count == 2}
        assert host.worker.restarts == 1
        assert min(rerun.values()) - hang_started < FUNCTION_TIMEOUT + GRACE + 2
        holds.gate.set()  # the old worker's threads end now: their results are discarded, nothing is settled
        wait_until(lambda: len(holds.finished) == 6, 10, "the old worker's threads ended")
        # a re-run has finished before the host deletes its message: wait for the deletes, not a fixed time
        wait_until(lambda: queue.get_queue_properties().approximate_message_count == 0, 10, "every message settled")
    errors = [r.getMessage() for r in caplog.records if r.name == "local_host"]
    assert sum(m.startswith("function=hold invocation") and "Timeout value of 5 s" in m for m in errors) == 1
    assert sum("failed: its worker was restarted" in m for m in errors) == 2  # the two younger ones
    assert sum("late result discarded" in m for m in errors) == 3
    assert sorted(holds.runs("slow-1") + holds.runs("slow-2") + holds.runs("hang")) == [1, 1, 1, 2, 2, 2]


# ---------------------------------------------------------------- plan="elastic-premium": one pool

ep_app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
ep_gate = threading.Event()
ep_busy: list[str] = []
ep_ticks: list[str] = []


@ep_app.route(route="where", methods=["GET"])
def where(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse(threading.current_thread().name)


@ep_app.queue_trigger(arg_name="msg", queue_name="%EP_QUEUE%", connection="AzureWebJobsStorage")
def busy(msg: func.QueueMessage) -> None:
    ep_busy.append(threading.current_thread().name)
    ep_gate.wait(30)


@ep_app.timer_trigger(schedule="* * * * * *", arg_name="timer", run_on_startup=False)
def ep_tick(timer: func.TimerRequest) -> None:
    ep_ticks.append(threading.current_thread().name)


@pytest.mark.parametrize("plan", ["default", "elastic-premium"])
def test_elastic_premium_runs_http_and_timers_on_the_worker_pool_behind_queue_work(
    storage_env: Settings, monkeypatch: pytest.MonkeyPatch, plan: str
) -> None:
    monkeypatch.setenv("EP_QUEUE", f"ep-{uuid.uuid4().hex[:8]}")
    ep_gate.clear()
    ep_busy.clear()
    config = HostConfig(queues=QueueOptions(batch_size=4, new_batch_threshold=4, max_polling_interval=0.2))
    with ThreadPoolExecutor(1) as client:
        host = LocalHost(ep_app, config, port=free_port(), worker_threads=2, plan=plan)
        try:
            host.start()
            queue = queue_client(storage_env, os.environ["EP_QUEUE"])
            for i in range(2):
                queue.send_message(f"m{i}")
            wait_until(lambda: len(ep_busy) == 2, 10, "both worker threads busy")
            ep_ticks.clear()
            answer = client.submit(requests.get, f"{host.base_url}/api/where", timeout=30)
            time.sleep(2.0)
            if plan == "default":  # HTTP and timers have threads of their own
                assert answer.done() and answer.result().text.startswith("http")
                assert ep_ticks and all(name.startswith("timer") for name in ep_ticks)
            else:  # they wait for a thread of the worker's pool, behind the queue work
                assert not answer.done() and ep_ticks == []
                ep_gate.set()
                assert answer.result(timeout=10).text.startswith("worker")
                wait_until(lambda: len(ep_ticks) >= 1, 5, "a tick on the worker pool")
                assert all(name.startswith("worker") for name in ep_ticks)
        finally:
            ep_gate.set()
            host.stop()


# ------------------------------------------------------------------------------- the command line

WORKER_STARTED = re.compile(r"Worker process started and initialized \(pid (\d+),")


def test_the_command_runs_the_app_in_a_worker_process_on_one_pool_and_takes_it_down_when_killed(
    storage_env: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, target: HttpTarget
) -> None:
    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    provision(storage_env)
    host = HostProcess(
        dict(os.environ), tmp_path / "state", tmp_path / "host.log", "--plan", "elastic-premium", "--worker", "process"
    )
    try:
        host.wait_ready(key)
        output = host.output()
        assert "Plan elastic-premium: HTTP and timer functions run on those" in output
        match = WORKER_STARTED.search(output)
        assert match, output
        worker_pid = int(match.group(1))
        headers = {"Authorization": f"Bearer {key}"}
        jc = f"{host.base_url}/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"
        created = requests.put(f"{jc}?api-version=2016-03-01", json={"location": "westus"}, headers=headers, timeout=30)
        assert created.status_code == 201, created.text
        due = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
        job = job_body(due, http_action(target.base_url + "/fired", body=None))
        put = requests.put(f"{jc}/jobs/j?api-version=2016-03-01", json=job, headers=headers, timeout=30)
        assert put.status_code == 201, put.text
        target.wait_for(1, timeout=30)
        assert f"worker[{worker_pid}]" in host.output()  # the app's lines come from the worker process
        host.kill()  # SIGKILL: the host dies without a word; its worker follows it (its connection ends)
        wait_until(lambda: not pid_alive(worker_pid), 10, "the worker process gone with its host")
    finally:
        host.stop()


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, exited but not yet reaped by its new parent, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
