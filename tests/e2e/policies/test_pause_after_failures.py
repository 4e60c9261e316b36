"""pauseAfterFailures (api-version 2026-12-01-preview) end to end: after that many consecutive faulted
occurrences the job is disabled, the reason in its last history entry and in the preview's
``status.disabledReason`` (not in 2016-03-01's view); its error action runs first; enabled again, it resumes
and the reason is gone. The real service, dispatcher and executor in simulated time on the memory adapter
(:class:`tests.support.harness.Deployment`) with a real HTTP target on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from scheduler_core.api import views
from scheduler_core.definitions import Wire
from scheduler_core.model import HistoryStatus, JobState
from scheduler_core.recurrence import format_instant
from tests.e2e.policies.scenario import MINUTE, T0, put, rows
from tests.support.harness import Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, http_action

pytestmark = [pytest.mark.e2e]


def test_pause_after_failures_disables_the_job_with_the_reason(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([500, 200, 500, 500, 500])
    put(deployment, target, {"frequency": "Minute"}, NO_RETRY, pauseAfterFailures=2)
    deployment.run_until(T0 + 6 * MINUTE)
    history = rows(deployment)
    assert [row.status for row in history] == ["Failed", "Completed", "Failed", "Failed"]  # then nothing ran
    assert "Disabled after 2 consecutive faulted occurrence(s)" in history[-1].message
    assert "Disabled after" not in history[0].message
    job = deployment.job("j")
    assert job.state == JobState.DISABLED, job
    assert "2 consecutive faulted" in job.paused, job
    preview = views.job(deployment.service.get_job(job.ref), Wire.PREVIEW)
    assert "2 consecutive faulted" in preview["properties"]["status"]["disabledReason"]
    classic = views.job(deployment.service.get_job(job.ref), Wire.CLASSIC)
    assert "disabledReason" not in json.dumps(classic) and classic["properties"]["state"] == "Disabled"
    # enabled again: it resumes, the reason gone
    target.answer([200])
    enabled = deployment.service.patch_job(job.ref, {"properties": {"state": "Enabled"}}, wire=Wire.PREVIEW)
    assert "disabledReason" not in views.job(enabled, Wire.PREVIEW)["properties"]["status"]
    deployment.run_until(T0 + 8 * MINUTE)
    assert rows(deployment)[-1].status == HistoryStatus.COMPLETED


def test_the_error_action_runs_before_the_job_is_paused(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([500])
    action = http_action(f"{target.base_url}/hook", retryPolicy=NO_RETRY)
    action["errorAction"] = {"type": "Http", "request": {"uri": f"{target.base_url}/error", "method": "POST"}}
    body = {
        "properties": {
            "startTime": format_instant(T0),
            "action": action,
            "recurrence": {"frequency": "Minute"},
            "pauseAfterFailures": 1,
        }
    }
    deployment.service.put_job(deployment.ref("j"), body, wire=Wire.PREVIEW)
    deployment.run_until(T0 + 3 * MINUTE)
    paths = [received.path for received in target.received]
    assert paths == ["/hook", "/error"]
    assert deployment.job("j").state == JobState.DISABLED
