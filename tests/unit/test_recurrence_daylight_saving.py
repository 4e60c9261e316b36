"""Daylight saving at the start of a series, and every daylight-saving claim of docs/recurrence.md.

The start instant is occurrence 0 (when it is not in the past, and, with a schedule, when its wall time
is on the schedule), whatever pass of a repeated hour it falls in; ``count`` then gives exactly ``count``
occurrences.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scheduler_core.recurrence import (
    CompiledSchedule,
    compile_schedule,
    format_instant,
    parse_instant,
    parse_recurrence,
    parse_start_time,
)

FREQUENCIES = ["Minute", "Hour", "Day", "Week", "Month", "Year"]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def compiled(recurrence: dict[str, Any], start: str | datetime | None, created: str | datetime) -> CompiledSchedule:
    rec = parse_recurrence(recurrence)
    start_time = parse_start_time(start, rec) if isinstance(start, str | None) else start
    made = parse_instant(created, "created") if isinstance(created, str) else created
    return compile_schedule(start_time, rec, made)


def listing(schedule: CompiledSchedule, n: int, after: datetime | None = None) -> list[str]:
    return [format_instant(t) for t in schedule.occurrences(after or schedule.created, n)]


# --- the pinned example ------------------------------------------------------------------------------


@pytest.mark.parametrize("frequency", ["Day", "Week", "Month", "Year"])
def test_start_in_the_second_pass_of_the_fall_back_hour_is_occurrence_zero(frequency: str) -> None:
    # Berlin leaves summer time at 2024-10-27T01:00Z (03:00 CEST -> 02:00 CET): 01:30Z is 02:30 CET, the
    # second 02:30 of that night. The job was asked to start then, so it fires then.
    start = utc("2024-10-27T01:30:00Z")
    s = compiled({"frequency": frequency, "timeZone": "Europe/Berlin", "count": 3}, start, start)
    following = {
        "Day": ["2024-10-28T01:30:00Z", "2024-10-29T01:30:00Z"],
        "Week": ["2024-11-03T01:30:00Z", "2024-11-10T01:30:00Z"],
        "Month": ["2024-11-27T01:30:00Z", "2024-12-27T01:30:00Z"],
        "Year": ["2025-10-27T01:30:00Z", "2026-10-27T01:30:00Z"],
    }[frequency]
    assert s.first_occurrence == start
    assert listing(s, 10) == ["2024-10-27T01:30:00Z", *following]
    assert [s.ordinal(t) for t in s.occurrences(start, 10)] == [1, 2, 3]
    assert s.is_last(utc(following[-1]))
    assert s.after(start, inclusive=True) == start


def test_start_in_the_second_pass_with_a_matching_schedule_fires_then_skips_the_rest_of_the_fold() -> None:
    # every minute of wall hour 2: the start (the second 02:30) fires; 02:31..02:59 of the second pass
    # already had their (first) instance before the start, so the next occurrence is 02:00 the next day
    start = utc("2024-10-27T01:30:00Z")
    rec = {"frequency": "Minute", "schedule": {"hours": [2]}, "timeZone": "Europe/Berlin", "count": 3}
    s = compiled(rec, start, start)
    assert listing(s, 10) == ["2024-10-27T01:30:00Z", "2024-10-28T01:00:00Z", "2024-10-28T01:01:00Z"]
    assert [s.ordinal(t) for t in s.occurrences(start, 10)] == [1, 2, 3]


def test_start_in_the_second_pass_off_the_schedule_does_not_fire() -> None:
    start = utc("2024-10-27T01:30:00Z")  # 02:30 CET
    rec = {"frequency": "Day", "schedule": {"hours": [2], "minutes": [45]}, "timeZone": "Europe/Berlin"}
    s = compiled(rec, start, start)
    # 02:45 CEST (00:45Z) was before the start; 02:45 CET is the same wall time, so it does not fire again
    assert listing(s, 2) == ["2024-10-28T01:45:00Z", "2024-10-29T01:45:00Z"]


def test_start_in_the_first_pass_of_the_fall_back_hour_fires_once_that_night() -> None:
    start = utc("2024-10-27T00:30:00Z")  # 02:30 CEST, the first 02:30
    s = compiled({"frequency": "Day", "timeZone": "Europe/Berlin", "count": 2}, start, start)
    assert listing(s, 5) == ["2024-10-27T00:30:00Z", "2024-10-28T01:30:00Z"]
    hourly = compiled(
        {"frequency": "Hour", "schedule": {"minutes": [30]}, "timeZone": "Europe/Berlin", "count": 3}, start, start
    )
    assert listing(hourly, 5) == ["2024-10-27T00:30:00Z", "2024-10-27T02:30:00Z", "2024-10-27T03:30:00Z"]


def test_monthly_on_a_day_whose_wall_time_is_repeated_fires_once_at_the_first() -> None:
    s = compiled({"frequency": "Month", "timeZone": "Europe/Berlin"}, "2024-09-27T02:30:00", "2024-09-01T00:00:00Z")
    assert listing(s, 3) == ["2024-09-27T00:30:00Z", "2024-10-27T00:30:00Z", "2024-11-27T01:30:00Z"]
    assert s.ordinal(utc("2024-11-27T01:30:00Z")) == 3


def test_past_start_created_in_the_second_pass_does_not_fire_the_passed_wall_time() -> None:
    # created at the second 02:30: that day's 02:30 already fired at 00:30Z (before creation)
    s = compiled(
        {"frequency": "Day", "timeZone": "Europe/Berlin", "count": 2}, "2024-10-20T02:30:00", "2024-10-27T01:30:00Z"
    )
    assert listing(s, 5) == ["2024-10-28T01:30:00Z", "2024-10-29T01:30:00Z"]


def test_no_start_created_in_the_second_pass_fires_now_then_per_the_rule() -> None:
    s = compiled({"frequency": "Day", "timeZone": "Europe/Berlin", "count": 3}, None, "2024-10-27T01:30:00Z")
    assert listing(s, 5) == ["2024-10-27T01:30:00Z", "2024-10-28T01:30:00Z", "2024-10-29T01:30:00Z"]


# --- properties: the start instant is occurrence 0, count gives exactly count ------------------------

# (zone, an instant of a UTC-offset change in it): fall back and spring forward, whole and half hours,
# and changes at midnight (Santiago), so that a repeated or skipped wall time can cross a day boundary.
TRANSITIONS = [
    ("Europe/Berlin", "2024-03-31T01:00:00Z"),
    ("Europe/Berlin", "2024-10-27T01:00:00Z"),
    ("America/New_York", "2024-03-10T07:00:00Z"),
    ("America/New_York", "2024-11-03T06:00:00Z"),
    ("Australia/Lord_Howe", "2024-04-06T15:00:00Z"),
    ("Australia/Lord_Howe", "2024-10-05T15:30:00Z"),
    ("America/Santiago", "2024-04-07T03:00:00Z"),
    ("America/Santiago", "2024-09-08T04:00:00Z"),
]


def test_the_transition_table_holds_real_changes() -> None:
    for zone, text in TRANSITIONS:
        at = utc(text)
        before = (at - timedelta(seconds=1)).astimezone(ZoneInfo(zone)).utcoffset()
        assert before != at.astimezone(ZoneInfo(zone)).utcoffset(), (zone, text)


@st.composite
def starts_near_changes(draw: st.DrawFn) -> tuple[str, datetime]:
    zone, text = draw(st.sampled_from(TRANSITIONS))
    seconds = draw(st.integers(-3 * 3600, 3 * 3600))
    return zone, utc(text) + timedelta(seconds=seconds)


@st.composite
def rules(draw: st.DrawFn) -> tuple[dict[str, Any], datetime]:
    """A recurrence in a zone with daylight saving and a start near one of its changes (either pass of a
    repeated hour, just after a gap); with a schedule, one the start's wall time is on."""
    zone, start = draw(starts_near_changes())
    frequency = draw(st.sampled_from(FREQUENCIES))
    rec: dict[str, Any] = {"frequency": frequency, "timeZone": zone}
    limit = {"Minute": 180, "Hour": 30, "Day": 10, "Week": 4, "Month": 6, "Year": 1}[frequency]
    if draw(st.booleans()):
        rec["interval"] = draw(st.integers(1, limit))
    if draw(st.booleans()):
        wall = start.astimezone(ZoneInfo(zone))
        schedule: dict[str, Any] = {}
        if draw(st.booleans()) or frequency == "Minute":
            schedule["hours"] = sorted({wall.hour, draw(st.integers(0, 23))})
        if draw(st.booleans()) or frequency != "Minute":
            schedule["minutes"] = sorted({wall.minute, draw(st.integers(0, 59))})
        if frequency == "Week" and draw(st.booleans()):
            schedule["weekDays"] = [wall.strftime("%A")]
        if frequency in ("Month", "Year") and draw(st.booleans()):
            schedule["monthDays"] = [wall.day]
        rec["schedule"] = schedule
    return rec, start


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule=rules(), lead=st.integers(0, 3 * 86400), count=st.one_of(st.none(), st.integers(1, 6)))
@example(  # the pinned example: daily in Berlin from the second 02:30 of the fall-back night
    rule=({"frequency": "Day", "timeZone": "Europe/Berlin"}, utc("2024-10-27T01:30:00Z")), lead=0, count=3
)
def test_the_start_instant_is_occurrence_zero_and_count_is_exact(
    rule: tuple[dict[str, Any], datetime], lead: int, count: int | None
) -> None:
    rec, start = rule
    if count is not None:
        rec = {**rec, "count": count}
    created = start - timedelta(seconds=lead)
    s = compiled(rec, start, created)
    assert s.first_occurrence == start
    assert s.after(created, inclusive=True) == start
    series = s.occurrences(created, 8)
    assert series[0] == start
    assert series == sorted(set(series))
    assert len(series) == (8 if count is None else count)
    assert [s.ordinal(t) for t in series] == list(range(1, len(series) + 1))
    for earlier, later in pairwise(series):
        assert s.after(earlier + timedelta(microseconds=1), inclusive=True) == later
    if count is not None:
        assert s.is_last(series[-1])
        assert s.after(series[-1] + timedelta(microseconds=1), inclusive=True) is None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule=rules())
