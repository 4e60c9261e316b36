"""Faults: storage lost for 20 s in the middle of executions. A real host process (the function app on the
local host) reaches Azurite only through fault-injecting TCP proxies (``tests/support/fault_proxy.py``);
the test cuts them while calls are at a real HTTP target on 127.0.0.1: first every connection is reset
and new ones refused, then every connection hangs (a partition, whose held requests move on when it
heals). The test's own services (setup and checks) reach Azurite directly.

The promise: an outage of up to a minute yields no second call, no unrecorded run and no stuck state.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from local_host.azurite import Azurite, AzuritePorts
from scheduler_core import wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e import fault_host
from tests.support.fault_proxy import fault_proxy
from tests.support.http_target import HttpTarget

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

JOBS = 6
CUT_SECONDS = 10  # connections reset, new ones refused...
BLACKHOLE_SECONDS = 10  # ...then every connection hangs: 20 s without storage in all


def test_a_storage_outage_mid_execution_yields_no_second_call_no_unrecorded_run_and_no_stuck_job(
    storage_env: Settings, azurite: Azurite, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    provision(storage_env)
    services = wiring.build(storage_env)  # direct to Azurite: setup and checks
    collection = CollectionRef("sub1", "rg", "jc")
    services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    target.answer([200], delay=2.0)  # each call is at the target for 2 s: the outage starts during calls
    with (
        fault_proxy(("127.0.0.1", azurite.ports.table)) as tables,
        fault_proxy(("127.0.0.1", azurite.ports.queue)) as queues,
    ):
        proxied = AzuritePorts(blob=azurite.ports.blob, queue=queues.port, table=tables.port)
        monkeypatch.setenv("AzureWebJobsStorage", proxied.connection_string())
        monkeypatch.setenv("SCHEDULER_DISPATCH_SCHEDULE", "*/2 * * * * *")
        host = fault_host.spawn(120)
        try:
            first_due = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
            refs = [JobRef(collection, f"j{i}") for i in range(JOBS)]
            for index, ref in enumerate(refs):  # one job a second: some run before, some during the outage
                due = first_due + timedelta(seconds=index)
                action = {"type": "Http", "request": {"uri": f"{target.base_url}/{ref.name}", "method": "POST"}}
                services.service.put_job(ref, {"properties": {"startTime": format_instant(due), "action": action}})
            target.wait_for(2, timeout=30)
            for proxy in (tables, queues):
                proxy.set_mode("cut")
            time.sleep(CUT_SECONDS)
            for proxy in (tables, queues):
                proxy.set_mode("blackhole")
            time.sleep(BLACKHOLE_SECONDS)
            for proxy in (tables, queues):
                proxy.set_mode("pass")

            def settled() -> bool:
                jobs = [services.service.get_job(ref) for ref in refs]
                return all(job.state == "Completed" for job in jobs)

            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not settled():
                time.sleep(0.5)
            time.sleep(4)  # some more ticks and polls: nothing more may run
        finally:
            fault_host.stop(host)
    calls = sorted(r.path.lstrip("/") for r in target.received)
    assert calls == [ref.name for ref in refs], "each job called exactly once"
    for ref in refs:
        job = services.service.get_job(ref)
        history = services.service.list_history(ref)
        assert [h.status for h in history] == ["Completed"], (ref.name, [(h.status, h.message) for h in history])
        assert (job.state, job.execution_count, job.failure_count) == ("Completed", 1, 0), ref.name
