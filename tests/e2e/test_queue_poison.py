"""Poison messages the queue extension moves without running the function: one received more than
``maxDequeueCount`` times (``QueueProcessor.BeginProcessingMessageAsync``), and one whose text is not base64
under ``messageEncoding`` base64 (the extension's ``MessageDecodingFailed`` handler). See local_host/queues.py."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Iterator

import pytest
from azure.storage.queue import QueueClient

from local_host.azurite import free_port
from local_host.hostjson import HostConfig, QueueOptions
from local_host.runtime import LocalHost
from scheduler_core.adapters.azure.clients import queue_client
from scheduler_core.settings import Settings
from tests.e2e import sample_app
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

MAX_DEQUEUE_COUNT = 2
CONFIG = HostConfig(
    route_prefix="api",
    queues=QueueOptions(
        batch_size=8,
        new_batch_threshold=4,
        max_dequeue_count=MAX_DEQUEUE_COUNT,
        visibility_timeout=0.0,
        max_polling_interval=0.5,
    ),
)


@pytest.fixture
def queue_name(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"poison-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("SAMPLE_QUEUE", name)
    monkeypatch.setenv("SAMPLE_TIMER_SCHEDULE", "0 0 0 1 1 *")
    with sample_app.lock:
        sample_app.queue_calls.clear()
    for queue in (name, name + "-poison"):
        queue_client(storage_env, queue).create_queue()
    return name


def start_host() -> LocalHost:
    return LocalHost(sample_app.app, CONFIG, port=free_port(), enable=frozenset({"queue"}))


def raw(storage_env: Settings, name: str) -> QueueClient:
    """A client that sends and reads a message's text as stored (no base64)."""
    return queue_client(storage_env, name, decoded=False)


def calls(body: str) -> list[int | None]:
    with sample_app.lock:
        return [count for seen, count in sample_app.queue_calls if seen == body]


@pytest.fixture
def running() -> Iterator[list[LocalHost]]:
    hosts: list[LocalHost] = []
    yield hosts
    for host in hosts:
        host.stop()


def test_a_message_dequeued_more_than_max_dequeue_count_goes_to_poison_without_running(
    storage_env: Settings, queue_name: str, running: list[LocalHost]
) -> None:
    queue = raw(storage_env, queue_name)
    queue_client(storage_env, queue_name).send_message("over-the-limit")
    # Received MAX_DEQUEUE_COUNT times by consumers that never finished it (a worker that died each time).
    for _ in range(MAX_DEQUEUE_COUNT):
        [over] = queue.receive_messages(max_messages=1, visibility_timeout=60)
        if (over.dequeue_count or 0) < MAX_DEQUEUE_COUNT:
            queue.update_message(over.id, over.pop_receipt, visibility_timeout=0)
    # Received once less: it still runs (dequeue count = maxDequeueCount), then is deleted.
    queue_client(storage_env, queue_name).send_message("at-the-limit")
    [at] = queue.receive_messages(max_messages=1, visibility_timeout=60)
    assert (over.dequeue_count, at.dequeue_count) == (MAX_DEQUEUE_COUNT, 1)
    for message in (over, at):  # visible again, as after their consumers' leases ended
        queue.update_message(message.id, message.pop_receipt, visibility_timeout=0)
    poison = raw(storage_env, queue_name + "-poison")
    running.append(host := start_host())
    host.start()
    wait_until(lambda: poison.get_queue_properties().approximate_message_count == 1, 20, "one message in poison")
    wait_until(lambda: calls("at-the-limit") == [MAX_DEQUEUE_COUNT], 20, "the message at the limit ran")
    time.sleep(1.5)  # the poller has had several receives since
    assert calls("over-the-limit") == []  # never run
    [moved] = poison.peek_messages(max_messages=5)
    assert moved.content == base64.b64encode(b"over-the-limit").decode()  # as stored
    assert queue.get_queue_properties().approximate_message_count == 0


def test_a_message_that_is_not_base64_goes_to_poison_as_stored_and_its_batch_runs(
    storage_env: Settings, queue_name: str, running: list[LocalHost]
) -> None:
    garbage = 'not base64: {"job": 1}'
    raw(storage_env, queue_name).send_message(garbage)
    encoded = queue_client(storage_env, queue_name)
    for i in range(3):
        encoded.send_message(f"ok-{i}")
    poison = raw(storage_env, queue_name + "-poison")
    running.append(host := start_host())
    host.start()
    # The valid messages of the same batch run at once, each once, on their first delivery.
    wait_until(lambda: all(calls(f"ok-{i}") == [1] for i in range(3)), 15, "the valid messages ran")
    wait_until(lambda: poison.get_queue_properties().approximate_message_count == 1, 15, "one message in poison")
    [moved] = poison.peek_messages(max_messages=5)
    assert moved.content == garbage  # the text as it was stored
    assert moved.dequeue_count == 0  # peeked, never received from the poison queue
    time.sleep(1.0)
    with sample_app.lock:
        assert sorted(body for body, _ in sample_app.queue_calls) == ["ok-0", "ok-1", "ok-2"]
    assert raw(storage_env, queue_name).get_queue_properties().approximate_message_count == 0
