"""Property tests: the engine against the brute-force enumerator and against dateutil.rrule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from dateutil import rrule as du
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from scheduler_core.errors import ValidationError
from scheduler_core.recurrence import compile_schedule, format_instant, parse_recurrence
from tests.unit import recurrence_bruteforce as brute

ZONES = [None, "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "America/Santiago"]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MAX_INTERVAL = {"minute": 150, "hour": 30, "day": 12, "week": 4, "month": 7, "year": 1}
# How far past creation each frequency is enumerated (the brute force walks every minute of it).
WINDOW = {
    "minute": timedelta(days=2),
    "hour": timedelta(days=4),
    "day": timedelta(days=40),
    "week": timedelta(days=90),
    "month": timedelta(days=500),
    "year": timedelta(days=1500),
}
# DST changes in the zones above fall in March/April and October/November: starts near them.
STARTS = st.datetimes(min_value=datetime(2023, 1, 1), max_value=datetime(2026, 12, 31), timezones=st.just(UTC)).map(
    lambda d: d.replace(second=d.second % 3 * 20, microsecond=0)
)
NEAR_DST = st.sampled_from(
    [
        datetime(2024, 3, 9, 20, 0, tzinfo=UTC),
        datetime(2024, 3, 30, 20, 0, tzinfo=UTC),
        datetime(2024, 10, 26, 20, 0, tzinfo=UTC),
        datetime(2024, 11, 2, 20, 0, tzinfo=UTC),
        datetime(2024, 4, 6, 10, 0, tzinfo=UTC),  # Lord Howe ends DST (30 minutes) on 2024-04-07
        datetime(2024, 10, 5, 10, 0, tzinfo=UTC),  # and starts it on 2024-10-06
        # the changes themselves (Berlin, New York, Lord Howe), so that a start can fall in either pass
        # of a repeated hour, or just after a skipped one
        datetime(2024, 3, 31, 1, 0, tzinfo=UTC),
        datetime(2024, 10, 27, 1, 0, tzinfo=UTC),
        datetime(2024, 3, 10, 7, 0, tzinfo=UTC),
        datetime(2024, 11, 3, 6, 0, tzinfo=UTC),
        datetime(2024, 4, 6, 15, 0, tzinfo=UTC),
        datetime(2024, 4, 7, 3, 0, tzinfo=UTC),  # Santiago repeats 23:00-24:00 (a fold across midnight)
        datetime(2024, 9, 8, 4, 0, tzinfo=UTC),  # and skips 00:00-01:00
    ]
).flatmap(lambda d: st.integers(-300 * 60, 300 * 60).map(lambda s: d + timedelta(seconds=s - s % 20)))


def small_lists(values: st.SearchStrategy[Any], max_size: int = 4) -> st.SearchStrategy[list[Any]]:
    return st.lists(values, min_size=1, max_size=max_size, unique_by=repr)


@st.composite
def recurrences(draw: st.DrawFn) -> dict[str, Any]:
    freq = draw(st.sampled_from(list(MAX_INTERVAL)))
    rec: dict[str, Any] = {"frequency": freq}
    if draw(st.booleans()):
        rec["interval"] = draw(st.integers(1, MAX_INTERVAL[freq]))
    zone = draw(st.sampled_from(ZONES))
    if zone is not None:
        rec["timeZone"] = zone
    schedule: dict[str, Any] = {}
    if draw(st.booleans()):
        schedule["minutes"] = draw(small_lists(st.integers(0, 59)))
    if draw(st.booleans()):
        schedule["hours"] = draw(small_lists(st.integers(0, 23), 6))
    if freq == "week" and draw(st.booleans()):
        schedule["weekDays"] = draw(small_lists(st.sampled_from(WEEKDAYS), 7))
    if freq in ("month", "year"):
        if draw(st.booleans()):
            schedule["monthDays"] = draw(small_lists(st.integers(-31, 31).filter(bool), 3))
        if draw(st.booleans()):
            occurrences = small_lists(
                st.fixed_dictionaries(
                    {"day": st.sampled_from(WEEKDAYS)},
                    optional={"occurrence": st.integers(-5, 5).filter(bool)},
                ),
                2,
            )
            schedule["monthlyOccurrences"] = draw(occurrences)
        if draw(st.booleans()):
            schedule["months"] = draw(small_lists(st.integers(1, 12), 4))
    if schedule:
        rec["schedule"] = schedule
    return rec


def occurrences_until(schedule: Any, since: datetime, until: datetime) -> list[datetime]:
    """The engine's occurrences in [since, until], fetched in pages."""
    out: list[datetime] = []
    while True:
        page = schedule.occurrences(since, 200)
        out.extend(t for t in page if t <= until)
        if len(page) < 200 or page[-1] > until:
            return out
        since = page[-1] + timedelta(microseconds=1)


