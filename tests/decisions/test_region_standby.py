"""What a standby region does (docs/regions.md), on the memory adapter with a memory witness: its dispatch tick
and its scans dispatch nothing, a write to its management API is a 409 ``RegionNotActive`` that stores nothing
while reads are answered, and ``/health`` names the region's role without taking the standby's idle tick for a
late one. Once the other region lets the lease go, its beat makes it active, and it dispatches and takes
writes."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from scheduler_core import health, triggers, wiring
from scheduler_core.adapters.memory import SimulatedClock, memory_storage
from scheduler_core.adapters.memory.witness import MemoryWitness
from scheduler_core.api import ApiRequest, ManagementApi
from scheduler_core.auth.keys import hash_entry
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef
from tests.support.harness import STANDARD, START
from tests.support.jobs import every, http_job

KEY = "k" * 40
COLLECTION = CollectionRef("sub", "rg", "jc")


def standby(settings: Settings) -> tuple[wiring.Services, MemoryWitness]:
    """Region ``a``'s deployment, installed as this process's, while region ``b`` holds the witness's lease."""
    clock = SimulatedClock(START)
    witness = MemoryWitness(clock)
    assert witness.acquire("b") == 1
    config = dataclasses.replace(settings, region_name="a", api_keys=hash_entry(KEY))
    services = wiring.build(config, clock=clock, sleep=clock.advance, storage=memory_storage(clock), witness=witness)
    wiring.install(services)
    services.service.put_collection(COLLECTION, STANDARD)
    return services, witness


def call(services: wiring.Services, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    data = b"" if body is None else json.dumps(body).encode()
    query = {"api-version": "2016-03-01"}
    request = ApiRequest(method, f"http://127.0.0.1{path}?api-version=2016-03-01", path, query, headers, data)
    answer = ManagementApi(lambda: services.api).handle(request)
    return answer.status, json.loads(answer.body) if answer.body else None


def test_a_standby_dispatches_nothing_refuses_writes_and_answers_reads(memory_env: Settings) -> None:
    services, _ = standby(memory_env)
    job_path = f"{COLLECTION.resource_id}/jobs/nightly"

    assert triggers.on_dispatch_tick() == 0
    assert len(services.scans) == 0  # type: ignore[arg-type]  # the memory adapter's scan queue
    status, body = call(services, "PUT", job_path, http_job("http://target.example/hook", recurrence=every("Hour")))
    assert status == 409, body
    assert body["error"]["code"] == "RegionNotActive" and "standby" in body["error"]["message"]
    assert call(services, "GET", job_path)[0] == 404  # nothing stored
    assert call(services, "GET", COLLECTION.resource_id)[0] == 200  # reads are answered

    status, report = health.check(lambda: services)
    assert status == 200 and report["region"] == {"name": "a", "active": False, "epoch": None}
    assert not any("dispatch tick" in warning for warning in report["warnings"])


def test_the_standby_becomes_active_when_the_other_region_lets_the_lease_go(memory_env: Settings) -> None:
    services, witness = standby(memory_env)
    assert services.region is not None
    witness.release("b", 1)
    assert triggers.on_region_beat()  # the region's timer: it acquires the free lease
    assert services.region.state().epoch == 2

    status, body = call(
        services,
        "PUT",
        f"{COLLECTION.resource_id}/jobs/nightly",
        http_job("http://target.example/hook", recurrence=every("Hour")),
    )
    assert status in (200, 201), body
    assert triggers.on_dispatch_tick() == services.settings.due_shards  # one scan message per shard
    assert len(services.scans) >= services.settings.due_shards  # type: ignore[arg-type]  # and the tick's looks
    status, report = health.check(lambda: services)
    assert report["region"] == {"name": "a", "active": True, "epoch": 2}
