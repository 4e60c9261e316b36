"""What only the in-memory adapter has: its fault seam, its queue in simulated time, its clock, and its
wiring (``memory_storage``). The rules it shares with the Azure adapter are the rest of this suite."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core.adapters.memory import MemoryQueue, QueuedMessage, SimulatedClock, memory_storage
from scheduler_core.errors import EtagMismatchError, StorageError
from scheduler_core.job_slots import subtract_jobs
from scheduler_core.ports import ExecutionQueue
from tests.contract.records import COLLECTION, JOB, T0, collection, due_entry, history_entry, job

START = datetime(2030, 1, 1, tzinfo=UTC)


# ------------------------------------------------------------------------------------------- fault seam


def test_a_fault_fails_the_next_call_without_touching_the_store() -> None:
    storage = memory_storage()
    storage.jobs.fail_next("save", StorageError("storage could not be reached (ConnectionError)"))
    with pytest.raises(StorageError):
        storage.jobs.save(job(), create=True)
    assert storage.jobs.get(JOB) is None
    storage.jobs.save(job(), create=True)  # used up: the next call goes through
    assert storage.jobs.get(JOB) is not None


def test_a_landed_fault_takes_effect_then_raises_as_a_lost_answer() -> None:
    storage = memory_storage()
    storage.collections.fail_next("save", StorageError("timed out", None), landed=True)
    with pytest.raises(StorageError):
        storage.collections.save(collection(), create=True)
    assert storage.collections.get(COLLECTION) is not None


def test_faults_are_used_up_in_the_order_they_were_set() -> None:
    storage = memory_storage()
    storage.due.fail_next("put", StorageError("503", 503), times=2)
    storage.due.fail_next("put", EtagMismatchError("raced"))
    raised: list[type[BaseException]] = []
    for _ in range(4):
        try:
            storage.due.put(due_entry(T0))
        except Exception as error:
            raised.append(type(error))
    assert raised == [StorageError, StorageError, EtagMismatchError]
    assert len(list(storage.due.due_before("0001", "~"))) == 1


def test_a_generator_method_fails_when_iterated() -> None:
    storage = memory_storage()
    storage.history.add(JOB, history_entry(T0))
    storage.history.fail_next("list", StorageError("down"))
    entries = storage.history.list(JOB)
    with pytest.raises(StorageError):
        next(entries)
    assert len(list(storage.history.list(JOB))) == 1


def test_a_fault_on_an_inner_call_is_met_by_the_outer_one() -> None:
    storage = memory_storage()
    storage.collections.save(collection(job_count=3), create=True)
    storage.collections.fail_next("set_job_count", EtagMismatchError("raced"), times=2)
    assert subtract_jobs(storage.collections, COLLECTION, 1, attempts=2) is False
    assert subtract_jobs(storage.collections, COLLECTION, 1) is True
    got = storage.collections.get(COLLECTION)
    assert got is not None and got.job_count == 2


def test_clear_faults_forgets_pending_faults_and_unknown_methods_are_refused() -> None:
    storage = memory_storage()
    storage.claims.fail_next("claim", StorageError("down"))
    storage.executions.fail_next("send", StorageError("down"))
    storage.clear_faults()
    storage.claims.claim("p", "r", "w", T0, timedelta(minutes=2))
    storage.executions.send("text")
    for name in ("nope", "_rows", "fail_next", "receive"):
        with pytest.raises(ValueError, match="can be made to fail"):
            storage.executions.fail_next(name, StorageError("x"))


# ------------------------------------------------------------------------------------------------ queue


def test_the_queue_gives_messages_once_they_are_visible() -> None:
    clock = SimulatedClock(START)
    queue = MemoryQueue(clock)
    send: ExecutionQueue = queue  # the port: called with (text, visibility)
    send("later", 30)
    queue.send("now")
    send("soon", 10)
    assert [m.text for m in queue.peek()] == ["later", "now", "soon"]
    assert queue.receive() == [QueuedMessage("now", START, START)]
    assert queue.next_visible_at() == START + timedelta(seconds=10)
    clock.advance(30)
    assert [m.text for m in queue.receive(max_messages=1)] == ["soon"]
    assert [(m.text, m.visible_at) for m in queue.receive()] == [("later", START + timedelta(seconds=30))]
    assert len(queue) == 0 and queue.next_visible_at() is None and queue.receive() == []


def test_the_queue_receives_as_of_a_given_instant_in_send_order_among_equals() -> None:
    queue = MemoryQueue(SimulatedClock(START))
    for text in ("a", "b", "c"):
        queue.send(text, 5)
    assert queue.receive(at=START + timedelta(seconds=4)) == []
    assert [m.text for m in queue.receive(at=START + timedelta(seconds=5))] == ["a", "b", "c"]


def test_the_queue_refuses_a_visibility_azure_refuses() -> None:
    queue = MemoryQueue(SimulatedClock(START))
    for visibility in (-1, 7 * 24 * 3600 + 1):
        with pytest.raises(StorageError) as raised:
            queue.send("x", visibility)
        assert raised.value.storage_status == 400
    assert len(queue) == 0


# ------------------------------------------------------------------------------------------------ clock


def test_the_simulated_clock_moves_only_when_told() -> None:
    clock = SimulatedClock(START)
    assert clock() == clock() == clock.now == START
    clock.advance(1.5)
    clock.advance(timedelta(minutes=1))
    assert clock() == START + timedelta(seconds=61.5)
    clock.set(START + timedelta(hours=1))
    assert clock.now == START + timedelta(hours=1)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="backwards"):
        clock.set(START)
    stepping = SimulatedClock(START, step=timedelta(milliseconds=1))
    assert (stepping(), stepping()) == (START + timedelta(milliseconds=1), START + timedelta(milliseconds=2))


# ----------------------------------------------------------------------------------------------- wiring


def test_memory_storage_wires_one_deployment_on_one_clock() -> None:
    clock = SimulatedClock(START)
    storage = memory_storage(clock)
    assert storage.stores.jobs is storage.jobs and storage.stores.due is storage.due
    assert storage.stores.collections is storage.collections and storage.stores.history is storage.history
    assert storage.scans is not storage.executions
    clock.advance(5)
    storage.due.put(due_entry(T0))
    storage.collections.save(collection(), create=True)
    [entry] = storage.due.due_before("0001", "~")
    got = storage.collections.get(COLLECTION)
    assert entry.written_at == START + timedelta(seconds=5)
    assert got is not None and got.modified_at == START + timedelta(seconds=5)
    assert memory_storage().clock() == START  # the default clock


def test_the_memory_adapter_loads_no_azure_sdk() -> None:
    code = (
        "import sys, scheduler_core.adapters.memory\n"
        "print(sorted(m for m in sys.modules if m == 'azure' or m.startswith(('azure.', 'requests'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
