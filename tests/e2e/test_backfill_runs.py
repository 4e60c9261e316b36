"""What a backfill runs (``POST .../jobs/{job}/backfill``, api-version 2026-12-01-preview), end to end: the
management API in process, the real dispatcher and executor in simulated time on the memory adapter, and a
real HTTP target on 127.0.0.1. Each occurrence of the window runs once, in order, recorded as a backfill."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from scheduler_core.definitions import Wire
from scheduler_core.model import HistoryStatus, JobState
from scheduler_core.pipeline.messages import Cause
from scheduler_core.settings import Settings
from tests.decisions.conftest import START, Deployment, fixed_retries
from tests.e2e.test_backfill_api import HOUR, LATER, _ref, backfill_deployment, post, window
from tests.support.http_target import HttpTarget

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def deployment(memory_env: Settings) -> Deployment:
    return backfill_deployment(memory_env)


def aim(deployment: Deployment, target: HttpTarget, **action: Any) -> None:
    """Point the job's action at the real target (the fixture's job aims at a closed port)."""
    request = {"uri": f"{target.base_url}/hook", "method": "POST", "body": "@{scheduledTime}"}
    body = {"properties": {"action": {"type": "Http", "expandPlaceholders": True, "request": request, **action}}}
    deployment.service.patch_job(_ref(), body, wire=Wire.PREVIEW)
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
    history = [row for row in deployment.history("j") if "(backfill)" in row.message]
    assert sorted(row.expected_execution_time for row in history) == [START + n * HOUR for n in (1, 2, 3, 4)]
    assert all(row.status == HistoryStatus.COMPLETED for row in history)
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
    backfilled = [row for row in deployment.history("j") if "(backfill)" in row.message]
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
    assert sum(1 for row in deployment.history("j") if "(backfill)" in row.message) == 2
