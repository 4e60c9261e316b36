"""Faults: an attempt's message is taken from the queue and the answer is lost, so it is never claimed. A real
host process (the function app on the local host, timer and queue triggers; ``tests/e2e/fault_host.py``)
reaches Azurite's queues through :mod:`tests.support.answer_loss_proxy`, a real TCP proxy that lets the
first receive holding an execution message reach Azurite and then resets the connection instead of passing
the answer on, as when storage is cut at that moment (the storage-outage test can meet it by chance). The
queue keeps the message hidden for the processing lease the receive asked for (10 minutes) and no worker
saw it. The claim lease is short (a constructor parameter of the services) so the test waits seconds.

The promise: the attempt runs within a few dispatch ticks of its claim's lease (the watchdog finds it
unclaimed and sends it again), once: when the hidden message comes back, its claim is done.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from local_host.azurite import Azurite, AzuritePorts
from scheduler_core import wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.pipeline.watches import WATCH_GRACE
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e import fault_host
from tests.support.answer_loss_proxy import answer_loss_proxy
from tests.support.http_target import HttpTarget
from tests.support.jobs import http_action, job_body

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

LEASE_SECONDS = 6
#: The watchdog looks at an attempt a lease (and its grace) after it was due, at a dispatch tick (2 s here);
#: the rest is the poll that takes the message again and the call.
RERUN_BOUND = timedelta(seconds=LEASE_SECONDS) + WATCH_GRACE + timedelta(seconds=20)


def receives_from(queue: str) -> Callable[[str, str], bool]:
    """Receives (not peeks) of the queue named ``queue``."""

    def accepts(method: str, target: str) -> bool:
        parts = urlsplit(target)
        query = {name.lower() for name in parse_qs(parts.query)}
        return method == "GET" and parts.path.endswith(f"/{queue}/messages") and "peekonly" not in query

    return accepts


def quiet(line: str) -> bool:
    """The host's log lines a failure shows: all but the scans' and ticks' own."""
    return "function=scan_shard" not in line and "dispatch_tick" not in line


def test_an_attempt_whose_receive_answer_is_lost_runs_once_within_a_tick_of_its_lease(
    storage_env: Settings, azurite: Azurite, target: HttpTarget, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "host.log"
    provision(storage_env)
    services = wiring.build(storage_env, claim_lease=timedelta(seconds=LEASE_SECONDS))  # direct to Azurite
    collection = CollectionRef("sub1", "rg", "jc")
    services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    ref = JobRef(collection, "hidden")
    with answer_loss_proxy(("127.0.0.1", azurite.ports.queue)) as queues:
        queues.lose(receives_from(storage_env.execution_queue), lambda answer: b"<QueueMessage>" in answer)
        proxied = AzuritePorts(blob=azurite.ports.blob, queue=queues.port, table=azurite.ports.table)
        monkeypatch.setenv("AzureWebJobsStorage", proxied.connection_string())
        monkeypatch.setenv("SCHEDULER_DISPATCH_SCHEDULE", "*/2 * * * * *")
        host = fault_host.spawn(LEASE_SECONDS, log=log)
        try:
            due = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
            services.service.put_job(ref, job_body(due, http_action(f"{target.base_url}/hook", body=None)))
            deadline = time.monotonic() + (due - datetime.now(UTC) + RERUN_BOUND).total_seconds()
            while time.monotonic() < deadline and not target.received:
                time.sleep(0.2)
            assert target.received, f"not run within {RERUN_BOUND} of {due}\n{fault_host.log_tail(log, keep=quiet)}"
            time.sleep(LEASE_SECONDS * 2 + 5)  # further leases and ticks: nothing more may run
        finally:
            fault_host.stop(host)
    [lost] = queues.lost  # the first receive that held the message: it was taken, and its answer lost
    assert lost.answer.startswith("HTTP/1.1 200"), lost
    [call] = target.received
    assert datetime.fromtimestamp(call.at, UTC) - due < RERUN_BOUND
    history = services.service.list_history(ref)
    assert [h.status for h in history] == ["Completed"], ([(h.status, h.message) for h in history], log)
    job = services.service.get_job(ref)
    assert (job.state, job.execution_count, job.failure_count) == ("Completed", 1, 0)