def test_a_wall_time_fires_at_most_once_except_the_start(rule: tuple[dict[str, Any], datetime]) -> None:
    """Wall-clock rules (everything but Minute/Hour without a schedule) fire each wall time once."""
    rec, start = rule
    if rec["frequency"] in ("Minute", "Hour") and "schedule" not in rec:
        return
    zone = ZoneInfo(rec["timeZone"])
    series = compiled(rec, start, start).occurrences(start, 40)
    walls = [t.astimezone(zone).replace(tzinfo=None) for t in series]
    assert len(set(walls)) == len(walls)
    for instant, wall in zip(series[1:], walls[1:], strict=True):
        # every occurrence after the start is the first instance of its wall time
        assert wall.replace(tzinfo=zone, fold=0).astimezone(UTC) == instant


# --- what docs/recurrence.md tells users about daylight saving --------------------------------------


def test_doc_a_wall_clock_start_inside_a_gap_moves_the_daily_time_for_good() -> None:
    # 02:30 does not exist in Berlin on 2024-03-31: the start moves forward by the gap, to 03:30 CEST,
    # and the job then fires at 03:30 every day
    s = compiled({"frequency": "Day", "timeZone": "Europe/Berlin"}, "2024-03-31T02:30:00", "2024-03-01T00:00:00Z")
    assert listing(s, 3) == ["2024-03-31T01:30:00Z", "2024-04-01T01:30:00Z", "2024-04-02T01:30:00Z"]
    assert [t.astimezone(ZoneInfo("Europe/Berlin")).strftime("%H:%M") for t in s.occurrences(s.created, 3)] == [
        "03:30"
    ] * 3


