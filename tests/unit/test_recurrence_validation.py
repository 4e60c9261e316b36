"""Parsing, normalisation, canonical JSON, instants, invalid inputs, never-firing schedules, quotas."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.errors import ValidationError
from scheduler_core.recurrence import (
    Frequency,
    WeekDay,
    compile_schedule,
    format_instant,
    minimum_gap,
    parse_instant,
    parse_recurrence,
    validate_against_quota,
)

P = "properties.recurrence"


def parsed(data: dict[str, Any]) -> Any:
    rec = parse_recurrence(data)
    assert rec is not None
    return rec


# --- normalisation -------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["minute", "Minute", "MINUTE", " mInUtE "])
def test_frequency_any_casing(spelling: str) -> None:
    assert parsed({"frequency": spelling}).frequency is Frequency.MINUTE


def test_none_is_none() -> None:
    assert parse_recurrence(None) is None


def test_canonical_json_form() -> None:
    rec = parsed(
        {
            "Frequency": "month",
            "interval": 2,
            "count": 5,
            "endTime": "2030-01-01T00:00:00+01:00",
            "schedule": {
                "minutes": 15,
                "hours": [5, 17, 5],
                "monthlyOccurrences": [{"day": "FRIDAY", "occurrence": -1}, {"Day": "monday"}],
                "monthDays": [1, -1],
                "months": [1, 7],
            },
        }
    )
    assert rec.to_json() == {
        "frequency": "Month",
        "interval": 2,
        "count": 5,
        "endTime": "2029-12-31T23:00:00Z",
        "schedule": {
            "minutes": [15],
            "hours": [5, 17],
            "monthDays": [1, -1],
            "monthlyOccurrences": [{"day": "Friday", "Occurrence": -1}, {"day": "Monday"}],
            "months": [1, 7],
        },
    }


def test_capital_and_lowercase_occurrence_keys_are_the_same() -> None:
    upper = parsed({"frequency": "month", "schedule": {"monthlyOccurrences": [{"day": "friday", "Occurrence": 2}]}})
    lower = parsed({"frequency": "month", "schedule": {"monthlyOccurrences": [{"day": "friday", "occurrence": 2}]}})
    assert upper == lower
    assert upper.schedule.monthly_occurrences[0].occurrence == 2


def test_week_days_as_single_string_and_time_zone_canonical_spelling() -> None:
    rec = parsed({"frequency": "week", "schedule": {"weekDays": "sunday"}, "timeZone": "w. europe standard time"})
    assert rec.schedule.week_days == (WeekDay.SUNDAY,)
    assert rec.to_json()["timeZone"] == "W. Europe Standard Time"
    assert parsed({"frequency": "day", "timeZone": "europe/berlin"}).time_zone == "Europe/Berlin"


def test_nulls_are_absent() -> None:
    rec = parsed({"frequency": "day", "interval": None, "count": None, "schedule": None, "endTime": None})
    assert rec.to_json() == {"frequency": "Day"}


def test_omitted_interval_means_one() -> None:
    assert parsed({"frequency": "day"}).step == 1


# --- instants -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2016-03-16T19:05:00.0000000Z", datetime(2016, 3, 16, 19, 5, tzinfo=UTC)),
        ("2012-08-04T00:00Z", datetime(2012, 8, 4, tzinfo=UTC)),
        ("2012-11-04", datetime(2012, 11, 4, tzinfo=UTC)),
        ("2013-01-09T09:30:00-08:00", datetime(2013, 1, 9, 17, 30, tzinfo=UTC)),
        ("2024-01-31T06:00:00+0530", datetime(2024, 1, 31, 0, 30, tzinfo=UTC)),
        ("2024-01-31T06:00:00.1234567", datetime(2024, 1, 31, 6, 0, 0, 123456, tzinfo=UTC)),
    ],
)
def test_parse_instant(text: str, expected: datetime) -> None:
    assert parse_instant(text, "x") == expected


@pytest.mark.parametrize(
    "text", ["tomorrow", "2024-13-01", "2024-02-30T00:00Z", "2024-01-01T25:00Z", "", "2024-01-01T00:00+24:00"]
)
def test_parse_instant_rejects(text: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_instant(text, "properties.startTime")
    assert err.value.path == "properties.startTime"
    assert "ISO 8601" in err.value.message


def test_parse_instant_rejects_non_strings() -> None:
    with pytest.raises(ValidationError, match=r"properties\.startTime: must be an ISO 8601"):
        parse_instant(20240101, "properties.startTime")


def test_format_instant() -> None:
    assert format_instant(datetime(2024, 1, 31, 6, tzinfo=UTC)) == "2024-01-31T06:00:00Z"
    assert format_instant(datetime(2024, 1, 31, 6, 0, 0, 120000, tzinfo=UTC)) == "2024-01-31T06:00:00.12Z"
    plus_one = datetime(2024, 1, 31, 7, tzinfo=UTC).astimezone(__import__("zoneinfo").ZoneInfo("Europe/Berlin"))
    assert format_instant(plus_one) == "2024-01-31T07:00:00Z"
    with pytest.raises(ValueError, match="aware"):
        format_instant(datetime(2024, 1, 1))


# --- invalid recurrences ----------------------------------------------------------------------------

INVALID: list[tuple[Any, str, str]] = [
    (
        {"frequency": "day", "schedule": {"weekDays": ["monday"]}},
        f"{P}.schedule.weekDays",
        "only be used with frequency Week",
    ),
    ({"frequency": "day", "schedule": {"hours": [24]}}, f"{P}.schedule.hours[0]", "between 0 and 23"),
    ({"frequency": "day", "schedule": {"hours": [3, -1]}}, f"{P}.schedule.hours[1]", "between 0 and 23"),
    ({"frequency": "day", "schedule": {"minutes": [60]}}, f"{P}.schedule.minutes[0]", "between 0 and 59"),
    ({"frequency": "day", "schedule": {"hours": ["5"]}}, f"{P}.schedule.hours[0]", "must be an integer"),
    ({"frequency": "day", "schedule": {"hours": []}}, f"{P}.schedule.hours", "must not be empty"),
    ({"frequency": "month", "schedule": {"monthDays": [0]}}, f"{P}.schedule.monthDays[0]", "between 1 and 31"),
    ({"frequency": "month", "schedule": {"monthDays": [-32]}}, f"{P}.schedule.monthDays[0]", "between 1 and 31"),
    (
        {"frequency": "week", "schedule": {"monthDays": [1]}},
        f"{P}.schedule.monthDays",
        "only be used with frequency Month",
    ),
    ({"frequency": "day", "interval": 0}, f"{P}.interval", "between 1 and 548"),
    ({"frequency": "minute", "interval": 1001}, f"{P}.interval", "between 1 and 1000"),
    ({"frequency": "week", "interval": 79}, f"{P}.interval", "between 1 and 78"),
    ({"frequency": "month", "interval": 19}, f"{P}.interval", "between 1 and 18"),
    ({"frequency": "year", "interval": 2}, f"{P}.interval", "between 1 and 1"),
    ({"frequency": "day", "interval": "5"}, f"{P}.interval", "must be an integer"),
    ({"frequency": "day", "interval": 1.5}, f"{P}.interval", "must be an integer"),
    ({"frequency": "day", "interval": True}, f"{P}.interval", "must be an integer"),
    ({"frequency": "day", "count": 0}, f"{P}.count", "between 1 and"),
    ({"frequency": "day", "count": "3"}, f"{P}.count", "must be an integer"),
    ({"frequency": "day", "foo": 1}, f"{P}.foo", "not a known field"),
    ({"frequency": "day", "schedule": {"hour": [1]}}, f"{P}.schedule.hour", "not a known field"),
    ({"frequency": "day", "interval": 1, "Interval": 2}, f"{P}.Interval", "duplicates"),
    ({"interval": 1}, f"{P}.frequency", "is required"),
    ({"frequency": "fortnight"}, f"{P}.frequency", "must be one of Minute, Hour, Day, Week, Month, Year"),
    ({"frequency": 3}, f"{P}.frequency", "must be one of"),
    ({"frequency": "day", "endTime": "soon"}, f"{P}.endTime", "ISO 8601"),
    ({"frequency": "day", "endTime": 5}, f"{P}.endTime", "ISO 8601"),
    ({"frequency": "day", "timeZone": "Mars/Olympus_Mons"}, f"{P}.timeZone", "not a known time zone"),
    ({"frequency": "day", "timeZone": 1}, f"{P}.timeZone", "must be a time zone name"),
    ({"frequency": "month", "schedule": {"months": [13]}}, f"{P}.schedule.months[0]", "between 1 and 12"),
    ({"frequency": "day", "schedule": {"months": [1]}}, f"{P}.schedule.months", "Month or Year"),
    ({"frequency": "week", "schedule": {"weekDays": ["funday"]}}, f"{P}.schedule.weekDays[0]", "must be one of Monday"),
    ({"frequency": "week", "schedule": {"weekDays": ["monday"] * 8}}, f"{P}.schedule.weekDays", "at most 7"),
    (
        {"frequency": "month", "schedule": {"monthlyOccurrences": [{"day": "friday", "Occurrence": 6}]}},
        f"{P}.schedule.monthlyOccurrences[0].Occurrence",
        "between -5 and 5",
    ),
    (
        {"frequency": "month", "schedule": {"monthlyOccurrences": [{"day": "friday", "occurrence": 0}]}},
        f"{P}.schedule.monthlyOccurrences[0].occurrence",
        "not 0",
    ),
    (
        {"frequency": "month", "schedule": {"monthlyOccurrences": [{"occurrence": 1}]}},
        f"{P}.schedule.monthlyOccurrences[0].day",
        "is required",
    ),
    (
        {"frequency": "month", "schedule": {"monthlyOccurrences": [{"day": "friday", "nth": 1}]}},
        f"{P}.schedule.monthlyOccurrences[0].nth",
        "not a known field",
    ),
    (
        {"frequency": "month", "schedule": {"monthlyOccurrences": {"day": "friday"}}},
        f"{P}.schedule.monthlyOccurrences",
        "must be an array",
    ),
    (
        {"frequency": "month", "schedule": {"monthDays": [30], "months": [2]}},
        f"{P}.schedule.monthDays",
        "can never fire",
    ),
    (
        {"frequency": "month", "schedule": {"monthDays": [31], "months": [4, 6, 9, 11]}},
        f"{P}.schedule.monthDays",
        "can never fire",
    ),
    ({"frequency": "day", "schedule": [1]}, f"{P}.schedule", "must be a JSON object"),
]


@pytest.mark.parametrize(("data", "path", "rule"), INVALID)
def test_invalid_recurrence(data: Any, path: str, rule: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_recurrence(data)
    assert err.value.path == path
    assert rule in err.value.rule
    assert err.value.message.startswith(f"{path}: ")


def test_recurrence_must_be_an_object() -> None:
    with pytest.raises(ValidationError, match=r"^properties\.recurrence: must be a JSON object"):
        parse_recurrence("daily")  # type: ignore[arg-type]


def test_custom_path_prefix() -> None:
    with pytest.raises(ValidationError) as err:
        parse_recurrence({"frequency": "day", "schedule": {"hours": [24]}}, "recurrence")
    assert err.value.path == "recurrence.schedule.hours[0]"


def test_fifth_friday_of_february_is_possible_in_some_years() -> None:
    rec = parsed(
        {"frequency": "month", "schedule": {"months": [2], "monthlyOccurrences": [{"day": "friday", "occurrence": 5}]}}
    )
    s = compile_schedule(datetime(2024, 1, 1, tzinfo=UTC), rec, datetime(2024, 1, 1, tzinfo=UTC))
    # February 2036 starts on a Friday and has 29 days
    assert s.first_occurrence == datetime(2036, 2, 29, tzinfo=UTC)


NOW = datetime(2024, 5, 1, tzinfo=UTC)


def compile_error(data: dict[str, Any], start: datetime | None) -> ValidationError:
    with pytest.raises(ValidationError) as err:
        compile_schedule(start, parsed(data), NOW)
    return err.value


def test_end_time_before_start() -> None:
    err = compile_error({"frequency": "day", "endTime": "2024-06-01T00:00:00Z"}, datetime(2024, 7, 1, tzinfo=UTC))
    assert err.path == f"{P}.endTime"
    assert "earlier than startTime" in err.rule


def test_end_time_in_the_past() -> None:
    err = compile_error({"frequency": "day", "endTime": "2024-04-01T00:00:00Z"}, None)
    assert err.path == f"{P}.endTime"
    assert "in the past" in err.rule


@pytest.mark.parametrize(
    ("data", "start"),
    [
        ({"frequency": "month", "interval": 12, "schedule": {"monthDays": [31]}}, datetime(2025, 2, 1, tzinfo=UTC)),
        ({"frequency": "month", "interval": 12, "schedule": {"monthDays": [30]}}, datetime(2024, 2, 1, tzinfo=UTC)),
        ({"frequency": "year", "schedule": {"monthDays": [30]}}, datetime(2025, 2, 1, tzinfo=UTC)),
        ({"frequency": "hour", "interval": 24, "schedule": {"hours": [9]}}, datetime(2025, 2, 1, 10, tzinfo=UTC)),
        ({"frequency": "minute", "interval": 120, "schedule": {"hours": [1, 3, 5]}}, datetime(2025, 2, 1, tzinfo=UTC)),
        ({"frequency": "month", "interval": 12, "schedule": {"months": [3]}}, datetime(2025, 2, 1, tzinfo=UTC)),
        (
            {
                "frequency": "month",
                "timeZone": "Europe/Berlin",
                "schedule": {
                    "months": [3],
                    "hours": [2],
                    "minutes": [30],
                    "monthlyOccurrences": [{"day": "sunday", "occurrence": -1}],
                },
            },
            datetime(2025, 1, 1, tzinfo=UTC),
        ),
    ],
)
def test_never_firing_schedules_are_rejected(data: dict[str, Any], start: datetime) -> None:
    err = compile_error(data, start)
    assert err.path.startswith(P)
    assert "can never fire" in err.rule


# --- quota -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "quota", "allowed"),
    [
        ({"frequency": "minute", "interval": 15}, ("Hour", 1), False),
        ({"frequency": "hour"}, ("hour", 1), True),
        ({"frequency": "minute", "interval": 60}, ("Hour", 1), True),
        ({"frequency": "day", "schedule": {"minutes": [0, 30]}}, ("Hour", 1), False),
        ({"frequency": "day", "schedule": {"hours": [5, 17]}}, ("Hour", 12), True),
        ({"frequency": "day", "schedule": {"hours": [5, 17]}}, ("Hour", 13), False),
        ({"frequency": "month"}, ("Month", 1), True),
        ({"frequency": "month", "schedule": {"monthDays": [1, -1]}}, ("Day", 2), False),
        ({"frequency": "week", "schedule": {"weekDays": ["monday", "tuesday"]}}, ("Day", 1), True),
        ({"frequency": "week", "schedule": {"weekDays": ["monday", "tuesday"]}}, ("Day", 2), False),
        ({"frequency": "day", "timeZone": "Europe/Berlin"}, ("Day", 1), True),
        ({"frequency": "minute"}, ("Minute", 1), True),
    ],
)
def test_quota(data: dict[str, Any], quota: tuple[str, int], allowed: bool) -> None:
    assert validate_against_quota(parsed(data), quota[0], quota[1]) is allowed


def test_quota_without_recurrence_and_minimum_gap() -> None:
    assert validate_against_quota(None, "Minute", 1)
    assert minimum_gap(parsed({"frequency": "day", "schedule": {"minutes": [0, 15, 30, 45]}})) == timedelta(minutes=15)
    assert minimum_gap(parsed({"frequency": "month"})) == timedelta(days=28)
