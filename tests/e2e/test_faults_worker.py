"""Faults: a worker process killed in the middle of a call. Real host processes (the function app on the
local host, timer and queue triggers) over the session's Azurite, a real HTTP target on 127.0.0.1 that
holds the first request, and SIGKILL.

The promise: each occurrence is recorded once; its action is delivered at least once, more than once only
when a worker or storage dies mid-call, and every delivery of one occurrence carries the same
``x-ms-scheduler-execution-id`` and expected time. A worker that dies mid-call is replaced within 3
minutes of its lease's end (the watchdog), and the lost attempt is recorded next to the re-run; with the
deployed lease, within 40 s of its death.

Here the deployed lease and timer, with a worker killed after renewing its lease once. The 3-minute bound is
``tests/e2e/test_faults_worker_short_lease.py``'s, with a short lease (a constructor parameter of the
services) so that the test waits seconds, not minutes, and the dispatch timer ticking every 2 s instead of
every minute: a module of its own, so that the two run side by side (over this module's :func:`held_job`).
"""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core import wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.model.claim import CLAIM_LEASE, heartbeat_every
from scheduler_core.pipeline.execute import WORKER_LOST
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e import fault_host
from tests.support.http_target import HttpTarget
from tests.support.jobs import http_action, job_body
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


def held_job(
    storage_env: Settings, target: HttpTarget, collection_name: str, name: str, lease: timedelta
) -> tuple[wiring.Services, JobRef, datetime, dict[str, Any]]:
    """This process's services (claims of ``lease``) over the provisioned storage, a Standard collection, and
    a one-shot job due 4 s from now (its reference, its start and its body) whose call the target holds until
    the worker is gone."""
    provision(storage_env)
    services = wiring.build(storage_env, claim_lease=lease)
    collection = CollectionRef("sub1", "rg", collection_name)
    services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    target.answer([200], delay=600)
    return services, JobRef(collection, name), *soon(target)


def soon(target: HttpTarget) -> tuple[datetime, dict[str, Any]]:
    """A one-shot job's start 4 s from now, and its body. Made once the host serves: a host slow to start
    (a loaded machine) would otherwise find the job created after its start, and run it at its creation."""
    due = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
    return due, job_body(due, http_action(target.base_url + "/hook"))


#: The bound with the deployed lease (``CLAIM_LEASE``, 15 s, renewed every 5 s) and watch looks (5-s slots): a
#: dead worker's attempt runs again within about 34 s of the death (scheduler_core.pipeline.watchdog), here
#: with 6 s for the local host's queue polls and a loaded machine.
DEFAULT_RERUN_BOUND = timedelta(seconds=40)


def test_a_worker_killed_after_renewing_its_lease_is_run_again_within_40_s_of_its_death_by_a_watch_look(
    storage_env: Settings, target: HttpTarget
) -> None:
    """The deployed lease and timer (a tick a minute): the job is dispatched when it is written (it is due
    within the lookahead), so what runs it again is its watch look, not a tick."""
    lease = CLAIM_LEASE.total_seconds()
    services, ref, _, _ = held_job(storage_env, target, "jc2", "renewing", CLAIM_LEASE)
    doomed = fault_host.spawn(lease)
    _, body = soon(target)
    successor = None
    try:
        services.service.put_job(ref, body)
        [first] = target.wait_for(1, timeout=30)
        time.sleep(heartbeat_every(CLAIM_LEASE).total_seconds() + 1)  # its lease renewed once
        doomed.send_signal(signal.SIGKILL)
        died = datetime.now(UTC)
        doomed.wait(timeout=10)
        target.answer([200], delay=0)
        successor = fault_host.spawn(lease)
        second = target.wait_for(2, timeout=90)[1]
        rerun_after = datetime.fromtimestamp(second.at, UTC) - died
        print(f"re-run {rerun_after.total_seconds():.1f} s after the worker died")
        assert rerun_after < DEFAULT_RERUN_BOUND

        def recorded() -> bool:
            job = services.service.get_job(ref)
            return job.state == "Completed" and len(services.service.list_history(ref)) == 2

        wait_until(recorded, 30, "the re-run recorded and the job completed")
    finally:
        doomed.kill()
        if successor is not None:
            fault_host.stop(successor)
    assert len(target.received) == 2
    assert first.headers["x-ms-scheduler-execution-id"] == second.headers["x-ms-scheduler-execution-id"]
    history = services.service.list_history(ref)
    assert [(h.status, h.message.startswith(WORKER_LOST)) for h in history] == [("Completed", False), ("Failed", True)]
