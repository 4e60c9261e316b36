"""Jitter and exclusions in the recurrence engine (``AdjustedSchedule``), against a brute-force reference.

The reference enumerates the nominal occurrences of the plain compiled schedule, drops those whose local wall
time is excluded, keeps the first ``count``, and adds each one's offset; the engine must give exactly that
through ``after``, ``occurrences``, ``ordinal``, ``nominal`` and ``is_last``.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.recurrence import (
    AdjustedSchedule,
    CompiledSchedule,
    Recurrence,
    compile_adjusted,
    compile_schedule,
    parse_recurrence,
)
from scheduler_core.timezones import resolve_time_zone

CREATED = datetime(2026, 3, 1, 0, 0, 30, tzinfo=UTC)
START = datetime(2026, 3, 2, 6, 0, tzinfo=UTC)


def recurrence(**fields: object) -> Recurrence:
    parsed = parse_recurrence(fields)
    assert parsed is not None
    return parsed


def reference(
    schedule: AdjustedSchedule,
    start: datetime | None,
    rule: Recurrence,
    created: datetime,
    dates: set[date],
    ranges: list[tuple[datetime, datetime]],
    limit: int,
) -> list[tuple[datetime, datetime]]:
    """(nominal, fire) of the first ``limit`` occurrences, computed the slow, obvious way."""
    plain = CompiledSchedule(start, dataclasses.replace(rule, count=None, end_time=None), created)
    zone = rule.zone or UTC
    out: list[tuple[datetime, datetime]] = []
    nominal = plain.first_occurrence
    for _ in range(50_000):  # nominal occurrences walked one by one
        if nominal is None or len(out) >= limit:
            break
        following = plain.after(nominal)
        if rule.end_time is not None and nominal > rule.end_time:
            break
        wall = nominal.astimezone(zone).replace(tzinfo=None)
        if wall.date() not in dates and not any(a <= wall < b for a, b in ranges):
            if rule.count is not None and len(out) >= rule.count:
                break
            fire = nominal + schedule.offset(nominal)
            if following is not None:
                fire = min(fire, following - timedelta(microseconds=1))
            out.append((nominal, fire))
        nominal = following
    return out


def check_against_reference(schedule: AdjustedSchedule, expected: list[tuple[datetime, datetime]]) -> None:
    fires = [fire for _, fire in expected]
    assert schedule.occurrences(datetime(2000, 1, 1, tzinfo=UTC), len(fires)) == fires
    assert schedule.first_occurrence == (fires[0] if fires else None)
    for position, (nominal, fire) in enumerate(expected):
        assert schedule.ordinal(fire) == position + 1
        assert schedule.nominal(fire) == nominal
        assert schedule.after(fire, inclusive=True) == fire
        assert schedule.after(fire - timedelta(microseconds=1)) == fire
        if position + 1 < len(fires):
            assert schedule.after(fire) == fires[position + 1]
    assert fires == sorted(fires) and len(set(fires)) == len(fires)


# ------------------------------------------------------------------------------------------------ jitter


def test_each_occurrence_fires_at_a_stable_offset_below_the_jitter() -> None:
    rule = recurrence(frequency="Hour", interval=1)
    jitter = timedelta(minutes=20)
    one = compile_adjusted(START, rule, CREATED, jitter=jitter, key="sub/rg/jc/job")
    again = compile_adjusted(START, rule, CREATED + timedelta(days=1), jitter=jitter, key="sub/rg/jc/job")
    other_job = compile_adjusted(START, rule, CREATED, jitter=jitter, key="sub/rg/jc/other")
    fires = one.occurrences(START, 48)
    nominals = CompiledSchedule(START, rule, CREATED).occurrences(START, 48)
    offsets = [fire - nominal for fire, nominal in zip(fires, nominals, strict=True)]
    assert all(timedelta(0) <= offset < jitter for offset in offsets)
    assert all(offset.microseconds == 0 for offset in offsets)  # whole seconds
    assert len(set(offsets)) > 30  # spread, not one constant shift
    # the same on every compilation (a restart, a retry): only the job and the occurrence decide
    later = START + timedelta(days=1)
    assert again.occurrences(later, 10) == [fire for fire in fires if fire >= later][:10]
    assert other_job.occurrences(START, 48) != fires


def test_the_immediate_first_occurrence_of_a_job_without_start_time_is_not_jittered() -> None:
    rule = recurrence(frequency="Minute", interval=10)
    schedule = compile_adjusted(None, rule, CREATED, jitter=timedelta(minutes=4), key="k")
    first, second = schedule.occurrences(CREATED, 2)
    assert first == CREATED
    assert CREATED + timedelta(minutes=10) <= second < CREATED + timedelta(minutes=14)


def test_a_jitter_below_a_second_is_in_microseconds() -> None:
    schedule = compile_adjusted(START, recurrence(frequency="Minute"), CREATED, jitter=timedelta(milliseconds=500))
    offsets = {fire - START - timedelta(minutes=i) for i, fire in enumerate(schedule.occurrences(START, 20))}
    assert all(timedelta(0) <= offset < timedelta(milliseconds=500) for offset in offsets)
    assert len(offsets) > 10


def test_an_offset_never_carries_an_occurrence_past_the_next_one_across_a_daylight_saving_change() -> None:
    # 00:30 and 03:30 local are 3 h apart on the wall but 2 h apart on the day clocks spring forward; a 1.5 h
    # jitter (half the usual gap) could otherwise reorder them.
    rule = recurrence(frequency="Day", schedule={"hours": [0, 3], "minutes": [30]}, timeZone="Europe/Berlin")
    start = datetime(2026, 3, 27, tzinfo=UTC)
    for key in ("a", "b", "c", "d", "e", "f"):
        schedule = compile_adjusted(start, rule, CREATED, jitter=timedelta(minutes=90), key=key)
        assert isinstance(schedule, AdjustedSchedule)
        expected = reference(schedule, start, rule, CREATED, set(), [], 12)
        check_against_reference(schedule, expected)


def test_without_jitter_or_exclusions_the_compiled_schedule_is_used_unchanged() -> None:
    rule = recurrence(frequency="Hour")
    plain = compile_adjusted(START, rule, CREATED, jitter=None, dates=(), ranges=())
    assert isinstance(plain, CompiledSchedule)
    assert plain.occurrences(START, 5) == compile_schedule(START, rule, CREATED).occurrences(START, 5)


# -------------------------------------------------------------------------------------------- exclusions


def test_excluded_dates_are_local_dates_of_the_time_zone() -> None:
    # Hourly at :00 in Tokyo (UTC+9): 2026-03-03 local runs from 2026-03-02T15:00Z to 2026-03-03T15:00Z.
    rule = recurrence(frequency="Day", schedule={"hours": list(range(24)), "minutes": [0]}, timeZone="Asia/Tokyo")
    schedule = compile_adjusted(START, rule, CREATED, dates=[date(2026, 3, 3)])
    fires = schedule.occurrences(START, 40)
    local_days = {fire.astimezone(resolve_time_zone("Asia/Tokyo").zone).date() for fire in fires}
    assert date(2026, 3, 3) not in local_days
    assert datetime(2026, 3, 2, 14, 0, tzinfo=UTC) in fires  # 23:00 on the 2nd, local
    assert datetime(2026, 3, 2, 15, 0, tzinfo=UTC) not in fires  # midnight of the 3rd, local
    assert datetime(2026, 3, 3, 15, 0, tzinfo=UTC) in fires  # midnight of the 4th, local


def test_a_date_as_range_end_includes_the_day_and_a_time_excludes_itself() -> None:
    rule = recurrence(frequency="Hour")
    whole = compile_adjusted(START, rule, CREATED, ranges=[(datetime(2026, 3, 2, 8), datetime(2026, 3, 3))])
    assert whole.after(datetime(2026, 3, 2, 7, tzinfo=UTC)) == datetime(2026, 3, 3, 0, tzinfo=UTC)
    timed = compile_adjusted(START, rule, CREATED, ranges=[(datetime(2026, 3, 2, 8), datetime(2026, 3, 2, 10))])
    assert timed.occurrences(START, 5) == [datetime(2026, 3, 2, h, tzinfo=UTC) for h in (6, 7, 10, 11, 12)]


def test_excluded_occurrences_do_not_count_towards_count() -> None:
    rule = recurrence(frequency="Day", count=5)
    schedule = compile_adjusted(START, rule, CREATED, dates=[date(2026, 3, 3), date(2026, 3, 5)])
    fires = schedule.occurrences(START, 10)
    assert [fire.day for fire in fires] == [2, 4, 6, 7, 8]
    assert schedule.is_last(fires[-1]) and not schedule.is_last(fires[-2])
    assert [schedule.ordinal(fire) for fire in fires] == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="not an occurrence"):
        schedule.ordinal(datetime(2026, 3, 3, 6, tzinfo=UTC))  # excluded: not an occurrence


def test_end_time_cuts_the_scheduled_instants() -> None:
    rule = recurrence(frequency="Day", endTime="2026-03-05T06:00:00Z")
    schedule = compile_adjusted(START, rule, CREATED, dates=[date(2026, 3, 3)], jitter=timedelta(hours=2), key="x")
    nominals = [schedule.nominal(fire) for fire in schedule.occurrences(START, 10)]
    assert [n.day for n in nominals] == [2, 4, 5]


def test_a_long_excluded_range_is_skipped_without_walking_it() -> None:
    rule = recurrence(frequency="Minute")
    schedule = compile_adjusted(START, rule, CREATED, ranges=[(datetime(2026, 3, 2, 7), datetime(2026, 4, 20))])
    assert schedule.after(datetime(2026, 3, 2, 6, 59, tzinfo=UTC)) == datetime(2026, 4, 20, tzinfo=UTC)
    assert schedule.ordinal(datetime(2026, 4, 20, tzinfo=UTC)) == 61  # 06:00 to 06:59, then this one


def test_everything_excluded_until_the_end_means_no_occurrence() -> None:
    rule = recurrence(frequency="Day", endTime="2026-03-04T06:00:00Z")
    schedule = compile_adjusted(START, rule, CREATED, ranges=[(datetime(2026, 3, 1), datetime(2026, 3, 10))])
    assert schedule.first_occurrence is None
    assert schedule.occurrences(START, 3) == []


# ----------------------------------------------------------------------------------- against the reference

#: start, recurrence, created, excluded dates, excluded ranges, jitter, key
Config = tuple[datetime | None, Recurrence, datetime, set[date], list[tuple[datetime, datetime]], timedelta | None, str]
ZONES = [None, "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]


@st.composite
def configurations(draw: st.DrawFn) -> Config:
    frequency = draw(st.sampled_from(["Minute", "Hour", "Day", "Week"]))
    fields: dict[str, object] = {"frequency": frequency, "interval": draw(st.integers(1, 3))}
    zone = draw(st.sampled_from(ZONES))
    if zone is not None:
        fields["timeZone"] = zone
    if frequency in ("Day", "Week") and draw(st.booleans()):
        fields["schedule"] = {
            "hours": draw(st.lists(st.integers(0, 23), min_size=1, max_size=3, unique=True)),
            "minutes": draw(st.lists(st.integers(0, 59), min_size=1, max_size=2, unique=True)),
        }
    if draw(st.booleans()):
        fields["count"] = draw(st.integers(1, 30))
    rule = recurrence(**fields)
    start = None if draw(st.integers(0, 4)) == 0 else CREATED + timedelta(minutes=draw(st.integers(0, 60 * 24 * 40)))
    base = (start or CREATED).replace(tzinfo=None)
    span = {"Minute": 1, "Hour": 2, "Day": 30, "Week": 120}[frequency]
    dates = {(base + timedelta(days=draw(st.integers(0, span)))).date() for _ in range(draw(st.integers(0, 4)))}
    ranges = []
    for _ in range(draw(st.integers(0, 3))):
        begin = base + timedelta(minutes=draw(st.integers(0, span * 24 * 60)))
        ranges.append((begin, begin + timedelta(minutes=draw(st.integers(1, 600)))))
    jitter = None if draw(st.booleans()) else timedelta(seconds=draw(st.integers(1, 25)))
    return start, rule, CREATED, dates, ranges, jitter, draw(st.text(max_size=12))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(configurations())
def test_the_engine_agrees_with_brute_force(
    config: Config,
) -> None:
    start, rule, created, dates, ranges, jitter, key = config
    schedule = AdjustedSchedule(start, rule, created, jitter=jitter, dates=dates, ranges=ranges, key=key)
    expected = reference(schedule, start, rule, created, dates, ranges, 25)
    check_against_reference(schedule, expected)
    if rule.count is not None and len(expected) == rule.count:
        assert schedule.is_last(expected[-1][1])
