"""The due index of a region that takes the lease (docs/regions.md, "Takeover"), on the memory adapter with a
memory witness: taken from another region after copying from it, the index is cleared and built from the jobs
(each enabled job's first occurrence after its last run, or after the copy's margin), and until it is built the
region neither dispatches nor takes writes; re-acquiring its own lapsed lease, or never having copied, keeps it."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from scheduler_core import triggers, wiring
from scheduler_core.adapters.memory import SimulatedClock, memory_storage
from scheduler_core.adapters.memory.bookmarks import MemoryBookmarks
from scheduler_core.adapters.memory.witness import MemoryWitness
from scheduler_core.errors import StorageError
from scheduler_core.model import DueEntry, JobState
from scheduler_core.regions import LEASE, ReplicationState, Replicator, Takeover
from scheduler_core.regions import takeover as takeover_module
from scheduler_core.regions.replication import Row
from scheduler_core.regions.takeover import MARGIN
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from scheduler_core.storage.names import JOBS_TABLE
from tests.decisions.test_region_standby import KEY, call
from tests.support.harness import STANDARD, START
from tests.support.jobs import every, http_job
from tests.support.waiting import wait_until

COLLECTION = CollectionRef("sub", "rg", "jc")
MINUTELY = JobRef(COLLECTION, "minutely")
FRESH = JobRef(COLLECTION, "fresh")
OFF = JobRef(COLLECTION, "off")


def deployment(
    settings: Settings, clock: SimulatedClock, witness: MemoryWitness
) -> tuple[wiring.Services, MemoryBookmarks]:
    """Region ``a``'s deployment (installed as this process's) over ``witness``, with its records in memory."""
    from scheduler_core.auth.keys import hash_entry

    config = dataclasses.replace(settings, region_name="a", api_keys=hash_entry(KEY))
    bookmarks = MemoryBookmarks()
    services = wiring.build(
        config, clock=clock, sleep=clock.advance, storage=memory_storage(clock), witness=witness, bookmarks=bookmarks
    )
    wiring.install(services)
    return services, bookmarks


def entries(services: wiring.Services) -> dict[str, list[DueEntry]]:
    """The occurrence entries of the due index, by job row."""
    found: dict[str, list[DueEntry]] = {}
    for number in range(services.settings.due_shards):
        for entry in services.stores.due.due_before(f"{number:04d}", "~"):
            found.setdefault(entry.job_row, []).append(entry)
    return found


def write_jobs(services: wiring.Services) -> None:
    """Three jobs as the copy brings them: every minute from START, a second one (never run), one disabled."""
    service = services.service
    service.put_collection(COLLECTION, STANDARD)
    url = "http://target.example/hook"
    service.put_job(MINUTELY, http_job(url, START, every("Minute")))
    service.put_job(FRESH, http_job(url, START, every("Minute", 5)))
    service.put_job(OFF, http_job(url, START, every("Minute"), state="Disabled"))


def test_a_region_taking_the_lease_from_another_builds_its_due_index_from_the_jobs(memory_env: Settings) -> None:
    clock = SimulatedClock(START - timedelta(minutes=1))
    witness = MemoryWitness(clock)
    assert witness.acquire("b") == 1
    services, bookmarks = deployment(memory_env, clock, witness)
    write_jobs(services)  # their entries (at START) are from "earlier": stale once b has run them
    assert {row for row, found in entries(services).items() if found} == {MINUTELY.row_key, FRESH.row_key}

    # b ran the minutely job up to START+3; the copy of it arrived at START+4 (the newest stamp copied).
    clock.set(START + timedelta(minutes=4))
    job = services.stores.jobs.get(MINUTELY)
    assert job is not None
    services.stores.jobs.save(
        replace(job, last_execution_time=START + timedelta(minutes=3, seconds=1)), create=False, etag=job.etag
    )
    copied = ReplicationState({JOBS_TABLE: clock()}, swept_at=clock(), sweeps=1)
    bookmarks.set_replication(copied)

    clock.set(START + timedelta(minutes=6, seconds=30))  # b is gone: its lease has run out, a takes it
    assert services.region is not None and services.region.beat()
    assert not services.active()  # the index is not built: no dispatch, no write
    status, body = call(services, "PUT", f"{COLLECTION.resource_id}/jobs/another", http_job("http://t.example/x"))
    assert status == 409 and body["error"]["code"] == "RegionNotActive", body
    assert triggers.on_dispatch_tick() == services.settings.due_shards  # the tick builds it, then dispatches

    built = entries(services)
    since = START + timedelta(minutes=4) - MARGIN
    [minutely] = built[MINUTELY.row_key]
    assert minutely.due == START + timedelta(minutes=4)  # the first after its last run (START+3): late, not lost
    [fresh] = built[FRESH.row_key]
    assert fresh.due == _first_after(START, timedelta(minutes=5), since)  # never run: the first after the margin
    assert OFF.row_key not in built
    assert {entry.generation for entry in (minutely, fresh)} == {
        services.stores.jobs.get(ref).generation  # type: ignore[union-attr]
        for ref in (MINUTELY, FRESH)
    }
    assert services.active() and bookmarks.due_epoch() == 2
    assert bookmarks.replication() == ReplicationState()  # active: its next standby copy starts over
    status, body = call(services, "PUT", f"{COLLECTION.resource_id}/jobs/another", http_job("http://t.example/x"))
    assert status in (200, 201), body


def test_a_region_reacquiring_its_own_lapsed_lease_keeps_its_due_index(memory_env: Settings) -> None:
    clock = SimulatedClock(START - timedelta(minutes=1))
    witness = MemoryWitness(clock)
    services, bookmarks = deployment(memory_env, clock, witness)
    assert services.region is not None and services.region.beat()
    assert triggers.on_dispatch_tick() > 0 and bookmarks.due_epoch() == 1  # never copied: kept as it is
    write_jobs(services)
    bookmarks.set_replication(ReplicationState({JOBS_TABLE: clock()}, swept_at=clock(), sweeps=1))
    before = entries(services)

    clock.advance(LEASE.total_seconds() + 1)  # its lease ran out; another instance of a takes it again
    assert witness.acquire("a") == 2
    assert services.region.beat() and services.region.state().epoch == 2
    assert not services.active()  # not yet recorded for epoch 2
    assert triggers.on_dispatch_tick() > 0
    assert services.active()  # epoch 1 was its own: nothing built
    assert entries(services) == before and bookmarks.due_epoch() == 2


def test_an_epoch_of_another_region_in_between_makes_the_index_stale(memory_env: Settings) -> None:
    clock = SimulatedClock(START - timedelta(minutes=1))
    witness = MemoryWitness(clock)
    services, bookmarks = deployment(memory_env, clock, witness)
    write_jobs(services)
    bookmarks.set_due_epoch(1)  # a was active in epoch 1
    job = services.stores.jobs.get(MINUTELY)
    assert job is not None
    services.stores.jobs.save(replace(job, state=JobState.DISABLED), create=False, etag=job.etag)  # b disabled it
    bookmarks.set_replication(ReplicationState({JOBS_TABLE: clock()}, swept_at=clock(), sweeps=3))
    assert witness.acquire("b") == 1 and witness.acquire("b") is None
    witness.release("b", 1)
    assert witness.acquire("b") == 2  # b held epoch 2
    witness.release("b", 2)

    assert services.region is not None and services.region.beat() and services.region.state().epoch == 3
    assert triggers.on_region_beat()  # the beat that finds the index not built has it built, aside
    wait_until(services.active, timeout=10, what="the index built on the takeover's thread")
    assert MINUTELY.row_key not in entries(services)  # disabled in the copy: its stale entry went
    assert bookmarks.due_epoch() == 3


def _first_after(start: datetime, step: timedelta, instant: datetime) -> datetime:
    when = start
    while when <= instant:
        when += step
    return when


class EmptyReplica:
    """Test double of a region's replicated tables (``Replica``): empty, answering (``gone``: out of reach)."""

    def __init__(self, gone: bool = False) -> None:
        self.gone = gone

    def _reach(self) -> None:
        if self.gone:
            raise StorageError("the other region's storage is out of reach")

    def changed(self, table: str, since: datetime | None) -> Iterator[Row]:
        self._reach()
        return iter(())

    def keys(self, table: str) -> set[tuple[str, str]]:
        self._reach()
        return set()

    def put(self, table: str, rows: Iterable[Row]) -> None:
        self._reach()

    def delete(self, table: str, keys: Iterable[tuple[str, str]]) -> None:
        self._reach()


