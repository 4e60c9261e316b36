"""Faults while an operation is polled (``request.asyncPolling``). Real host processes (the function app on the
local host, ``tests/e2e/fault_host.py``) over the session's Azurite, a real HTTP target on 127.0.0.1 that answers
the POST with ``202 Accepted`` and a ``Location`` and holds the first poll, and then:

* the host killed (SIGKILL) in the middle of that poll: the poll's claim outlives its dead worker; once its
  lease is over, the poll's watch sends it again and a new host takes it over and polls again (a poll is a
  read: made again, not recorded);
* storage cut (a fault-injecting TCP proxy between the host and Azurite: connections reset and refused for
  10 s, then hanging for 10 s) as the poll is answered 202, so that completing the poll's step and sending the
  next poll meet the outage.

Either way the operation is started once (one POST), recorded once (one history entry, Completed), and
counted once."""

from __future__ import annotations

import signal
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from local_host.azurite import Azurite, AzuritePorts
from scheduler_core import wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.definitions import Wire
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e import fault_host
from tests.support.fault_proxy import fault_proxy
from tests.support.http_target import HttpTarget
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

#: A short claim lease for both hosts (the deployed one is 15 s): the dead worker's poll is taken over sooner.
LEASE = timedelta(seconds=5)


def test_a_host_killed_mid_poll_leaves_one_operation_started_recorded_and_counted(
    storage_env: Settings, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    provision(storage_env)
    services = wiring.build(storage_env, claim_lease=LEASE)
    collection = CollectionRef("sub1", "rg", "polls")
    services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    ref = JobRef(collection, "long-running")
    release = threading.Event()
    real_status = target._next_status

    def next_status() -> int:  # the POST: 202; the first poll: held until the host is dead; then 200
        with target.lock:
            received = list(target.received)
        if received[-1].method == "POST":
            return 202
        if sum(1 for r in received if r.method == "GET") == 1:
            release.wait(120)
            return 202
        return real_status()

    monkeypatch.setattr(target, "_next_status", next_status)
    target.answer([200], headers={"Location": "/operations/1", "Retry-After": "1"})
    doomed = fault_host.spawn(LEASE.total_seconds())
    successor = None
    try:
        due = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
        request = {"uri": target.base_url + "/start", "method": "POST", "asyncPolling": {"maxDuration": "PT5M"}}
        action = {"type": "Http", "request": request, "retryPolicy": {"retryType": "None"}}
        services.service.put_job(
            ref, {"properties": {"startTime": format_instant(due), "action": action}}, wire=Wire.PREVIEW
        )
        target.wait_for(2, timeout=30)  # the POST, then the first poll, held
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
        release.set()
        successor = fault_host.spawn(LEASE.total_seconds())

        def recorded() -> bool:
            job = services.service.get_job(ref)
            return job.state == "Completed" and len(services.service.list_history(ref)) >= 1

        wait_until(recorded, 90, "the operation polled again by the new host and recorded")
    finally:
        release.set()
        doomed.kill()
        if successor is not None:
            fault_host.stop(successor)
    methods = [r.method for r in target.received]
    assert methods.count("POST") == 1 and methods.count("GET") >= 2, methods
    [row] = services.service.list_history(ref)
    assert row.status == "Completed" and row.message.endswith("poll(s))"), row.message
    job = services.stores.jobs.get(ref)
    assert job is not None and (job.execution_count, job.failure_count) == (1, 0)


def test_storage_cut_as_a_poll_is_answered_leaves_one_operation_started_recorded_and_counted(
    storage_env: Settings, azurite: Azurite, target: HttpTarget, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    provision(storage_env)
    services = wiring.build(storage_env, claim_lease=LEASE)  # direct to Azurite: setup and checks
    collection = CollectionRef("sub1", "rg", "polls-cut")
    services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    ref = JobRef(collection, "long-running")
    held, answer = threading.Event(), threading.Event()
    real_status = target._next_status

    def next_status() -> int:  # the POST: 202; the first poll: held until storage is cut; then 200
        with target.lock:
            received = list(target.received)
        if received[-1].method == "POST":
            return 202
        if sum(1 for r in received if r.method == "GET") == 1:
            held.set()
            answer.wait(120)
            return 202
        return real_status()

    monkeypatch.setattr(target, "_next_status", next_status)
    target.answer([200], headers={"Location": "/operations/1", "Retry-After": "1"})
    with (
        fault_proxy(("127.0.0.1", azurite.ports.table)) as tables,
        fault_proxy(("127.0.0.1", azurite.ports.queue)) as queues,
    ):
        proxied = AzuritePorts(blob=azurite.ports.blob, queue=queues.port, table=tables.port)
        monkeypatch.setenv("AzureWebJobsStorage", proxied.connection_string())
        host = fault_host.spawn(LEASE.total_seconds(), log=tmp_path / "host.log")
        try:
            due = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
            request = {"uri": target.base_url + "/start", "method": "POST", "asyncPolling": {"maxDuration": "PT5M"}}
            action = {"type": "Http", "request": request, "retryPolicy": {"retryType": "None"}}
            services.service.put_job(
                ref, {"properties": {"startTime": format_instant(due), "action": action}}, wire=Wire.PREVIEW
            )
            assert held.wait(30), "the first poll never came"
            for proxy in (tables, queues):
                proxy.set_mode("cut")
            answer.set()  # answered 202 now: its step's completion and the next poll's send meet the outage
            time.sleep(10)
            for proxy in (tables, queues):
                proxy.set_mode("blackhole")
            time.sleep(10)
            for proxy in (tables, queues):
                proxy.set_mode("pass")

            def recorded() -> bool:
                job = services.service.get_job(ref)
                return job.state == "Completed" and len(services.service.list_history(ref)) >= 1

            wait_until(recorded, 120, "the operation polled to its end after the outage and recorded")
            time.sleep(3)  # more polls and ticks: nothing more may run
        finally:
            answer.set()
            fault_host.stop(host)
    methods = [r.method for r in target.received]
    assert methods.count("POST") == 1 and methods.count("GET") >= 2, methods
    [row] = services.service.list_history(ref)
    assert row.status == "Completed" and row.message.endswith("poll(s))"), fault_host.log_tail(tmp_path / "host.log")
    job = services.stores.jobs.get(ref)
    assert job is not None and (job.execution_count, job.failure_count) == (1, 0)
