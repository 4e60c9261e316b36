"""One deployment of the app in simulated time: the harness of the decision, policy and pipeline tests.

:class:`Deployment` wires the real services the way the app does (``wiring.build``) and installs them as the
process's (the function app's triggers use them): the real service, dispatcher and executor, actions sent by
the real runner (or one a test gives) to real targets. Time is the memory adapter's :class:`SimulatedClock`,
which moves only when a test moves it (the waits of the service and the executor pass in it), and the
execution queue is the memory adapter's :class:`MemoryQueue`, which keeps each message with the instant it
becomes visible: simulated minutes pass in milliseconds.

* :meth:`Deployment.on_memory`: the stores (and the scan queue) are the memory adapter's too, held to the
  Azure adapter's rules by the contract suite in ``tests/contract``. The default: every test that is not
  about Azure storage itself.
* :meth:`Deployment.on_azurite`: the stores, scan and cleanup queues are the Azure adapter's on the session's
  Azurite (provisioned first), for tests of Azure table behaviour or whose other processes share the storage.

Simulated time starts at :data:`START` for the decision tests, with the collection :data:`COLLECTION`;
:func:`near_now` makes the pipeline tests' deployment: the collection :data:`JC`, simulated time from just
past a whole minute of the real clock (:func:`next_minute`) on a :func:`ticking` clock, which also moves a
millisecond on every reading, as real time moves while code runs.

A test moves time and the work with :meth:`Deployment.run_until` (a scan of every shard each tick, every
message run at the instant it becomes visible), or step by step: :meth:`~Deployment.scan`,
:meth:`~Deployment.take`, :meth:`~Deployment.deliver`, :meth:`~Deployment.look`, ``clock.set``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_core import wiring
from scheduler_core.actions import ActionRunner
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.memory import MemoryQueue, MemoryStorage, QueuedMessage, SimulatedClock, memory_storage
from scheduler_core.model import CLAIM_LEASE, WATCH, DueEntry, Job
from scheduler_core.pipeline.dispatch import Dispatcher, ScanReport
from scheduler_core.pipeline.execute import ExecutionReport, Executor
from scheduler_core.pipeline.messages import ExecutionMessage, ScanMessage
from scheduler_core.ports import Stores
from scheduler_core.service import SchedulerService
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef

#: Where simulated time starts by default: a whole hour near the real time (job definitions are validated
#: against the real clock: a start time may be at most 18 months ahead of it).
START = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=2)
#: The collection of a deployment by default: Standard, with a quota small enough that no job slots are
#: reserved ahead (``service/slots.py``), so its job counter is the number of its jobs.
COLLECTION = CollectionRef("sub1", "rg1", "jc1")
STANDARD = {"location": "westus", "properties": {"sku": {"name": "Standard"}, "quota": {"maxJobCount": 8}}}
#: The collection of the pipeline tests: Standard, with the plan's own quota.
JC = CollectionRef("sub1", "rg", "jc")
STANDARD_PLAN = {"location": "westus", "properties": {"sku": {"name": "Standard"}}}
#: How far a :func:`ticking` clock moves on each reading.
STEP = timedelta(milliseconds=1)
#: The last instant a queue can hold a message for (far beyond any visibility it accepts).
FOREVER = datetime.max.replace(tzinfo=UTC)


def next_minute() -> datetime:
    """The real clock's next whole minute but one, plus 5 s: between 5 s and 65 s ahead of the real time."""
    return datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1, seconds=5)


def ticking(start: datetime) -> SimulatedClock:
    """Simulated time from ``start`` that moves on by :data:`STEP` on every reading."""
    return SimulatedClock(start, step=STEP)


def near_now(
    settings: Settings, *, azurite: bool = False, start: datetime | None = None, runner: ActionRunner | None = None
) -> Deployment:
    """The deployment of the pipeline tests: the Standard collection :data:`JC`, simulated time from ``start``
    (default: :func:`next_minute`) moving :data:`STEP` on every reading; the stores on the memory adapter, or
    on Azurite (``azurite``)."""
    clock = ticking(start or next_minute())
    build = Deployment.on_azurite if azurite else Deployment.on_memory
    return build(settings, clock, collection=JC, collection_body=STANDARD_PLAN, runner=runner)


def parsed(messages: list[QueuedMessage]) -> list[ExecutionMessage]:
    return [ExecutionMessage.from_json(message.text) for message in messages]


