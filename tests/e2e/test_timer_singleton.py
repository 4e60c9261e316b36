"""Timer triggers run as singletons: instances of one app (one host id) on one storage account tick once per
occurrence, not once each, as in Azure, where the timer's listener runs on the instance holding a blob lease.

Two in-process local hosts share the session's Azurite and a host id. The lock is host.json's ``singleton``
section at its shortest (lease 15 s, recovery polling 15 s: the least Azure Storage and the WebJobs SDK
allow), and the timer fires every 2 seconds, so a takeover is measured in seconds. The takeovers (after a
crash, after a graceful stop) are in ``tests/e2e/test_timer_singleton_takeover.py``, a module of its own so
that their waits for a lease to expire or a recovery poll run beside this one's, over this module's hosts.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import azure.functions as func
import pytest
from azure.storage.blob import BlobLeaseClient, BlobServiceClient

from local_host.hostjson import HostConfig, SingletonOptions
from local_host.leases import HOSTS_CONTAINER, listener_lock_id, lock_blob_name, status_blob_name
from local_host.runtime import LocalHost
from local_host.schedule_status import ScheduleStatus
from scheduler_core.settings import Settings

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

FUNCTION = "singleton_tick"
EVERY_2_SECONDS = "*/2 * * * * *"
LEASE = 15.0  # host.json singleton.listenerLockPeriod: the shortest lease Azure Storage grants
RECOVERY = 15.0  # singleton.listenerLockRecoveryPollingInterval: the shortest the WebJobs SDK accepts
CONFIG = HostConfig(route_prefix="api", singleton=SingletonOptions(LEASE, RECOVERY))
#: Allowance for thread scheduling, storage calls and the 2 s schedule on top of each bound.
SLACK = 3.0


@dataclass(frozen=True)
class Call:
    host: str
    scheduled: str  # the occurrence, as the host passes it (schedule_status Last)
    past_due: bool
    at: float  # time.monotonic() when it ran


class Calls:
    """Every run of the timer, by either host."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list[Call] = []

    def record(self, call: Call) -> None:
        with self.lock:
            self.items.append(call)

    def snapshot(self) -> list[Call]:
        with self.lock:
            return list(self.items)

    def of(self, host: str) -> list[Call]:
        return [call for call in self.snapshot() if call.host == host]


def make_app(label: str, calls: Calls, run_on_startup: bool = False) -> func.FunctionApp:
    """An app with one timer, ``singleton_tick``, every 2 seconds, that records which host ran it."""
    app = func.FunctionApp()

    @app.function_name(FUNCTION)
    @app.timer_trigger(schedule=EVERY_2_SECONDS, arg_name="timer", run_on_startup=run_on_startup, use_monitor=True)
    def singleton_tick(timer: func.TimerRequest) -> None:
        status = getattr(timer, "schedule_status", None) or {}
        calls.record(Call(label, str(status.get("Last")), timer.past_due, time.monotonic()))

    return app


