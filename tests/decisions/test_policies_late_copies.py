"""Late copies against the policies (found by review): a copy of a finished attempt (a redelivery, the
watchdog's resend of an attempt it saw unclaimed) must not mark its occurrence running again, and RunOnce's
one run after a long outage skips nothing."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from scheduler_core.definitions import Wire
from scheduler_core.model import HistoryStatus
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.recurrence import format_instant
from tests.decisions.conftest import NO_RETRY, START, Deployment, http_action
from tests.support.http_target import HttpTarget

T0 = START + timedelta(hours=1)
MINUTE = timedelta(minutes=1)


def test_a_late_copy_of_a_finished_attempt_neither_runs_nor_holds_the_next_occurrence_back(
    deployment: Deployment, target: HttpTarget
) -> None:
    body: dict[str, Any] = {
        "properties": {
            "startTime": format_instant(T0),
            "action": http_action(f"{target.base_url}/hook", retryPolicy=NO_RETRY),
            "recurrence": {"frequency": "Minute", "interval": 2},
            "overlapPolicy": "Skip",
        }
    }
    deployment.service.put_job(deployment.ref("j"), body, wire=Wire.PREVIEW)
    deployment.run_until(T0 - timedelta(seconds=5))
    deployment.clock.set(T0)
    deployment.scan()
    [first] = deployment.take()
    assert deployment.executor.execute(first).outcome is Outcome.SUCCEEDED
    assert not deployment.job("j").running  # nothing running

    deployment.clock.set(T0 + timedelta(seconds=30))  # the copy, delivered late
    assert deployment.executor.execute(first).outcome is Outcome.DUPLICATE
    assert not deployment.job("j").running  # nothing running
    deployment.run_until(T0 + 2 * MINUTE + timedelta(seconds=30))

    rows = deployment.history("j")
    assert [r.status for r in rows if r.status == HistoryStatus.SKIPPED] == []
    assert sorted(r.expected_execution_time for r in rows) == [T0, T0 + 2 * MINUTE]
    assert len(target.received) == 2


def test_run_once_with_a_window_after_an_outage_of_more_than_a_thousand_occurrences_skips_nothing(
    deployment: Deployment, target: HttpTarget
) -> None:
    body: dict[str, Any] = {
        "properties": {
            "startTime": format_instant(T0),
            "action": http_action(f"{target.base_url}/hook", retryPolicy=NO_RETRY),
            "recurrence": {"frequency": "Minute"},
            "missedRunPolicy": {"mode": "RunOnce", "window": "P2D"},
        }
    }
    deployment.service.put_job(deployment.ref("j"), body, wire=Wire.PREVIEW)
    deployment.clock.set(T0 + timedelta(minutes=1100))  # the service was down
    deployment.run_until(T0 + timedelta(minutes=1101, seconds=30))

    rows = deployment.history("j")
    assert rows, "the catch-up ran"
    assert [r.message for r in rows if r.status == HistoryStatus.SKIPPED] == []