def handing_back(settings: Settings, peer: EmptyReplica) -> tuple[wiring.Services, SimulatedClock, MemoryWitness]:
    """Region ``a`` (active in epoch 1, its index stale after b's epoch 2) about to take epoch 3, its standby copy
    made by a replicator over ``peer``; the takeover's wait measured on the simulated clock."""
    clock = SimulatedClock(START - timedelta(minutes=1))
    witness = MemoryWitness(clock)
    services, bookmarks = deployment(settings, clock, witness)
    write_jobs(services)
    bookmarks.set_due_epoch(1)
    bookmarks.set_replication(ReplicationState({JOBS_TABLE: clock()}, swept_at=clock(), sweeps=3))
    assert services.takeover is not None
    replicator = Replicator(peer, EmptyReplica(), bookmarks, clock)
    services = dataclasses.replace(
        services,
        replicator=replicator,
        takeover=Takeover(services.stores, bookmarks, services.settings.due_shards, clock, replicator),
    )
    wiring.install(services)
    for _ in range(2):
        epoch = witness.acquire("b")
        assert epoch is not None
        witness.release("b", epoch)
    assert services.region is not None and services.region.beat() and services.region.state().epoch == 3
    return services, clock, witness


def test_a_hand_back_builds_the_index_only_once_the_other_region_has_run_what_it_dispatched(
    memory_env: Settings,
) -> None:
    services, clock, _ = handing_back(memory_env, EmptyReplica())
    assert services.takeover is not None
    wait = services.takeover.handover
    assert wait == timedelta(seconds=45)  # fence 40 s - lease 60 s + lookahead 60 s + 5 s for the counters
    assert triggers.on_dispatch_tick() == 0 and not services.active()  # the other region answers: wait
    clock.advance(wait.total_seconds() - 1)
    assert triggers.on_dispatch_tick() == 0 and not services.active()
    clock.advance(1)
    assert triggers.on_dispatch_tick() > 0 and services.active()  # built from the copy made now
    assert MINUTELY.row_key in entries(services)


