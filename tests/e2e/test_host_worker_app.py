"""The local host's language worker as a process running the real function app (``worker="process"``): a worker
process restarted because an invocation passed host.json's ``functionTimeout`` (after the grace period), or one
that died, fails the invocations in flight on it; the app records each execution lost with them once and runs
it again (the claim's lease, here 6 s: ``tests/e2e/test_faults_worker.py``), after a timeout's restart as after
a worker that died, and the host runs on.

The worker of ``tests/e2e/test_host_worker.py`` (timeouts, restarts and plans with a worker of threads, and the
command line), in a module of its own so that its real-time waits run beside that one's. The dispatch timer
ticks every 2 s; the function timeout is 8 s, the grace period 0.5 s.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from local_host.azurite import free_port
from local_host.hostjson import load_host_json
from local_host.runtime import LocalHost
from local_host.worker import ProcessWorker
from scheduler_core import wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.pipeline.execute import WORKER_LOST
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e.test_host_worker import GRACE, ROOT
from tests.e2e.worker_init import LEASE_SETTING
from tests.support.http_target import HttpTarget
from tests.support.jobs import http_action, job_body
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

LEASE_SECONDS = 6


@pytest.fixture
def real_app_host(
    storage_env: Settings, monkeypatch: pytest.MonkeyPatch, target: HttpTarget
) -> Iterator[tuple[LocalHost, wiring.Services]]:
    import function_app

    monkeypatch.setenv("SCHEDULER_DISPATCH_SCHEDULE", "*/2 * * * * *")
    monkeypatch.setenv(LEASE_SETTING, str(LEASE_SECONDS))
    provision(storage_env)
    services = wiring.build(storage_env, claim_lease=timedelta(seconds=LEASE_SECONDS))
    config = dataclasses.replace(load_host_json(ROOT / "host.json"), function_timeout=8.0)
    host = LocalHost(
        function_app.app,
        config,
        port=free_port(),
        enable=frozenset({"timer", "queue"}),
        worker="process",
        worker_app="function_app:app",
        worker_init="tests.e2e.worker_init:short_claim_lease",
        timeout_grace=GRACE,
    )
    host.start()
    try:
        yield host, services
    finally:
        target.answer([200], delay=0)
        host.stop()


def held_jobs(services: wiring.Services, target: HttpTarget, names: dict[str, float]) -> dict[str, JobRef]:
    """One-shot HTTP jobs to ``target``/<name>, each due the given seconds from now (whole seconds)."""
    collection = CollectionRef("sub1", "rg", f"jc{uuid.uuid4().hex[:6]}")
    services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    now = datetime.now(UTC)
    refs = {}
    for name, after in names.items():
        due = (now + timedelta(seconds=after)).replace(microsecond=0)
        refs[name] = JobRef(collection, name)
        services.service.put_job(refs[name], job_body(due, http_action(f"{target.base_url}/{name}", body=name)))
    return refs


def assert_recorded_once_and_run_again(services: wiring.Services, target: HttpTarget, refs: dict[str, JobRef]) -> None:
    """Each job: its lost attempt and its re-run recorded (history Completed + Failed "worker lost"), counted
    once, and both calls carrying the same execution id."""

    def recorded() -> bool:
        return all(
            services.service.get_job(ref).state == "Completed" and len(services.service.list_history(ref)) == 2
            for ref in refs.values()
        )

    wait_until(recorded, 60, "every lost attempt recorded next to its re-run")
    time.sleep(LEASE_SECONDS + 3)  # a further lease and some ticks: nothing more may run
    for name, ref in refs.items():
        calls = [r for r in target.received if r.path == f"/{name}"]
        assert len(calls) == 2, name
        assert len({c.headers["x-ms-scheduler-execution-id"] for c in calls}) == 1
        history = services.service.list_history(ref)
        assert sorted((h.status, h.message.startswith(WORKER_LOST)) for h in history) == [
            ("Completed", False),
            ("Failed", True),
        ], name
        job = services.service.get_job(ref)
        assert (job.execution_count, job.failure_count, job.faulted_count) == (1, 0, 0), name


def test_a_timeout_restarts_the_worker_process_and_the_app_records_each_lost_execution_once(
    real_app_host: tuple[LocalHost, wiring.Services], target: HttpTarget
) -> None:
    host, services = real_app_host
    worker = host.worker
    assert isinstance(worker, ProcessWorker)
    first_pid = worker.pid
    target.answer([200], delay=600)  # every first call is held: the worker dies holding them
    refs = held_jobs(services, target, {"hang": 3, "younger-1": 7, "younger-2": 7})
    target.wait_for(3, timeout=30)  # "hang" at its due time, the other two 4 s later: all three in flight
    calls = {r.path: r.at for r in target.received}
    assert calls["/younger-1"] - calls["/hang"] >= 2.5
    # "hang" times out at 8 s, the worker process is killed 0.5 s later with the two others mid-call.
    wait_until(lambda: worker.pid not in (None, first_pid), 20, "a new worker process after the timeout")
    target.answer([200], delay=0)
    assert worker.restarts == 1
    assert_recorded_once_and_run_again(services, target, refs)
    assert worker.restarts == 1


def test_a_worker_process_that_dies_fails_its_invocations_and_the_host_runs_on(
    real_app_host: tuple[LocalHost, wiring.Services], target: HttpTarget
) -> None:
    host, services = real_app_host
    worker = host.worker
    assert isinstance(worker, ProcessWorker)
    target.answer([200], delay=600)
    refs = held_jobs(services, target, {"a": 3, "b": 3})
    target.wait_for(2, timeout=30)
    pid = worker.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # a crash of the worker, not of the host
    wait_until(lambda: worker.pid not in (None, pid), 30, "a new worker process")
    target.answer([200], delay=0)
    assert_recorded_once_and_run_again(services, target, refs)
    # The host ran on: the dispatch timer still ticks, new jobs still fire.
    more = held_jobs(services, target, {"after": 2})
    wait_until(lambda: services.service.get_job(more["after"]).state == "Completed", 30, "a job after the crash")
