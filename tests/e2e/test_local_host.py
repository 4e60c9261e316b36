"""The local host serves HTTP functions, fires timers and runs queue triggers with host.json semantics."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import pytest
import requests

from local_host.azurite import free_port
from local_host.hostjson import HostConfig, QueueOptions
from local_host.runtime import LocalHost
from scheduler_core.adapters.azure.clients import queue_client
from scheduler_core.settings import Settings
from tests.e2e import sample_app

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

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
