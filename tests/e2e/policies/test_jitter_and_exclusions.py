"""Jitter, exclusions and calendars through the real service, dispatcher and executor, in simulated time on
the memory adapter (the deployment of ``tests/decisions``), with a real HTTP target on 127.0.0.1.

The dispatcher and the executor know nothing of jitter or exclusions: they fire what the job's schedule
answers, so these tests show that the due index carries the jittered instant, an excluded occurrence never
fires nor counts, and a calendar's change reaches the jobs that name it.
"""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from scheduler_core.definitions import Wire
from scheduler_core.errors import ConflictError, NotFoundError, ValidationError
from scheduler_core.model import HistoryStatus, JobState
from scheduler_core.schedules import schedule_of
from tests.e2e.policies.scenario import hook, preview_job, put_preview
from tests.support.harness import COLLECTION, START, Deployment
from tests.support.http_target import HttpTarget

pytestmark = [pytest.mark.e2e]


def test_each_occurrence_fires_at_its_jittered_instant(deployment: Deployment, target: HttpTarget) -> None:
    # Starting an hour ahead: a first occurrence within the scan's lookahead (60 s) would be dispatched at once,
    # not indexed, and a jitter keyed by the hour the suite runs in may be under a minute.
    start = START + timedelta(hours=1)
    put_preview(
        deployment, "j", preview_job(hook(target), {"frequency": "Hour", "jitter": "PT15M", "count": 4}, start=start)
    )
    job = deployment.job("j")
    schedule = schedule_of(job)
    fires = schedule.occurrences(start, 4)
    nominals = [start + timedelta(hours=i) for i in range(4)]
    assert [schedule.nominal(fire) for fire in fires] == nominals
    assert fires != nominals and all(n <= f < n + timedelta(minutes=15) for n, f in zip(nominals, fires, strict=True))
    # the due index holds the jittered instant, before anything fired
    assert [entry.due for entry in deployment.occurrence_entries()] == [fires[0]]
    reports = deployment.run_until(start + timedelta(hours=4))
    assert len(reports) == 4
    rows = sorted(deployment.history("j"), key=lambda row: row.start_time)
    assert [row.expected_execution_time for row in rows] == fires
    # the executor holds each message until its instant: each call started at or after the jittered instant
    assert all(row.start_time >= fire for row, fire in zip(rows, fires, strict=True))
    assert deployment.job("j").state == JobState.COMPLETED
    assert len(target.received) == 4


def test_excluded_occurrences_neither_fire_nor_count(deployment: Deployment, target: HttpTarget) -> None:
    excluded = (START + timedelta(days=1)).date()
    recurrence = {
        "frequency": "Hour",
        "interval": 6,
        "count": 6,
        "exclusions": {
            "dates": [excluded.isoformat()],
            "ranges": [
                {
                    "start": (START + timedelta(hours=6)).strftime("%Y-%m-%dT%H:%M"),
                    "end": (START + timedelta(hours=7)).strftime("%Y-%m-%dT%H:%M"),
                }
            ],
        },
    }
    put_preview(deployment, "j", preview_job(hook(target), recurrence))
    deployment.run_until(START + timedelta(days=4))
    fired = sorted(row.expected_execution_time for row in deployment.history("j") if row.expected_execution_time)
    assert len(fired) == 6  # count: six occurrences that fired
    assert START + timedelta(hours=6) not in fired
    assert all(instant.date() != excluded for instant in fired)
    rows = sorted(deployment.history("j"), key=lambda row: row.start_time)
    assert [row.repeat_count for row in rows] == [1, 2, 3, 4, 5, 6]
    assert deployment.job("j").state == JobState.COMPLETED
    assert all(row.status == HistoryStatus.COMPLETED for row in deployment.history("j"))


