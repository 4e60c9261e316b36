"""Table and queue round trips on the project's own Azurite, and idempotent provisioning. What the stores
promise (the ports) is tested over every adapter, Azurite included, in ``tests/contract``."""

from __future__ import annotations

import base64
import time
from datetime import UTC, datetime, timedelta

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import ResourceModifiedError
from azure.storage.queue import QueueClient

from scheduler_core.adapters.azure import connect
from scheduler_core.adapters.azure.clients import queue_client, table_service
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.azure.queues import MessageQueue
from scheduler_core.adapters.memory import SimulatedClock
from scheduler_core.adapters.memory.queues import MemoryQueue
from scheduler_core.queue_router import ExecutionRouter
from scheduler_core.settings import Settings
from scheduler_core.storage.names import JOBS_TABLE, queue_names, table_names

pytestmark = pytest.mark.azurite


def test_provision_creates_every_table_and_queue_and_is_idempotent(storage_env: Settings) -> None:
    provision(storage_env)
    provision(storage_env)
    existing_tables = {t.name for t in table_service(storage_env).list_tables()}
    assert set(table_names(storage_env)) <= existing_tables
    for name in queue_names(storage_env):
        assert queue_client(storage_env, name).get_queue_properties().name == name


def test_table_round_trip_with_etag_concurrency(storage_env: Settings) -> None:
    provision(storage_env)
    table = table_service(storage_env).get_table_client(storage_env.table_name(JOBS_TABLE))
    table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "Value": "one", "Count": 1})
    entity = table.get_entity("p", "r")
    assert (entity["Value"], entity["Count"]) == ("one", 1)
    etag = entity.metadata["etag"]
    table.update_entity(
        {"PartitionKey": "p", "RowKey": "r", "Value": "two"}, etag=etag, match_condition=MatchConditions.IfNotModified
    )
    with pytest.raises(ResourceModifiedError):
        table.update_entity(
            {"PartitionKey": "p", "RowKey": "r", "Value": "stale"},
            etag=etag,
            match_condition=MatchConditions.IfNotModified,
        )
    assert table.get_entity("p", "r")["Value"] == "two"
    rows = list(table.query_entities("PartitionKey eq @p and RowKey ge @lo", parameters={"p": "p", "lo": "a"}))
    assert [r["RowKey"] for r in rows] == ["r"]


def test_queue_messages_are_base64_text_on_the_wire(storage_env: Settings) -> None:
    provision(storage_env)
    sender = queue_client(storage_env, storage_env.execution_queue)
    sender.send_message('{"v": 1, "job": "j"}')
    raw = QueueClient.from_connection_string(storage_env.storage_connection_string or "", storage_env.execution_queue)
    [peeked] = raw.peek_messages()
    assert base64.b64decode(peeked.content) == b'{"v": 1, "job": "j"}'  # what the Functions host decodes
    [received] = sender.receive_messages(max_messages=1)
    assert received.content == '{"v": 1, "job": "j"}'
    sender.delete_message(received)


def test_visibility_timeout_delays_a_message(storage_env: Settings) -> None:
    provision(storage_env)
    queue = queue_client(storage_env, storage_env.scan_queue)
    queue.send_message("later", visibility_timeout=2)
    assert list(queue.receive_messages(max_messages=1)) == []
    time.sleep(2.5)
    [message] = queue.receive_messages(max_messages=1)
    assert message.content == "later"


@pytest.mark.parametrize("adapter", ["azurite", "memory"])
def test_a_queue_is_behind_only_when_it_shows_a_message_sent_longer_ago_than_asked(
    storage_env: Settings, adapter: str
) -> None:
    """``behind`` (the watchdog's backlog probe) over a real queue and over the memory queue: the same answers."""
    provision(storage_env)
    clock = SimulatedClock(datetime.now(UTC))
    real = MessageQueue(queue_client(storage_env, storage_env.execution_queue))
    queue: MessageQueue | MemoryQueue = real if adapter == "azurite" else MemoryQueue(clock)
    now = clock()
    assert queue.behind(timedelta(0), now + timedelta(seconds=5)) is False  # empty
    queue.send("hidden", 60)  # a message shown later (a dispatched occurrence, a retry): no backlog
    assert queue.behind(timedelta(0), now + timedelta(seconds=5)) is False
    queue.send("shown", 0)
    assert queue.behind(timedelta(seconds=60), now + timedelta(seconds=5)) is False  # shown, but recent
    clock.set(now + timedelta(seconds=5))
    assert queue.behind(timedelta(seconds=1), now + timedelta(seconds=5)) is True  # shown and waiting
    if isinstance(queue, MessageQueue):
        [taken] = queue.client.receive_messages(max_messages=1)  # a worker takes it: nothing shows
        assert taken.content == "shown"
    else:
        assert [m.text for m in queue.receive()] == ["shown"]
    assert queue.behind(timedelta(seconds=1), now + timedelta(seconds=5)) is False


def test_a_message_that_is_not_base64_neither_fails_behind_nor_hides_the_backlog(storage_env: Settings) -> None:
    """A hostile or foreign message on an execution queue (not base64: the SDK's decoding of it fails with
    an error of its own, AttributeError in azure-core's DecodeError) must not fail the peek, which would fail
    the scan: the deployed queues peek through a client that does not decode, as ``connect`` builds them."""
    provision(storage_env)
    raw = QueueClient.from_connection_string(storage_env.storage_connection_string or "", storage_env.execution_queue)
    raw.send_message("not base64 at all: {}")
    later = datetime.now(UTC) + timedelta(seconds=5)
    decoding = MessageQueue(queue_client(storage_env, storage_env.execution_queue))
    with pytest.raises(Exception):  # noqa: B017, PT011 - why the peek must not decode (the SDK's own failure)
        decoding.behind(timedelta(0), later)
    queue = connect(storage_env).executions
    assert queue.behind(timedelta(0), later) is True
    assert ExecutionRouter([queue.send], [queue.behind]).behind("{}", timedelta(0), later) is True