def test_doc_a_schedule_keeps_the_wall_time_a_start_inside_a_gap_cannot_have() -> None:
    # the same start with the time written as a schedule: the start (03:30 CEST) is not on the schedule,
    # so the job first fires at 02:30 the next day, and at 02:30 after that
    s = compiled(
        {"frequency": "Day", "schedule": {"hours": [2], "minutes": [30]}, "timeZone": "Europe/Berlin"},
        "2024-03-31T02:30:00",
        "2024-03-01T00:00:00Z",
    )
    assert listing(s, 2) == ["2024-04-01T00:30:00Z", "2024-04-02T00:30:00Z"]


def test_doc_an_equivalent_schedule_changes_the_daylight_saving_behaviour() -> None:
    start, created = "2024-10-27T02:00:00", "2024-10-01T00:00:00Z"
    plain = compiled({"frequency": "Minute", "interval": 15, "timeZone": "Europe/Berlin"}, start, created)
    quarter_hours = compiled(
        {"frequency": "Hour", "schedule": {"minutes": [0, 15, 30, 45]}, "timeZone": "Europe/Berlin"}, start, created
    )
    assert listing(plain, 9) == [
        "2024-10-27T00:00:00Z",
        "2024-10-27T00:15:00Z",
        "2024-10-27T00:30:00Z",
        "2024-10-27T00:45:00Z",
        "2024-10-27T01:00:00Z",  # 02:00 CET: every 15 minutes of real time, through both passes
        "2024-10-27T01:15:00Z",
        "2024-10-27T01:30:00Z",
        "2024-10-27T01:45:00Z",
        "2024-10-27T02:00:00Z",
    ]
    assert listing(quarter_hours, 5) == [
        "2024-10-27T00:00:00Z",
        "2024-10-27T00:15:00Z",
        "2024-10-27T00:30:00Z",
        "2024-10-27T00:45:00Z",  # 02:45 CEST, then 75 minutes without a run
        "2024-10-27T02:00:00Z",  # 03:00 CET
    ]


