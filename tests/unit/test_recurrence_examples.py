"""Every example row of the advanced-recurrence seed's schedule table, with concrete instants.

Unless a test says otherwise the job starts Wednesday 2024-05-01T12:00:00Z and was created at midnight
that day (so the start is in the future), interval 1. Calendar used for the expectations:
May 2024 starts on a Wednesday (Fridays 3, 10, 17, 24, 31); June 2024 starts on a Saturday (Fridays 7,
14, 21, 28; Wednesdays 5, 12, 19, 26); July 2024 starts on a Monday (Fridays 5, 12, 19, 26).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.recurrence import compile_schedule, format_instant, parse_instant, parse_recurrence

START = "2024-05-01T12:00:00Z"
CREATED = "2024-05-01T00:00:00Z"


def occurrences(
    frequency: str,
    schedule: dict[str, Any] | None,
    n: int,
    *,
    start: str | None = START,
    created: str = CREATED,
    after: str | None = None,
    **extra: Any,
) -> list[str]:
    data: dict[str, Any] = {"frequency": frequency, **extra}
    if schedule is not None:
        data["schedule"] = schedule
    recurrence = parse_recurrence(data)
    compiled = compile_schedule(
        parse_instant(start, "start") if start else None, recurrence, parse_instant(created, "created")
    )
    since = parse_instant(after or created, "after")
    return [format_instant(t) for t in compiled.occurrences(since, n)]


def test_hours_5_runs_at_5am_every_day() -> None:
    assert occurrences("day", {"hours": [5]}, 3) == [
        "2024-05-02T05:00:00Z",
        "2024-05-03T05:00:00Z",
        "2024-05-04T05:00:00Z",
    ]


def test_hours_without_minutes_take_the_start_minute() -> None:
    assert occurrences("day", {"hours": [5]}, 2, start="2024-05-01T12:25:00Z") == [
        "2024-05-02T05:25:00Z",
        "2024-05-03T05:25:00Z",
    ]


def test_5_15_every_day() -> None:
    assert occurrences("day", {"minutes": [15], "hours": [5]}, 3) == [
        "2024-05-02T05:15:00Z",
        "2024-05-03T05:15:00Z",
        "2024-05-04T05:15:00Z",
    ]


def test_5_15_am_and_pm_every_day() -> None:
    assert occurrences("day", {"minutes": [15], "hours": [5, 17]}, 4) == [
        "2024-05-01T17:15:00Z",
        "2024-05-02T05:15:00Z",
        "2024-05-02T17:15:00Z",
        "2024-05-03T05:15:00Z",
    ]


def test_hours_times_minutes_cross_product() -> None:
    assert occurrences("day", {"minutes": [15, 45], "hours": [5, 17]}, 5) == [
        "2024-05-01T17:15:00Z",
        "2024-05-01T17:45:00Z",
        "2024-05-02T05:15:00Z",
        "2024-05-02T05:45:00Z",
        "2024-05-02T17:15:00Z",
    ]


def test_every_15_minutes() -> None:
    assert occurrences("day", {"minutes": [0, 15, 30, 45]}, 5) == [
        "2024-05-01T12:00:00Z",
        "2024-05-01T12:15:00Z",
        "2024-05-01T12:30:00Z",
        "2024-05-01T12:45:00Z",
        "2024-05-01T13:00:00Z",
    ]


def test_every_hour_takes_minute_from_start() -> None:
    every_hour = {"hours": list(range(24))}
    got = occurrences("day", every_hour, 14, start="2024-05-01T12:25:00Z")
    assert got[:2] == ["2024-05-01T12:25:00Z", "2024-05-01T13:25:00Z"]
    assert got[11:] == ["2024-05-01T23:25:00Z", "2024-05-02T00:25:00Z", "2024-05-02T01:25:00Z"]


def test_every_hour_schedule_with_month_frequency_runs_one_day_a_month() -> None:
    got = occurrences("month", {"hours": list(range(24))}, 13, start="2024-05-01T12:25:00Z")
    assert got[11] == "2024-05-01T23:25:00Z"
    assert got[12] == "2024-06-01T00:25:00Z"


def test_every_hour_on_the_hour() -> None:
    assert occurrences("day", {"minutes": [0]}, 3, start="2024-05-01T12:10:00Z") == [
        "2024-05-01T13:00:00Z",
        "2024-05-01T14:00:00Z",
        "2024-05-01T15:00:00Z",
    ]


def test_every_hour_on_the_hour_with_week_frequency_runs_one_day_a_week() -> None:
    got = occurrences("week", {"minutes": [0]}, 13)
    assert got[0] == "2024-05-01T12:00:00Z"
    assert got[11] == "2024-05-01T23:00:00Z"
    assert got[12] == "2024-05-08T00:00:00Z"


def test_15_past_every_hour() -> None:
    got = occurrences("day", {"minutes": [15]}, 13)
    assert got[0] == "2024-05-01T12:15:00Z"
    assert got[11:] == ["2024-05-01T23:15:00Z", "2024-05-02T00:15:00Z"]


def test_5pm_saturdays() -> None:
    assert occurrences("week", {"hours": [17], "weekDays": ["saturday"]}, 3) == [
        "2024-05-04T17:00:00Z",
        "2024-05-11T17:00:00Z",
        "2024-05-18T17:00:00Z",
    ]


def test_5pm_monday_wednesday_friday() -> None:
    assert occurrences("week", {"hours": [17], "weekDays": ["monday", "wednesday", "friday"]}, 4) == [
        "2024-05-01T17:00:00Z",
        "2024-05-03T17:00:00Z",
        "2024-05-06T17:00:00Z",
        "2024-05-08T17:00:00Z",
    ]


def test_5_15_and_5_45_pm_mwf() -> None:
    schedule = {"minutes": [15, 45], "hours": [17], "weekDays": ["monday", "wednesday", "friday"]}
    assert occurrences("week", schedule, 5) == [
        "2024-05-01T17:15:00Z",
        "2024-05-01T17:45:00Z",
        "2024-05-03T17:15:00Z",
        "2024-05-03T17:45:00Z",
        "2024-05-06T17:15:00Z",
    ]


def test_5am_and_5pm_mwf() -> None:
    schedule = {"hours": [5, 17], "weekDays": ["monday", "wednesday", "friday"]}
    assert occurrences("week", schedule, 4) == [
        "2024-05-01T17:00:00Z",
        "2024-05-03T05:00:00Z",
        "2024-05-03T17:00:00Z",
        "2024-05-06T05:00:00Z",
    ]


def test_four_times_a_day_mwf() -> None:
    schedule = {"minutes": [15, 45], "hours": [5, 17], "weekDays": ["monday", "wednesday", "friday"]}
    assert occurrences("week", schedule, 7) == [
        "2024-05-01T17:15:00Z",
        "2024-05-01T17:45:00Z",
        "2024-05-03T05:15:00Z",
        "2024-05-03T05:45:00Z",
        "2024-05-03T17:15:00Z",
        "2024-05-03T17:45:00Z",
        "2024-05-06T05:15:00Z",
    ]


WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday"]


def test_every_15_minutes_on_weekdays() -> None:
    schedule = {"minutes": [0, 15, 30, 45], "weekDays": WEEKDAYS}
    assert occurrences("week", schedule, 3, after="2024-05-03T23:30:00Z") == [
        "2024-05-03T23:30:00Z",
        "2024-05-03T23:45:00Z",
        "2024-05-06T00:00:00Z",
    ]


def test_every_15_minutes_on_weekdays_between_9_and_4_45() -> None:
    schedule = {"minutes": [0, 15, 30, 45], "hours": list(range(9, 17)), "weekDays": WEEKDAYS}
    assert occurrences("week", schedule, 4, after="2024-05-03T16:30:00Z") == [
        "2024-05-03T16:30:00Z",
        "2024-05-03T16:45:00Z",
        "2024-05-06T09:00:00Z",
        "2024-05-06T09:15:00Z",
    ]


def test_sundays_at_start_time() -> None:
    assert occurrences("week", {"weekDays": ["sunday"]}, 2) == [
        "2024-05-05T12:00:00Z",
        "2024-05-12T12:00:00Z",
    ]


def test_tuesdays_and_thursdays_at_start_time() -> None:
    assert occurrences("week", {"weekDays": ["tuesday", "thursday"]}, 3) == [
        "2024-05-02T12:00:00Z",
        "2024-05-07T12:00:00Z",
        "2024-05-09T12:00:00Z",
    ]


def test_6am_on_the_28th() -> None:
    assert occurrences("month", {"minutes": [0], "hours": [6], "monthDays": [28]}, 3) == [
        "2024-05-28T06:00:00Z",
        "2024-06-28T06:00:00Z",
        "2024-07-28T06:00:00Z",
    ]


def test_6am_on_the_last_day_of_the_month() -> None:
    assert occurrences("month", {"minutes": [0], "hours": [6], "monthDays": [-1]}, 5) == [
        "2024-05-31T06:00:00Z",
        "2024-06-30T06:00:00Z",
        "2024-07-31T06:00:00Z",
        "2024-08-31T06:00:00Z",
        "2024-09-30T06:00:00Z",
    ]


def test_last_day_of_february_in_leap_and_common_years() -> None:
    schedule = {"minutes": [0], "hours": [6], "monthDays": [-1]}
    leap = occurrences("month", schedule, 2, start="2024-02-01T00:00:00Z", created="2024-01-01T00:00:00Z")
    common = occurrences("month", schedule, 2, start="2023-02-01T00:00:00Z", created="2023-01-01T00:00:00Z")
    assert leap == ["2024-02-29T06:00:00Z", "2024-03-31T06:00:00Z"]
    assert common == ["2023-02-28T06:00:00Z", "2023-03-31T06:00:00Z"]


def test_6am_first_and_last_day() -> None:
    assert occurrences("month", {"minutes": [0], "hours": [6], "monthDays": [1, -1]}, 4) == [
        "2024-05-31T06:00:00Z",
        "2024-06-01T06:00:00Z",
        "2024-06-30T06:00:00Z",
        "2024-07-01T06:00:00Z",
    ]


def test_first_and_last_day_at_start_time() -> None:
    assert occurrences("month", {"monthDays": [1, -1]}, 4) == [
        "2024-05-01T12:00:00Z",
        "2024-05-31T12:00:00Z",
        "2024-06-01T12:00:00Z",
        "2024-06-30T12:00:00Z",
    ]


def test_first_and_fourteenth_at_start_time() -> None:
    assert occurrences("month", {"monthDays": [1, 14]}, 4) == [
        "2024-05-01T12:00:00Z",
        "2024-05-14T12:00:00Z",
        "2024-06-01T12:00:00Z",
        "2024-06-14T12:00:00Z",
    ]


def test_second_day_at_start_time() -> None:
    assert occurrences("month", {"monthDays": [2]}, 3) == [
        "2024-05-02T12:00:00Z",
        "2024-06-02T12:00:00Z",
        "2024-07-02T12:00:00Z",
    ]


def test_first_friday_at_5am() -> None:
    schedule = {"minutes": [0], "hours": [5], "monthlyOccurrences": [{"day": "friday", "occurrence": 1}]}
    assert occurrences("month", schedule, 3) == [
        "2024-05-03T05:00:00Z",
        "2024-06-07T05:00:00Z",
        "2024-07-05T05:00:00Z",
    ]


def test_first_friday_at_start_time() -> None:
    assert occurrences("month", {"monthlyOccurrences": [{"day": "friday", "occurrence": 1}]}, 3) == [
        "2024-05-03T12:00:00Z",
        "2024-06-07T12:00:00Z",
        "2024-07-05T12:00:00Z",
    ]


def test_third_friday_from_the_end() -> None:
    assert occurrences("month", {"monthlyOccurrences": [{"day": "friday", "occurrence": -3}]}, 3) == [
        "2024-05-17T12:00:00Z",
        "2024-06-14T12:00:00Z",
        "2024-07-12T12:00:00Z",
    ]


def test_first_and_last_friday_at_5_15() -> None:
    schedule = {
        "minutes": [15],
        "hours": [5],
        "monthlyOccurrences": [{"day": "friday", "occurrence": 1}, {"day": "friday", "occurrence": -1}],
    }
    assert occurrences("month", schedule, 4) == [
        "2024-05-03T05:15:00Z",
        "2024-05-31T05:15:00Z",
        "2024-06-07T05:15:00Z",
        "2024-06-28T05:15:00Z",
    ]


def test_first_and_last_friday_at_start_time() -> None:
    schedule = {"monthlyOccurrences": [{"day": "friday", "occurrence": 1}, {"day": "friday", "occurrence": -1}]}
    assert occurrences("month", schedule, 4) == [
        "2024-05-03T12:00:00Z",
        "2024-05-31T12:00:00Z",
        "2024-06-07T12:00:00Z",
        "2024-06-28T12:00:00Z",
    ]


def test_fifth_friday_skips_months_without_one() -> None:
    # 2024 months with five Fridays after May: August (2..30) and November (1..29); then January 2025.
    assert occurrences("month", {"monthlyOccurrences": [{"day": "friday", "occurrence": 5}]}, 4) == [
        "2024-05-31T12:00:00Z",
        "2024-08-30T12:00:00Z",
        "2024-11-29T12:00:00Z",
        "2025-01-31T12:00:00Z",
    ]


def test_every_15_minutes_on_the_last_friday() -> None:
    schedule = {"minutes": [0, 15, 30, 45], "monthlyOccurrences": [{"day": "friday", "occurrence": -1}]}
    got = occurrences("month", schedule, 97)
    assert got[:3] == ["2024-05-31T00:00:00Z", "2024-05-31T00:15:00Z", "2024-05-31T00:30:00Z"]
    assert got[95] == "2024-05-31T23:45:00Z"
    assert got[96] == "2024-06-28T00:00:00Z"


def test_four_times_on_the_third_wednesday() -> None:
    schedule = {"minutes": [15, 45], "hours": [5, 17], "monthlyOccurrences": [{"day": "wednesday", "occurrence": 3}]}
    assert occurrences("month", schedule, 5) == [
        "2024-05-15T05:15:00Z",
        "2024-05-15T05:45:00Z",
        "2024-05-15T17:15:00Z",
        "2024-05-15T17:45:00Z",
        "2024-06-19T05:15:00Z",
    ]


def test_monthly_occurrence_without_occurrence_means_every_such_day() -> None:
    assert occurrences("month", {"monthlyOccurrences": [{"day": "friday"}]}, 6) == [
        "2024-05-03T12:00:00Z",
        "2024-05-10T12:00:00Z",
        "2024-05-17T12:00:00Z",
        "2024-05-24T12:00:00Z",
        "2024-05-31T12:00:00Z",
        "2024-06-07T12:00:00Z",
    ]


def test_seed_header_example_weekly_with_count() -> None:
    # startTime 2012-08-04 is a Saturday; Monday/Wednesday/Friday at 10:00 and 22:00; count 10.
    got = occurrences(
        "week",
        {"weekDays": ["monday", "wednesday", "friday"], "hours": [10, 22]},
        20,
        start="2012-08-04T00:00Z",
        created="2012-08-01T00:00:00Z",
        count=10,
        endTime="2012-11-04",
    )
    assert got == [
        "2012-08-06T10:00:00Z",
        "2012-08-06T22:00:00Z",
        "2012-08-08T10:00:00Z",
        "2012-08-08T22:00:00Z",
        "2012-08-10T10:00:00Z",
        "2012-08-10T22:00:00Z",
        "2012-08-13T10:00:00Z",
        "2012-08-13T22:00:00Z",
        "2012-08-15T10:00:00Z",
        "2012-08-15T22:00:00Z",
    ]


@pytest.mark.parametrize(
    ("month_day", "expected"),
    [
        (31, ["2024-05-31T12:00:00Z", "2024-07-31T12:00:00Z", "2024-08-31T12:00:00Z"]),
        (30, ["2024-05-30T12:00:00Z", "2024-06-30T12:00:00Z", "2024-07-30T12:00:00Z"]),
    ],
)
def test_month_day_is_skipped_in_short_months_not_clamped(month_day: int, expected: list[str]) -> None:
    assert occurrences("month", {"monthDays": [month_day]}, 3) == expected


def test_monthly_start_on_the_31st_skips_short_months() -> None:
    got = occurrences("month", None, 4, start="2024-01-31T08:00:00Z", created="2024-01-01T00:00:00Z")
    assert got == [
        "2024-01-31T08:00:00Z",
        "2024-03-31T08:00:00Z",
        "2024-05-31T08:00:00Z",
        "2024-07-31T08:00:00Z",
    ]
