"""The benchmarks' operation counter (``bench/opcount.py``): a real proxy in front of the session's Azurite
that counts each request by service and operation, whatever the answer."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import ResourceNotFoundError
from azure.data.tables import TableServiceClient, UpdateMode
from azure.storage.queue import QueueClient

from bench.opcount import BATCH_ENTITIES, OpCounter
from local_host.azurite import DEV_ACCOUNT, DEV_KEY, Azurite

pytestmark = pytest.mark.azurite


@pytest.fixture
def counter(azurite: Azurite) -> Iterator[OpCounter]:
    with OpCounter({"queue": azurite.ports.queue, "table": azurite.ports.table}) as proxy:
        yield proxy


def test_each_table_request_is_counted_by_its_operation(counter: OpCounter) -> None:
    service = TableServiceClient.from_connection_string(counter.connection_string(DEV_ACCOUNT, DEV_KEY))
    name = f"count{uuid.uuid4().hex[:8]}"
    table = service.create_table(name)
    before = counter.snapshot()

    created = table.create_entity({"PartitionKey": "p", "RowKey": "a", "N": 1})
    table.get_entity("p", "a")
    list(table.query_entities("PartitionKey eq 'p'"))
    table.upsert_entity({"PartitionKey": "p", "RowKey": "b", "N": 1}, mode=UpdateMode.REPLACE)
    table.upsert_entity({"PartitionKey": "p", "RowKey": "b", "M": 2}, mode=UpdateMode.MERGE)
    etag = table.update_entity(
        {"PartitionKey": "p", "RowKey": "a", "N": 2},
        mode=UpdateMode.REPLACE,
        etag=created["etag"],
        match_condition=MatchConditions.IfNotModified,
    )["etag"]
    table.update_entity(
        {"PartitionKey": "p", "RowKey": "a", "N": 3},
        mode=UpdateMode.MERGE,
        etag=etag,
        match_condition=MatchConditions.IfNotModified,
    )
    upserts = [("upsert", {"PartitionKey": "p", "RowKey": f"r{i}"}) for i in range(5)]
    table.submit_transaction([*upserts, ("delete", {"PartitionKey": "p", "RowKey": "b"})])
    table.delete_entity("p", "a")
    with pytest.raises(ResourceNotFoundError):
        table.get_entity("p", "missing")  # a 404 is a request (and billed) too

    counts = counter.snapshot() - before
    assert dict(counts.by_operation) == {
        "table insert": 1,
        "table get": 2,
        "table query": 1,
        "table upsert": 1,
        "table upsert-merge": 1,
        "table update": 1,
        "table merge": 1,
        "table batch": 1,
        BATCH_ENTITIES: 6,
        "table delete": 1,
    }
    assert counts.total() == 10
    assert counts.by_resource[("table get", name)] == 2
    service.delete_table(name)


def test_each_queue_request_is_counted_by_its_operation(counter: OpCounter) -> None:
    name = f"count-{uuid.uuid4().hex[:8]}"
    queue = QueueClient.from_connection_string(counter.connection_string(DEV_ACCOUNT, DEV_KEY), name)
    queue.create_queue()
    before = counter.snapshot()

    for i in range(3):
        queue.send_message(f"m{i}")
    queue.peek_messages(max_messages=5)
    received = list(queue.receive_messages(messages_per_page=2, max_messages=2, visibility_timeout=30))
    queue.update_message(received[0], visibility_timeout=0)
    queue.delete_message(received[1])
    queue.get_queue_properties()

    counts = counter.snapshot() - before
    assert dict(counts.by_operation) == {
        "queue put": 3,
        "queue peek": 1,
        "queue get": 1,
        "queue update": 1,
        "queue delete": 1,
        "queue properties": 1,
    }
    assert counts.by_resource[("queue put", name)] == 3
    queue.delete_queue()