def test_doc_the_wall_clock_phase_of_an_interval_counts_hours_that_do_not_exist() -> None:
    # every 2 hours on the hour, as a schedule: wall hours 00, 02, 04... 02:00 does not exist on
    # 2024-03-31, so 00:00 CET is followed by 04:00 CEST, three hours later
    s = compiled(
        {"frequency": "Hour", "interval": 2, "schedule": {"minutes": [0]}, "timeZone": "Europe/Berlin"},
        "2024-03-31T00:00:00",
        "2024-03-01T00:00:00Z",
    )
    assert listing(s, 3) == ["2024-03-30T23:00:00Z", "2024-03-31T02:00:00Z", "2024-03-31T04:00:00Z"]
    # without the schedule it is every 2 hours of real time: 00:00 CET, 03:00 CEST, 05:00 CEST
    plain = compiled(
        {"frequency": "Hour", "interval": 2, "timeZone": "Europe/Berlin"}, "2024-03-31T00:00:00", "2024-03-01T00:00:00Z"
    )
    assert listing(plain, 3) == ["2024-03-30T23:00:00Z", "2024-03-31T01:00:00Z", "2024-03-31T03:00:00Z"]
    # every 90 minutes of wall time (a schedule makes Minute wall-clock): 00:00, 01:30, 03:00, 04:30
    ninety = compiled(
        {"frequency": "Minute", "interval": 90, "schedule": {"hours": list(range(24))}, "timeZone": "Europe/Berlin"},
        "2024-03-31T00:00:00",
        "2024-03-01T00:00:00Z",
    )
    assert listing(ninety, 4) == [
        "2024-03-30T23:00:00Z",  # 00:00 CET
        "2024-03-31T00:30:00Z",  # 01:30 CET
        "2024-03-31T01:00:00Z",  # 03:00 CEST, 30 minutes later: the missing hour 02:00-03:00 was counted
        "2024-03-31T02:30:00Z",  # 04:30 CEST
    ]
    # a repeated hour is counted once: 00:00 CEST, 02:00 CEST, then 04:00 CET, three hours later
    autumn = compiled(
        {"frequency": "Hour", "interval": 2, "schedule": {"minutes": [0]}, "timeZone": "Europe/Berlin"},
        "2024-10-27T00:00:00",
        "2024-10-01T00:00:00Z",
    )
    assert listing(autumn, 3) == ["2024-10-26T22:00:00Z", "2024-10-27T00:00:00Z", "2024-10-27T03:00:00Z"]