def compile_or_none(rec: dict[str, Any], start: datetime | None, created: datetime) -> Any:
    try:
        return compile_schedule(start, parse_recurrence(rec), created)
    except ValidationError as exc:
        # parse-time rejections of impossible month/day combinations, and never-firing schedules
        if "can never fire" not in exc.rule:
            raise
        return None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rec=recurrences(),
    start=st.one_of(st.none(), STARTS, NEAR_DST),
    created_shift=st.floats(-1.5, 1.0),
    count=st.one_of(st.none(), st.integers(1, 30)),
    end_fraction=st.one_of(st.none(), st.floats(0.0, 1.0)),
    probes=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4),
)
@example(  # weekly from the second 02:30 of the night Berlin leaves summer time, count 3
    rec={"frequency": "week", "timeZone": "Europe/Berlin"},
    start=datetime(2024, 10, 27, 1, 30, tzinfo=UTC),
    created_shift=0.0,
    count=3,
    end_fraction=None,
    probes=[0.0, 0.5],
)
def test_engine_matches_brute_force(
    rec: dict[str, Any],
    start: datetime | None,
    created_shift: float,
    count: int | None,
    end_fraction: float | None,
    probes: list[float],
) -> None:
    window = WINDOW[rec["frequency"]]
    anchor = start or datetime(2024, 3, 30, 12, tzinfo=UTC)
    created = (anchor + window * created_shift / 2).replace(microsecond=0)
    until = created + window
    if count is not None:
        rec["count"] = count
    if end_fraction is not None:
        low = max(created, start) if start is not None else created
        rec["endTime"] = format_instant((low + (until - low) * end_fraction).replace(microsecond=0))
    schedule = compile_or_none(rec, start, created)
    expected = brute.series(rec, start, created, until)
    if schedule is None:
        assert expected[(1 if start is None else 0) :] == []
        return
    got = occurrences_until(schedule, created, until)
    assert got == expected
    if got:
        assert schedule.first_occurrence == got[0]
        for i in sorted({0, len(got) // 2, len(got) - 1}):
            assert schedule.ordinal(got[i]) == i + 1
    for fraction in probes:
        probe = created + (until - created) * fraction
        following = [t for t in expected if t >= probe]
        if following:
            assert schedule.after(probe, inclusive=True) == following[0]


def _rrule_for(rec: dict[str, Any], wall_start: datetime) -> du.rrulebase:
    """The dateutil rule of a recurrence, written from the documented defaults."""
    freq = rec["frequency"]
    schedule = rec.get("schedule", {})
    hours, minutes = schedule.get("hours"), schedule.get("minutes")
    kwargs: dict[str, Any] = {
        "freq": {"minute": du.MINUTELY, "hour": du.HOURLY, "day": du.DAILY, "week": du.WEEKLY}.get(freq)
        or {"month": du.MONTHLY, "year": du.YEARLY}[freq],
        "interval": rec.get("interval", 1),
        "dtstart": wall_start,
        "wkst": du.MO,
        "bysecond": [wall_start.second],
        "cache": False,
    }
    if freq == "minute":
        kwargs.update(byhour=hours, byminute=minutes)
    elif freq == "hour":
        kwargs.update(byhour=hours, byminute=minutes if minutes is not None else [wall_start.minute])
    else:
        if hours is None:
            hours = list(range(24)) if minutes is not None else [wall_start.hour]
        kwargs.update(byhour=hours, byminute=minutes if minutes is not None else [wall_start.minute])
    if freq == "week" and "weekDays" in schedule:
        kwargs["byweekday"] = [WEEKDAYS.index(d) for d in schedule["weekDays"]]
    if freq in ("month", "year"):
        months = schedule.get("months")
        if freq == "year" and months is None:
            months = [wall_start.month]
        kwargs["bymonth"] = months
        month_days = schedule.get("monthDays")
        occurrences = schedule.get("monthlyOccurrences")
        if month_days is not None or occurrences is not None:
            union = du.rruleset()
            if month_days is not None:
                union.rrule(du.rrule(bymonthday=month_days, **kwargs))
            # one rule per item: dateutil yields nothing when nth and plain weekdays are mixed
            for item in occurrences or []:
                day = du.weekday(WEEKDAYS.index(item["day"]), item.get("occurrence"))
                union.rrule(du.rrule(byweekday=[day], **kwargs))
            return union
    return du.rrule(**kwargs)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rec=recurrences(), start=st.one_of(STARTS, NEAR_DST))
@example(  # starts at the second 02:00 of the night Berlin leaves summer time (found by hypothesis)
    rec={"frequency": "minute", "timeZone": "Europe/Berlin", "schedule": {"minutes": [0]}},
    start=datetime(2024, 10, 27, 1, 0, tzinfo=UTC),
)
@example(  # daily from the second 02:30 of that night: the start fires, then 02:30 CET each day
    rec={"frequency": "day", "timeZone": "Europe/Berlin"},
    start=datetime(2024, 10, 27, 1, 30, tzinfo=UTC),
)
def test_engine_matches_dateutil_rrule(rec: dict[str, Any], start: datetime) -> None:
    schedule = compile_or_none(rec, start, start)
    assume(schedule is not None)
    until = start + WINDOW[rec["frequency"]]
    zone_name = rec.get("timeZone")
    absolute = rec["frequency"] in ("minute", "hour") and "schedule" not in rec
    zone: Any = UTC if absolute or zone_name is None else ZoneInfo(zone_name)
    wall_start = start.astimezone(zone).replace(tzinfo=None)
    wall_until = until.astimezone(zone).replace(tzinfo=None) + timedelta(days=1)
    expected = []
    for wall in _rrule_for(rec, wall_start).between(wall_start, wall_until, inc=True):
        # rrule's first time is the start's wall time when the start is on the rule: that is the start
        # instant, whichever pass of a repeated hour it falls in
        instant = start if wall == wall_start else wall.replace(tzinfo=zone).astimezone(UTC)
        if instant.astimezone(zone).replace(tzinfo=None) != wall:
            continue  # the wall time does not exist: skipped
        if instant < start:
            # A start in the second pass of a repeated hour: the later wall times of that hour had their
            # first instance (the one a repeated time fires at) before the start, so they do not fire.
            continue
        if instant <= until:
            expected.append(instant)
    got = occurrences_until(schedule, start, until)
    assert got == expected
