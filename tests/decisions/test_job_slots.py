"""The job counter of collections (``job_slots.py``, :class:`JobSlots`): reservations, group commit,
slots reserved ahead, "full" answered from a fresh read only, and the repair from an exact count.

Two :class:`SchedulerService` objects over the same stores stand for two instances of the app (each with
its own cache of the counter and its own slots reserved ahead)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta

import pytest

from scheduler_core import job_slots
from scheduler_core.adapters.memory import MemoryCollections, MemoryStorage, SimulatedClock, memory_storage
from scheduler_core.errors import QuotaExceededError, StorageError
from scheduler_core.job_slots import JobSlots
from scheduler_core.model import JobCollection
from scheduler_core.ports import Clock, Stores
from scheduler_core.service import SchedulerService
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.harness import START
from tests.support.jobs import http_action, job_body

COLLECTION = CollectionRef("sub", "rg", "jc")
BODY = job_body(START + timedelta(hours=1), http_action("http://127.0.0.1:9/"), {"frequency": "Hour", "interval": 1})


class CountingCollections(MemoryCollections):
    """The in-memory collection store, counting its job-counter writes, and able to hold the next one
    in flight until told to go on."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        self.writes = 0
        self.held = threading.Event()
        self._gate: threading.Event | None = None
        self._counting = threading.Lock()

    def set_job_count(self, record: JobCollection, count: int) -> JobCollection:
        with self._counting:
            self.writes += 1
            gate, self._gate = self._gate, None
        if gate is not None:
            self.held.set()
            assert gate.wait(10), "the held counter write was never let go"
        return super().set_job_count(record, count)

    def hold_next_write(self) -> threading.Event:
        """Hold the next counter write until the returned event is set (``held`` is set once it waits)."""
        gate = threading.Event()
        with self._counting:
            self._gate = gate
        return gate


@dataclass
class Instances:
    """A deployment's stores with two service instances over them."""

    clock: SimulatedClock
    storage: MemoryStorage
    collections: CountingCollections
    first: SchedulerService
    second: SchedulerService

    def counter(self) -> int | None:
        record = self.collections.get(COLLECTION)
        assert record is not None
        return record.job_count

    def jobs(self) -> int:
        return self.storage.jobs.count(COLLECTION)


def instance(stores: Stores, clock: Clock) -> SchedulerService:
    return SchedulerService(stores, 4, clock=clock, sleep=lambda _seconds: None)


@pytest.fixture
def instances(clock: SimulatedClock, monkeypatch: pytest.MonkeyPatch) -> Instances:
    # Slots reserved ahead are kept for PREFETCH_TTL real seconds: long enough for a test, unless it says.
    monkeypatch.setattr(job_slots, "PREFETCH_TTL", 60.0)
    storage = memory_storage(clock)
    counting = CountingCollections(clock)  # in place of the storage's own collection store
    stores = Stores(counting, storage.jobs, storage.due, storage.history)
    return Instances(clock, storage, counting, instance(stores, clock), instance(stores, clock))


def create_collection(instances: Instances, max_jobs: int) -> None:
    body = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}, "quota": {"maxJobCount": max_jobs}}}
    instances.first.put_collection(COLLECTION, body)
    instances.collections.writes = 0


def create(service: SchedulerService, name: str) -> bool:
    """Whether ``service`` created the job (False: the collection is full)."""
    try:
        _, created = service.put_job(JobRef(COLLECTION, name), BODY)
    except QuotaExceededError:
        return False
    assert created
    return True


# ------------------------------------------------------------------------------------ reserve, release


def test_slots_are_reserved_up_to_the_limit_and_released(instances: Instances) -> None:
    create_collection(instances, 3)
    record = instances.collections.get(COLLECTION)
    assert record is not None
    slots = JobSlots(instances.first.stores, instances.clock)

    assert [slots.reserve(record) for _ in range(4)] == [True, True, True, False]
    assert instances.counter() == 3
    slots.release(COLLECTION)
    assert instances.counter() == 2
    assert slots.reserve(record) is True
    assert instances.counter() == 3


def test_a_reservation_against_a_collection_changed_meanwhile_asks_for_a_fresh_read(instances: Instances) -> None:
    create_collection(instances, 3)
    record = instances.collections.get(COLLECTION)
    assert record is not None
    instances.second.patch_collection(COLLECTION, {"properties": {"quota": {"maxJobCount": 2}}})
    slots = JobSlots(instances.first.stores, instances.clock)

    assert slots.reserve(record) is None  # validated against the old quota
    assert instances.counter() == 0