def test_a_takeover_from_a_region_out_of_reach_builds_the_index_at_once(memory_env: Settings) -> None:
    services, _, _ = handing_back(memory_env, EmptyReplica(gone=True))
    assert triggers.on_dispatch_tick() == services.settings.due_shards and services.active()


def test_two_takeovers_at_once_build_the_index_once(memory_env: Settings) -> None:
    services, _, _ = handing_back(memory_env, EmptyReplica(gone=True))
    takeover = services.takeover
    assert takeover is not None and services.region is not None
    epoch = services.region.state().epoch
    builds: list[datetime] = []
    both_checked = threading.Barrier(2)
    real_rebuild, real_ready = takeover.rebuild, takeover.ready

    def slow_rebuild(since: datetime) -> int:
        builds.append(since)
        time.sleep(0.2)  # the other caller waits on the lock meanwhile
        return real_rebuild(since)

    def ready_then_wait(epoch: int | None) -> bool:
        found = real_ready(epoch)
        both_checked.wait(timeout=5)  # both callers found it not built before either takes the lock
        return found

    takeover.rebuild = slow_rebuild  # type: ignore[method-assign]
    takeover.ready = ready_then_wait  # type: ignore[method-assign]
    callers = [threading.Thread(target=takeover.prepare, args=(epoch,)) for _ in range(2)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(timeout=10)
    assert len(builds) == 1  # the tick and the beat's thread: one build, never one clearing what the other built


def test_a_standby_copies_only_while_the_other_region_holds_the_lease(memory_env: Settings) -> None:
    clock = SimulatedClock(START)
    witness = MemoryWitness(clock)
    services, bookmarks = deployment(memory_env, clock, witness)
    services = dataclasses.replace(services, replicator=Replicator(EmptyReplica(), EmptyReplica(), bookmarks, clock))
    wiring.install(services)
    assert witness.acquire("b") == 1
    witness.release("b", 1)
    witness.set_demoted("a", True)  # a stays standby; no one holds the lease (b handing back, say)
    assert services.region is not None and not services.region.beat()
    assert triggers.on_region_replicate() is None and bookmarks.replication().sweeps == 0  # no source to copy
    assert witness.acquire("b") == 2
    services.region.beat()
    assert triggers.on_region_replicate() == 0 and bookmarks.replication().sweeps == 1  # b holds it: a copies


def test_a_job_that_cannot_be_scheduled_is_logged_and_does_not_stop_the_takeover(
    memory_env: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    services, _, _ = handing_back(memory_env, EmptyReplica(gone=True))
    real = takeover_module.definition_schedule

    def failing_for_fresh(definition: Any, defined_at: datetime, key: str) -> Any:
        if key == FRESH.identity:
            raise ValueError("a row this version cannot schedule")
        return real(definition, defined_at, key)

    monkeypatch.setattr(takeover_module, "definition_schedule", failing_for_fresh)
    assert triggers.on_dispatch_tick() == services.settings.due_shards and services.active()
    built = entries(services)
    assert MINUTELY.row_key in built and FRESH.row_key not in built
    assert any(FRESH.identity in record.getMessage() for record in caplog.records if record.levelname == "ERROR")
