"""Small builders for the decision tests: one deployment on the memory adapter in simulated time.

:class:`Deployment` wires the real services the way the app does (``wiring.build``) over
``memory_storage(clock)``: the stores are the in-memory adapter (held to the Azure adapter's rules by the
contract suite in ``tests/contract``), the execution queue is its :class:`MemoryQueue`, time is a
:class:`SimulatedClock` that moves only when a test moves it (and waits of the service and the executor
pass in it), and actions are sent by the real runner to :func:`tests.support.http_target.http_target`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core import wiring
from scheduler_core.adapters.memory import MemoryStorage, QueuedMessage, SimulatedClock, memory_storage
from scheduler_core.model import WATCH, DueEntry, Job
from scheduler_core.pipeline.dispatch import Dispatcher, ScanReport
from scheduler_core.pipeline.execute import ExecutionReport, Executor
from scheduler_core.pipeline.messages import ExecutionMessage, ScanMessage
from scheduler_core.service import SchedulerService
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.http_target import HttpTarget, http_target
from tests.support.jobs import NO_RETRY, fixed_retries, http_action, job_body

__all__ = ["NO_RETRY", "fixed_retries", "http_action", "job_body"]

#: Where simulated time starts: a whole hour near the real time (job definitions are validated against the
#: real clock: a start time may be at most 18 months ahead of it).
START = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=2)
COLLECTION = CollectionRef("sub1", "rg1", "jc1")
#: The collection of a deployment: Standard, with a quota small enough that no job slots are reserved ahead
#: (``service/slots.py``), so its job counter is the number of its jobs.
STANDARD = {"location": "westus", "properties": {"sku": {"name": "Standard"}, "quota": {"maxJobCount": 8}}}


def parsed(messages: list[QueuedMessage]) -> list[ExecutionMessage]:
    return [ExecutionMessage.from_json(message.text) for message in messages]


@dataclass
class Deployment:
    """One deployment of the app on the memory adapter, with a Standard collection :data:`COLLECTION`."""

    settings: Settings
    clock: SimulatedClock
    storage: MemoryStorage
    services: wiring.Services

    @property
    def service(self) -> SchedulerService:
        return self.services.service

    @property
    def dispatcher(self) -> Dispatcher:
        return self.services.dispatcher

    @property
    def executor(self) -> Executor:
        return self.services.executor

    def executor_named(self, worker: str) -> Executor:
        """Another worker over the same deployment (its own name, the same stores, queue and runner)."""
        mine = self.executor
        return Executor(mine.stores, mine.claims, mine.runner, mine.attempts, mine.clock, worker, mine.sleep)

    # ------------------------------------------------------------------------------------------- jobs

    def ref(self, name: str) -> JobRef:
        return JobRef(COLLECTION, name)

    def put_job(self, name: str, body: dict[str, Any]) -> Job:
        job, _ = self.service.put_job(self.ref(name), body)
        return job

    def job(self, name: str) -> Job:
        """The job as stored (fails when it is not)."""
        stored = self.storage.jobs.get(self.ref(name))
        assert stored is not None, f"job {name} is not stored"
        return stored

    def history(self, name: str) -> list[Any]:
        return list(self.storage.history.list(self.ref(name)))

    # ------------------------------------------------------------------------------------- due index

    def due_entries(self) -> list[DueEntry]:
        """Every due-index entry, of every shard, in key order."""
        return [
            entry
            for shard in range(self.settings.due_shards)
            for entry in self.storage.due.due_before(f"{shard:04d}", "~")
        ]

    def occurrence_entries(self) -> list[DueEntry]:
        return [entry for entry in self.due_entries() if entry.kind != WATCH and entry.message is None]

    def watch_entries(self) -> list[DueEntry]:
        return [entry for entry in self.due_entries() if entry.kind == WATCH]

    def scan(self) -> ScanReport:
        """Scan every shard now; the counts of the shards' reports added up."""
        total = ScanReport("all")
        now = self.clock()
        for shard in range(self.settings.due_shards):
            report = self.dispatcher.scan(f"{shard:04d}", now)
            total.fired += report.fired
            total.coalesced += report.coalesced
            total.stale += report.stale
            total.retries += report.retries
            total.rescued += report.rescued
        return total

    # ----------------------------------------------------------------------------------------- queue

    def queued(self) -> list[QueuedMessage]:
        """The execution messages not yet received, visible or not (nothing is taken)."""
        return self.storage.executions.peek()

    def take(self) -> list[ExecutionMessage]:
        """Take the execution messages visible now."""
        return parsed(self.storage.executions.receive())

    def deliver(self) -> list[ExecutionReport]:
        """Run every message visible now, in order, on this deployment's worker."""
        return [self.executor.execute(message) for message in self.take()]

    def look_now(self) -> ScanReport:
        """A watch look of every shard now (what the look of a slot does when it runs); the counts added up."""
        total = ScanReport("all")
        for shard in range(self.settings.due_shards):
            report = self.dispatcher.look(f"{shard:04d}", self.clock())
            total.rescued += report.rescued
        return total

    def look(self) -> ScanReport:
        """Run the scan-queue messages visible now (watch looks, and scans handed on); their counts added up."""
        total = ScanReport("all")
        for queued in self.storage.scans.receive():
            report = self.dispatcher.scan_message(ScanMessage.from_json(queued.text), self.clock())
            total.fired += report.fired
            total.rescued += report.rescued
        return total

    def run_until(self, end: datetime, tick: timedelta = timedelta(seconds=60)) -> list[ExecutionReport]:
        """Let simulated time pass up to ``end``: a scan of every shard each ``tick`` (from now), each
        execution and scan-queue message (watch looks) run when it becomes visible."""
        reports: list[ExecutionReport] = []
        next_tick = self.clock.now
        while self.clock.now < end:
            visible = [self.storage.executions.next_visible_at(), self.storage.scans.next_visible_at()]
            self.clock.set(max(self.clock.now, min(t for t in (*visible, next_tick, end) if t is not None)))
            if self.clock.now >= next_tick:
                self.scan()
                next_tick += tick
            self.look()
            reports += self.deliver()
        return reports

    def fire_at(self, due: datetime) -> ExecutionMessage:
        """Move time to ``due`` and take the one execution message visible then."""
        self.clock.set(due)
        [message] = self.take()
        return message


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock(START)


@pytest.fixture
def deployment(memory_env: Settings, clock: SimulatedClock) -> Deployment:
    storage = memory_storage(clock)
    services = wiring.build(memory_env, clock=clock, sleep=clock.advance, storage=storage)
    services.service.put_collection(COLLECTION, STANDARD)
    return Deployment(memory_env, clock, storage, services)


@pytest.fixture(scope="session")
def http_server() -> Iterator[HttpTarget]:
    """One real HTTP server for the session (stopping one takes half a second: its polling interval)."""
    with http_target() as server:
        yield server


@pytest.fixture
def target(http_server: HttpTarget) -> HttpTarget:
    """A real HTTP server on 127.0.0.1 that records what it receives and answers 200 unless told otherwise;
    nothing received before this test is kept."""
    http_server.answer([200])
    with http_server.lock:
        http_server.received.clear()
    return http_server