def test_creates_and_deletes_keep_the_counter_equal_to_the_jobs(instances: Instances) -> None:
    create_collection(instances, 5)
    for i in range(5):
        assert create(instances.first if i % 2 else instances.second, f"j{i}")
    assert not create(instances.first, "j5")
    assert not create(instances.second, "j5")
    instances.second.delete_job(JobRef(COLLECTION, "j0"))
    assert (instances.jobs(), instances.counter()) == (4, 4)
    assert create(instances.first, "j5")
    assert (instances.jobs(), instances.counter()) == (5, 5)


# --------------------------------------------------------------------------------------- group commit


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.002)


def test_concurrent_creates_share_one_counter_write(instances: Instances) -> None:
    create_collection(instances, 8)  # no slots are reserved ahead this near the limit
    service = instances.first
    results: dict[str, bool] = {}

    def run(name: str) -> threading.Thread:
        thread = threading.Thread(target=lambda: results.__setitem__(name, create(service, name)))
        thread.start()
        return thread

    go = instances.collections.hold_next_write()
    threads = [run("first")]
    assert instances.collections.held.wait(10)  # the first create's write is in flight...
    threads += [run(f"joined{i}") for i in range(4)]  # ...while four more arrive
    # They form the next round: one of them waits for the write in flight, three wait for it.
    rounds = service.slots._rounds
    wait_until(lambda: COLLECTION.identity in rounds and rounds[COLLECTION.identity].members == 4, "the round")
    go.set()
    for thread in threads:
        thread.join(timeout=10)

    assert results == dict.fromkeys(("first", "joined0", "joined1", "joined2", "joined3"), True)
    assert instances.collections.writes == 2  # one for the first create, one for the four that joined
    assert (instances.jobs(), instances.counter()) == (5, 5)


def test_a_round_larger_than_the_room_left_gets_only_the_room(instances: Instances) -> None:
    create_collection(instances, 3)
    results: list[bool] = []
    go = instances.collections.hold_next_write()
    threads = [threading.Thread(target=lambda i=i: results.append(create(instances.first, f"j{i}"))) for i in range(5)]
    threads[0].start()
    assert instances.collections.held.wait(10)
    for thread in threads[1:]:
        thread.start()
    rounds = instances.first.slots._rounds
    wait_until(lambda: COLLECTION.identity in rounds and rounds[COLLECTION.identity].members == 4, "the round")
    go.set()
    for thread in threads:
        thread.join(timeout=10)

    assert sorted(results) == [False, False, True, True, True]
    assert (instances.jobs(), instances.counter()) == (3, 3)


# ------------------------------------------------------------------------------------------- prefetch


@pytest.mark.parametrize(
    ("max_jobs", "counter"),
    [
        (8, 1),  # 7 left after this create: fewer than PREFETCH_MIN_ROOM, none ahead
        (9, 3),  # 8 left: a quarter of them (2) ahead
        (21, 6),  # 20 left: 5 ahead
        (1000, 17),  # ample: PREFETCH (16) ahead
    ],
)
def test_slots_are_reserved_ahead_only_while_room_is_ample(instances: Instances, max_jobs: int, counter: int) -> None:
    create_collection(instances, max_jobs)
    assert create(instances.first, "j0")
    assert instances.counter() == counter
    assert instances.collections.writes == 1


def test_creates_use_slots_reserved_ahead_without_a_write(instances: Instances) -> None:
    create_collection(instances, 1000)
    for i in range(1 + job_slots.PREFETCH):
        assert create(instances.first, f"j{i}")
    assert instances.collections.writes == 1  # one write took 1 + 16 slots
    assert create(instances.first, "one-more")
    assert instances.collections.writes == 2
    assert instances.counter() == 2 * (1 + job_slots.PREFETCH)


def test_slots_reserved_ahead_are_given_back_when_the_instance_changes_the_collection(instances: Instances) -> None:
    create_collection(instances, 1000)
    assert create(instances.first, "j0")
    assert instances.counter() == 1 + job_slots.PREFETCH
    instances.first.patch_collection(COLLECTION, {"tags": {"k": "v"}})
    assert instances.counter() == 1


