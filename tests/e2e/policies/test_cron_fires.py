"""Cron jobs through the real service, dispatcher and executor, in simulated time on the memory adapter (the
deployment of ``tests/decisions``), with a real HTTP target on 127.0.0.1: they fire at the union of their
strings' instants, to the second, with ``count``, jitter and exclusions applied as to any schedule, and an
edit by an old client keeps their series."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core.definitions import Wire
from scheduler_core.model import HistoryStatus, JobState
from scheduler_core.schedules import schedule_of
from tests.e2e.policies.scenario import hook, preview_job, put_preview
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget

pytestmark = [pytest.mark.e2e]


def _union_instants(after: datetime, n: int) -> list[datetime]:
    """``15 */20 * * * *`` and ``45 5 * * * *``, enumerated second by second: their first ``n`` instants."""
    found: list[datetime] = []
    instant = after.replace(microsecond=0)
    while len(found) < n:
        matches = (instant.second == 15 and instant.minute % 20 == 0) or (instant.second == 45 and instant.minute == 5)
        if matches and instant >= after:
            found.append(instant)
        instant += timedelta(seconds=1)
    return found


def test_a_union_of_cron_strings_fires_each_instant_once_to_the_second(
    deployment: Deployment, target: HttpTarget
) -> None:
    start = START + timedelta(hours=1)
    body = preview_job(hook(target), {"cron": ["15 */20 * * * *", "45 5 * * * *"], "count": 8}, start=start)
    put_preview(deployment, "j", body)
    expected = _union_instants(start, 8)
    assert schedule_of(deployment.job("j")).occurrences(start, 10) == expected
    deployment.run_until(expected[-1] + timedelta(hours=1))
    rows = sorted(deployment.history("j"), key=lambda row: row.start_time)
    assert [row.expected_execution_time for row in rows] == expected
    assert [row.repeat_count for row in rows] == list(range(1, 9))
    assert all(row.status == HistoryStatus.COMPLETED and row.start_time >= row.expected_execution_time for row in rows)
    assert len(target.received) == 8
    assert deployment.job("j").state == JobState.COMPLETED


def test_jitter_and_exclusions_apply_to_a_cron_as_to_any_schedule(deployment: Deployment, target: HttpTarget) -> None:
    start = START + timedelta(hours=1)
    excluded = (start + timedelta(days=1)).date()
    recurrence = {"cron": "0 */6 * * *", "jitter": "PT30M", "count": 6, "exclusions": {"dates": [excluded.isoformat()]}}
    put_preview(deployment, "j", preview_job(hook(target), recurrence, start=start))
    schedule = schedule_of(deployment.job("j"))
    fires = schedule.occurrences(start, 6)
    nominals = [schedule.nominal(fire) for fire in fires]
    assert all(n.hour % 6 == 0 and n.minute == 0 and n.date() != excluded for n in nominals)
    assert all(n <= f < n + timedelta(minutes=30) for n, f in zip(nominals, fires, strict=True))
    deployment.run_until(fires[-1] + timedelta(hours=1))
    rows = sorted(deployment.history("j"), key=lambda row: row.start_time)
    assert [row.expected_execution_time for row in rows] == fires
    assert [row.repeat_count for row in rows] == list(range(1, 7))


def test_a_cron_job_without_a_start_waits_for_its_first_match(deployment: Deployment, target: HttpTarget) -> None:
    body = preview_job(hook(target), {"cron": "30 7 * * *"})
    del body["properties"]["startTime"]
    put_preview(deployment, "j", body)
    now = deployment.clock.now
    first = schedule_of(deployment.job("j")).first_occurrence
    assert first is not None and first > now
    assert (first.hour, first.minute, first.second) == (7, 30, 0) and first - now <= timedelta(days=1)
    deployment.run_until(first - timedelta(minutes=1))
    assert target.received == []  # no run at creation, unlike a frequency schedule without startTime
    deployment.run_until(first + timedelta(minutes=5))
    rows = deployment.history("j")
    assert len(target.received) == 1 and [row.expected_execution_time for row in rows] == [first]


def test_an_old_client_changing_the_count_keeps_the_cron_series(deployment: Deployment, target: HttpTarget) -> None:
    start = START + timedelta(hours=1)
    put_preview(deployment, "j", preview_job(hook(target), {"cron": "0 * * * *", "count": 3}, start=start))
    before = deployment.job("j")
    deployment.run_until(start + timedelta(hours=1, minutes=30))
    assert len(target.received) == 2
    classic = {
        "properties": {
            "startTime": body_start(start),
            "action": preview_job(hook(target), {})["properties"]["action"],
            "recurrence": {"count": 5},
        }
    }
    deployment.service.put_job(deployment.ref("j"), classic, wire=Wire.CLASSIC)
    after = deployment.job("j")
    assert (
        after.definition.recurrence is not None
        and after.definition.recurrence.cron == before.definition.recurrence.cron
    )
    assert after.defined_at == before.defined_at  # the same series: the two runs so far count towards 5
    deployment.run_until(start + timedelta(hours=6))
    rows = sorted(deployment.history("j"), key=lambda row: row.start_time)
    assert [row.repeat_count for row in rows] == [1, 2, 3, 4, 5]
    assert [row.expected_execution_time for row in rows] == [start + timedelta(hours=i) for i in range(5)]
    assert deployment.job("j").state == JobState.COMPLETED


def body_start(start: datetime) -> str:
    return start.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
