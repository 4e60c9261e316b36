"""Editing a job never lets it run more often than written: an edit that keeps the schedule keeps the
series (and its ``count`` and ``endTime``), one that changes the schedule starts a new series.

The pipeline runs on the memory adapter with simulated time (``tests/support/harness.py``; the contract
suite holds that adapter to the Azure one's rules): real dispatcher, executor and HTTP target; the execution
queue is the memory adapter's, in simulated time.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from scheduler_core.recurrence import format_instant
from tests.support.harness import Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import every, http_action, job_body

pytestmark = [pytest.mark.e2e, pytest.mark.backend("memory")]


def every_minute(url: str, body: str = "v1", **recurrence: Any) -> dict[str, Any]:
    return job_body(None, http_action(url, body=body), every("Minute", **recurrence))


def patch(pipeline: Deployment, name: str, properties: dict[str, Any]) -> None:
    pipeline.services.service.patch_job(pipeline.ref(name), {"properties": properties})


def test_editing_only_the_request_body_keeps_the_count(pipeline: Deployment, target: HttpTarget) -> None:
    pipeline.put_job("counted", every_minute(target.base_url + "/hook", count=4))
    pipeline.run_until(pipeline.clock.now + timedelta(minutes=1, seconds=30))
    assert len(target.received) == 2
    patch(pipeline, "counted", {"action": {"request": {"body": "v2"}}})
    pipeline.run_until(pipeline.clock.now + timedelta(minutes=10))
    assert len(target.received) == 4
    assert [r.body for r in target.received] == [b"v1", b"v1", b"v2", b"v2"]
    job = pipeline.services.service.get_job(pipeline.ref("counted"))
    assert job.state == "Completed"
    assert job.execution_count == 4


def test_disabling_and_enabling_keeps_the_series_and_its_count(pipeline: Deployment, target: HttpTarget) -> None:
    pipeline.put_job("counted", every_minute(target.base_url + "/hook", count=3))
    pipeline.run_until(pipeline.clock.now + timedelta(seconds=30))
    assert len(target.received) == 1
    for state in ("Disabled", "Enabled", "Disabled", "Enabled"):
        patch(pipeline, "counted", {"state": state})
    pipeline.run_until(pipeline.clock.now + timedelta(minutes=10))
    assert len(target.received) == 3
    assert pipeline.services.service.get_job(pipeline.ref("counted")).state == "Completed"


def test_lowering_the_count_below_the_runs_so_far_completes_the_job(pipeline: Deployment, target: HttpTarget) -> None:
    pipeline.put_job("counted", every_minute(target.base_url + "/hook", count=10))
    pipeline.run_until(pipeline.clock.now + timedelta(minutes=2, seconds=30))
    assert len(target.received) == 3
    patch(pipeline, "counted", {"recurrence": {"count": 2}})
    pipeline.run_until(pipeline.clock.now + timedelta(minutes=5))
    assert len(target.received) == 3
    assert pipeline.services.service.get_job(pipeline.ref("counted")).state == "Completed"


def test_an_edit_keeps_the_end_time(pipeline: Deployment, target: HttpTarget) -> None:
    end = pipeline.clock.now + timedelta(minutes=3, seconds=30)
    pipeline.put_job("ending", every_minute(target.base_url + "/hook", endTime=format_instant(end)))
    pipeline.run_until(pipeline.clock.now + timedelta(minutes=1, seconds=30))
    patch(pipeline, "ending", {"action": {"request": {"body": "v2"}}})
    pipeline.run_until(end + timedelta(minutes=5))
    times = [r.headers["x-ms-scheduler-expected-execution-time"] for r in target.received]
    assert len(times) == 4 and all(t <= format_instant(end) for t in times)


def test_changing_the_schedule_starts_a_new_series(pipeline: Deployment, target: HttpTarget) -> None:
    pipeline.put_job("counted", every_minute(target.base_url + "/hook", count=2))
    pipeline.run_until(pipeline.clock.now + timedelta(seconds=30))
    assert len(target.received) == 1
    patch(pipeline, "counted", {"recurrence": {"interval": 2}})
    pipeline.run_until(pipeline.clock.now + timedelta(minutes=10))
    # One run of the first series, then the new series' two runs (its first one at the edit).
    assert len(target.received) == 3
    assert pipeline.services.service.get_job(pipeline.ref("counted")).state == "Completed"