def test_unused_slots_reserved_ahead_expire_and_are_given_back(
    instances: Instances, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(job_slots, "PREFETCH_TTL", 0.05)
    create_collection(instances, 1000)
    assert create(instances.first, "j0")
    wait_until(lambda: instances.counter() == 1, "the unused slots to be given back")
    assert instances.jobs() == 1


def test_slots_reserved_ahead_are_given_back_at_once_on_request_and_not_again_when_they_expire(
    instances: Instances, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(job_slots, "PREFETCH_TTL", 0.05)
    create_collection(instances, 1000)
    other = CollectionRef("sub", "rg", "other")
    instances.first.put_collection(other, {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}})
    assert create(instances.first, "j0") and create(instances.first, "j1")
    instances.first.put_job(JobRef(other, "k0"), BODY)
    assert instances.counter() == 1 + job_slots.PREFETCH
    instances.first.slots.give_back_ahead()
    assert instances.counter() == 2  # the 15 unused, at once
    settled = instances.collections.get(other)
    assert settled is not None and settled.job_count == 1  # every collection's
    writes = instances.collections.writes
    time.sleep(0.2)  # past the expiry: the timers find nothing left to give back
    assert instances.collections.writes == writes and instances.counter() == 2
    assert create(instances.first, "j2") and instances.counter() == 3 + job_slots.PREFETCH  # reserved ahead again


def test_slots_given_back_while_creates_race_leave_the_counter_equal_to_the_jobs(instances: Instances) -> None:
    create_collection(instances, 1000)
    stop = threading.Event()

    def give_back_again_and_again() -> None:
        while not stop.is_set():
            instances.first.slots.give_back_ahead()

    def create_five(worker: int) -> None:
        for i in range(5):
            assert create(instances.first, f"w{worker}-{i}")

    giver = threading.Thread(target=give_back_again_and_again)
    creators = [threading.Thread(target=create_five, args=(worker,)) for worker in range(8)]
    giver.start()
    for thread in creators:
        thread.start()
    for thread in creators:
        thread.join(timeout=30)
    stop.set()
    giver.join(timeout=10)
    instances.first.slots.give_back_ahead()
    assert (instances.jobs(), instances.counter()) == (40, 40)  # no slot given back twice, none kept


def test_no_slots_are_reserved_ahead_near_the_limit(instances: Instances) -> None:
    create_collection(instances, 5)
    for i in range(5):
        assert create(instances.first, f"j{i}")
        assert instances.counter() == i + 1
    assert instances.collections.writes == 5
    assert not create(instances.second, "j5")


# ------------------------------------------------------------------------------------ full, and repair


def test_full_is_answered_only_from_a_fresh_read(instances: Instances) -> None:
    create_collection(instances, 2)
    assert create(instances.first, "a")
    assert create(instances.first, "b")  # the first instance now holds the counter at 2: full
    instances.second.delete_job(JobRef(COLLECTION, "a"))  # another instance frees a slot

    assert create(instances.first, "c")  # its cached "full" is read again before it is believed
    assert not create(instances.first, "d")
    assert (instances.jobs(), instances.counter()) == (2, 2)


def lose_a_reservation(instances: Instances, name: str) -> None:
    """A create whose job write fails in a way that may have landed, and cannot be read to tell: its
    slot stays taken (the job is not there)."""
    instances.storage.jobs.fail_next("save", StorageError("connection reset"))
    instances.storage.jobs.fail_next("get", StorageError("connection reset"))
    with pytest.raises(StorageError):
        instances.first.put_job(JobRef(COLLECTION, name), BODY)


def test_a_counter_left_too_high_is_repaired_from_an_exact_count_once_quiet(instances: Instances) -> None:
    create_collection(instances, 3)
    assert create(instances.first, "a")
    lose_a_reservation(instances, "lost1")
    lose_a_reservation(instances, "lost2")
    assert (instances.jobs(), instances.counter()) == (1, 3)

    # Written just now: a reservation may be in flight, so the counter is believed.
    assert not create(instances.second, "b")
    assert instances.counter() == 3

    instances.clock.advance(job_slots.COUNTER_SETTLE + timedelta(seconds=1))
    assert create(instances.second, "b")  # quiet: counted (1 job), repaired, and the slot taken
    assert (instances.jobs(), instances.counter()) == (2, 2)


def test_an_unknown_counter_is_counted(instances: Instances) -> None:
    create_collection(instances, 3)
    assert create(instances.first, "a")
    record = instances.collections.get(COLLECTION)
    assert record is not None
    instances.collections.save(replace(record, job_count=None), create=False)

    assert create(instances.second, "b")  # at once: no need to wait for the counter to be quiet
    assert (instances.jobs(), instances.counter()) == (2, 2)
