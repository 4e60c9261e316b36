"""``onExcluded`` (NextBusinessDay / PreviousBusinessDay) in ``AdjustedSchedule``, against a brute-force oracle.

The oracle enumerates the nominal series of the plain compiled schedule (``endTime`` kept, ``count`` dropped)
and applies the rules literally with date arithmetic: an occurrence on an excluded local date moves to the same
wall time on the nearest business day in its direction within 31 days (a daylight-saving gap there drops it,
a repeated wall time means its first instance, an excluded range there means the next business day), one in
an excluded range is dropped, a moved one outside ``[first possible instant, endTime]`` is dropped; the
scheduled instants are merged, sorted and cut at ``count``; each fires at its jitter offset, before the next
nominal occurrence and the next scheduled one. The engine must agree through every question it answers.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from datetime import UTC, date, datetime, time, timedelta

import pytest

from scheduler_core.errors import ValidationError
from scheduler_core.recurrence import (
    AdjustedSchedule,
    CompiledSchedule,
    Recurrence,
    compile_adjusted,
    compile_schedule,
    parse_recurrence,
)
from scheduler_core.timezones import resolve_time_zone

NEXT = "NextBusinessDay"
PREVIOUS = "PreviousBusinessDay"
CREATED = datetime(2026, 3, 1, 0, 0, 30, tzinfo=UTC)
US = timedelta(microseconds=1)
BERLIN = resolve_time_zone("Europe/Berlin").zone


def recurrence(**fields: object) -> Recurrence:
    parsed = parse_recurrence(fields)
    assert parsed is not None
    return parsed


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def berlin(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    """The instant of a Berlin wall time (its first instance)."""
    return datetime(year, month, day, hour, minute, tzinfo=BERLIN).astimezone(UTC)


def weekends(first: date, last: date) -> set[date]:
    return {
        first + timedelta(days=i) for i in range((last - first).days + 1) if (first + timedelta(days=i)).weekday() >= 5
    }


# ------------------------------------------------------------------------------------------------- oracle

Ranges = list[tuple[datetime, datetime]]


@dataclasses.dataclass
class Case:
    start: datetime | None
    rule: Recurrence
    created: datetime
    dates: set[date]
    ranges: Ranges
    mode: str
    jitter: timedelta | None = None
    key: str = ""

    def build(self) -> AdjustedSchedule:
        return AdjustedSchedule(
            self.start,
            self.rule,
            self.created,
            jitter=self.jitter,
            dates=self.dates,
            ranges=self.ranges,
            key=self.key,
            on_excluded=self.mode,
        )


def _moved(case: Case, wall: datetime) -> datetime | None:
    """Where the occurrence at local ``wall`` (on an excluded date) moves, literally by the rules."""
    zone = case.rule.zone or UTC
    step = 1 if case.mode == NEXT else -1
    for distance in range(1, 32):
        day = wall.date() + timedelta(days=step * distance)
        if day in case.dates:
            continue
        target = datetime.combine(day, wall.time())
        instant = target.replace(tzinfo=zone, fold=0).astimezone(UTC)
        if instant.astimezone(zone).replace(tzinfo=None) != target:
            return None  # the wall time does not exist that day
        if any(a <= target < b for a, b in case.ranges):
            continue
        return instant
    return None


def oracle(case: Case, schedule: AdjustedSchedule, horizon: datetime) -> tuple[list[tuple[datetime, datetime]], bool]:
    """(scheduled, fire) of the occurrences scheduled before ``horizon`` - 40 days, and whether that is all."""
    rule = case.rule
    nominal_series = compile_schedule(case.start, dataclasses.replace(rule, count=None), case.created)
    unbounded = compile_schedule(case.start, dataclasses.replace(rule, count=None, end_time=None), case.created)
    zone = rule.zone or UTC
    if case.start is not None:
        low = max(case.start, case.created)
    else:
        low = case.created if rule.cron is None else case.created + US
    scheduled: set[datetime] = set()
    nominal = nominal_series.first_occurrence
    while nominal is not None and nominal < horizon:
        wall = nominal.astimezone(zone).replace(tzinfo=None, fold=0)
        if wall.date() in case.dates:
            image = _moved(case, wall)
        elif any(a <= wall < b for a, b in case.ranges):
            image = None
        else:
            image = nominal
        if image is not None and low <= image and (rule.end_time is None or image <= rule.end_time):
            scheduled.add(image)
        nominal = nominal_series.after(nominal)
    ordered = sorted(scheduled)
    out: list[tuple[datetime, datetime]] = []
    for index, instant in enumerate(ordered):
        fire = instant + schedule.offset(instant)
        caps = [unbounded.after(instant), *ordered[index + 1 : index + 2]]
        for cap in caps:
            if cap is not None and fire >= cap:
                fire = cap - US
        out.append((instant, fire))
    reliable = horizon - timedelta(days=40)
    complete = rule.end_time is not None and rule.end_time < reliable
    if rule.count is not None and len(out) >= rule.count:
        out, complete = out[: rule.count], True
    return [(s, f) for s, f in out if s < reliable], complete


def check(
    schedule: AdjustedSchedule, expected: list[tuple[datetime, datetime]], complete: bool, limit: int = 45
) -> None:
    """The engine answers ``expected`` (all of the series when ``complete``), checked in detail for the first
    ``limit`` occurrences."""
    fires = [fire for _, fire in expected]
    assert fires == sorted(fires) and len(set(fires)) == len(fires)
    assert schedule.occurrences(utc(2000, 1, 1), len(fires)) == fires
    if fires:
        assert schedule.first_occurrence == fires[0]
    elif complete:
        assert schedule.first_occurrence is None
    for position, (instant, fire) in enumerate(expected[:limit]):
        assert schedule.ordinal(fire) == position + 1
        assert schedule.nominal(fire) == instant
        assert schedule.after(fire, inclusive=True) == fire
        assert schedule.after(fire - US) == fire
        if position + 1 < len(fires):
            assert schedule.after(fire) == fires[position + 1]
            following = fires[position + 1 : position + 3]
            if complete or len(following) == 2:
                assert schedule.occurrences(fire + US, 2) == following
            assert not schedule.is_last(fire)
    if complete:
        if fires:
            assert schedule.is_last(fires[-1])
            assert schedule.after(fires[-1]) is None
        assert schedule.occurrences(utc(2000, 1, 1), len(fires) + 3) == fires


# ------------------------------------------------------------------------------------------ random cases

HOURS = [0, 2, 6, 9, 17, 23]


def _random_rule(rng: random.Random) -> dict[str, object]:
    hours, minutes = [rng.choice(HOURS)], [rng.choice([0, 30, 45])]
    kind = rng.choice(["day", "day", "week", "month", "month-occurrence", "hour", "cron"])
    if kind == "day":
        fields: dict[str, object] = {"frequency": "Day", "interval": rng.randint(1, 3)}
        if rng.random() < 0.7:
            fields["schedule"] = {"hours": hours, "minutes": minutes}
        return fields
    if kind == "week":
        days = rng.sample(
            ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"], rng.randint(1, 4)
        )
        return {
            "frequency": "Week",
            "interval": rng.randint(1, 2),
            "schedule": {"weekDays": days, "hours": hours, "minutes": minutes},
        }
    if kind == "month":
        month_days = rng.sample([1, 2, 10, 15, 28, 31, -1], rng.randint(1, 3))
        return {"frequency": "Month", "schedule": {"monthDays": month_days, "hours": hours, "minutes": minutes}}
    if kind == "month-occurrence":
        occurrence = {"day": rng.choice(["Monday", "Friday", "Sunday"]), "occurrence": rng.choice([1, 2, -1])}
        return {
            "frequency": "Month",
            "schedule": {"monthlyOccurrences": [occurrence], "hours": hours, "minutes": minutes},
        }
    if kind == "hour":
        return {"frequency": "Hour", "interval": rng.choice([24, 25, 30, 49])}  # wall times of day drift
    return {"cron": rng.choice(["0 6 * * 1-5", "30 2 * * *", ["0 6 * * 1", "30 18 * * 3"], "15 9 1,15 * *"])}


def _random_dates(rng: random.Random, base: date) -> set[date]:
    dates: set[date] = set()
    if rng.random() < 0.5:
        dates |= weekends(base, base + timedelta(days=400))
    for _ in range(rng.randint(0, 25)):  # single days
        dates.add(base + timedelta(days=rng.randint(-5, 380)))
    for _ in range(rng.randint(0, 5)):  # runs of consecutive days
        first = base + timedelta(days=rng.randint(-5, 380))
        dates |= {first + timedelta(days=i) for i in range(rng.randint(2, 12))}
    if rng.random() < 0.15:  # a run longer than the 31 days a move may span
        first = base + timedelta(days=rng.randint(0, 300))
        dates |= {first + timedelta(days=i) for i in range(rng.randint(32, 45))}
    return dates


def random_case(seed: int) -> Case:
    rng = random.Random(seed)
    fields = _random_rule(rng)
    if rng.random() < 0.6:
        fields["timeZone"] = "Europe/Berlin"
    start = rng.choice([None, CREATED - timedelta(days=rng.randint(1, 60), hours=rng.randint(0, 23))])
    if rng.random() < 0.6:
        start = CREATED + timedelta(days=rng.randint(0, 40), minutes=rng.randint(0, 1439))
    if "cron" in fields and start is None and rng.random() < 0.5:
        start = CREATED + timedelta(hours=5)
    if rng.random() < 0.4:
        fields["count"] = rng.randint(1, 40)
    if rng.random() < 0.3:
        fields["endTime"] = (max(start or CREATED, CREATED) + timedelta(days=rng.randint(1, 300))).isoformat()
    base = (start or CREATED).date()
    ranges: Ranges = []
    for _ in range(rng.choice([0, 0, 1, 2])):
        first = datetime.combine(base + timedelta(days=rng.randint(0, 300)), time(rng.choice([0, 6, 9, 12, 18])))
        ranges.append((first, first + timedelta(hours=rng.choice([3, 6, 24, 48, 120]))))
    jitter = rng.choice([None, None, timedelta(minutes=rng.randint(1, 180))])
    mode = rng.choice([NEXT, PREVIOUS])
    return Case(start, recurrence(**fields), CREATED, _random_dates(rng, base), ranges, mode, jitter, f"job-{seed}")


@pytest.mark.parametrize("seed", range(160))
def test_the_engine_agrees_with_the_oracle(seed: int) -> None:
    case = random_case(seed)
    schedule = case.build()
    horizon = CREATED + timedelta(days=420)
    expected, complete = oracle(case, schedule, horizon)
    check(schedule, expected, complete)


def test_the_random_cases_move_merge_and_drop_occurrences() -> None:
    # the oracle's cases are not vacuous: across them, occurrences move, merge with others, and are dropped
    moved = merged = 0
    for seed in range(160):
        case = random_case(seed)
        if case.rule.end_time is not None or case.rule.count is not None:
            continue
        skip = dataclasses.replace(case, mode="Skip").build().occurrences(CREATED, 60)
        moving = case.build()
        instants = [moving.nominal(fire) for fire in moving.occurrences(CREATED, 60)]
        moved += len(set(instants) - set(skip))
        merged += len(set(skip) & set(instants)) < len(skip)
    assert moved > 50 and merged > 5


# ------------------------------------------------------------------------------------------ specific cases


def monthly_on_the_first() -> Recurrence:
    return recurrence(
        frequency="Month", schedule={"monthDays": [1], "hours": [9], "minutes": [0]}, timeZone="Europe/Berlin"
    )


def test_a_monthly_job_on_a_holiday_moves_to_the_2nd_or_to_the_last_business_day_before() -> None:
    start = utc(2026, 4, 1)
    # 2026-06-01 is a Monday holiday; 2026-05-30/31 are a weekend
    dates = {date(2026, 6, 1)} | weekends(date(2026, 5, 1), date(2026, 7, 31))
    nxt = compile_adjusted(start, monthly_on_the_first(), CREATED, dates=dates, on_excluded=NEXT)
    assert nxt.occurrences(start, 4) == [
        berlin(2026, 4, 1, 9),
        berlin(2026, 5, 1, 9),
        berlin(2026, 6, 2, 9),
        berlin(2026, 7, 1, 9),
    ]
    previous = compile_adjusted(start, monthly_on_the_first(), CREATED, dates=dates, on_excluded=PREVIOUS)
    assert previous.occurrences(start, 4) == [
        berlin(2026, 4, 1, 9),
        berlin(2026, 5, 1, 9),
        berlin(2026, 5, 29, 9),  # Friday: the last business day of May
        berlin(2026, 7, 1, 9),
    ]
    assert previous.nominal(berlin(2026, 5, 29, 9)) == berlin(2026, 5, 29, 9)
    assert previous.ordinal(berlin(2026, 5, 29, 9)) == 3
    skip = compile_adjusted(start, monthly_on_the_first(), CREATED, dates=dates)
    assert skip.occurrences(start, 3) == [berlin(2026, 4, 1, 9), berlin(2026, 5, 1, 9), berlin(2026, 7, 1, 9)]


def test_a_weekend_moved_to_monday_fires_once_and_counts_once() -> None:
    start = utc(2026, 3, 2, 6)  # a Monday
    rule = recurrence(frequency="Day", count=10)
    dates = weekends(date(2026, 3, 1), date(2026, 4, 30))
    schedule = compile_adjusted(start, rule, CREATED, dates=dates, on_excluded=NEXT)
    fires = schedule.occurrences(start, 20)
    assert fires == [utc(2026, 3, d, 6) for d in (2, 3, 4, 5, 6, 9, 10, 11, 12, 13)]
    assert [schedule.ordinal(fire) for fire in fires] == list(range(1, 11))
    assert schedule.is_last(fires[-1]) and not schedule.is_last(fires[-2])
    assert schedule.after(utc(2026, 3, 6, 6)) == utc(2026, 3, 9, 6)
    with pytest.raises(ValueError, match="not an occurrence"):
        schedule.ordinal(utc(2026, 3, 7, 6))  # Saturday's nominal instant never fires
    with pytest.raises(ValueError, match="not an occurrence"):
        schedule.nominal(utc(2026, 3, 8, 6))
    # backwards: the weekend moves to Friday, which fires once
    previous = compile_adjusted(start, rule, CREATED, dates=dates, on_excluded=PREVIOUS)
    assert previous.occurrences(start, 20) == fires


def test_an_occurrence_moves_at_most_31_days() -> None:
    # yearly on 10 July at 09:00 UTC; the next business day is 31 days later (moved) or 32 (dropped)
    rule = recurrence(frequency="Year", schedule={"months": [7], "monthDays": [10], "hours": [9], "minutes": [0]})
    start = utc(2026, 3, 2)
    run31 = {date(2026, 7, 10) + timedelta(days=i) for i in range(31)}
    schedule = compile_adjusted(start, rule, CREATED, dates=run31, on_excluded=NEXT)
    assert schedule.occurrences(start, 2) == [utc(2026, 8, 10, 9), utc(2027, 7, 10, 9)]
    run32 = {date(2026, 7, 10) + timedelta(days=i) for i in range(32)}
    schedule = compile_adjusted(start, rule, CREATED, dates=run32, on_excluded=NEXT)
    assert schedule.occurrences(start, 2) == [utc(2027, 7, 10, 9), utc(2028, 7, 10, 9)]
    assert schedule.ordinal(utc(2027, 7, 10, 9)) == 1
    # backwards: a run from 40 days before
    before = {date(2026, 7, 10) - timedelta(days=i) for i in range(40)}
    schedule = compile_adjusted(start, rule, CREATED, dates=before, on_excluded=PREVIOUS)
    assert schedule.first_occurrence == utc(2027, 7, 10, 9)


def test_a_long_holiday_run_drops_the_occurrences_that_cannot_reach_a_business_day() -> None:
    # monthly on the 15th; 1 July to 20 August excluded: 15 July is 37 days from 21 August (dropped), 15 August
    # 6 days (moved); backwards 15 July moves to 30 June and 15 August (46 days away) is dropped
    rule = recurrence(frequency="Month", schedule={"monthDays": [15], "hours": [9], "minutes": [0]})
    start = utc(2026, 6, 1)
    dates = {date(2026, 7, 1) + timedelta(days=i) for i in range(51)}
    nxt = compile_adjusted(start, rule, CREATED, dates=dates, on_excluded=NEXT)
    assert nxt.occurrences(start, 3) == [utc(2026, 6, 15, 9), utc(2026, 8, 21, 9), utc(2026, 9, 15, 9)]
    previous = compile_adjusted(start, rule, CREATED, dates=dates, on_excluded=PREVIOUS)
    assert previous.occurrences(start, 3) == [utc(2026, 6, 15, 9), utc(2026, 6, 30, 9), utc(2026, 9, 15, 9)]
    assert [previous.ordinal(fire) for fire in previous.occurrences(start, 3)] == [1, 2, 3]


def test_a_moved_occurrence_landing_in_an_excluded_range_goes_on_to_the_next_business_day() -> None:
    rule = recurrence(frequency="Day", schedule={"hours": [9], "minutes": [0]})
    start = utc(2026, 3, 2)
    dates = weekends(date(2026, 3, 1), date(2026, 3, 31))
    monday_morning = [(datetime(2026, 3, 9, 8), datetime(2026, 3, 9, 10))]
    schedule = compile_adjusted(start, rule, CREATED, dates=dates, ranges=monday_morning, on_excluded=NEXT)
    # Monday 9 March's own occurrence is in the range (dropped); the weekend goes on to Tuesday, merged with it
    assert schedule.occurrences(utc(2026, 3, 6), 3) == [utc(2026, 3, 6, 9), utc(2026, 3, 10, 9), utc(2026, 3, 11, 9)]
    assert schedule.ordinal(utc(2026, 3, 10, 9)) == 6
    friday_morning = [(datetime(2026, 3, 13, 8), datetime(2026, 3, 13, 10))]
    schedule = compile_adjusted(start, rule, CREATED, dates=dates, ranges=friday_morning, on_excluded=PREVIOUS)
    assert schedule.occurrences(utc(2026, 3, 11), 3) == [utc(2026, 3, 11, 9), utc(2026, 3, 12, 9), utc(2026, 3, 16, 9)]


def test_a_move_out_of_the_series_bounds_is_dropped() -> None:
    rule = recurrence(frequency="Day", schedule={"hours": [9], "minutes": [0]})
    start = utc(2026, 3, 2, 9)  # Monday 2 March, excluded: its occurrence would move to Sunday 1 March
    schedule = compile_adjusted(start, rule, CREATED, dates={date(2026, 3, 2)}, on_excluded=PREVIOUS)
    assert schedule.first_occurrence == utc(2026, 3, 3, 9)
    assert schedule.ordinal(utc(2026, 3, 3, 9)) == 1
    # a start in the past: nothing moves to before the creation time either
    created = utc(2026, 3, 2, 0, 0, 30)
    past = compile_adjusted(utc(2026, 1, 5, 9), rule, created, dates={date(2026, 3, 2)}, on_excluded=PREVIOUS)
    assert past.first_occurrence == utc(2026, 3, 3, 9)
    # forwards past endTime
    ending = recurrence(frequency="Day", schedule={"hours": [9], "minutes": [0]}, endTime="2026-03-06T12:00:00Z")
    schedule = compile_adjusted(start, ending, CREATED, dates={date(2026, 3, 6)}, on_excluded=NEXT)
    fires = schedule.occurrences(start, 10)
    assert fires == [utc(2026, 3, d, 9) for d in (2, 3, 4, 5)]
    assert schedule.is_last(fires[-1])


def test_a_cron_job_without_start_time_has_nothing_at_its_creation_moved_or_not() -> None:
    rule = recurrence(cron="0 6 * * *")
    created = utc(2026, 3, 2, 6)  # Monday 06:00: Tuesday's occurrence would move to this very instant
    schedule = compile_adjusted(None, rule, created, dates={date(2026, 3, 3)}, on_excluded=PREVIOUS)
    assert schedule.first_occurrence == utc(2026, 3, 4, 6)


def test_a_job_without_start_time_moves_its_immediate_occurrence() -> None:
    rule = recurrence(frequency="Day", schedule={"hours": [9], "minutes": [0]})
    created = utc(2026, 3, 7, 12)  # a Saturday: the immediate run moves to Monday 12:00
    schedule = compile_adjusted(
        None, rule, created, dates=weekends(date(2026, 3, 1), date(2026, 3, 31)), on_excluded=NEXT
    )
    assert schedule.occurrences(created, 3) == [utc(2026, 3, 9, 9), utc(2026, 3, 9, 12), utc(2026, 3, 10, 9)]
    assert [schedule.ordinal(fire) for fire in schedule.occurrences(created, 3)] == [1, 2, 3]


def test_a_move_onto_a_daylight_saving_gap_is_dropped_and_onto_a_repeated_time_takes_its_first_instance() -> None:
    start = utc(2026, 3, 20)
    saturdays = recurrence(
        frequency="Week", schedule={"weekDays": ["Saturday"], "hours": [2], "minutes": [30]}, timeZone="Europe/Berlin"
    )
    # Saturday 28 March moves to Sunday 29 March 02:30, which does not exist: dropped (not moved on to Monday)
    schedule = compile_adjusted(start, saturdays, CREATED, dates={date(2026, 3, 28)}, on_excluded=NEXT)
    assert schedule.occurrences(start, 2) == [berlin(2026, 3, 21, 2, 30), berlin(2026, 4, 4, 2, 30)]
    assert schedule.ordinal(berlin(2026, 4, 4, 2, 30)) == 2
    mondays = recurrence(
        frequency="Week", schedule={"weekDays": ["Monday"], "hours": [2], "minutes": [30]}, timeZone="Europe/Berlin"
    )
    schedule = compile_adjusted(start, mondays, CREATED, dates={date(2026, 3, 30)}, on_excluded=PREVIOUS)
    assert schedule.occurrences(start, 2) == [berlin(2026, 3, 23, 2, 30), berlin(2026, 4, 6, 2, 30)]
    daily = recurrence(frequency="Day", schedule={"hours": [2], "minutes": [30]}, timeZone="Europe/Berlin")
    schedule = compile_adjusted(start, daily, CREATED, dates={date(2026, 3, 28)}, on_excluded=NEXT)
    assert schedule.occurrences(berlin(2026, 3, 27, 2, 30), 2) == [
        berlin(2026, 3, 27, 2, 30),
        berlin(2026, 3, 30, 2, 30),
    ]
    # Saturday 24 October moves to Sunday 25 October 02:30, which happens twice: the first time (CEST)
    schedule = compile_adjusted(start, saturdays, CREATED, dates={date(2026, 10, 24)}, on_excluded=NEXT)
    assert schedule.after(berlin(2026, 10, 20)) == utc(2026, 10, 25, 0, 30)
    assert schedule.after(utc(2026, 10, 25, 0, 30)) == berlin(2026, 10, 31, 2, 30)


def test_the_questions_agree_with_one_another() -> None:
    rule = recurrence(frequency="Day", schedule={"hours": [9], "minutes": [0]}, timeZone="Europe/Berlin", count=30)
    start = utc(2026, 3, 2)
    dates = weekends(date(2026, 3, 1), date(2026, 5, 31)) | {date(2026, 4, 3), date(2026, 4, 6)}
    for mode in (NEXT, PREVIOUS):
        schedule = compile_adjusted(
            start, rule, CREATED, dates=dates, on_excluded=mode, jitter=timedelta(hours=3), key="k"
        )
        fires = schedule.occurrences(start, 100)
        assert len(fires) == 30
        assert schedule.first_occurrence == fires[0]
        assert [schedule.ordinal(fire) for fire in fires] == list(range(1, 31))
        for earlier, later in itertools.pairwise(fires):
            assert earlier < later
            assert schedule.after(earlier) == later
            assert schedule.after(earlier + (later - earlier) / 2) == later
            assert schedule.occurrences(earlier, 2) == [earlier, later]
            assert not schedule.is_last(earlier)
        assert schedule.is_last(fires[-1]) and schedule.after(fires[-1]) is None
        nominals = [schedule.nominal(fire) for fire in fires]
        assert all(berlin_day.astimezone(BERLIN).date() not in dates for berlin_day in nominals)
        assert all(n.astimezone(BERLIN).time() == time(9) for n in nominals)


def test_a_moved_occurrence_is_jittered_by_its_moved_instant() -> None:
    rule = recurrence(frequency="Day", schedule={"hours": [6], "minutes": [0]})
    start = utc(2026, 3, 2)
    dates = weekends(date(2026, 3, 1), date(2026, 6, 30))
    jitter = timedelta(hours=2)
    one = compile_adjusted(start, rule, CREATED, dates=dates, on_excluded=NEXT, jitter=jitter, key="sub/rg/jc/job")
    again = compile_adjusted(
        start, rule, CREATED + timedelta(days=3), dates=dates, on_excluded=NEXT, jitter=jitter, key="sub/rg/jc/job"
    )
    assert isinstance(one, AdjustedSchedule)
    fires = one.occurrences(start, 40)
    later = utc(2026, 3, 9)
    assert again.occurrences(later, 10) == [fire for fire in fires if fire >= later][:10]
    mondays = [fire for fire in fires if fire.weekday() == 0]
    assert len(mondays) == 8
    for fire in mondays:
        moved = one.nominal(fire)
        assert moved == fire.replace(hour=6, minute=0, second=0)
        assert moved <= fire < moved + jitter
        assert fire == moved + one.offset(moved)  # keyed by the instant it is scheduled at
    assert len({fire - one.nominal(fire) for fire in fires}) > 20


def test_more_than_once_a_day_cannot_move() -> None:
    for fields in (
        {"frequency": "Hour"},
        {"frequency": "Minute", "interval": 90},
        {"frequency": "Day", "schedule": {"hours": [6, 18]}},
        {"frequency": "Week", "schedule": {"minutes": [0]}},
        {"cron": "0 */6 * * *"},
    ):
        for dates in ({date(2026, 3, 7)}, set()):
            with pytest.raises(ValidationError) as raised:
                compile_adjusted(START_MONDAY, recurrence(**fields), CREATED, dates=dates, on_excluded=NEXT)
            assert raised.value.path == "properties.recurrence.exclusions.onExcluded"
            assert "once a day" in raised.value.rule
        # Skip is always fine
        compile_adjusted(START_MONDAY, recurrence(**fields), CREATED, dates={date(2026, 3, 7)})
    for fields in ({"frequency": "Hour", "interval": 24}, {"cron": "0 6 * * 1-5"}, {"frequency": "Month"}):
        compile_adjusted(START_MONDAY, recurrence(**fields), CREATED, dates={date(2026, 3, 7)}, on_excluded=PREVIOUS)
    with pytest.raises(ValidationError, match="must be one of Skip, NextBusinessDay, PreviousBusinessDay"):
        compile_adjusted(START_MONDAY, recurrence(frequency="Day"), CREATED, on_excluded="Later")
    with pytest.raises(ValidationError) as raised:
        compile_adjusted(
            START_MONDAY, recurrence(frequency="Hour"), CREATED, on_excluded=NEXT, path="properties.x.recurrence"
        )
    assert raised.value.path == "properties.x.recurrence.exclusions.onExcluded"


START_MONDAY = utc(2026, 3, 2, 6)


def test_skip_is_the_default_and_unchanged() -> None:
    rule = recurrence(frequency="Day", count=5)
    dates = [date(2026, 3, 3), date(2026, 3, 5)]
    default = compile_adjusted(START_MONDAY, rule, CREATED, dates=dates)
    skip = compile_adjusted(START_MONDAY, rule, CREATED, dates=dates, on_excluded="Skip")
    assert default.occurrences(START_MONDAY, 10) == skip.occurrences(START_MONDAY, 10)
    assert [fire.day for fire in skip.occurrences(START_MONDAY, 10)] == [2, 4, 6, 7, 8]


def test_without_excluded_dates_a_moving_mode_is_skip() -> None:
    rule = recurrence(frequency="Day", schedule={"hours": [9], "minutes": [0]})
    ranges = [(datetime(2026, 3, 3, 8), datetime(2026, 3, 4, 8))]
    for mode in (NEXT, PREVIOUS):
        moving = compile_adjusted(
            START_MONDAY, rule, CREATED, ranges=ranges, on_excluded=mode, jitter=timedelta(hours=1)
        )
        skip = compile_adjusted(START_MONDAY, rule, CREATED, ranges=ranges, jitter=timedelta(hours=1))
        assert moving.occurrences(START_MONDAY, 10) == skip.occurrences(START_MONDAY, 10)
        plain = compile_adjusted(START_MONDAY, rule, CREATED, on_excluded=mode)
        assert isinstance(plain, CompiledSchedule)


def test_a_long_lived_job_answers_without_walking_its_series() -> None:
    # a daily job started 5 years ago, ~1,000 excluded dates: the answers match a walk from the start
    rng = random.Random(7)
    start = utc(2021, 1, 4, 6)
    dates = weekends(date(2021, 1, 1), date(2026, 12, 31))
    while len(dates) < 1000:
        dates.add(date(2021, 1, 1) + timedelta(days=rng.randrange(5 * 365)))
    rule = recurrence(frequency="Day", timeZone="Europe/Berlin")
    for mode in (NEXT, PREVIOUS):
        schedule = compile_adjusted(start, rule, start, dates=dates, on_excluded=mode)
        walked = schedule.occurrences(start, 2000)
        now = utc(2026, 1, 5, 3)
        fire = schedule.after(now)
        assert fire is not None
        assert schedule.ordinal(fire) == walked.index(fire) + 1
        assert fresh_ordinal(start, rule, dates, mode, fire) == walked.index(fire) + 1


def fresh_ordinal(start: datetime, rule: Recurrence, dates: set[date], mode: str, fire: datetime) -> int:
    return compile_adjusted(start, rule, start, dates=dates, on_excluded=mode).ordinal(fire)
