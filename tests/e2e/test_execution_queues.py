"""K = 3 execution queues end to end: the local host runs function_app.py as a deployment with
SCHEDULER_EXECUTION_QUEUE_COUNT=3 indexes it (three execution functions, one per queue), jobs created through
the API fire through the queue of their job's hash (all three queues used), a failed attempt's retry comes
back on its occurrence's queue, and /health lists the three queues."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from local_host.app_index import QueueFunction
from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, settings, triggers, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.queue_router import queue_index
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e.conftest import ROOT
from tests.support.http_target import http_target
from tests.support.jobs import fixed_retries, http_action, job_body
from tests.unit.test_execution_queues import load_function_app

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

K = 3
COLLECTION = CollectionRef("s", "rg", "jc")
JC = "subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"


@dataclasses.dataclass(frozen=True)
class Invocation:
    function: str
    queue: str
    message: ExecutionMessage


@dataclasses.dataclass
class Running:
    base_url: str
    key: str
    config: settings.Settings
    invocations: list[Invocation]
    lock: threading.Lock

    def seen(self) -> list[Invocation]:
        with self.lock:
            return list(self.invocations)


def _observed(function: QueueFunction, queue: str, running: Running) -> QueueFunction:
    """The same function, recording which function and queue each message came through (an observer: the
    function itself runs unchanged)."""
    handler: Callable[..., Any] = function.handler

    def observe(msg: Any) -> Any:
        with running.lock:
            running.invocations.append(Invocation(function.name, queue, ExecutionMessage.from_json(msg.get_body())))
        return handler(msg)

    return dataclasses.replace(function, handler=observe)


@pytest.fixture
def running(storage_env: settings.Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Running]:
    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    monkeypatch.setenv("SCHEDULER_EXECUTION_QUEUE_COUNT", str(K))
    wiring.reset()
    config = settings.load()
    provision(config)
    app = load_function_app(monkeypatch, K)  # as the worker indexes the app with this setting
    host = LocalHost(app, ROOT / "host.json", port=free_port())
    state = Running("", key, config, [], threading.Lock())
    for poller in host.pollers:
        poller.function = _observed(poller.function, poller.queue_name, state)
    with host:
        state.base_url = host.base_url
        yield state
    wiring.reset()


def _job_names() -> tuple[dict[int, list[str]], str]:
    """Two job names per queue, and a job for the retry on a queue other than queue 0."""
    per_queue: dict[int, list[str]] = {i: [] for i in range(K)}
    flaky = ""
    n = 0
    while any(len(names) < 2 for names in per_queue.values()) or not flaky:
        name = f"job-{n}"
        ref = JobRef(COLLECTION, name)
        index = queue_index(ref.partition_key, ref.row_key, K)
        if len(per_queue[index]) < 2:
            per_queue[index].append(name)
        elif not flaky and index != 0:
            flaky = name
        n += 1
    return per_queue, flaky


def _put_job(running: Running, name: str, body: dict[str, Any]) -> None:
    url = f"{running.base_url}/{JC}/jobs/{name}?api-version=2016-03-01"
    answer = requests.put(url, json=body, headers={"Authorization": f"Bearer {running.key}"}, timeout=30)
    assert answer.status_code == 201, answer.text


def _wait(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("not in time")


def test_jobs_fire_through_their_queues_and_a_retry_stays_on_its_queue(running: Running) -> None:
    headers = {"Authorization": f"Bearer {running.key}"}
    put = requests.put(f"{running.base_url}/{JC}?api-version=2016-03-01", json={"location": "w"}, headers=headers)
    assert put.status_code == 201, put.text
    per_queue, flaky = _job_names()
    queues = running.config.execution_queues
    assert len(queues) == K
    due = (datetime.now(UTC) + timedelta(seconds=5)).replace(microsecond=0)
    with http_target() as target, http_target([500, 200]) as flaky_target:
        for names in per_queue.values():
            for name in names:
                action = http_action(f"{target.base_url}/{name}", method="GET", body=None)
                _put_job(running, name, job_body(due, action))
        retry = fixed_retries(2, "PT15S")
        action = http_action(f"{flaky_target.base_url}/{flaky}", method="GET", body=None, retryPolicy=retry)
        _put_job(running, flaky, job_body(due, action))

        received = target.wait_for(2 * K, timeout=40)
        assert sorted(r.path.strip("/") for r in received) == sorted(n for names in per_queue.values() for n in names)
        first, second = flaky_target.wait_for(2, timeout=60)
        assert second.at - first.at >= 14.0  # the retry came after its interval, from its queue
        _wait(lambda: len(running.seen()) >= 2 * K + 2, timeout=20)

    by_job: dict[str, list[Invocation]] = {}
    for invocation in running.seen():
        by_job.setdefault(invocation.message.job_row, []).append(invocation)
    assert set(by_job) == {*(n for names in per_queue.values() for n in names), flaky}
    for index, names in per_queue.items():
        for name in names:
            [only] = by_job[name]
            assert (only.function, only.queue) == (triggers.execution_function_name(index), queues[index]), name
    functions_used = {i.function for i in running.seen()}
    assert functions_used == {triggers.execution_function_name(i) for i in range(K)}

    attempts = by_job[flaky]
    assert [(a.message.attempt, a.message.cause) for a in attempts] == [(0, Cause.SCHEDULE), (1, Cause.RETRY)]
    ref = JobRef(COLLECTION, flaky)
    expected = queue_index(ref.partition_key, ref.row_key, K)
    assert expected != 0
    assert {(a.function, a.queue) for a in attempts} == {(triggers.execution_function_name(expected), queues[expected])}

    history_url = f"{running.base_url}/{JC}/jobs/{flaky}/history?api-version=2016-03-01"
    statuses: list[str] = []

    def recorded() -> bool:
        statuses[:] = [r["properties"]["status"] for r in requests.get(history_url, headers=headers).json()["value"]]
        return len(statuses) == 2

    _wait(recorded, timeout=20)
    assert sorted(statuses) == ["Completed", "Failed"]

    health = requests.get(f"{running.base_url}/health", timeout=60).json()
    assert [q["name"] for q in health["execution_queues"]] == list(queues)
    assert all(q["poison"] == 0 for q in health["execution_queues"]), json.dumps(health)
    assert health["poison_queue_length"] == 0
