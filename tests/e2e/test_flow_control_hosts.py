"""Flow control across instances (issue 29): two real host processes (the function app on the local host, its
timer and queue triggers) on one Azurite run jobs of two collections that name one ``flowControl`` key, and a
real HTTP target on 127.0.0.1 measures what reaches it: the rate within 10% of ``ratePerSecond``, never more
calls at once than ``parallelism`` (and that many reached), every job run once; and a host killed (SIGKILL)
while its call holds the key's one slot gives the slot back: another host's waiting attempt runs a lease
later."""

from __future__ import annotations

import itertools
import statistics
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_core import wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.definitions import Wire
from scheduler_core.model import CLAIM_LEASE
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e import fault_host
from tests.support.http_target import HttpTarget, http_target
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

SUBSCRIPTION = "sub-flow"
COLLECTIONS = (CollectionRef(SUBSCRIPTION, "rg", "east"), CollectionRef(SUBSCRIPTION, "rg", "west"))


@dataclass
class Calls:
    """What the target saw: each call's path, start and end (monotonic seconds), and the most in flight."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    spans: list[tuple[str, float, float]] = field(default_factory=list)
    in_flight: int = 0
    most: int = 0
    release: threading.Event = field(default_factory=threading.Event)

    def started(self) -> float:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        return time.monotonic()

    def ended(self, path: str, began: float) -> None:
        with self.lock:
            self.in_flight -= 1
            self.spans.append((path, began, time.monotonic()))


@pytest.fixture
def measured() -> Iterator[tuple[HttpTarget, Calls]]:
    """A target that takes ``hold`` seconds per call (from the path: ``/hold-<ms>/...``), counting calls in flight;
    a call held 10 minutes or more is released by ``calls.release``."""
    calls = Calls()
    with http_target() as target:
        real = target._next_status

        def next_status() -> int:
            with target.lock:
                path = target.received[-1].path
            began = calls.started()
            try:
                if path.startswith("/hold-"):
                    held = int(path.split("/")[1].removeprefix("hold-")) / 1000
                    if held >= 600:
                        calls.release.wait(held)
                    else:
                        time.sleep(held)
                return real()
            finally:
                calls.ended(path, began)

        target._next_status = next_status  # type: ignore[method-assign]
        yield target, calls


def prepared(storage_env: Settings, plan: str) -> wiring.Services:
    """This process's services over the provisioned storage, with the two collections on ``plan``."""
    provision(storage_env)
    services = wiring.build(storage_env)
    for ref in COLLECTIONS:
        services.service.put_collection(ref, {"location": "westus", "properties": {"sku": {"name": plan}}})
    return services


def two_hosts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setenv("SCHEDULER_DISPATCH_SCHEDULE", "*/2 * * * * *")
    return [fault_host.spawn(CLAIM_LEASE.total_seconds(), log=tmp_path / f"host{i}.log") for i in range(2)]


#: How far the test's reading of the due second in the target's clock may be off (the two clocks of one machine).
CLOCKS = 0.05


def put_jobs(
    services: Any, target: HttpTarget, due: datetime, count: int, flow: dict[str, Any], hold_ms: int, prefix: str
) -> list[JobRef]:
    """``count`` one-shot jobs ``<prefix><i>`` due at ``due``, alternately in the two collections."""
    refs = []
    for i in range(count):
        collection = COLLECTIONS[i % 2]  # the key is shared by the subscription's collections
        action = {
            "type": "Http",
            "request": {"uri": f"{target.base_url}/hold-{hold_ms}/{collection.name}-{i}", "method": "POST"},
            "retryPolicy": {"retryType": "None"},
            "flowControl": flow,
        }
        body = {"properties": {"startTime": format_instant(due), "action": action}}
        refs.append(JobRef(collection, f"{prefix}{i}"))
        services.service.put_job(refs[-1], body, wire=Wire.PREVIEW)
    return refs