@dataclass
class Deployment:
    """One deployment of the app in simulated time, with the collection ``collection``.

    ``storage`` is the memory adapter's whole storage (with its fault seams) when the stores are in memory;
    on Azurite it is not there (``stores`` and ``executions`` are, either way)."""

    settings: Settings
    clock: SimulatedClock
    services: wiring.Services
    executions: MemoryQueue
    collection: CollectionRef = COLLECTION
    memory: MemoryStorage | None = None

    @classmethod
    def on_memory(
        cls,
        settings: Settings,
        clock: SimulatedClock | None = None,
        *,
        collection: CollectionRef = COLLECTION,
        collection_body: dict[str, Any] | None = None,
        runner: ActionRunner | None = None,
        claim_lease: timedelta = CLAIM_LEASE,
        storage: MemoryStorage | None = None,
    ) -> Deployment:
        """A deployment on the memory adapter, from ``clock`` (default: :data:`START`), with ``collection``
        created from ``collection_body`` (default: :data:`STANDARD`); or, given the ``storage`` of a
        deployment, another instance of it (its settings its own, nothing created)."""
        clock = clock or SimulatedClock(START)
        fresh = storage is None
        storage = storage or memory_storage(clock)
        services = wiring.build(
            settings, clock=clock, sleep=clock.advance, storage=storage, runner=runner, claim_lease=claim_lease
        )
        deployment = cls(settings, clock, services, storage.executions, collection, storage)
        return deployment._ready(collection_body) if fresh else deployment

    @classmethod
    def on_azurite(
        cls,
        settings: Settings,
        clock: SimulatedClock | None = None,
        *,
        collection: CollectionRef = COLLECTION,
        collection_body: dict[str, Any] | None = None,
        runner: ActionRunner | None = None,
        claim_lease: timedelta = CLAIM_LEASE,
    ) -> Deployment:
        """A deployment whose stores, scan and cleanup queues are the Azure adapter's on the Azurite of
        ``settings`` (provisioned first), its execution queue a :class:`MemoryQueue` in simulated time."""
        clock = clock or SimulatedClock(START)
        provision(settings)
        executions = MemoryQueue(clock)
        services = wiring.build(
            settings,
            clock=clock,
            sleep=clock.advance,
            execution_queues=[executions],
            runner=runner,
            claim_lease=claim_lease,
        )
        return cls(settings, clock, services, executions, collection)._ready(collection_body)

    def _ready(self, collection_body: dict[str, Any] | None) -> Deployment:
        """Install the services as this process's (the function app's triggers use them) and create the
        collection."""
        wiring.install(self.services)
        self.service.put_collection(self.collection, collection_body or STANDARD)
        return self

    @property
    def storage(self) -> MemoryStorage:
        """The memory adapter's storage of this deployment (fails on Azurite)."""
        assert self.memory is not None, "this deployment's stores are on Azurite"
        return self.memory

    @property
    def stores(self) -> Stores:
        return self.services.stores

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
        return JobRef(self.collection, name)

    def put_job(self, name: str, body: dict[str, Any]) -> Job:
        """Create or replace the job ``name`` of the collection from its wire ``body`` (2016-03-01)."""
        job, _ = self.service.put_job(self.ref(name), body)
        return job

    def job(self, name: str) -> Job:
        """The job as stored (fails when it is not)."""
        stored = self.stores.jobs.get(self.ref(name))
        assert stored is not None, f"job {name} is not stored"
        return stored

    def history(self, name: str) -> list[Any]:
        return list(self.stores.history.list(self.ref(name)))

    # ------------------------------------------------------------------------------------- due index

    def due_entries(self) -> list[DueEntry]:
        """Every due-index entry, of every shard, in key order."""
        return [
            entry
            for shard in range(self.settings.due_shards)
            for entry in self.stores.due.due_before(f"{shard:04d}", "~")
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
        return self.executions.peek()

    def take(self) -> list[ExecutionMessage]:
        """Take the execution messages visible now."""
        return parsed(self.executions.receive())

    def drop_queued(self) -> list[QueuedMessage]:
        """Take every execution message not yet received, visible or not, and run none of them (as they are
        lost with a host's memory); the messages dropped."""
        return self.executions.receive(at=FOREVER)

    def deliver(self) -> list[ExecutionReport]:
        """Run every message visible now, earliest visible first, on this deployment's worker."""
        return [self.executor.execute(message) for message in self.take()]

    def look_now(self) -> ScanReport:
        """A watch look of every shard now (what the look of a slot does when it runs); the counts added up."""
        total = ScanReport("all")
        for shard in range(self.settings.due_shards):
            report = self.dispatcher.look(f"{shard:04d}", self.clock())
            total.rescued += report.rescued
        return total

    def look(self) -> ScanReport:
        """Run the scan-queue messages visible now (watch looks, and scans handed on); their counts added up.
        (On Azurite the scan queue is Azure's: its messages are not run.)"""
        total = ScanReport("all")
        if self.memory is None:
            return total
        for queued in self.memory.scans.receive():
            report = self.dispatcher.scan_message(ScanMessage.from_json(queued.text), self.clock())
            total.fired += report.fired
            total.rescued += report.rescued
        return total

    def run_until(self, end: datetime, tick: timedelta = timedelta(seconds=60)) -> list[ExecutionReport]:
        """Let simulated time pass up to ``end``: a scan of every shard each ``tick`` (from now), each
        execution and scan-queue message (watch looks) run at the instant it becomes visible."""
        reports: list[ExecutionReport] = []
        next_tick = self.clock.now
        while self.clock.now < end:
            visible = [self.executions.next_visible_at(), self.memory.scans.next_visible_at() if self.memory else None]
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
