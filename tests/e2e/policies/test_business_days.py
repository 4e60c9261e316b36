"""Business days through the real service, dispatcher and executor, in simulated time on the memory adapter,
with a real HTTP target on 127.0.0.1: ``recurrence.exclusions.onExcluded`` moves an occurrence on an
excluded day (its own dates, a calendar's dates, week days or holidays) to the nearest business day at the
same wall time, never doubling one already there, and the job fires at the moved instants."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest

from scheduler_core.errors import ValidationError
from scheduler_core.schedules import schedule_of
from tests.e2e.policies.scenario import hook, preview_job, put_preview
from tests.support.harness import COLLECTION, START, Deployment
from tests.support.http_target import HttpTarget

pytestmark = [pytest.mark.e2e]


def _at(day: date, moment: datetime) -> datetime:
    return moment.replace(year=day.year, month=day.month, day=day.day)


def _business(day: date, excluded: set[date], step: int) -> date:
    while day.weekday() >= 5 or day in excluded:
        day += timedelta(days=step)
    return day


def test_the_last_business_day_of_each_month(deployment: Deployment, target: HttpTarget) -> None:
    """``0 9 L * *`` with weekends excluded and PreviousBusinessDay: the last business day of the month."""
    service = deployment.service
    service.put_calendar(COLLECTION, "weekend", {"properties": {"weekDays": ["Saturday", "Sunday"]}})
    start = START + timedelta(hours=1)
    recurrence = {
        "cron": "0 9 L * *",
        "count": 6,
        "exclusions": {"calendars": ["weekend"], "onExcluded": "PreviousBusinessDay"},
    }
    put_preview(deployment, "j", preview_job(hook(target), recurrence, start=start))
    fires = schedule_of(deployment.job("j")).occurrences(start, 6)
    expected: list[datetime] = []
    month = date(start.year, start.month, 1)
    while len(expected) < 6:
        following = (month + timedelta(days=32)).replace(day=1)
        last = _business(following - timedelta(days=1), set(), -1)
        instant = datetime(last.year, last.month, last.day, 9, tzinfo=start.tzinfo)
        if instant >= start:
            expected.append(instant)
        month = following
    assert fires == expected
    deployment.run_until(expected[1] + timedelta(hours=1), tick=timedelta(hours=1))  # scans on the whole hours
    rows = sorted(deployment.history("j"), key=lambda row: row.start_time)
    assert [row.expected_execution_time for row in rows] == expected[:2]
    assert [row.repeat_count for row in rows] == [1, 2]


def test_a_daily_job_moves_weekend_runs_to_monday_and_runs_monday_once(
    deployment: Deployment, target: HttpTarget
) -> None:
    service = deployment.service
    start = START + timedelta(hours=1)
    holiday = _business(start.date() + timedelta(days=2), set(), 1)  # a weekday, made a holiday
    service.put_calendar(
        COLLECTION, "days-off", {"properties": {"weekDays": ["Saturday", "Sunday"], "dates": [holiday.isoformat()]}}
    )
    recurrence = {
        "frequency": "Day",
        "count": 8,
        "exclusions": {"calendars": ["days-off"], "onExcluded": "NextBusinessDay"},
    }
    put_preview(deployment, "j", preview_job(hook(target), recurrence, start=start))
    fires = schedule_of(deployment.job("j")).occurrences(start, 8)
    business = []
    day = start.date()
    while len(business) < 8:
        if day.weekday() < 5 and day != holiday:
            business.append(_at(day, start))
        day += timedelta(days=1)
    assert fires == business  # every run on a business day, each once: a moved run merges with the day's own
    deployment.run_until(fires[-1] + timedelta(hours=1), tick=timedelta(hours=1))
    rows = sorted(deployment.history("j"), key=lambda row: row.start_time)
    assert [row.expected_execution_time for row in rows] == business
    assert [row.repeat_count for row in rows] == list(range(1, 9))
    assert len(target.received) == 8


def test_an_hourly_job_cannot_move_to_another_day(deployment: Deployment, target: HttpTarget) -> None:
    recurrence = {"frequency": "Hour", "exclusions": {"dates": ["2099-01-01"], "onExcluded": "NextBusinessDay"}}
    with pytest.raises(ValidationError) as refused:
        put_preview(deployment, "j", preview_job(hook(target), recurrence))
    assert refused.value.path == "properties.recurrence.exclusions.onExcluded"
    assert "at most once a day" in refused.value.rule
    with pytest.raises(ValidationError):
        put_preview(
            deployment, "j", preview_job(hook(target), {"frequency": "Day", "exclusions": {"onExcluded": "Later"}})
        )
