"""overlapPolicy BufferOne when storage is lost as the occurrence ahead ends: the waiting occurrence still runs,
exactly once, after the outage; the job completes with one history entry per occurrence and no call twice.

A real host process (the function app on the local host, ``tests/e2e/fault_host.py``) reaches Azurite only
through fault-injecting TCP proxies (``tests/support/fault_proxy.py``); a real HTTP target on 127.0.0.1 holds
the first occurrence's call until the second one waits for it, then the storage endpoints are cut (connections
reset, new ones refused, 10 s), then partitioned (every connection hangs, 10 s), and the held call is answered
at the start of the cut: the counters write that releases the waiting occurrence meets the outage. The test's
own services (setup and checks) reach Azurite directly.

Here the Table service is lost; ``test_overlap_storage_lost_with_queues.py`` loses the Queue service with it
(a module of its own, so that the two scenarios, each waiting a minute for its second occurrence, can run
side by side: :func:`lose_storage_as_the_one_ahead_ends` is the scenario of both)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from local_host.azurite import Azurite, AzuritePorts
from scheduler_core import wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.definitions import Wire
from scheduler_core.model.history import Trigger
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e import fault_host
from tests.e2e.test_faults_storage import explain, mark
from tests.support.fault_proxy import fault_proxy
from tests.support.http_target import HttpTarget
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e, pytest.mark.long(93)]

EXPECTED = "x-ms-scheduler-expected-execution-time"
CUT_SECONDS = 10
BLACKHOLE_SECONDS = 10


def test_the_waiting_occurrence_runs_once_when_the_tables_are_lost_as_the_one_ahead_ends(
    storage_env: Settings, azurite: Azurite, target: HttpTarget, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lose_storage_as_the_one_ahead_ends("tables", storage_env, azurite, target, monkeypatch, tmp_path)


def lose_storage_as_the_one_ahead_ends(
    endpoints: str,
    storage_env: Settings,
    azurite: Azurite,
    target: HttpTarget,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """The scenario, with the host's ``endpoints`` ("tables", or "tables and queues") lost: its checks too."""
    log = tmp_path / "host.log"
    provision(storage_env)
    services = wiring.build(storage_env)  # direct to Azurite: setup and checks
    collection = CollectionRef("sub1", "rg", "jc")
    services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    ref = JobRef(collection, "buffered")
    answer_first = threading.Event()
    real_status = target._next_status

    def next_status() -> int:  # the first occurrence's call is held until the test answers it
        with target.lock:
            last = target.received[-1].headers.get(EXPECTED)
        if last == format_instant(first_due):
            answer_first.wait(300)
        return real_status()

    monkeypatch.setattr(target, "_next_status", next_status)
    with (
        fault_proxy(("127.0.0.1", azurite.ports.table)) as tables,
        fault_proxy(("127.0.0.1", azurite.ports.queue)) as queues,
    ):
        proxies = [tables] if endpoints == "tables" else [tables, queues]
        proxied = AzuritePorts(blob=azurite.ports.blob, queue=queues.port, table=tables.port)
        monkeypatch.setenv("AzureWebJobsStorage", proxied.connection_string())
        monkeypatch.setenv("SCHEDULER_DISPATCH_SCHEDULE", "*/2 * * * * *")
        host = fault_host.spawn(120, log=log)
        # Its start is set once the host serves (a host slow to start would otherwise find the job late).
        first_due = (datetime.now(UTC) + timedelta(seconds=6)).replace(microsecond=0)
        second_due = first_due + timedelta(minutes=1)
        try:
            body = {
                "properties": {
                    "startTime": format_instant(first_due),
                    "action": {"type": "Http", "request": {"uri": target.base_url + "/hook", "method": "POST"}},
                    "recurrence": {"frequency": "Minute", "count": 2},
                    "overlapPolicy": "BufferOne",
                }
            }
            services.service.put_job(ref, body, wire=Wire.PREVIEW)
            target.wait_for(1, timeout=30)

            def waits() -> bool:
                job = services.stores.jobs.get(ref)
                return job is not None and format_instant(second_due) in job.waiting

            wait_until(waits, 90, "the second occurrence waiting for the first")
            assert len(target.received) == 1
            for proxy in proxies:
                proxy.set_mode("cut")
            mark(log, f"storage cut ({endpoints}); the first call answered now")
            answer_first.set()  # the first ends: its counters write (releasing the second) meets the outage
            time.sleep(CUT_SECONDS)
            for proxy in proxies:
                proxy.set_mode("blackhole")
            mark(log, "storage partitioned")
            time.sleep(BLACKHOLE_SECONDS)
            assert len(target.received) == 1  # nothing could be released without storage
            for proxy in proxies:
                proxy.set_mode("pass")
            mark(log, "storage back")

            def completed() -> bool:
                job = services.service.get_job(ref)
                return job.state == "Completed" and len(services.service.list_history(ref)) == 2

            wait_until(completed, 150, "the second occurrence run and the job completed")
            time.sleep(4)  # some more ticks and polls: nothing more may run
        finally:
            answer_first.set()
            fault_host.stop(host)
    calls = [r.headers[EXPECTED] for r in target.received]
    assert calls == [format_instant(first_due), format_instant(second_due)], explain(log, storage_env, [ref])
    history = sorted(services.service.list_history(ref), key=lambda h: str(h.expected_execution_time))
    assert [(h.expected_execution_time, h.status, h.trigger) for h in history] == [
        (first_due, "Completed", Trigger.SCHEDULED),
        (second_due, "Completed", Trigger.SCHEDULED),
    ], explain(log, storage_env, [ref])
    job = services.stores.jobs.get(ref)
    assert job is not None and (job.execution_count, job.failure_count) == (2, 0)
    assert (job.running, job.waiting) == ("", "")
