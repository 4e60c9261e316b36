"""What a backfill runs (``POST .../jobs/{job}/backfill``, api-version 2026-12-01-preview), end to end: each
occurrence of the window once, in order, recorded as a backfill (trigger ``Backfill`` with the preview; a
2016-03-01 client sees nothing new but the message), one after another with overlapPolicy BufferOne (an
occurrence's retry before the next occurrence); a backfill never ends a job.

The management API in process, the real dispatcher and executor in simulated time on the memory adapter
(:class:`tests.support.harness.Deployment`), and a real HTTP target on 127.0.0.1. With real host processes (a
worker killed mid-backfill, two backfills posted together): ``test_backfill_runs_host_processes.py``."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from scheduler_core.api.messages import ApiRequest
from scheduler_core.definitions import Wire
from scheduler_core.model import HistoryStatus, JobState
from scheduler_core.model.history import Trigger
from scheduler_core.pipeline.messages import Cause
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.support.backfills import (
    CLASSIC,
    HOUR,
    JOB_PATH,
    LATER,
    PREVIEW,
    READER_KEY,
    api,
    backfill_deployment,
    job_ref,
    post,
    window,
)
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import fixed_retries

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def deployment(memory_env: Settings) -> Deployment:
    return backfill_deployment(memory_env)


def aim(deployment: Deployment, target: HttpTarget, **action: Any) -> None:
    """Point the job's action at the real target (the fixture's job aims at a closed port)."""
    request = {"uri": f"{target.base_url}/hook", "method": "POST", "body": "@{scheduledTime}"}
    body = {"properties": {"action": {"type": "Http", "expandPlaceholders": True, "request": request, **action}}}
    deployment.service.patch_job(job_ref(), body, wire=Wire.PREVIEW)
    # the job's scheduled occurrence due now (when it was written) runs first, outside the backfill (the
    # message of the job as first written is stale)
    assert sorted(report.outcome.value for report in deployment.deliver()) == ["stale", "succeeded"]
    with target.lock:
        target.received.clear()


def stamp(instant: datetime) -> bytes:
    """The body the action sends for an occurrence (``@{scheduledTime}``)."""
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ").encode()


def test_each_occurrence_of_the_window_runs_in_order_as_a_backfill(deployment: Deployment, target: HttpTarget) -> None:
    aim(deployment, target, retryPolicy={"retryType": "None"})
    status, answer = post(deployment, window(1, 4.5))
    assert (status, answer) == (202, {"count": 4})
    queued = deployment.take()
    assert [message.cause for message in queued] == [Cause.BACKFILL] * 4
    assert [message.occurrence_time for message in queued] == [START + n * HOUR for n in (1, 2, 3, 4)]
    for message in queued:
        deployment.executor.execute(message)
    history = [row for row in deployment.history("j") if row.trigger is Trigger.BACKFILL]
    assert sorted(row.expected_execution_time for row in history) == [START + n * HOUR for n in (1, 2, 3, 4)]
    assert all(row.status == HistoryStatus.COMPLETED for row in history)
    assert all(row.message.endswith("(backfill)") for row in history)  # what a 2016-03-01 client can see
    [scheduled] = [row for row in deployment.history("j") if row.trigger is not Trigger.BACKFILL]
    assert scheduled.trigger is Trigger.SCHEDULED and not scheduled.message.endswith("(backfill)")
    # in order, as the target received them
    assert [received.body for received in target.received] == [stamp(START + n * HOUR) for n in (1, 2, 3, 4)]
    job = deployment.job("j")
    assert job.state == JobState.ENABLED and job.execution_count == 5  # the four and the scheduled run


def test_buffer_one_runs_them_one_after_another(deployment: Deployment, target: HttpTarget) -> None:
    aim(deployment, target, retryPolicy=fixed_retries(1, "PT30S"))
    target.answer([500, 200])
    status, answer = post(deployment, window(0, 3, overlapPolicy="BufferOne"))
    assert (status, answer) == (202, {"count": 3})
    [first] = [message for message in deployment.queued() if '"backfill"' in message.text]  # one at a time
    deployment.run_until(LATER + timedelta(minutes=5))
    backfilled = [row for row in deployment.history("j") if row.trigger is Trigger.BACKFILL]
    assert sorted((row.expected_execution_time, row.status.value, row.retry_count) for row in backfilled) == [
        (START, "Completed", 1),
        (START, "Failed", 0),
        (START + HOUR, "Completed", 0),
        (START + 2 * HOUR, "Completed", 0),
    ]
    # the calls as the target received them: the first occurrence's retry before the next occurrence
    assert [received.body for received in target.received] == [
        stamp(START),
        stamp(START),
        stamp(START + HOUR),
        stamp(START + 2 * HOUR),
    ]
    assert first.text


def test_a_backfill_never_ends_a_job(deployment: Deployment, target: HttpTarget) -> None:
    aim(deployment, target, retryPolicy={"retryType": "None"})
    target.answer([500])
    status, _ = post(deployment, window(0, 2))
    assert status == 202
    deployment.run_until(LATER + timedelta(seconds=30))
    assert deployment.job("j").state == JobState.ENABLED
    assert sum(1 for row in deployment.history("j") if row.trigger is Trigger.BACKFILL) == 2


def history_answer(deployment: Deployment, version: str) -> list[dict[str, Any]]:
    """The job's history as ``GET .../history?api-version=...`` answers it (the real handler), its items'
    properties."""
    path = JOB_PATH + "/history"
    request = ApiRequest(
        "GET",
        f"http://127.0.0.1/{path}?api-version={version}",
        path,
        {"api-version": version},
        {"Authorization": f"Bearer {READER_KEY}"},
        b"",
    )
    response = api(deployment).handle(request)
    assert response.status == 200, response.body
    return [item["properties"] for item in json.loads(response.body)["value"]]


def test_history_says_trigger_backfill_with_the_preview_and_nothing_new_with_2016_03_01(
    deployment: Deployment, target: HttpTarget
) -> None:
    aim(deployment, target, retryPolicy={"retryType": "None"})
    target.answer([200])
    assert post(deployment, window(1, 3))[0] == 202
    ran_at = deployment.clock.now  # a run on demand's occurrence: when it was asked for
    deployment.service.run_job(job_ref())
    deployment.deliver()
    preview = history_answer(deployment, PREVIEW)
    assert sorted((item["trigger"], item.get("expectedExecutionTime", "")) for item in preview) == sorted(
        [
            ("Backfill", format_instant(START + HOUR)),
            ("Backfill", format_instant(START + 2 * HOUR)),
            ("Manual", format_instant(ran_at)),
            ("Scheduled", format_instant(LATER)),
        ]
    )
    classic = history_answer(deployment, CLASSIC)
    assert len(classic) == 4
    assert all("trigger" not in item for item in classic)  # old clients see exactly what they always did
    assert [set(item) for item in classic] == [set(item) - {"trigger", "dueTime"} for item in preview]
    # The preview also says when a backfill's occurrence was due (its start slot, not its past occurrence).
    assert sorted("dueTime" in item for item in preview) == [False, False, True, True]
    assert sorted(item["message"].endswith("(backfill)") for item in classic) == [False, False, True, True]
