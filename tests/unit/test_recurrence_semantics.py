"""The startTime table, count/endTime, intervals, Year/months, time zones and daylight saving, ordinals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.recurrence import (
    CompiledSchedule,
    compile_schedule,
    format_instant,
    parse_instant,
    parse_recurrence,
    parse_start_time,
)


def compiled(recurrence: dict[str, Any] | None, start: str | None, created: str) -> CompiledSchedule:
    rec = parse_recurrence(recurrence)
    return compile_schedule(parse_start_time(start, rec), rec, parse_instant(created, "created"))


def listing(schedule: CompiledSchedule, n: int, after: str | None = None) -> list[str]:
    since = parse_instant(after, "after") if after else schedule.created
    return [format_instant(t) for t in schedule.occurrences(since, n)]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# --- startTime table -------------------------------------------------------------------------------


class TestStartTimeTable:
    created = "2024-05-01T10:20:30Z"  # a Wednesday

    def test_no_start_no_recurrence_runs_once_immediately(self) -> None:
        s = compiled(None, None, self.created)
        assert listing(s, 5) == ["2024-05-01T10:20:30Z"]

    def test_past_start_no_recurrence_runs_once_immediately(self) -> None:
        s = compiled(None, "2024-04-01T00:00:00Z", self.created)
        assert listing(s, 5) == ["2024-05-01T10:20:30Z"]

    def test_future_start_no_recurrence_runs_at_start(self) -> None:
        s = compiled(None, "2024-06-01T08:00:00Z", self.created)
        assert listing(s, 5) == ["2024-06-01T08:00:00Z"]
        assert s.after(utc("2024-06-01T08:00:01Z"), inclusive=True) is None

    def test_no_start_recurrence_runs_now_then_every_interval(self) -> None:
        s = compiled({"frequency": "day"}, None, self.created)
        assert listing(s, 3) == ["2024-05-01T10:20:30Z", "2024-05-02T10:20:30Z", "2024-05-03T10:20:30Z"]

    def test_no_start_with_schedule_runs_now_then_per_schedule(self) -> None:
        s = compiled({"frequency": "week", "schedule": {"weekDays": ["friday"], "hours": [9]}}, None, self.created)
        # minute and second default to the creation time's
        assert listing(s, 3) == ["2024-05-01T10:20:30Z", "2024-05-03T09:20:30Z", "2024-05-10T09:20:30Z"]

    def test_past_start_keeps_its_phase(self) -> None:
        # the example: start 2015-04-07 14:00, every 2 days, created 2015-04-08 13:00
        s = compiled({"frequency": "day", "interval": 2}, "2015-04-07T14:00:00Z", "2015-04-08T13:00:00Z")
        assert s.first_occurrence == utc("2015-04-09T14:00:00Z")
        assert listing(s, 4) == [
            "2015-04-09T14:00:00Z",
            "2015-04-11T14:00:00Z",
            "2015-04-13T14:00:00Z",
            "2015-04-15T14:00:00Z",
        ]

    @pytest.mark.parametrize("start", ["2015-04-05T14:00:00Z", "2015-04-01T14:00:00Z"])
    def test_earlier_past_starts_with_same_phase_fire_first_at_the_same_time(self, start: str) -> None:
        s = compiled({"frequency": "day", "interval": 2}, start, "2015-04-08T13:00:00Z")
        assert s.first_occurrence == utc("2015-04-09T14:00:00Z")

    def test_past_start_with_schedule_starts_no_sooner_than_now(self) -> None:
        s = compiled({"frequency": "day", "schedule": {"hours": [9, 18]}}, "2024-04-01T08:00:00Z", self.created)
        assert listing(s, 3) == ["2024-05-01T18:00:00Z", "2024-05-02T09:00:00Z", "2024-05-02T18:00:00Z"]

    def test_future_start_without_schedule_runs_at_start_then_every_interval(self) -> None:
        s = compiled({"frequency": "day", "interval": 3}, "2024-06-01T08:00:00Z", self.created)
        assert listing(s, 2) == ["2024-06-01T08:00:00Z", "2024-06-04T08:00:00Z"]

    def test_future_start_with_schedule_fires_first_on_the_schedule_not_at_start(self) -> None:
        # 2024-06-01 is a Saturday
        s = compiled({"frequency": "week", "schedule": {"weekDays": ["monday"]}}, "2024-06-01T08:00:00Z", self.created)
        assert listing(s, 2) == ["2024-06-03T08:00:00Z", "2024-06-10T08:00:00Z"]

    def test_start_equal_to_created_fires_at_start(self) -> None:
        s = compiled({"frequency": "hour"}, self.created, self.created)
        assert s.first_occurrence == utc(self.created)


# --- count, endTime, inclusivity, ordinals ---------------------------------------------------------


def test_count_counts_from_the_first_occurrence_after_creation() -> None:
    s = compiled({"frequency": "day", "interval": 2, "count": 2}, "2015-04-07T14:00:00Z", "2015-04-08T13:00:00Z")
    assert listing(s, 10) == ["2015-04-09T14:00:00Z", "2015-04-11T14:00:00Z"]
    assert s.after(utc("2015-04-11T14:00:00.000001Z"), inclusive=True) is None
    assert s.is_last(utc("2015-04-11T14:00:00Z"))
    assert not s.is_last(utc("2015-04-09T14:00:00Z"))


def test_count_includes_the_immediate_run_when_there_is_no_start() -> None:
    s = compiled({"frequency": "week", "count": 2, "schedule": {"weekDays": ["friday"]}}, None, "2024-05-01T10:00:00Z")
    assert listing(s, 10) == ["2024-05-01T10:00:00Z", "2024-05-03T10:00:00Z"]


def test_end_time_is_inclusive() -> None:
    s = compiled(
        {"frequency": "day", "endTime": "2024-05-03T12:00:00Z"}, "2024-05-01T12:00:00Z", "2024-05-01T00:00:00Z"
    )
    assert listing(s, 10) == ["2024-05-01T12:00:00Z", "2024-05-02T12:00:00Z", "2024-05-03T12:00:00Z"]


@pytest.mark.parametrize(
    ("count", "end", "expected"),
    [
        (2, "2024-05-10T00:00:00Z", 2),  # count ends it first
        (9, "2024-05-03T00:00:00Z", 2),  # endTime ends it first
    ],
)
def test_count_and_end_time_whichever_first(count: int, end: str, expected: int) -> None:
    rec = {"frequency": "day", "count": count, "endTime": end}
    s = compiled(rec, "2024-05-01T12:00:00Z", "2024-05-01T00:00:00Z")
    assert len(s.occurrences(utc("2024-05-01T00:00:00Z"), 100)) == expected


def test_after_names_its_inclusivity_and_is_exact() -> None:
    s = compiled({"frequency": "minute", "interval": 15}, "2024-01-01T00:00:07Z", "2024-01-01T00:00:00Z")
    assert s.after(utc("2024-01-01T00:15:07Z"), inclusive=True) == utc("2024-01-01T00:15:07Z")
    assert s.after(utc("2024-01-01T00:15:07.000001Z"), inclusive=True) == utc("2024-01-01T00:30:07Z")
    assert s.after(utc("2024-01-01T00:15:07Z")) == utc("2024-01-01T00:30:07Z")  # exclusive by default
    assert s.after(utc("2024-01-01T00:15:06.999999Z")) == utc("2024-01-01T00:15:07Z")


def test_ordinal_of_a_minute_job_ten_years_on() -> None:
    s = compiled({"frequency": "minute"}, "2014-05-01T00:00:00Z", "2014-05-01T00:00:00Z")
    occurrence = utc("2024-05-01T00:00:00Z")
    days = (datetime(2024, 5, 1) - datetime(2014, 5, 1)).days
    assert days == 3653
    assert s.ordinal(occurrence) == days * 1440 + 1


def test_ordinal_rejects_non_occurrences() -> None:
    s = compiled({"frequency": "hour"}, "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z")
    with pytest.raises(ValueError, match="not an occurrence"):
        s.ordinal(utc("2024-01-01T00:30:00Z"))


def test_large_count_on_a_minute_schedule_ends_exactly() -> None:
    # minutes [0, 30] every hour from 2020-01-01: occurrence k is at start + (k - 1) * 30 minutes
    count = 1_000_000
    s = compiled(
        {"frequency": "hour", "count": count, "schedule": {"minutes": [0, 30]}},
        "2020-01-01T00:00:00Z",
        "2020-01-01T00:00:00Z",
    )
    last = utc("2020-01-01T00:00:00Z") + timedelta(minutes=30 * (count - 1))
    assert s.after(last, inclusive=True) == last
    assert s.ordinal(last) == count
    assert s.after(last + timedelta(microseconds=1), inclusive=True) is None


def test_seconds_of_the_start_are_carried() -> None:
    s = compiled({"frequency": "day", "schedule": {"hours": [5]}}, "2024-05-01T12:25:42.5Z", "2024-05-01T00:00:00Z")
    assert listing(s, 1) == ["2024-05-02T05:25:42.5Z"]


# --- intervals, Week alignment, Year, months -------------------------------------------------------


def test_weekly_interval_two_weeks_start_on_monday() -> None:
    # start Wednesday 2024-05-01; its week (Mon 2024-04-29) is the first period, then the week of May 13
    rec = {"frequency": "week", "interval": 2, "schedule": {"weekDays": ["monday", "friday"]}}
    s = compiled(rec, "2024-05-01T12:00:00Z", "2024-05-01T00:00:00Z")
    assert listing(s, 5) == [
        "2024-05-03T12:00:00Z",
        "2024-05-13T12:00:00Z",
        "2024-05-17T12:00:00Z",
        "2024-05-27T12:00:00Z",
        "2024-05-31T12:00:00Z",
    ]


def test_month_interval_three() -> None:
    s = compiled({"frequency": "Month", "interval": 3}, "2024-01-15T06:00:00Z", "2024-01-01T00:00:00Z")
    assert listing(s, 3) == ["2024-01-15T06:00:00Z", "2024-04-15T06:00:00Z", "2024-07-15T06:00:00Z"]


def test_year_from_29_february_skips_common_years() -> None:
    s = compiled({"frequency": "year"}, "2024-02-29T10:00:00Z", "2024-01-01T00:00:00Z")
    assert listing(s, 3) == ["2024-02-29T10:00:00Z", "2028-02-29T10:00:00Z", "2032-02-29T10:00:00Z"]


def test_year_with_months() -> None:
    s = compiled({"frequency": "year", "schedule": {"months": [1, 7]}}, "2024-05-15T09:00:00Z", "2024-01-01T00:00:00Z")
    assert listing(s, 3) == ["2024-07-15T09:00:00Z", "2025-01-15T09:00:00Z", "2025-07-15T09:00:00Z"]


def test_month_with_months_limits_the_months() -> None:
    rec = {"frequency": "month", "schedule": {"months": [2, 8], "monthDays": [10]}}
    s = compiled(rec, "2024-01-20T09:00:00Z", "2024-01-01T00:00:00Z")
    assert listing(s, 3) == ["2024-02-10T09:00:00Z", "2024-08-10T09:00:00Z", "2025-02-10T09:00:00Z"]


def test_minute_frequency_with_hours_filter() -> None:
    rec = {"frequency": "minute", "interval": 20, "schedule": {"hours": [9]}}
    s = compiled(rec, "2024-05-01T08:50:00Z", "2024-05-01T00:00:00Z")
    assert listing(s, 4) == [
        "2024-05-01T09:10:00Z",
        "2024-05-01T09:30:00Z",
        "2024-05-01T09:50:00Z",
        "2024-05-02T09:10:00Z",
    ]


def test_hour_frequency_interval_with_minutes() -> None:
    rec = {"frequency": "hour", "interval": 5, "schedule": {"minutes": [0, 30]}}
    s = compiled(rec, "2024-05-01T22:10:00Z", "2024-05-01T00:00:00Z")
    assert listing(s, 4) == [
        "2024-05-01T22:30:00Z",
        "2024-05-02T03:00:00Z",
        "2024-05-02T03:30:00Z",
        "2024-05-02T08:00:00Z",
    ]


# --- time zones and daylight saving ----------------------------------------------------------------

BERLIN_NAMES = ["Europe/Berlin", "W. Europe Standard Time", "w. europe standard time"]
NEW_YORK_NAMES = ["America/New_York", "Eastern Standard Time"]


@pytest.mark.parametrize("zone", BERLIN_NAMES)
def test_berlin_daily_wall_time_skips_the_missing_hour(zone: str) -> None:
    # 2024-03-31 02:00 CET -> 03:00 CEST: 02:30 does not exist that day
    s = compiled({"frequency": "day", "timeZone": zone}, "2024-03-29T02:30:00", "2024-01-01T00:00:00Z")
    assert listing(s, 3) == ["2024-03-29T01:30:00Z", "2024-03-30T01:30:00Z", "2024-04-01T00:30:00Z"]
    assert s.ordinal(utc("2024-04-01T00:30:00Z")) == 3


@pytest.mark.parametrize("zone", BERLIN_NAMES)
def test_berlin_repeated_wall_time_fires_once_the_first(zone: str) -> None:
    # 2024-10-27 03:00 CEST -> 02:00 CET: 02:30 happens at 00:30Z and 01:30Z; only the first fires
    s = compiled({"frequency": "day", "timeZone": zone}, "2024-10-26T02:30:00", "2024-01-01T00:00:00Z")
    assert listing(s, 3) == ["2024-10-26T00:30:00Z", "2024-10-27T00:30:00Z", "2024-10-28T01:30:00Z"]


def test_berlin_every_24_hours_stays_24_hours_and_every_day_stays_9am() -> None:
    created = "2024-01-01T00:00:00Z"
    hours = compiled({"frequency": "hour", "interval": 24, "timeZone": "Europe/Berlin"}, "2024-03-30T09:00:00", created)
    days = compiled({"frequency": "day", "timeZone": "Europe/Berlin"}, "2024-03-30T09:00:00", created)
    assert listing(hours, 3) == ["2024-03-30T08:00:00Z", "2024-03-31T08:00:00Z", "2024-04-01T08:00:00Z"]
    assert listing(days, 3) == ["2024-03-30T08:00:00Z", "2024-03-31T07:00:00Z", "2024-04-01T07:00:00Z"]


def test_berlin_hourly_schedule_across_fall_back() -> None:
    rec = {"frequency": "hour", "schedule": {"minutes": [0, 30]}, "timeZone": "Europe/Berlin"}
    s = compiled(rec, "2024-10-27T01:00:00", "2024-01-01T00:00:00Z")
    assert listing(s, 7) == [
        "2024-10-26T23:00:00Z",  # 01:00 CEST
        "2024-10-26T23:30:00Z",
        "2024-10-27T00:00:00Z",  # 02:00 CEST (first instance)
        "2024-10-27T00:30:00Z",  # 02:30 CEST; 02:00 and 02:30 CET are not repeated
        "2024-10-27T02:00:00Z",  # 03:00 CET
        "2024-10-27T02:30:00Z",
        "2024-10-27T03:00:00Z",
    ]


def test_berlin_minute_schedule_across_spring_forward() -> None:
    rec = {"frequency": "minute", "interval": 30, "schedule": {"hours": [1, 2, 3]}, "timeZone": "Europe/Berlin"}
    s = compiled(rec, "2024-03-31T01:00:00", "2024-01-01T00:00:00Z")
    assert listing(s, 4) == [
        "2024-03-31T00:00:00Z",  # 01:00 CET
        "2024-03-31T00:30:00Z",  # 01:30 CET; 02:00 and 02:30 do not exist
        "2024-03-31T01:00:00Z",  # 03:00 CEST
        "2024-03-31T01:30:00Z",
    ]


def test_berlin_plain_minute_frequency_is_absolute_time() -> None:
    s = compiled(
        {"frequency": "minute", "interval": 30, "timeZone": "Europe/Berlin"},
        "2024-10-27T02:00:00",
        "2024-01-01T00:00:00Z",
    )
    # 02:00 CEST = 00:00Z; every 30 minutes of real time, through both 02:xx hours
    assert listing(s, 5) == [
        "2024-10-27T00:00:00Z",
        "2024-10-27T00:30:00Z",
        "2024-10-27T01:00:00Z",
        "2024-10-27T01:30:00Z",
        "2024-10-27T02:00:00Z",
    ]


@pytest.mark.parametrize("zone", NEW_YORK_NAMES)
def test_new_york_daily_across_both_changes(zone: str) -> None:
    created = "2024-01-01T00:00:00Z"
    spring = compiled({"frequency": "day", "timeZone": zone}, "2024-03-09T02:30:00", created)
    assert listing(spring, 2) == ["2024-03-09T07:30:00Z", "2024-03-11T06:30:00Z"]
    fall = compiled({"frequency": "day", "timeZone": zone}, "2024-11-02T01:30:00", created)
    assert listing(fall, 3) == ["2024-11-02T05:30:00Z", "2024-11-03T05:30:00Z", "2024-11-04T06:30:00Z"]


def test_new_york_every_24_hours_vs_every_day_at_nine() -> None:
    created = "2024-01-01T00:00:00Z"
    hours = compiled(
        {"frequency": "hour", "interval": 24, "timeZone": "America/New_York"}, "2024-11-02T09:00:00", created
    )
    days = compiled(
        {"frequency": "day", "schedule": {"hours": [9], "minutes": [0]}, "timeZone": "America/New_York"},
        "2024-11-02T00:00:00",
        created,
    )
    assert listing(hours, 3) == ["2024-11-02T13:00:00Z", "2024-11-03T13:00:00Z", "2024-11-04T13:00:00Z"]
    assert listing(days, 3) == ["2024-11-02T13:00:00Z", "2024-11-03T14:00:00Z", "2024-11-04T14:00:00Z"]


def test_new_york_hourly_schedule_fires_repeated_hour_once() -> None:
    rec = {"frequency": "hour", "schedule": {"minutes": [30]}, "timeZone": "America/New_York"}
    s = compiled(rec, "2024-11-03T00:00:00", "2024-01-01T00:00:00Z")
    assert listing(s, 3) == ["2024-11-03T04:30:00Z", "2024-11-03T05:30:00Z", "2024-11-03T07:30:00Z"]


def test_after_inside_the_repeated_hour() -> None:
    rec = {"frequency": "hour", "schedule": {"minutes": [0, 30]}, "timeZone": "Europe/Berlin"}
    s = compiled(rec, "2024-10-27T00:00:00", "2024-01-01T00:00:00Z")
    # 01:15Z is 02:15 CET, in the second pass of 02:xx: the next wall time that has not fired is 03:00 CET
    assert s.after(utc("2024-10-27T01:15:00Z"), inclusive=True) == utc("2024-10-27T02:00:00Z")


def test_end_time_without_offset_is_wall_time_in_the_zone() -> None:
    rec = parse_recurrence({"frequency": "day", "timeZone": "Europe/Berlin", "endTime": "2024-07-01T09:00:00"})
    assert rec is not None
    assert rec.end_time == utc("2024-07-01T07:00:00Z")


def test_start_time_without_offset_is_wall_time_in_the_zone() -> None:
    rec = parse_recurrence({"frequency": "day", "timeZone": "America/New_York"})
    assert parse_start_time("2024-01-15T09:00:00", rec) == utc("2024-01-15T14:00:00Z")
    assert parse_start_time("2024-01-15T09:00:00Z", rec) == utc("2024-01-15T09:00:00Z")
    assert parse_start_time("2024-01-15T09:00:00", None) == utc("2024-01-15T09:00:00Z")
    assert parse_start_time(None, rec) is None


def test_ordinal_counts_across_many_daylight_saving_changes() -> None:
    # every 30 minutes of wall time in Berlin from 2014-01-01: each spring day loses 2 slots, each autumn
    # day's repeated hour counts once; compare with plain arithmetic over the wall-clock calendar.
    rec = {"frequency": "hour", "schedule": {"minutes": [0, 30]}, "timeZone": "Europe/Berlin"}
    s = compiled(rec, "2014-01-01T00:00:00", "2013-12-31T00:00:00Z")
    assert s.first_occurrence == utc("2013-12-31T23:00:00Z")
    occurrence = utc("2024-01-01T00:00:00Z") - timedelta(hours=1)  # 2024-01-01T00:00 CET
    wall_days = (datetime(2024, 1, 1) - datetime(2014, 1, 1)).days
    springs = 10  # 2014..2023, one lost hour (two slots) each
    assert s.ordinal(occurrence) == wall_days * 48 - springs * 2 + 1


def test_far_future_occurrences_stay_exact() -> None:
    s = compiled(
        {"frequency": "month", "schedule": {"monthDays": [-1]}}, "2024-01-31T00:00:00Z", "2024-01-01T00:00:00Z"
    )
    assert s.after(utc("2399-02-01T00:00:00Z"), inclusive=True) == utc("2399-02-28T00:00:00Z")
    assert s.after(utc("2400-02-01T00:00:00Z"), inclusive=True) == utc("2400-02-29T00:00:00Z")


def test_utc_aware_inputs_are_required() -> None:
    with pytest.raises(ValueError, match="aware"):
        compile_schedule(None, None, datetime(2024, 1, 1))
    s = compile_schedule(None, None, datetime(2024, 1, 1, tzinfo=UTC))
    with pytest.raises(ValueError, match="aware"):
        s.after(datetime(2024, 1, 1), inclusive=True)
