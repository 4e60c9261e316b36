"""deleteAfterCompletion (api-version 2026-12-01-preview) end to end: a job that ends completed is deleted,
its place under maxJobCount given back; one that ends faulted is kept. The real service, dispatcher and
executor in simulated time on the memory adapter (:class:`tests.support.harness.Deployment`) with a real HTTP
target on 127.0.0.1."""

from __future__ import annotations

from datetime import timedelta

import pytest

from scheduler_core.model import JobState
from scheduler_core.recurrence import format_instant
from tests.e2e.policies.scenario import MINUTE, T0, put
from tests.support.harness import COLLECTION, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, http_action

pytestmark = [pytest.mark.e2e]


def test_delete_after_completion_removes_a_completed_job_only(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([200])
    put(deployment, target, {"frequency": "Minute", "count": 2}, NO_RETRY, deleteAfterCompletion=True)
    deployment.run_until(T0 + 3 * MINUTE)
    assert len(target.received) == 2
    assert deployment.storage.jobs.get(deployment.ref("j")) is None
    assert deployment.service.list_jobs(COLLECTION) == []
    assert deployment.storage.collections.get(COLLECTION) is not None
    # its place under maxJobCount (8) is given back: eight jobs fit again
    for index in range(8):
        put_named(deployment, target, f"k{index}")
    assert len(deployment.service.list_jobs(COLLECTION)) == 8


def put_named(deployment: Deployment, target: HttpTarget, name: str) -> None:
    body = {
        "properties": {
            "startTime": format_instant(T0 + timedelta(days=1)),
            "action": http_action(f"{target.base_url}/hook", retryPolicy=NO_RETRY),
        }
    }
    deployment.service.put_job(deployment.ref(name), body)


def test_delete_after_completion_keeps_a_faulted_job(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([500])
    put(deployment, target, {"frequency": "Minute", "count": 1}, NO_RETRY, deleteAfterCompletion=True)
    deployment.run_until(T0 + 2 * MINUTE)
    assert deployment.job("j").state == JobState.FAULTED
