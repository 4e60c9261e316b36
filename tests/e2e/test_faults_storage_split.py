"""Faults of a split deployment: its history account (``SchedulerHistoryStorage``: the claims and history
entries) lost for 20 s while the main account and the execution queues' account stay up, in the middle of
executions. Only a deployment split by role can lose one part of its storage and keep the others, so an
attempt may read its job, fail to claim, or run its action and then fail to record it while its job's
counters (main account) can still be written. A real host process (the function app on the local host)
reaches the history account only through a fault-injecting TCP proxy (``tests/support/fault_proxy.py``):
first every connection is reset and new ones refused, then every connection hangs. Three Azurite instances
stand for the three accounts; the test's own services (setup and checks) reach them directly.

The promise is the one-account deployment's (``tests/e2e/test_faults_storage.py``): an outage of up to a
minute yields no second call, no unrecorded run and no stuck job.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from azure.data.tables import TableClient

from local_host.azurite import Azurite, AzuritePorts
from scheduler_core import settings, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.storage.keys import CollectionRef, JobRef
from scheduler_core.storage.names import CLAIMS_TABLE
from tests.conftest import private_azurite
from tests.e2e import fault_host
from tests.e2e.test_faults_storage import jobs_one_a_second, outage, settle
from tests.support.fault_proxy import fault_proxy
from tests.support.http_target import HttpTarget

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

JOBS = 6
CUT_SECONDS = 10
BLACKHOLE_SECONDS = 10


def claims_of(history: Azurite, config: settings.Settings, refs: list[JobRef]) -> str:
    table = TableClient.from_connection_string(history.connection_string, config.table_name(CLAIMS_TABLE))
    lines = []
    for ref in refs:
        rows = list(table.query_entities("PartitionKey eq @p", parameters={"p": ref.identity}))
        found = [" ".join(f"{k}={row.get(k)}" for k in ("RowKey", "State", "Worker", "LeaseUntil")) for row in rows]
        lines.append(f"claims of {ref.name}: {found or 'none (never claimed)'}")
    return "\n".join(lines)


def test_the_history_account_lost_mid_execution_yields_no_second_call_no_unrecorded_run_and_no_stuck_job(
    storage_env: settings.Settings, target: HttpTarget, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "host.log"
    with private_azurite() as history, private_azurite() as executions:
        monkeypatch.setenv("SchedulerHistoryStorage", history.connection_string)
        monkeypatch.setenv("SchedulerExecutionStorage", executions.connection_string)
        config = settings.load()
        provision(config)
        services = wiring.build(config)  # direct to every account: setup and checks
        collection = CollectionRef("sub1", "rg", "jc")
        services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
        target.answer([200], delay=2.0)  # each call is at the target for 2 s: the outage starts during calls
        with fault_proxy(("127.0.0.1", history.ports.table)) as proxy:
            proxied = AzuritePorts(blob=history.ports.blob, queue=history.ports.queue, table=proxy.port)
            monkeypatch.setenv("SchedulerHistoryStorage", proxied.connection_string())
            monkeypatch.setenv("SCHEDULER_DISPATCH_SCHEDULE", "*/2 * * * * *")
            host = fault_host.spawn(120, log=log)
            try:
                refs = jobs_one_a_second(services, collection, target, log)
                outage(log, [proxy], "history account")
                settle(services, refs, log)
            finally:
                fault_host.stop(host)

        def explain(subset: list[JobRef]) -> str:
            names = [ref.name for ref in subset]

            def relevant(line: str) -> bool:
                return any(f"/{n}" in line for n in names) or any(w in line for w in (" WARNING ", " ERROR ", " TEST "))

            return f"{claims_of(history, config, subset)}\n{fault_host.log_tail(log, lines=200, keep=relevant)}"

        calls = sorted(r.path.lstrip("/") for r in target.received)
        odd = [ref for ref in refs if calls.count(ref.name) != 1]
        assert calls == [ref.name for ref in refs], f"each job called exactly once; not: {odd}\n{explain(odd)}"
        for ref in refs:
            job = services.service.get_job(ref)
            statuses = [(h.status, h.message) for h in services.service.list_history(ref)]
            assert [s for s, _ in statuses] == ["Completed"], (ref.name, statuses, explain([ref]))
            counts = (job.state, job.execution_count, job.failure_count)
            assert counts == ("Completed", 1, 0), (ref.name, counts, explain([ref]))
        wiring.reset()
