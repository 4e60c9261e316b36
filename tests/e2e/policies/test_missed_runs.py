"""missedRunPolicy (api-version 2026-12-01-preview) end to end: after the service was down, RunOnce (the
default: today's coalescing) runs one late run standing for the missed occurrences, or for those within its
window; RunAll runs each, in order, within its window (at most 1,000 of one catch-up); Skip runs none and
resumes at the next. What is not run is written as one ``Skipped`` entry, once, however often the scan runs
again; an occurrence on time is not missed.

The real service, dispatcher and executor in simulated time on the memory adapter
(:class:`tests.support.harness.Deployment`) with a real HTTP target on 127.0.0.1; the ``Skipped`` entry also
over the Azure adapter on Azurite."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.definitions import Wire
from scheduler_core.model import HistoryEntry, HistoryStatus, JobState
from scheduler_core.model.history import Trigger
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.e2e.policies.scenario import MINUTE, T0, put
from tests.support.harness import Deployment, near_now, parsed
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY

pytestmark = [pytest.mark.e2e]

HOUR = timedelta(hours=1)


def down_for_ten_minutes(deployment: Deployment, target: HttpTarget, **props: Any) -> list[datetime]:
    """The job runs every minute from T0; the service is down from before T0 to T0 + 10m 30s. Returns the
    occurrences that ran (the expected times of the entries that are not ``Skipped``)."""
    put(deployment, target, {"frequency": "Minute"}, NO_RETRY, **props)
    deployment.clock.set(T0 + timedelta(minutes=10, seconds=30))
    deployment.run_until(T0 + timedelta(minutes=10, seconds=40))
    return sorted(
        row.expected_execution_time
        for row in deployment.history("j")
        if row.expected_execution_time and row.status != HistoryStatus.SKIPPED
    )


def skipped(deployment: Deployment) -> list[HistoryEntry]:
    return [row for row in deployment.history("j") if row.status == HistoryStatus.SKIPPED]


def test_run_once_is_todays_coalescing(deployment: Deployment, target: HttpTarget) -> None:
    ran = down_for_ten_minutes(deployment, target)
    assert ran == [T0]
    [row] = deployment.history("j")  # nothing dropped: no Skipped entry
    assert "late run standing for 11 occurrences" in row.message


def test_run_once_with_a_window_stands_for_the_recent_ones_only(deployment: Deployment, target: HttpTarget) -> None:
    ran = down_for_ten_minutes(deployment, target, missedRunPolicy={"mode": "RunOnce", "window": "PT3M"})
    assert ran == [T0 + 8 * MINUTE]  # 7m30s..10m30s: the occurrences of 8, 9 and 10 minutes
    [row] = [row for row in deployment.history("j") if row.status != HistoryStatus.SKIPPED]
    assert "standing for 3 occurrences" in row.message
    [dropped] = skipped(deployment)  # the 8 older ones: one entry
    assert dropped.message == (
        f"Skipped: 8 occurrence(s) from {format_instant(T0)} to {format_instant(T0 + 7 * MINUTE)} missed while "
        "the service was down (older than the missedRunPolicy window PT3M)"
    )
    assert (dropped.expected_execution_time, dropped.repeat_count, dropped.trigger) == (T0, 1, Trigger.SCHEDULED)


def test_run_all_runs_each_missed_occurrence_in_order(deployment: Deployment, target: HttpTarget) -> None:
    ran = down_for_ten_minutes(deployment, target, missedRunPolicy={"mode": "RunAll", "window": "PT4M"})
    assert ran == [T0 + m * MINUTE for m in (7, 8, 9, 10)]
    history = [row for row in deployment.history("j") if row.status != HistoryStatus.SKIPPED]
    starts = [row.start_time for row in sorted(history, key=lambda r: r.expected_execution_time or T0)]
    assert starts == sorted(starts)
    [dropped] = skipped(deployment)
    assert dropped.message.startswith(
        f"Skipped: 7 occurrence(s) from {format_instant(T0)} to {format_instant(T0 + 6 * MINUTE)} missed"
    )
    assert dropped.message.endswith("(older than the missedRunPolicy window PT4M)")


def test_run_all_without_a_window_runs_every_missed_occurrence(deployment: Deployment, target: HttpTarget) -> None:
    ran = down_for_ten_minutes(deployment, target, missedRunPolicy={"mode": "RunAll"})
    assert ran == [T0 + m * MINUTE for m in range(11)]
    assert all("standing for" not in row.message for row in deployment.history("j"))
    assert skipped(deployment) == []


def test_skip_runs_no_missed_occurrence_and_resumes_at_the_next(deployment: Deployment, target: HttpTarget) -> None:
    ran = down_for_ten_minutes(deployment, target, missedRunPolicy={"mode": "Skip"})
    assert ran == []
    [dropped] = skipped(deployment)  # eleven occurrences, one entry
    assert dropped.message == (
        f"Skipped: 11 occurrence(s) from {format_instant(T0)} to {format_instant(T0 + 10 * MINUTE)} missed while "
        "the service was down (missedRunPolicy Skip)"
    )
    assert all(entry.due > T0 + 10 * MINUTE for entry in deployment.occurrence_entries())
    deployment.run_until(T0 + timedelta(minutes=11, seconds=30))
    ran_later = [row for row in deployment.history("j") if row.status != HistoryStatus.SKIPPED]
    assert [row.expected_execution_time for row in ran_later] == [T0 + 11 * MINUTE]
    assert skipped(deployment) == [dropped]  # later scans write no more


def test_a_long_outage_writes_one_skipped_entry_and_walks_at_most_1000(
    deployment: Deployment, target: HttpTarget
) -> None:
    """Down for three days with a job every minute (4,320 missed): one entry, counted by ordinals past the
    1,000th; RunAll runs the first 1,000 and records the rest in one entry too."""
    put(deployment, target, {"frequency": "Minute"}, NO_RETRY, missedRunPolicy={"mode": "Skip"})
    deployment.clock.set(T0 + timedelta(days=3, seconds=30))
    deployment.scan()
    next_one = T0 + timedelta(days=3, minutes=1)
    assert [message.occurrence_time for message in parsed(deployment.queued())] == [next_one]  # on time, not missed
    [dropped] = skipped(deployment)
    assert dropped.message == (
        f"Skipped: 4321 occurrence(s) from {format_instant(T0)} up to {format_instant(next_one)} (excluded) missed "
        "while the service was down (missedRunPolicy Skip)"
    )


def test_run_all_records_what_it_does_not_run_beyond_1000(deployment: Deployment, target: HttpTarget) -> None:
    put(deployment, target, {"frequency": "Minute"}, NO_RETRY, missedRunPolicy={"mode": "RunAll"})
    deployment.clock.set(T0 + timedelta(days=1, seconds=30))  # 1,441 missed
    deployment.scan()
    sent = [message.occurrence_time for message in parsed(deployment.queued())]
    assert sent[:1000] == [T0 + n * MINUTE for n in range(1000)]
    [dropped] = skipped(deployment)
    assert dropped.message == (
        f"Skipped: 441 occurrence(s) from {format_instant(T0 + 1000 * MINUTE)} to "
        f"{format_instant(T0 + timedelta(days=1))} missed while the service was down (beyond the 1000 runs of "
        "one missedRunPolicy RunAll catch-up)"
    )


def test_an_occurrence_on_time_is_not_missed(deployment: Deployment, target: HttpTarget) -> None:
    put(deployment, target, {"frequency": "Minute", "count": 3}, NO_RETRY, missedRunPolicy={"mode": "Skip"})
    deployment.run_until(T0 + 4 * MINUTE)
    assert len(deployment.history("j")) == 3 and deployment.job("j").state == JobState.COMPLETED


@pytest.mark.azurite
def test_a_catch_up_writes_one_skipped_entry_on_azurite(storage_env: Settings, target: HttpTarget) -> None:
    now = datetime.now(UTC).replace(second=0, microsecond=0) + HOUR
    pipeline = near_now(storage_env, azurite=True, start=now - timedelta(minutes=30))
    body = {
        "properties": {
            "startTime": format_instant(now),
            "action": {"type": "Http", "request": {"uri": f"{target.base_url}/hook", "method": "POST"}},
            "recurrence": {"frequency": "Minute"},
            "missedRunPolicy": {"mode": "Skip"},
        }
    }
    ref = pipeline.ref("j")
    pipeline.services.service.put_job(ref, body, wire=Wire.PREVIEW)
    pipeline.clock.set(now + timedelta(minutes=20, seconds=30))  # down for 21 occurrences
    pipeline.scan()
    pipeline.scan()  # a second scan finds nothing more to drop
    [skipped] = list(pipeline.services.stores.history.list(ref))
    assert skipped.status is HistoryStatus.SKIPPED
    assert skipped.message == (
        f"Skipped: 21 occurrence(s) from {format_instant(now)} to {format_instant(now + timedelta(minutes=20))} "
        "missed while the service was down (missedRunPolicy Skip)"
    )
    assert pipeline.deliver() == []  # none of them ran