def test_two_hosts_keep_one_keys_rate_and_parallelism(
    storage_env: Settings, measured: tuple[HttpTarget, Calls], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    target, calls = measured
    services = prepared(storage_env, "P20Premium")
    hosts = two_hosts(tmp_path, monkeypatch)
    try:
        # rate: 24 quick calls due at one second, 4 a second for the key
        due = (datetime.now(UTC) + timedelta(seconds=6)).replace(microsecond=0)
        due_at = time.monotonic() + (due - datetime.now(UTC)).total_seconds()  # the target's clock
        put_jobs(services, target, due, 24, {"key": "Partner-API", "ratePerSecond": 4}, 0, "rate")
        wait_until(lambda: len(calls.spans) >= 24, 60, "the 24 rate-limited calls")
        starts = sorted(began for _, began, _ in calls.spans)
        gaps = sorted(later - earlier for earlier, later in itertools.pairwise(starts))
        typical = 1 / statistics.median(gaps)
        overall = (len(starts) - 1) / (starts[-1] - starts[0])
        shown = [round(s - starts[0], 2) for s in starts]
        assert 3.6 <= typical <= 4.4, f"{typical:.2f} calls/s between calls for a limit of 4: {shown}"
        assert 3.0 <= overall <= 4.4, f"{overall:.2f} calls/s over the run for a limit of 4: {shown}"
        # Never ahead of the limit, under any load: the key's starts are reserved 1/4 s apart from the due second
        # on, and a call reaches the target at its start or later (a busy sending host only delays it), so the
        # i-th call to arrive arrives no earlier than due + i/4 s. (Counting arrivals in a 2-s window is not
        # load-proof: one call delayed on a busy host arrives together with the next ones.)
        ahead = [(i, round(s - due_at, 3)) for i, s in enumerate(starts) if s < due_at + i / 4 - CLOCKS]
        assert not ahead, (ahead, [round(s - due_at, 3) for s in starts])

        # parallelism: 12 calls of 1.5 s, at most 3 at once for the key, on two hosts of 40 threads each
        calls.spans.clear()
        calls.most = 0
        due = (datetime.now(UTC) + timedelta(seconds=5)).replace(microsecond=0)
        refs = put_jobs(services, target, due, 12, {"key": "partner-api-2", "parallelism": 3}, 1500, "slot")
        wait_until(lambda: len(calls.spans) >= 12, 90, "the 12 parallelism-limited calls")
        assert calls.most == 3, f"{calls.most} calls at once for a limit of 3"
    finally:
        for host in hosts:
            fault_host.stop(host)
    paths = sorted(path for path, _, _ in calls.spans)
    assert len(paths) == len(set(paths)) == 12  # each job once
    history = [services.service.list_history(ref) for ref in refs]
    assert all(len(rows) == 1 and rows[0].status == "Completed" for rows in history)
    assert sum(rows[0].flow_wait is not None for rows in history) >= 8  # most waited, and it says so


def test_a_host_killed_holding_the_keys_slot_gives_it_back_a_lease_later(
    storage_env: Settings, measured: tuple[HttpTarget, Calls], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    target, calls = measured
    services = prepared(storage_env, "Standard")
    monkeypatch.setenv("SCHEDULER_DISPATCH_SCHEDULE", "*/2 * * * * *")
    lease = CLAIM_LEASE.total_seconds()
    first = fault_host.spawn(lease, log=tmp_path / "first.log")
    second = None
    solo = {"key": "solo", "parallelism": 1}
    try:
        # the first host alone takes the long call: it holds the key's one slot for 10 minutes
        due = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
        put_jobs(services, target, due, 1, solo, 600_000, "long")
        target.wait_for(1, timeout=30)
        second = fault_host.spawn(lease, log=tmp_path / "second.log")
        due = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
        [waiting] = put_jobs(services, target, due, 1, solo, 0, "short")
        time.sleep(8)  # it waits: the slot is taken
        assert [r.path for r in target.received] == [target.received[0].path]
        first.kill()  # SIGKILL mid-call: it renews nothing any more
        killed = time.monotonic()
        first.wait(timeout=10)
        calls.release.set()  # (its connection is gone with it; the re-run of the long call is not held)
        target.wait_for(2, timeout=lease + 20)  # the next call of the key, whichever job it is
        freed_after = time.monotonic() - killed
        wait_until(lambda: any(r.path.startswith("/hold-0/") for r in target.received), 60, "the waiting job's call")
        wait_until(lambda: len(services.service.list_history(waiting)) == 1, 30, "the waiting job recorded")
    finally:
        calls.release.set()
        for host in (first, second):
            if host is not None:
                fault_host.stop(host)
    assert freed_after <= lease + 8, f"the slot came back {freed_after:.1f} s after the kill (lease {lease:.0f} s)"
    [row] = services.service.list_history(waiting)
    assert row.status == "Completed" and row.flow_wait is not None and row.flow_wait.total_seconds() >= 8
    assert freed_after >= lease - 6  # not before the dead holder's lease could have run out (renewed every 5 s)