def test_a_calendar_excludes_its_dates_from_the_jobs_that_name_it(deployment: Deployment, target: HttpTarget) -> None:
    service = deployment.service
    calendar, created = service.put_calendar(COLLECTION, "Holidays", {"properties": {"dates": ["2099-01-01"]}})
    assert created and calendar.dates == (date(2099, 1, 1),)
    later = START + timedelta(hours=2)  # not dispatched at once (beyond the scan's lookahead)
    first_day = later.date()  # the first occurrence's day (START's own day when the suite runs after 22:00 UTC)
    body = preview_job(hook(target), {"frequency": "Day", "exclusions": {"calendars": ["holidays"]}}, later)
    put_preview(deployment, "j", body)
    before = deployment.job("j")
    assert schedule_of(before).occurrences(START, 1) == [later]
    # the calendar changes: the job is written again with its dates (a new generation, its series kept)
    _, created = service.put_calendar(COLLECTION, "HOLIDAYS", {"properties": {"dates": [first_day.isoformat()]}})
    assert not created
    after = deployment.job("j")
    assert after.generation > before.generation and after.defined_at == before.defined_at
    assert after.definition.exclusions is not None
    assert after.definition.exclusions.calendar_dates == (first_day,)
    assert schedule_of(after).occurrences(START, 1) == [later + timedelta(days=1)]
    assert [entry.due for entry in deployment.occurrence_entries()] == [later + timedelta(days=1)]
    deployment.run_until(START + timedelta(hours=23))
    assert target.received == []
    assert [item.name for item in service.list_calendars(COLLECTION)] == ["Holidays"]


def test_a_calendar_in_use_cannot_be_deleted_and_a_missing_one_is_a_400(
    deployment: Deployment, target: HttpTarget
) -> None:
    service = deployment.service
    body = preview_job(hook(target), {"frequency": "Day", "exclusions": {"calendars": ["closures"]}})
    with pytest.raises(ValidationError) as missing:
        put_preview(deployment, "j", body)
    assert missing.value.path == "properties.recurrence.exclusions.calendars[0]"
    assert deployment.storage.jobs.get(deployment.ref("j")) is None  # nothing stored
    assert deployment.occurrence_entries() == []
    service.put_calendar(COLLECTION, "closures", {"properties": {"dates": []}})
    put_preview(deployment, "j", body)
    with pytest.raises(ConflictError, match="'j'"):
        service.delete_calendar(COLLECTION, "closures")
    deployment.service.put_job(deployment.ref("j"), preview_job(hook(target), {"frequency": "Day"}), wire=Wire.PREVIEW)
    service.delete_calendar(COLLECTION, "closures")
    with pytest.raises(NotFoundError):
        service.get_calendar(COLLECTION, "closures")


def test_calendar_limits_are_400s_and_store_nothing(deployment: Deployment) -> None:
    service = deployment.service
    service.put_calendar(COLLECTION, "big", {"properties": {"dates": [f"2090-01-{d:02d}" for d in range(1, 29)]}})
    dates = [(date(2040, 1, 1) + timedelta(days=i)).isoformat() for i in range(990)]
    with pytest.raises(ValidationError) as caught:
        service.put_calendar(COLLECTION, "more", {"properties": {"dates": dates}})
    assert caught.value.path == "properties.dates" and "at most 1000" in caught.value.rule
    with pytest.raises(ValidationError) as bad:
        service.put_calendar(COLLECTION, "more", {"properties": {"dates": ["1 May"]}})
    assert bad.value.path == "properties.dates[0]"
    assert [item.name for item in service.list_calendars(COLLECTION)] == ["big"]


def test_the_occurrences_of_a_job(deployment: Deployment, target: HttpTarget) -> None:
    hours = [(START + timedelta(hours=h)).strftime("%Y-%m-%dT%H:%M") for h in (1, 3)]
    recurrence = {
        "frequency": "Hour",
        "jitter": "PT10M",
        "exclusions": {"ranges": [{"start": hours[0], "end": hours[1]}]},
    }
    put_preview(deployment, "j", preview_job(hook(target), recurrence))
    items, more = deployment.service.job_occurrences(deployment.ref("j"), None, 3)
    assert more
    assert [scheduled for scheduled, _ in items] == [START + timedelta(hours=h) for h in (0, 3, 4)]
    assert all(scheduled <= fire < scheduled + timedelta(minutes=10) for scheduled, fire in items)
    following, _ = deployment.service.job_occurrences(deployment.ref("j"), items[-1][1], 2)
    assert [scheduled for scheduled, _ in following] == [START + timedelta(hours=h) for h in (5, 6)]
