"""Changing ``SCHEDULER_DUE_SHARDS`` on a live deployment loses no indexed row. Every due-index entry stays in
the shard it was written to (a scan moves an entry within its shard), so a count that grows only adds shards
(``test_scan_fanout.py`` shows those rows fire); a count that is lowered would leave the entries of the shards
above it unscanned, and their jobs would never fire again. The tick scans the most shards a tick has scanned
(recorded next to its heartbeat) when that is more than the setting. Deployments here share one memory
storage and one simulated clock, each built with its own setting, as instances before and after the change.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from scheduler_core import settings
from scheduler_core.adapters.memory import MemoryStorage, SimulatedClock, memory_storage
from scheduler_core.errors import StorageError
from scheduler_core.pipeline.messages import ScanMessage
from scheduler_core.pipeline.ticks import MAX_SHARDS, heartbeat_row, recorded_shards, shards_row
from tests.support.harness import COLLECTION, START, Deployment, parsed
from tests.support.http_target import HttpTarget
from tests.support.jobs import http_action, job_body

HOURLY = {"frequency": "Hour", "interval": 1}
FIRST = START + timedelta(minutes=10)
LARGE = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}}


def deployed(monkeypatch: pytest.MonkeyPatch, storage: MemoryStorage, clock: SimulatedClock, shards: int) -> Deployment:
    """An instance of the deployment over ``storage`` with ``SCHEDULER_DUE_SHARDS`` = ``shards``."""
    monkeypatch.setenv("SCHEDULER_DUE_SHARDS", str(shards))
    return Deployment.on_memory(settings.load(), clock, storage=storage)


def tick_and_scan(deployment: Deployment) -> list[str]:
    """One dispatch tick and the scans it sends; the shards scanned."""
    sent: list[str] = []
    now = deployment.clock()
    deployment.dispatcher.tick(sent.append, now)
    shards = [ScanMessage.from_json(text).shard for text in sent]
    for shard in shards:
        deployment.dispatcher.scan(shard, now)
    return shards


def fired(deployment: Deployment) -> Counter[str]:
    """The jobs of the execution messages visible now, each run (so that no watch sends it again)."""
    messages = parsed(deployment.storage.executions.receive())
    for message in messages:
        deployment.executor.execute(message)
    return Counter(message.job_row for message in messages)


def with_old_jobs(deployment: Deployment, target: HttpTarget) -> Deployment:
    """The deployment with a large collection and 16 hourly jobs, ``old00``..``old15``, first due at FIRST."""
    deployment.service.put_collection(COLLECTION, LARGE)
    for i in range(16):
        deployment.put_job(f"old{i:02d}", job_body(FIRST, http_action(f"{target.base_url}/old{i:02d}"), HOURLY))
    return deployment


@pytest.fixture
def storage(clock: SimulatedClock) -> MemoryStorage:
    return memory_storage(clock)


def test_lowering_the_shard_count_loses_no_indexed_job(
    monkeypatch: pytest.MonkeyPatch,
    memory_env: settings.Settings,
    storage: MemoryStorage,
    clock: SimulatedClock,
    target: HttpTarget,
) -> None:
    before = with_old_jobs(deployed(monkeypatch, storage, clock, 8), target)
    assert {e.shard for e in before.occurrence_entries()} - {"0000", "0001"}  # rows above the lowered count
    assert tick_and_scan(before) == [f"{s:04d}" for s in range(8)]
    assert recorded_shards(storage.stores) == 8

    after = deployed(monkeypatch, storage, clock, 2)
    for i in range(4):
        after.put_job(f"new{i}", job_body(FIRST, http_action(f"{target.base_url}/new{i}"), HOURLY))
    assert {job.due.shard for job in (after.job(f"new{i}") for i in range(4)) if job.due} <= {"0000", "0001"}

    for hour in range(2):  # each hourly occurrence, twice: the rows moved within their shards fire again
        clock.set(FIRST + timedelta(hours=hour) - timedelta(seconds=30))
        assert tick_and_scan(after) == [f"{s:04d}" for s in range(8)]  # the shards that still hold rows
        clock.set(FIRST + timedelta(hours=hour))
        expected = Counter([*(f"old{i:02d}" for i in range(16)), *(f"new{i}" for i in range(4))])
        assert fired(after) == expected, hour
    assert recorded_shards(storage.stores) == 8  # a lower setting never lowers the record
    assert len(target.received) == 2 * 20  # each occurrence called once


def test_raising_the_shard_count_records_it_before_a_scan_uses_it(
    monkeypatch: pytest.MonkeyPatch, memory_env: settings.Settings, storage: MemoryStorage, clock: SimulatedClock
) -> None:
    assert recorded_shards(storage.stores) is None  # a new deployment: it never ticked, nothing is recorded
    assert tick_and_scan(deployed(monkeypatch, storage, clock, 4)) == [f"{s:04d}" for s in range(4)]
    assert recorded_shards(storage.stores) == 4
    assert len(tick_and_scan(deployed(monkeypatch, storage, clock, 12))) == 12
    assert recorded_shards(storage.stores) == 12
    assert len(tick_and_scan(deployed(monkeypatch, storage, clock, 4))) == 12  # an instance still on the old one


def test_a_record_that_cannot_be_read_or_written_leaves_the_tick_to_the_setting(
    monkeypatch: pytest.MonkeyPatch, memory_env: settings.Settings, storage: MemoryStorage, clock: SimulatedClock
) -> None:
    deployment = deployed(monkeypatch, storage, clock, 6)
    storage.due.fail_next("put", StorageError("storage unreachable"))  # the record's write
    assert len(tick_and_scan(deployment)) == 6
    assert recorded_shards(storage.stores) is None  # not written: the next tick writes it
    assert len(tick_and_scan(deployment)) == 6
    assert recorded_shards(storage.stores) == 6
    storage.due.fail_next("due_before", StorageError("storage unreachable"))  # the record's read
    assert len(tick_and_scan(deployed(monkeypatch, storage, clock, 3))) == 3  # the setting, this once
    assert len(tick_and_scan(deployed(monkeypatch, storage, clock, 3))) == 6


def test_a_count_lowered_in_the_change_that_brings_the_record_loses_no_indexed_job(
    monkeypatch: pytest.MonkeyPatch,
    memory_env: settings.Settings,
    storage: MemoryStorage,
    clock: SimulatedClock,
    target: HttpTarget,
) -> None:
    before = with_old_jobs(deployed(monkeypatch, storage, clock, 8), target)  # from before the record: none made
    highest = max(int(e.shard) for e in before.occurrence_entries())
    storage.due.put(heartbeat_row(clock()))  # its ticks (before the record existed) wrote the heartbeat only
    assert highest >= 2 and recorded_shards(storage.stores) is None

    after = deployed(monkeypatch, storage, clock, 2)  # its first tick runs with the lowered count
    clock.set(FIRST - timedelta(seconds=30))
    assert tick_and_scan(after) == [f"{s:04d}" for s in range(highest + 1)]  # the shards that hold entries
    assert recorded_shards(storage.stores) == highest + 1
    clock.set(FIRST)
    assert fired(after) == Counter(f"old{i:02d}" for i in range(16))


def test_records_made_at_once_never_lower_the_count_and_an_absurd_one_is_bounded(
    memory_env: settings.Settings, storage: MemoryStorage, clock: SimulatedClock
) -> None:
    storage.due.put(shards_row(12, clock()))
    storage.due.put(shards_row(4, clock()))  # a tick with a lower setting recording at the same time
    assert recorded_shards(storage.stores) == 12
    storage.due.put(shards_row(50_000, clock()))
    assert recorded_shards(storage.stores) == MAX_SHARDS
