"""Faults: storage lost for 20 s in the middle of executions. A real host process (the function app on the
local host) reaches Azurite only through fault-injecting TCP proxies (``tests/support/fault_proxy.py``);
the test cuts them while calls are at a real HTTP target on 127.0.0.1: first every connection is reset
and new ones refused, then every connection hangs (a partition, whose held requests move on when it
heals). The test's own services (setup and checks) reach Azurite directly. The host's log (with the test's
own marks: the cut, the partition, the heal) is kept in a file and its tail is shown with a failure.

The promise: an outage of up to a minute yields no second call, no unrecorded run and no stuck state.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from azure.data.tables import TableClient
from azure.storage.queue import QueueClient

from local_host.azurite import Azurite, AzuritePorts
from scheduler_core import wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from scheduler_core.storage.names import CLAIMS_TABLE
from tests.e2e import fault_host
from tests.support.fault_proxy import FaultProxy, fault_proxy
from tests.support.http_target import HttpTarget
from tests.support.jobs import http_action, job_body

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

JOBS = 6
CUT_SECONDS = 10  # connections reset, new ones refused...
BLACKHOLE_SECONDS = 10  # ...then every connection hangs: 20 s without storage in all


def mark(log: Path, what: str) -> None:
    """Write one of the test's own events into the host's log, in its format (appended whole lines)."""
    now = datetime.now(UTC)
    with log.open("a", encoding="utf-8") as file:
        file.write(f"{now:%Y-%m-%dT%H:%M:%S}.{now.microsecond // 1000:03d}Z TEST {what}\n")


def storage_state(config: Settings, refs: list[JobRef]) -> str:
    """What storage holds about ``refs``' attempts, read directly: their claims (none: never claimed) and the
    execution queues' messages, all of them (the approximate count) and the visible ones (a message counted
    but not visible was received and not deleted: hidden for the queue's processing lease)."""
    connection = config.storage_connection_string or ""
    lines = []
    claims = TableClient.from_connection_string(connection, config.table_name(CLAIMS_TABLE))
    for ref in refs:
        rows = list(claims.query_entities("PartitionKey eq @p", parameters={"p": ref.identity}))
        found = [
            " ".join(f"{k}={row.get(k)}" for k in ("RowKey", "State", "Worker", "ClaimedAt", "LeaseUntil"))
            for row in rows
        ]
        lines.append(f"claims of {ref.name}: {found or 'none (never claimed)'}")
    for name in config.execution_queues:
        queue = QueueClient.from_connection_string(connection, name)
        count = queue.get_queue_properties().approximate_message_count
        visible = len(queue.peek_messages(max_messages=32))
        lines.append(f"queue {name}: {count} messages, {visible} visible")
    return "\n".join(lines)


def explain(log: Path, config: Settings, refs: list[JobRef]) -> str:
    """What a failure shows: storage's state of the jobs' attempts, the host's log lines about them, its
    warnings and errors and the test's marks (the whole log stays in the file)."""
    names = [ref.name for ref in refs]

    def relevant(line: str) -> bool:
        return any(f"/{name}" in line for name in names) or any(w in line for w in (" WARNING ", " ERROR ", " TEST "))

    return f"{storage_state(config, refs)}\n{fault_host.log_tail(log, lines=200, keep=relevant)}"


def jobs_one_a_second(
    services: wiring.Services, collection: CollectionRef, target: HttpTarget, log: Path
) -> list[JobRef]:
    """:data:`JOBS` one-shot jobs due one a second from 4 s on (some run before the outage, some during it),
    once two calls are at the target (each stays 2 s there: the outage starts during calls)."""
    first_due = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
    refs = [JobRef(collection, f"j{i}") for i in range(JOBS)]
    for index, ref in enumerate(refs):
        due = first_due + timedelta(seconds=index)
        services.service.put_job(ref, job_body(due, http_action(f"{target.base_url}/{ref.name}", body=None)))
    mark(log, f"jobs j0..j{JOBS - 1} due from {format_instant(first_due)}, one a second")
    target.wait_for(2, timeout=30)
    return refs


def outage(log: Path, proxies: list[FaultProxy], what: str) -> None:
    """20 s without what the proxies lead to: every connection reset and new ones refused, then every
    connection hanging (a partition, whose held requests move on when it heals); each step marked in the log."""
    for mode, seconds, event in (
        ("cut", CUT_SECONDS, "cut: connections reset, new ones refused"),
        ("blackhole", BLACKHOLE_SECONDS, "partitioned: every connection hangs"),
    ):
        for proxy in proxies:
            proxy.set_mode(mode)
        mark(log, f"{what} {event}")
        time.sleep(seconds)
    for proxy in proxies:
        proxy.set_mode("pass")
    mark(log, f"{what} back")


def settle(services: wiring.Services, refs: list[JobRef], log: Path) -> None:
    """Wait (up to 120 s) for every job to complete, then a few more ticks and polls: nothing more may run."""

    def settled() -> bool:
        return all(services.service.get_job(ref).state == "Completed" for ref in refs)

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not settled():
        time.sleep(0.5)
    mark(log, "settled" if settled() else "not settled within 120 s")
    time.sleep(4)


def test_a_storage_outage_mid_execution_yields_no_second_call_no_unrecorded_run_and_no_stuck_job(
    storage_env: Settings, azurite: Azurite, target: HttpTarget, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "host.log"
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
        host = fault_host.spawn(120, log=log)
        try:
            refs = jobs_one_a_second(services, collection, target, log)
            outage(log, [tables, queues], "storage")
            settle(services, refs, log)
        finally:
            fault_host.stop(host)
    calls = sorted(r.path.lstrip("/") for r in target.received)
    names = [ref.name for ref in refs]
    odd = [ref for ref in refs if calls.count(ref.name) != 1]
    assert calls == names, (
        f"each job called exactly once; not: {[r.name for r in odd]}\n{explain(log, storage_env, odd)}"
    )
    for ref in refs:
        job = services.service.get_job(ref)
        history = services.service.list_history(ref)
        statuses = [(h.status, h.message) for h in history]
        assert [h.status for h in history] == ["Completed"], (ref.name, statuses, explain(log, storage_env, [ref]))
        counts = (job.state, job.execution_count, job.failure_count)
        assert counts == ("Completed", 1, 0), (ref.name, counts, explain(log, storage_env, [ref]))
