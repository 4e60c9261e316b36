"""A harness for pipeline tests with an injectable clock, on Azurite or on the memory adapter.

Execution messages go to :class:`CapturedQueue`, a **test double** of the execution queue that keeps each
message with the instant it would become visible, so simulated minutes pass in milliseconds. Everything
else is real: the stores (Azurite tables, or the in-memory adapter that the contract suite in
``tests/contract`` holds to the same rules), the dispatcher, the executor, HTTP actions against a real
local server. (The real queue path is covered by the end-to-end tests that run the local host.)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_core import wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.memory import MemoryStorage, memory_storage
from scheduler_core.pipeline.execute import ExecutionReport
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef


class FakeClock:
    """Simulated time. Each reading moves it on by a millisecond, as real time moves while code runs."""

    STEP = timedelta(milliseconds=1)

    def __init__(self, start: datetime) -> None:
        self.now = start
        self.lock = threading.Lock()

    def __call__(self) -> datetime:
        with self.lock:
            self.now += self.STEP
            return self.now

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.now += timedelta(seconds=seconds)

    def set(self, instant: datetime) -> None:
        with self.lock:
            self.now = instant


@dataclass
class CapturedQueue:
    """Test double of the execution queue: (visible at, message text), in send order."""

    clock: FakeClock
    items: list[tuple[datetime, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, text: str, visibility: int) -> None:
        with self.lock:
            self.items.append((self.clock() + timedelta(seconds=visibility), text))

    def take_visible(self) -> list[tuple[datetime, ExecutionMessage]]:
        now = self.clock()
        with self.lock:
            ready = [(at, t) for at, t in self.items if at <= now]
            self.items = [(at, t) for at, t in self.items if at > now]
        return [(at, ExecutionMessage.from_json(text)) for at, text in ready]

    def next_visible_at(self) -> datetime | None:
        with self.lock:
            return min((at for at, _ in self.items), default=None)


class Pipeline:
    """The real services, with a fake clock and a captured execution queue, over Azurite (``backend``
    "azurite") or the memory adapter ("memory": ``self.memory`` is its storage, with its fault seams)."""

    def __init__(self, settings: Settings, start: datetime, backend: str = "azurite") -> None:
        self.clock = FakeClock(start)
        self.queue = CapturedQueue(self.clock)
        self.memory: MemoryStorage | None = None
        if backend == "memory":
            self.memory = memory_storage(self.clock)
        else:
            provision(settings)
        self.services = wiring.build(
            settings, clock=self.clock, send_execution=self.queue.send, sleep=self.clock.advance, storage=self.memory
        )
        wiring.install(self.services)
        self.collection = CollectionRef("sub1", "rg", "jc")
        self.services.service.put_collection(
            self.collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}
        )

    def job_ref(self, name: str) -> JobRef:
        return JobRef(self.collection, name)

    def put_job(self, name: str, properties: dict[str, Any]) -> None:
        self.services.service.put_job(self.job_ref(name), {"properties": properties})

    def scan_all(self) -> int:
        fired = 0
        for shard in range(self.services.settings.due_shards):
            fired += self.services.dispatcher.scan(f"{shard:04d}", self.clock()).fired
        return fired

    def deliver_visible(self) -> list[ExecutionReport]:
        """Run every message visible now, at the instant it became visible, in order."""
        reports = []
        for _visible_at, message in sorted(self.queue.take_visible(), key=lambda item: item[0]):
            reports.append(self.services.executor.execute(message))
        return reports

    def run_until(self, end: datetime, tick_seconds: int = 60) -> list[ExecutionReport]:
        """Simulate time up to ``end``: ticks at whole minutes, messages delivered when they become visible."""
        reports: list[ExecutionReport] = []
        next_tick = self.clock().replace(second=0, microsecond=0) + timedelta(seconds=tick_seconds)
        while self.clock() < end:
            upcoming = [t for t in (self.queue.next_visible_at(), next_tick) if t is not None]
            step = min(*upcoming, end)
            self.clock.set(max(step, self.clock()))
            if self.clock() >= next_tick:
                self.scan_all()
                next_tick += timedelta(seconds=tick_seconds)
            reports += self.deliver_visible()
        return reports


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)