def wait_for(condition: Callable[[], bool], timeout: float) -> float:
    """Seconds until ``condition`` held (AssertionError after ``timeout``)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"condition not met within {timeout} s")


def assert_once_per_occurrence(calls: list[Call]) -> None:
    scheduled = [call.scheduled for call in calls]
    assert len(scheduled) == len(set(scheduled)), f"an occurrence ran twice: {calls}"


@pytest.fixture
def host_id(storage_env: Settings) -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def blobs(storage_env: Settings) -> BlobServiceClient:
    return BlobServiceClient.from_connection_string(os.environ["AzureWebJobsStorage"])


@pytest.fixture
def hosts(host_id: str) -> Iterator[Callable[[func.FunctionApp], LocalHost]]:
    """Start a host of ``app`` (timers only) with the shared host id; every one is stopped at the end."""
    started: list[LocalHost] = []

    def start(app: func.FunctionApp) -> LocalHost:
        host = LocalHost(app, CONFIG, enable=frozenset({"timer"}), host_id=host_id)
        host.start()
        started.append(host)
        return host

    yield start
    for host in started:
        host.stop()


def crash(host: LocalHost) -> None:
    """Stop ``host`` as a killed process would: its lease is neither renewed nor released."""
    for runner in host.timers:
        runner.abandon()
    host.stop()


def lease_state(blobs: BlobServiceClient, host_id: str) -> str:
    blob = blobs.get_blob_client(HOSTS_CONTAINER, lock_blob_name(listener_lock_id(host_id, FUNCTION)))
    return str(blob.get_blob_properties().lease.state)


def holder(first: LocalHost, second: LocalHost) -> tuple[LocalHost, LocalHost]:
    wait_for(lambda: first.timers[0].holds_lock or second.timers[0].holds_lock, timeout=10)
    return (first, second) if first.timers[0].holds_lock else (second, first)


def test_two_instances_tick_once_per_occurrence_not_twice(
    hosts: Callable[[func.FunctionApp], LocalHost], host_id: str, blobs: BlobServiceClient
) -> None:
    calls = Calls()
    a = hosts(make_app("a", calls))
    b = hosts(make_app("b", calls))
    time.sleep(9)
    runs = calls.snapshot()
    assert len(runs) >= 3, runs
    assert len({call.host for call in runs}) == 1, f"both instances ran the timer: {runs}"
    assert_once_per_occurrence(runs)
    assert [a.timers[0].holds_lock, b.timers[0].holds_lock].count(True) == 1
    assert lease_state(blobs, host_id) == "leased"
    # The schedule status lives where the Functions host keeps it, and names the last run.
    status_blob = blobs.get_blob_client(HOSTS_CONTAINER, status_blob_name(host_id, FUNCTION))
    status = ScheduleStatus.from_json(status_blob.download_blob().readall().decode())
    assert status.last is not None and status.next > status.last


def test_run_on_startup_runs_on_the_holder_only(hosts: Callable[[func.FunctionApp], LocalHost]) -> None:
    calls = Calls()
    first = hosts(make_app("a", calls, run_on_startup=True))
    wait_for(lambda: len(calls.of("a")) >= 1, timeout=10)
    assert not calls.of("a")[0].past_due  # the start-up run, not a missed one: there was no status
    hosts(make_app("b", calls, run_on_startup=True))
    time.sleep(4)
    assert calls.of("b") == []  # its listener never started: no start-up run, no scheduled one
    assert first.timers[0].holds_lock


def test_a_renewal_that_finds_the_lease_lost_stops_the_host(
    hosts: Callable[[func.FunctionApp], LocalHost], host_id: str, blobs: BlobServiceClient
) -> None:
    calls = Calls()
    host = hosts(make_app("a", calls))
    wait_for(lambda: host.timers[0].holds_lock and len(calls.of("a")) >= 1, timeout=10)
    stopped = threading.Event()

    def wait_for_the_host() -> None:
        host.wait()  # returns once the host's triggers were stopped
        stopped.set()

    threading.Thread(target=wait_for_the_host, daemon=True).start()
    # Another party breaks the lease and takes it: the holder's next renewal gets a 409.
    blob = blobs.get_blob_client(HOSTS_CONTAINER, lock_blob_name(listener_lock_id(host_id, FUNCTION)))
    BlobLeaseClient(blob).break_lease(lease_break_period=0)
    thief = BlobLeaseClient(blob)
    thief.acquire(lease_duration=int(LEASE))
    lost_at = time.monotonic()
    assert stopped.wait(LEASE / 2 + SLACK), "the host went on without its lease"
    print(f"\nhost stopped {time.monotonic() - lost_at:.1f} s after its lease was taken")
    host.timers[0].join(timeout=5)
    ran = len(calls.snapshot())
    time.sleep(2.5)  # more than a period of the schedule
    assert len(calls.snapshot()) == ran, "the host ran the timer without its lease"
    thief.release()
