"""The cron dialect of ``recurrence.cron`` (api-version 2026-12-01-preview), end to end through the engine.

What these tests show:

* every accepted form of ``scheduler_core/recurrence/_cron.py``'s docstring fires at the instants worked out
  by hand from a calendar (plain fields, seconds, steps, names, 7 = Sunday, ``L``, ``L-n``, ``nW``, ``LW``,
  ``n#k``, ``nL``, ``?``, macros, prefixes, and the unix day rule both ways);
* for a few hundred deterministic random strings built from the day-field specials, the days the engine
  fires on over two years are exactly those of a brute-force matcher written here from the docstring's
  rules (and a string the parser refuses as "can never fire" has no day in a full 28-year calendar cycle);
* every malformed string is a ValidationError at the right JSON path, naming the 1-based position, the
  field and the string, and the recurrence-level rules (at most 50 strings, no frequency/interval/schedule
  beside cron, one zone, read from whichever string carries the prefix) hold;
* hostile input is answered in bounded time (the measured times are printed: run with ``-s``), and what
  parsing it leaves cached stays small (the two heaviest cases run in a child process with limits);
* daylight saving: a skipped wall time does not fire, a repeated one fires once (its first instance);
* quota: the smallest gap counts, however far into the year it happens;
* ``count``, ordinals, and the first occurrence of a job without startTime (its first match after creation).
"""

from __future__ import annotations

import calendar
import os
import random
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_core.errors import ValidationError
from scheduler_core.recurrence import (
    CompiledSchedule,
    compile_schedule,
    parse_recurrence,
    validate_against_quota,
)

REPO = Path(__file__).resolve().parents[2]
PATH = "properties.recurrence"
BOUND_S = 2.0  # the generous bound every hostile input must be answered in


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def iso(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def schedule(cron: object, start: str | None = None, created: str | None = None, **extra: Any) -> CompiledSchedule:
    rec = parse_recurrence({"cron": cron, **extra})
    start_time = utc(start) if start is not None else None
    made = utc(created) if created is not None else start_time
    assert made is not None
    return compile_schedule(start_time, rec, made)


def fires(cron: object, start: str, n: int, **extra: Any) -> list[str]:
    s = schedule(cron, start, **extra)
    return [iso(o) for o in s.occurrences(utc(start), n)]


def midnights(*days: str) -> list[str]:
    return [f"{day}T00:00:00Z" for day in days]


# --- 1. every accepted form, on hand-checked instants (UTC) -------------------------------------------


def test_weekdays_at_nine() -> None:
    # 2024-03-01 is a Friday
    assert fires("0 9 * * MON-FRI", "2024-03-01T00:00:00Z", 6) == [
        "2024-03-01T09:00:00Z",
        "2024-03-04T09:00:00Z",
        "2024-03-05T09:00:00Z",
        "2024-03-06T09:00:00Z",
        "2024-03-07T09:00:00Z",
        "2024-03-08T09:00:00Z",
    ]


def test_six_fields_put_the_seconds_first() -> None:
    assert fires("*/15 * * * * *", "2024-01-01T00:00:00Z", 6) == [
        "2024-01-01T00:00:00Z",
        "2024-01-01T00:00:15Z",
        "2024-01-01T00:00:30Z",
        "2024-01-01T00:00:45Z",
        "2024-01-01T00:01:00Z",
        "2024-01-01T00:01:15Z",
    ]
    assert fires("30 15 10 * * *", "2024-01-01T00:00:00Z", 2) == ["2024-01-01T10:15:30Z", "2024-01-02T10:15:30Z"]


def test_five_fields_fire_at_second_zero() -> None:
    assert fires("15 10 * * *", "2024-01-01T10:15:01Z", 1) == ["2024-01-02T10:15:00Z"]


@pytest.mark.parametrize(
    ("cron", "start", "expected"),
    [
        # L: the last day, February of a leap and of a common year
        ("0 0 L * *", "2024-01-15", ["2024-01-31", "2024-02-29", "2024-03-31", "2024-04-30"]),
        ("0 0 L * *", "2023-02-01", ["2023-02-28", "2023-03-31"]),
        ("0 0 l 2 *", "2023-01-01", ["2023-02-28", "2024-02-29", "2025-02-28"]),
        # L-n: n days before the last
        ("0 0 L-2 * *", "2024-01-01", ["2024-01-29", "2024-02-27", "2024-03-29", "2024-04-28"]),
        ("0 0 L-0 2 *", "2023-01-01", ["2023-02-28", "2024-02-29"]),
        ("0 0 L-30 * *", "2024-01-01", ["2024-01-01", "2024-03-01", "2024-05-01"]),  # 31-day months only
        # nW: the 15th of June 2024 is a Saturday (Friday 14th), of September 2024 a Sunday (Monday 16th)
        ("0 0 15W * ?", "2024-06-01", ["2024-06-14", "2024-07-15", "2024-08-15", "2024-09-16"]),
        # 1W: June 1st 2024 is a Saturday (Monday 3rd: never the Friday of May); September 1st a Sunday
        ("0 0 1W * *", "2024-06-01", ["2024-06-03", "2024-07-01", "2024-08-01", "2024-09-02"]),
        ("0 0 1w 2 *", "2025-01-01", ["2025-02-03"]),  # 2025-02-01 is a Saturday
        # 31W: only in 31-day months; March 31st 2024 is a Sunday (Friday 29th, never Monday April 1st),
        # August 31st 2024 a Saturday (Friday 30th)
        ("0 0 31W * *", "2024-01-01", ["2024-01-31", "2024-03-29", "2024-05-31", "2024-07-31", "2024-08-30"]),
        # 30W: June 30th 2024 is a Sunday and the last day (Friday 28th); March 30th 2025 a Sunday (Monday 31st)
        ("0 0 30W 6 *", "2024-01-01", ["2024-06-28"]),
        ("0 0 30W 3 *", "2025-01-01", ["2025-03-31"]),
        # LW: the last weekday (2024: March 31st Sunday, June 30th Sunday, August 31st and November 30th Saturdays)
        (
            "0 0 LW * *",
            "2024-01-01",
            [
                "2024-01-31",
                "2024-02-29",
                "2024-03-29",
                "2024-04-30",
                "2024-05-31",
                "2024-06-28",
                "2024-07-31",
                "2024-08-30",
                "2024-09-30",
                "2024-10-31",
                "2024-11-29",
                "2024-12-31",
            ],
        ),
        # n#k: the third Friday
        ("0 0 * * 5#3", "2024-01-01", ["2024-01-19", "2024-02-16", "2024-03-15", "2024-04-19"]),
        ("0 0 ? * fri#3", "2024-01-01", ["2024-01-19", "2024-02-16"]),
        # the fifth Monday exists only in some months (2024: January, April, July, September, December)
        ("0 0 * * 1#5", "2024-01-01", ["2024-01-29", "2024-04-29", "2024-07-29", "2024-09-30", "2024-12-30"]),
        ("0 0 * * 7#1", "2024-01-01", ["2024-01-07", "2024-02-04"]),  # 7 is Sunday here too
        # nL: the last Friday, written three ways
        ("0 0 * * 5L", "2024-01-01", ["2024-01-26", "2024-02-23", "2024-03-29", "2024-04-26"]),
        ("0 0 * * FRIL", "2024-01-01", ["2024-01-26", "2024-02-23", "2024-03-29", "2024-04-26"]),
        ("0 0 * * fril", "2024-01-01", ["2024-01-26", "2024-02-23", "2024-03-29", "2024-04-26"]),
        ("0 0 * * 0L", "2024-01-01", ["2024-01-28", "2024-02-25", "2024-03-31"]),
        # ?: any day
        ("0 0 ? * MON", "2024-01-01", ["2024-01-01", "2024-01-08", "2024-01-15"]),
        ("0 0 10 * ?", "2024-01-01", ["2024-01-10", "2024-02-10"]),
        ("0 0 ? * ?", "2024-01-30", ["2024-01-30", "2024-01-31", "2024-02-01"]),
        # day names, and 0 and 7 both Sunday (2024-01-07 is a Sunday)
        ("0 0 * * 0", "2024-01-01", ["2024-01-07", "2024-01-14"]),
        ("0 0 * * 7", "2024-01-01", ["2024-01-07", "2024-01-14"]),
        ("0 0 * * SUN", "2024-01-01", ["2024-01-07", "2024-01-14"]),
        ("0 0 * * sun", "2024-01-01", ["2024-01-07", "2024-01-14"]),
        ("0 0 * * Tue,thu", "2024-01-01", ["2024-01-02", "2024-01-04", "2024-01-09"]),
        ("0 0 * * SAT-7", "2024-01-01", ["2024-01-06", "2024-01-07", "2024-01-13"]),
        ("0 0 * * 5-7", "2024-01-01", ["2024-01-05", "2024-01-06", "2024-01-07", "2024-01-12"]),
        # month names, any case, in lists and ranges
        ("0 0 1 jan,Jul *", "2024-02-01", ["2024-07-01", "2025-01-01", "2025-07-01"]),
        ("0 0 1 NOV-DEC *", "2024-01-01", ["2024-11-01", "2024-12-01", "2025-11-01"]),
        # a/n runs to the field's end; a-b/n stops at b
        ("0 0 10/10 * *", "2024-01-01", ["2024-01-10", "2024-01-20", "2024-01-30", "2024-02-10", "2024-02-20"]),
        ("0 0 1-10/4 * *", "2024-01-01", ["2024-01-01", "2024-01-05", "2024-01-09", "2024-02-01"]),
        ("0 0 1 */5 *", "2024-01-01", ["2024-01-01", "2024-06-01", "2024-11-01", "2025-01-01"]),
        ("0 0 1 FEB/6 *", "2024-01-01", ["2024-02-01", "2024-08-01", "2025-02-01"]),
        # the unix rule: both restricted means either (the 1st, the 15th and every Monday)
        (
            "0 0 1,15 * MON",
            "2024-01-01",
            ["2024-01-01", "2024-01-08", "2024-01-15", "2024-01-22", "2024-01-29", "2024-02-01", "2024-02-05"],
        ),
        # one field beginning with * means both (odd days that are Mondays)
        ("0 0 */2 * MON", "2024-01-01", ["2024-01-01", "2024-01-15", "2024-01-29", "2024-02-05", "2024-02-19"]),
        ("0 0 13 * */7", "2024-01-01", ["2024-10-13", "2025-04-13", "2025-07-13"]),  # */7 = 0,7: Sunday the 13th
        ("0 0 13 * MON", "2024-09-01", ["2024-09-02", "2024-09-09", "2024-09-13", "2024-09-16"]),  # 13th or Monday
        ("0 0 13 * *", "2024-01-01", ["2024-01-13", "2024-02-13"]),
        ("0 0 * * MON", "2024-01-31", ["2024-02-05", "2024-02-12"]),
    ],
)
def test_day_fields(cron: str, start: str, expected: list[str]) -> None:
    assert fires(cron, f"{start}T00:00:00Z", len(expected)) == midnights(*expected)


@pytest.mark.parametrize(
    ("cron", "start", "expected"),
    [
        ("5/20 * * * *", "2024-01-01T00:00:00Z", ["00:05", "00:25", "00:45", "01:05"]),
        ("0 9-17/4 * * *", "2024-01-01T00:00:00Z", ["09:00", "13:00", "17:00"]),
        ("0 22/1 * * *", "2024-01-01T00:00:00Z", ["22:00", "23:00"]),
        ("0,30 8-9 * * *", "2024-01-01T00:00:00Z", ["08:00", "08:30", "09:00", "09:30"]),
        ("59 23 * * *", "2024-01-01T00:00:00Z", ["23:59"]),
    ],
)
def test_times_of_day(cron: str, start: str, expected: list[str]) -> None:
    assert fires(cron, start, len(expected)) == [f"2024-01-01T{t}:00Z" for t in expected]


@pytest.mark.parametrize(
    ("macro", "expected"),
    [
        ("@yearly", ["2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"]),
        ("@annually", ["2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"]),
        ("@YEARLY", ["2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"]),
        ("@monthly", ["2024-06-01T00:00:00Z", "2024-07-01T00:00:00Z"]),
        ("@weekly", ["2024-05-19T00:00:00Z", "2024-05-26T00:00:00Z"]),  # Sundays
        ("@Weekly", ["2024-05-19T00:00:00Z", "2024-05-26T00:00:00Z"]),
        ("@daily", ["2024-05-16T00:00:00Z", "2024-05-17T00:00:00Z"]),
        ("@midnight", ["2024-05-16T00:00:00Z", "2024-05-17T00:00:00Z"]),
        ("@DAILY", ["2024-05-16T00:00:00Z", "2024-05-17T00:00:00Z"]),
        ("@hourly", ["2024-05-15T11:00:00Z", "2024-05-15T12:00:00Z"]),
        ("  @hourly ", ["2024-05-15T11:00:00Z", "2024-05-15T12:00:00Z"]),
    ],
)
def test_macros(macro: str, expected: list[str]) -> None:
    # 2024-05-15 is a Wednesday
    assert fires(macro, "2024-05-15T10:30:00Z", 2) == expected


def test_a_macro_keeps_its_prefix_zone() -> None:
    # midnight in Berlin (CEST, UTC+2) is 22:00 UTC the day before
    assert fires("CRON_TZ=Europe/Berlin @daily", "2024-05-15T10:30:00Z", 2) == [
        "2024-05-15T22:00:00Z",
        "2024-05-16T22:00:00Z",
    ]


@pytest.mark.parametrize("prefix", ["CRON_TZ=America/New_York", "TZ=America/New_York", "TZ=america/new_york"])
def test_prefix_names_the_zone(prefix: str) -> None:
    # 09:00 EST is 14:00 UTC
    assert fires(f"{prefix}   0 9 * * *", "2024-01-10T00:00:00Z", 2) == [
        "2024-01-10T14:00:00Z",
        "2024-01-11T14:00:00Z",
    ]


def test_an_array_is_the_union_of_its_strings() -> None:
    assert fires(["0 9 * * MON", "30 17 * * FRI", "0 9 * * MON"], "2024-01-01T00:00:00Z", 4) == [
        "2024-01-01T09:00:00Z",
        "2024-01-05T17:30:00Z",
        "2024-01-08T09:00:00Z",
        "2024-01-12T17:30:00Z",
    ]


def test_leap_day_only() -> None:
    assert fires("0 0 29 2 ?", "2097-03-01T00:00:00Z", 2) == midnights("2104-02-29", "2108-02-29")  # 2100 is common


def test_cron_is_shown_as_written() -> None:
    single = parse_recurrence({"cron": "0 9 * * mon-fri", "timeZone": "Europe/Berlin"})
    assert single is not None
    assert single.to_json() == {"cron": "0 9 * * mon-fri", "timeZone": "Europe/Berlin"}
    assert single.to_json(preview=False) == {"timeZone": "Europe/Berlin"}
    listed = parse_recurrence({"cron": ["@daily"], "count": 3})
    assert listed is not None
    assert listed.to_json() == {"cron": ["@daily"], "count": 3}
    assert listed.to_json(preview=False) == {"count": 3}


# --- 2. day-field specials against a brute-force matcher ------------------------------------------------

_DAY_NAMES = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
_MONTH_NAMES = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]


@dataclass(frozen=True)
class _Item:
    """One item of a day field: kind and numbers (never parsed from text: the text is rendered from it)."""

    kind: str  # num, range, step, L, W, LW, nth, last
    a: int = 0
    b: int = 0
    k: int = 0


def _cron_weekday(d: date) -> int:
    """0 = Sunday ... 6 = Saturday."""
    return (d.weekday() + 1) % 7


def _nearest(n: int, year: int, month: int) -> int | None:
    """The weekday nearest day n, never leaving the month: None when the month has no day n."""
    last = calendar.monthrange(year, month)[1]
    if n > last:
        return None
    weekday = date(year, month, n).weekday()  # Monday 0 .. Sunday 6
    if weekday == 5:  # Saturday
        return n - 1 if n != 1 else 3
    if weekday == 6:  # Sunday
        return n + 1 if n != last else n - 2
    return n


def _dom_days(items: list[_Item], year: int, month: int) -> set[int]:
    last = calendar.monthrange(year, month)[1]
    days: set[int] = set()
    for item in items:
        if item.kind == "num":
            days.add(item.a)
        elif item.kind == "range":
            days.update(range(item.a, item.b + 1))
        elif item.kind == "step":  # a-b/k, b = 31 for a/k and */k
            days.update(range(item.a, item.b + 1, item.k))
        elif item.kind == "L":
            days.add(last - item.a)
        elif item.kind == "W":
            nearest = _nearest(item.a, year, month)
            if nearest is not None:
                days.add(nearest)
        elif item.kind == "LW":
            nearest = _nearest(last, year, month)
            assert nearest is not None
            days.add(nearest)
    return {d for d in days if 1 <= d <= last}


def _dow_days(items: list[_Item], year: int, month: int) -> set[int]:
    last = calendar.monthrange(year, month)[1]
    by_weekday: dict[int, list[int]] = {w: [] for w in range(7)}
    for d in range(1, last + 1):
        by_weekday[_cron_weekday(date(year, month, d))].append(d)
    weekdays: set[int] = set()
    days: set[int] = set()
    for item in items:
        if item.kind == "num":
            weekdays.add(item.a % 7)
        elif item.kind == "range":
            weekdays.update(w % 7 for w in range(item.a, item.b + 1))
        elif item.kind == "step":  # a-b/k, b = 7 for a/k and */k
            weekdays.update(w % 7 for w in range(item.a, item.b + 1, item.k))
        elif item.kind == "nth":
            matching = by_weekday[item.a % 7]
            if item.k <= len(matching):
                days.add(matching[item.k - 1])
        elif item.kind == "last":
            days.add(by_weekday[item.a % 7][-1])
    for w in weekdays:
        days.update(by_weekday[w])
    return days


@dataclass(frozen=True)
class _RandomCron:
    text: str
    dom: list[_Item] | None  # None: * or ?
    dow: list[_Item] | None
    months: set[int]
    both: bool  # the unix rule: a day must match both fields

    def days(self, year: int, month: int) -> set[int]:
        if month not in self.months:
            return set()
        last = calendar.monthrange(year, month)[1]
        every = set(range(1, last + 1))
        dom = every if self.dom is None else _dom_days(self.dom, year, month)
        dow = every if self.dow is None else _dow_days(self.dow, year, month)
        return dom & dow if self.both else dom | dow


def _render_dom(rng: random.Random, item: _Item) -> str:
    if item.kind == "num":
        return str(item.a)
    if item.kind == "range":
        return f"{item.a}-{item.b}"
    if item.kind == "step":
        body = f"{item.a}-{item.b}" if item.b != 31 else str(item.a)
        return f"{body}/{item.k}"
    if item.kind == "L":
        return rng.choice(["L", "l"]) if item.a == 0 and rng.random() < 0.7 else f"L-{item.a}"
    if item.kind == "W":
        return f"{item.a}{rng.choice('Ww')}"
    return rng.choice(["LW", "lw", "Lw"])


def _day_word(rng: random.Random, weekday: int) -> str:
    if weekday < 7 and rng.random() < 0.5:
        name = _DAY_NAMES[weekday]
        return rng.choice([name, name.lower(), name.capitalize()])
    return str(weekday)


def _render_dow(rng: random.Random, item: _Item) -> str:
    if item.kind == "num":
        return _day_word(rng, item.a)
    if item.kind == "range":
        return f"{_day_word(rng, item.a)}-{_day_word(rng, item.b)}"
    if item.kind == "step":
        body = f"{item.a}-{item.b}" if item.b != 7 else str(item.a)
        return f"{body}/{item.k}"
    if item.kind == "nth":
        return f"{_day_word(rng, item.a)}#{item.k}"
    return f"{_day_word(rng, item.a)}{rng.choice('Ll')}"


def _random_dom_item(rng: random.Random) -> _Item:
    kind = rng.choice(["num", "range", "step", "L", "L", "W", "W", "W", "LW"])
    if kind == "num":
        return _Item("num", rng.randint(1, 31))
    if kind == "range":
        a = rng.randint(1, 31)
        return _Item("range", a, rng.randint(a, 31))
    if kind == "step":
        a = rng.randint(1, 31)
        return _Item("step", a, rng.choice([31, rng.randint(a, 31)]), rng.randint(1, 12))
    if kind == "L":
        return _Item("L", rng.choice([0, 0, 1, 2, 3, 6, 15, 27, 28, 29, 30]))
    if kind == "W":
        return _Item("W", rng.choice([1, 1, 2, 14, 15, 16, 28, 29, 30, 30, 31, 31, rng.randint(1, 31)]))
    return _Item("LW")


def _random_dow_item(rng: random.Random) -> _Item:
    kind = rng.choice(["num", "range", "step", "nth", "nth", "nth", "last", "last"])
    if kind == "num":
        return _Item("num", rng.randint(0, 7))
    if kind == "range":
        a = rng.randint(0, 7)
        return _Item("range", a, rng.randint(a, 7))
    if kind == "step":
        a = rng.randint(0, 7)
        return _Item("step", a, rng.choice([7, rng.randint(a, 7)]), rng.randint(1, 4))
    if kind == "nth":
        return _Item("nth", rng.randint(0, 7), k=rng.choice([1, 2, 3, 4, 5, 5]))
    return _Item("last", rng.randint(0, 7))


def _random_cron(rng: random.Random) -> _RandomCron:
    def field(render: Any, item: Any) -> tuple[str, list[_Item] | None, bool]:
        """(text, items or None for any, whether the text begins with * or is ?)"""
        roll = rng.random()
        if roll < 0.15:
            return rng.choice(["*", "?"]), None, True
        if roll < 0.25:  # */k leads the field: the AND rule, though the field restricts
            k = rng.randint(2, 5)
            step = _Item("step", 1 if render is _render_dom else 0, 31 if render is _render_dom else 7, k)
            rest = [item(rng) for _ in range(rng.randint(0, 1))]
            return ",".join([f"*/{k}"] + [render(rng, x) for x in rest]), [step, *rest], True
        items = [item(rng) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        return ",".join(render(rng, x) for x in items), items, False

    dom_text, dom, dom_any = field(_render_dom, _random_dom_item)
    dow_text, dow, dow_any = field(_render_dow, _random_dow_item)
    if rng.random() < 0.6:
        months, month_text = set(range(1, 13)), "*"
    else:
        months = set(rng.sample(range(1, 13), rng.randint(1, 4)))
        month_text = ",".join(_MONTH_NAMES[m - 1].lower() if rng.random() < 0.3 else str(m) for m in sorted(months))
    text = f"0 0 {dom_text} {month_text} {dow_text}"
    return _RandomCron(text, dom, dow, months, dom_any or dow_any)


def _brute_days(cron: _RandomCron, first_year: int, last_year: int) -> list[date]:
    return [
        date(year, month, day)
        for year in range(first_year, last_year + 1)
        for month in range(1, 13)
        for day in sorted(cron.days(year, month))
    ]


def test_day_specials_match_a_brute_force_matcher() -> None:
    rng = random.Random(20261201)
    start, end = utc("2024-01-01T00:00:00Z"), utc("2026-01-01T00:00:00Z")
    checked = refused = 0
    for _ in range(400):
        cron = _random_cron(rng)
        refusal = ""
        try:
            rec = parse_recurrence({"cron": cron.text})
        except ValidationError as error:
            refusal = error.rule
        if refusal:
            assert refusal.startswith("can never fire"), (cron.text, refusal)
            # 2000-2027 holds every month shape (length and weekday of the 1st) of the Gregorian calendar
            assert _brute_days(cron, 2000, 2027) == [], cron.text
            refused += 1
            continue
        expected = _brute_days(cron, 2024, 2025)
        s = compile_schedule(start, rec, start)
        got: list[date] = []
        current = s.after(start, inclusive=True)
        while current is not None and current < end:
            got.append(current.date())
            current = s.after(current)
        assert got == expected, cron.text
        if got:  # the count agrees with the walk: the last one is number len(got)
            assert s.ordinal(utc(f"{got[-1].isoformat()}T00:00:00Z")) == len(got), cron.text
        checked += 1
    print(f"\nbrute force: {checked} strings compared over 2024-2025, {refused} refused as never firing")
    assert checked > 300


# --- 3. malformed strings ----------------------------------------------------------------------------


def _error(recurrence: dict[str, Any]) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        parse_recurrence(recurrence)
    return caught.value


@pytest.mark.parametrize(
    ("text", "position", "field", "says"),
    [
        # out of range, one per field (the seconds only in the 6-field form)
        ("60 0 0 * * *", 1, "second", "60 is outside 0-59"),
        ("0 60 0 * * *", 3, "minute", "60 is outside 0-59"),
        ("60 0 * * *", 1, "minute", "60 is outside 0-59"),
        ("0 24 * * *", 3, "hour", "24 is outside 0-23"),
        ("0 0 32 * *", 5, "day-of-month", "32 is outside 1-31"),
        ("0 0 0 * *", 5, "day-of-month", "0 is outside 1-31"),
        ("0 0 * 13 *", 7, "month", "13 is outside 1-12"),
        ("0 0 * 0 *", 7, "month", "0 is outside 1-12"),
        ("0 0 * * 8", 9, "day-of-week", "8 is outside 0-7"),
        ("0 0 * * 1-8", 11, "day-of-week", "8 is outside 0-7"),  # the end of a range
        ("0 0 1,2,40 * *", 9, "day-of-month", "40 is outside 1-31"),  # the third item of a list
        ("0 0 0W * *", 5, "day-of-month", "0 is outside 1-31"),
        ("0 0 32W * *", 5, "day-of-month", "32 is outside 1-31"),
        ("0 0 * * 9L", 9, "day-of-week", "9 is outside 0-7"),
        ("0 0 * * 8#1", 9, "day-of-week", "8 is outside 0-7"),
        # ranges, steps, lists
        ("0 0 * * FRI-MON", 9, "day-of-week", "goes backwards"),
        ("0 0 20-10 * *", 5, "day-of-month", "goes backwards"),
        ("*/0 * * * *", 3, "minute", "step"),
        ("0 0 1-10/0 * *", 10, "day-of-month", "step"),
        ("0 0/x * * *", 5, "hour", "step"),
        ("0 0 1,,2 * *", 7, "day-of-month", "empty list item"),
        ("0 0 1, * *", 7, "day-of-month", "empty list item"),
        ("0 0 ,1 * *", 5, "day-of-month", "empty list item"),
        # specials where they do not belong, or malformed
        ("0 L * * *", 3, "hour", "L is allowed only in day-of-month and day-of-week"),
        ("0 0 5W * * *", 6, "hour", "W is allowed only"),  # the position of the W
        ("1#2 * * * *", 2, "minute", "# is allowed only"),
        ("? * * * *", 1, "minute", "? means any day"),
        ("0 0 * ? *", 7, "month", "? means any day"),
        ("0 0 * * L", 9, "day-of-week", "needs a day before it"),
        ("0 0 * * 5#6", 11, "day-of-week", "k from 1 to 5, not '6'"),
        ("0 0 * * 5#0", 11, "day-of-week", "k from 1 to 5, not '0'"),
        ("0 0 * * MON#", 13, "day-of-week", "k from 1 to 5"),
        ("0 0 * * #2", 9, "day-of-week", "a value is missing"),
        ("0 0 L-31 * *", 7, "day-of-month", "L-n needs n from 0 to 30, not '31'"),
        ("0 0 L-x * *", 7, "day-of-month", "L-n needs n from 0 to 30"),
        # names
        ("0 0 * FOO *", 7, "month", "'FOO' is not a number or a name"),
        ("0 0 * * FOO", 9, "day-of-week", "'FOO' is not a number or a name"),
        ("0 0 * * JAN", 9, "day-of-week", "'JAN' is not"),
        ("0 MON * * *", 3, "hour", "'MON' is not a number"),
        ("0 0 \u0661 * *", 5, "day-of-month", "is not a number"),  # an Arabic-Indic digit one
        # positions count from the string as written: leading blanks, tabs, prefixes
        ("   0 0 32 * *", 8, "day-of-month", "32 is outside"),
        ("0\t0\t32\t*\t*", 5, "day-of-month", "32 is outside"),
        ("CRON_TZ=Europe/Berlin 0 0 32 * *", 27, "day-of-month", "32 is outside"),
        ("TZ=UTC  0 0 * * 5#9", 19, "day-of-week", "k from 1 to 5"),
    ],
)
def test_malformed_field_names_position_and_field(text: str, position: int, field: str, says: str) -> None:
    error = _error({"cron": text})
    assert error.path == f"{PATH}.cron"
    assert error.rule.startswith(f"at position {position} ({field}): "), error.rule
    assert says in error.rule
    assert error.rule.endswith(f", in {text!r}")


@pytest.mark.parametrize(
    ("text", "position", "says"),
    [
        ("@reboot", 1, "@reboot is not a schedule"),
        ("  @every_5m", 3, "@every_5m is not a schedule"),
        ("TZ= 0 0 * * *", 4, "TZ= needs a time zone name"),
        ("CRON_TZ= 0 0 * * *", 9, "CRON_TZ= needs a time zone name"),
    ],
)
def test_malformed_macro_or_prefix_names_its_position(text: str, position: int, says: str) -> None:
    error = _error({"cron": text})
    assert error.path == f"{PATH}.cron"
    assert error.rule.startswith(f"at position {position}: {says}"), error.rule
    assert error.rule.endswith(f", in {text!r}")


@pytest.mark.parametrize(("text", "count"), [("0 0 *", 3), ("0 0 * * * * *", 7), ("0", 1), ("@daily 0", 2)])
def test_wrong_number_of_fields(text: str, count: int) -> None:
    error = _error({"cron": text})
    assert error.path == f"{PATH}.cron"
    assert error.rule.startswith(f"has {count} fields; a cron string has 5 fields"), error.rule
    assert error.rule.endswith(f", in {text!r}")


@pytest.mark.parametrize(("value", "kind"), [(5, "int"), ({"minute": 0}, "dict"), (True, "bool"), (1.5, "float")])
def test_not_a_string(value: object, kind: str) -> None:
    error = _error({"cron": value})
    assert error.path == f"{PATH}.cron"
    assert error.rule.endswith(f"not {kind}")


def test_null_cron_is_absent() -> None:
    error = _error({"cron": None})
    assert error.path == f"{PATH}.frequency"
    rec = parse_recurrence({"cron": None, "frequency": "Day"})
    assert rec is not None
    assert rec.cron is None
    assert rec.to_json() == {"frequency": "Day"}


@pytest.mark.parametrize("text", ["", "   ", "\t\n"])
def test_empty_string(text: str) -> None:
    error = _error({"cron": text})
    assert error.path == f"{PATH}.cron"
    assert error.rule.startswith("is empty")


def _list_string(length: int) -> str:
    """A 6-field string of exactly ``length`` characters whose seconds field lists 0..59 over and over
    (the last item padded with leading zeros to the length)."""
    tail = " * * * * *"
    items: list[str] = []
    while len(",".join([*items, str(len(items) % 60)])) + len(tail) <= length:
        items.append(str(len(items) % 60))
    items[-1] = items[-1].zfill(length - len(tail) - len(",".join(items[:-1])) - 1)
    return ",".join(items) + tail


def test_length_limit() -> None:
    longest = "0" * 990 + " * * * * *"
    assert len(longest) == 1000
    assert parse_recurrence({"cron": longest}) is not None
    error = _error({"cron": "0" + longest})
    assert error.path == f"{PATH}.cron"
    assert "1,001 characters" in error.rule


def test_array_bounds_and_item_paths() -> None:
    assert parse_recurrence({"cron": [f"{i} * * * *" for i in range(50)]}) is not None
    error = _error({"cron": [f"{i} * * * *" for i in range(51)]})
    assert (error.path, error.rule) == (f"{PATH}.cron", "must hold 1 to 50 cron strings, not 51")
    error = _error({"cron": []})
    assert (error.path, error.rule) == (f"{PATH}.cron", "must hold 1 to 50 cron strings, not 0")
    error = _error({"cron": ["0 0 * * *", "@daily", "0 9 * * 1", "0 0 * * 8"]})
    assert error.path == f"{PATH}.cron[3]"
    assert error.rule.startswith("at position 9 (day-of-week): 8 is outside 0-7")
    error = _error({"cron": ["0 0 * * *", 7]})
    assert error.path == f"{PATH}.cron[1]"
    error = _error({"Cron": ["0 0 * * *", "0 0 * * * * *"]})  # the key as written
    assert error.path == f"{PATH}.Cron[1]"


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"frequency": "Day"}, "frequency"),
        ({"interval": 2}, "interval"),
        ({"schedule": {"hours": [9]}}, "schedule"),
        ({"Frequency": "Minute"}, "Frequency"),
    ],
)
def test_cron_replaces_frequency_interval_and_schedule(extra: dict[str, Any], field: str) -> None:
    error = _error({"cron": "0 9 * * *", **extra})
    assert error.path == f"{PATH}.{field}"
    assert "cannot be given with cron" in error.rule


def test_zones_must_agree() -> None:
    error = _error({"cron": ["CRON_TZ=Europe/Berlin 0 9 * * *", "TZ=Europe/Paris 0 9 * * *"]})
    assert error.path == f"{PATH}.cron[1]"
    assert "Europe/Paris" in error.rule
    assert "Europe/Berlin" in error.rule
    error = _error({"cron": "CRON_TZ=Europe/Berlin 0 9 * * *", "timeZone": "America/New_York"})
    assert error.path == f"{PATH}.cron"
    assert "America/New_York" in error.rule
    error = _error({"cron": ["0 9 * * *", "CRON_TZ=Mars/Olympus_Mons 0 9 * * *"]})
    assert error.path == f"{PATH}.cron[1]"
    assert "unknown time zone" in error.rule
    assert "Mars/Olympus_Mons" in error.rule
    # agreeing zones: a Windows name in timeZone, and a prefix on only some strings
    ok = {"cron": ["CRON_TZ=Europe/Berlin 0 9 * * *", "0 17 * * *"], "timeZone": "W. Europe Standard Time"}
    rec = parse_recurrence(ok)
    assert rec is not None
    assert rec.to_json()["timeZone"] == "W. Europe Standard Time"


@pytest.mark.parametrize(
    "crons",
    [
        ["CRON_TZ=Europe/Berlin 0 17 * * *", "0 9 * * *"],
        ["0 9 * * *", "CRON_TZ=Europe/Berlin 0 17 * * *"],
    ],
)
def test_end_time_without_offset_is_wall_time_of_the_prefix_zone(crons: list[str]) -> None:
    # the recurrence runs in Berlin whichever string carries the prefix, so its endTime (and startTime) without
    # an offset are Berlin wall times: 12:00 CEST is 10:00Z
    rec = parse_recurrence({"cron": crons, "endTime": "2024-07-01T12:00:00"})
    assert rec is not None
    assert rec.zone_name == "Europe/Berlin"
    assert rec.end_time == utc("2024-07-01T10:00:00Z")


@pytest.mark.parametrize("text", ["0 0 30 2 *", "0 0 31W 4 *", "0 0 31 4,6,9,11 ?", "0 0 L-29 2 *", "0 0 30W FEB ?"])
def test_never_firing_is_refused(text: str) -> None:
    error = _error({"cron": text})
    assert error.path == f"{PATH}.cron"
    assert error.rule.startswith("can never fire")


def test_never_firing_union_is_refused_but_one_live_string_saves_it() -> None:
    error = _error({"cron": ["0 0 30 2 *", "0 0 31 4 *"]})
    assert error.path == f"{PATH}.cron"
    assert parse_recurrence({"cron": ["0 0 30 2 *", "0 0 31 3 *"]}) is not None


# --- 4. hostile input in bounded time ------------------------------------------------------------------

_TIMES: dict[str, float] = {}


def _timed(name: str, seconds: float) -> None:
    _TIMES[name] = seconds
    worst = max(_TIMES.items(), key=lambda kv: kv[1])
    print(f"\n{name}: {seconds * 1000:.1f} ms (worst so far: {worst[0]}, {worst[1] * 1000:.1f} ms)")
    assert seconds < BOUND_S, f"{name} took {seconds:.2f} s"


def test_fifty_strings_firing_every_minute_at_different_seconds() -> None:
    began = time.perf_counter()
    s = schedule([f"{i} * * * * *" for i in range(50)], "2025-01-01T00:00:00Z")
    got = s.occurrences(utc("2025-01-01T00:00:00Z"), 100)
    hundredth = s.ordinal(got[-1])
    _timed("50 strings, compile + 100 occurrences + ordinal", time.perf_counter() - began)
    assert iso(got[-1]) == "2025-01-01T00:01:49Z"  # 50 in the first minute, seconds 0..49 of the second
    assert hundredth == 100


def test_a_thousand_characters_of_list_items() -> None:
    text = _list_string(1000)
    assert len(text) == 1000
    began = time.perf_counter()
    s = schedule(text, "2025-01-01T00:00:00Z")
    got = s.occurrences(utc("2025-01-01T00:00:00Z"), 100)
    number = s.ordinal(got[-1])
    _timed("a 1000-character list", time.perf_counter() - began)
    assert iso(got[-1]) == "2025-01-01T00:01:39Z"
    assert number == 100


@pytest.mark.parametrize("text", ["0 0 30 2 *", "* * * 31W 4 *", "* * * L-30 2,4,6,9,11 ?", "0 0 30,31 2 ?"])
def test_never_matching_strings_are_refused_quickly(text: str) -> None:
    began = time.perf_counter()
    with pytest.raises(ValidationError, match="can never fire"):
        parse_recurrence({"cron": text})
    _timed(f"refusing {text!r}", time.perf_counter() - began)


@pytest.mark.parametrize(
    ("text", "start", "expected"),
    [
        ("0 0 29 2 ?", "2097-03-01", ["2104-02-29", "2108-02-29"]),
        # the fifth Monday of February: a leap year whose February begins on a Monday
        ("0 0 ? 2 1#5", "2017-01-01", ["2044-02-29", "2072-02-29", "2112-02-29"]),
        ("0 0 */28 2 MON#5", "2017-01-01", ["2044-02-29", "2072-02-29", "2112-02-29"]),  # days 1 and 29, AND
        ("0 0 29 2 1#5", "2025-01-01", ["2028-02-29", "2032-02-29"]),  # either rule: every leap day
    ],
)
def test_rare_matches(text: str, start: str, expected: list[str]) -> None:
    began = time.perf_counter()
    got = fires(text, f"{start}T00:00:00Z", len(expected))
    _timed(f"rare {text!r}", time.perf_counter() - began)
    assert got == midnights(*expected)


@pytest.mark.parametrize("zone", [None, "Europe/Berlin"])
def test_ordinal_three_hundred_years_on_is_exact_and_fast(zone: str | None) -> None:
    extra = {"timeZone": zone} if zone else {}
    # midnight wall time, 2025-01-01 and 2325-01-01, as UTC instants (Berlin is on CET in January: UTC+1)
    first, later = ("2025-01-01T00:00:00Z", "2325-01-01T00:00:00Z")
    if zone:
        first, later = ("2024-12-31T23:00:00Z", "2324-12-31T23:00:00Z")
    began = time.perf_counter()
    s = schedule("* * * * * *", first, **extra)
    number = s.ordinal(utc(later))
    _timed(f"ordinal 300 years on ({zone or 'UTC'})", time.perf_counter() - began)
    seconds = (date(2325, 1, 1) - date(2025, 1, 1)).days * 86_400
    if zone:
        # every spring-forward (the last Sunday of March, 2025-2324) skips 3600 wall seconds; the repeated
        # hour of October fires once per wall time, so it adds nothing
        seconds -= 300 * 3600
    assert number == seconds + 1


def test_only_skipped_wall_times_is_refused_in_bounded_time() -> None:
    # 02:30 on the last Sunday of March never exists in Berlin
    rec = parse_recurrence({"cron": "30 2 ? 3 0L", "timeZone": "Europe/Berlin"})
    began = time.perf_counter()
    with pytest.raises(ValidationError, match="can never fire") as caught:
        compile_schedule(utc("2024-01-01T00:00:00Z"), rec, utc("2024-01-01T00:00:00Z"))
    _timed("a cron of skipped wall times only", time.perf_counter() - began)
    assert caught.value.path == f"{PATH}.cron"


def _run_bounded(code: str, timeout: float, memory_bytes: int) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child Python with a time limit and an address-space limit (so that a hostile input
    cannot take the test machine with it)."""
    limit = f"import resource\nresource.setrlimit(resource.RLIMIT_AS, ({memory_bytes}, {memory_bytes}))\n"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", limit + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=REPO,
        check=False,
    )


@pytest.mark.skipif(sys.platform != "linux", reason="limits the child with setrlimit and reads /proc")
def test_a_dozen_day_rules_firing_every_second_are_parsed_in_bounded_time() -> None:
    # Twelve strings of under 80 characters each, each firing every second of its days: bits of the day of
    # the month, of the weekday and of the month, so that nearly every (month shape, day) has its own subset
    # of strings firing. The union of a subset's times of day must not cost seconds (and memory) per subset.
    code = """
        import time
        from scheduler_core.recurrence import parse_recurrence
        crons = []
        for j in range(5):
            crons.append("* * * " + ",".join(str(d) for d in range(1, 32) if d >> j & 1) + " * ?")
        for j in range(3):
            crons.append("* * * ? * " + ",".join(str(d) for d in range(7) if d >> j & 1))
        for j in range(4):
            crons.append("* * * ? " + ",".join(str(m) for m in range(1, 13) if m >> j & 1) + " ?")
        assert max(len(c) for c in crons) < 80
        began = time.perf_counter()
        parse_recurrence({"cron": crons})
        print(time.perf_counter() - began)
    """
    try:
        done = _run_bounded(code, timeout=10, memory_bytes=3 * 2**30)
    except subprocess.TimeoutExpired:
        pytest.fail("12 cron strings of under 80 characters were not parsed within 10 s (bound: 2 s)")
    assert done.returncode == 0, done.stderr[-2000:]
    _timed("12 every-second day rules (parse, in a child)", float(done.stdout.strip()))


@pytest.mark.skipif(sys.platform != "linux", reason="limits the child with setrlimit and reads /proc")
def test_fifty_every_second_strings_do_not_stay_in_memory() -> None:
    # 50 strings firing every second are allowed; what parsing them leaves behind (caches) must be small,
    # or a few requests with different strings exhaust the host's memory.
    code = """
        import gc, time
        from scheduler_core.recurrence import parse_recurrence

        def rss_mb():
            with open("/proc/self/status") as f:
                return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024

        before = rss_mb()
        worst = 0.0
        for request in range(3):
            crons = ["* * * * * *" + " " * (50 * request + i) for i in range(50)]
            began = time.perf_counter()
            parse_recurrence({"cron": crons})
            worst = max(worst, time.perf_counter() - began)
        gc.collect()
        print(worst, rss_mb() - before)
    """
    done = _run_bounded(code, timeout=60, memory_bytes=4 * 2**30)
    assert done.returncode == 0, done.stderr[-2000:]
    worst, retained = (float(x) for x in done.stdout.split())
    print(f"\n50 every-second strings: worst parse {worst * 1000:.0f} ms, {retained:.0f} MB kept after 3 requests")
    assert retained < 100, f"{retained:.0f} MB kept after parsing 3 different arrays of 50 strings"
    _timed("50 every-second strings (parse, in a child)", worst)


# --- 5. daylight saving --------------------------------------------------------------------------------


def test_berlin_skips_the_spring_forward_day_and_fires_once_on_the_fall_back_day() -> None:
    berlin = {"timeZone": "Europe/Berlin"}
    # 2024-03-31: 02:00 CET -> 03:00 CEST, 02:30 does not exist
    assert fires("30 2 * * *", "2024-03-29T00:00:00Z", 4, **berlin) == [
        "2024-03-29T01:30:00Z",
        "2024-03-30T01:30:00Z",
        "2024-04-01T00:30:00Z",
        "2024-04-02T00:30:00Z",
    ]
    # 2024-10-27: 03:00 CEST -> 02:00 CET, 02:30 happens twice; the first (CEST, 00:30Z) fires
    assert fires("30 2 * * *", "2024-10-26T00:00:00Z", 3, **berlin) == [
        "2024-10-26T00:30:00Z",
        "2024-10-27T00:30:00Z",
        "2024-10-28T01:30:00Z",
    ]


def test_new_york_skips_the_spring_forward_day_and_fires_once_on_the_fall_back_day() -> None:
    new_york = {"timeZone": "America/New_York"}
    # 2024-03-10: 02:00 EST -> 03:00 EDT
    assert fires("30 2 * * *", "2024-03-09T00:00:00Z", 3, **new_york) == [
        "2024-03-09T07:30:00Z",
        "2024-03-11T06:30:00Z",
        "2024-03-12T06:30:00Z",
    ]
    # 2024-11-03: 02:00 EDT -> 01:00 EST, 01:30 happens twice; the first (EDT, 05:30Z) fires
    assert fires("30 1 * * *", "2024-11-02T00:00:00Z", 3, **new_york) == [
        "2024-11-02T05:30:00Z",
        "2024-11-03T05:30:00Z",
        "2024-11-04T06:30:00Z",
    ]


def test_every_half_hour_through_the_repeated_hour_fires_each_wall_time_once() -> None:
    s = schedule("*/30 * * * *", "2024-10-26T23:00:00Z", timeZone="Europe/Berlin")
    got = s.occurrences(utc("2024-10-26T23:00:00Z"), 6)
    # 01:00 and 01:30 CEST, 02:00 and 02:30 CEST (first pass), then 03:00 and 03:30 CET
    assert [iso(o) for o in got] == [
        "2024-10-26T23:00:00Z",
        "2024-10-26T23:30:00Z",
        "2024-10-27T00:00:00Z",
        "2024-10-27T00:30:00Z",
        "2024-10-27T02:00:00Z",
        "2024-10-27T02:30:00Z",
    ]
    assert [s.ordinal(o) for o in got] == [1, 2, 3, 4, 5, 6]
    # from inside the second pass of the repeated hour, the next occurrence is 03:00 CET
    assert s.after(utc("2024-10-27T00:30:00Z")) == utc("2024-10-27T02:00:00Z")
    assert s.after(utc("2024-10-27T01:15:00Z")) == utc("2024-10-27T02:00:00Z")

    s = schedule("*/30 * * * *", "2024-11-03T04:00:00Z", timeZone="America/New_York")
    assert [iso(o) for o in s.occurrences(utc("2024-11-03T04:00:00Z"), 6)] == [
        "2024-11-03T04:00:00Z",  # 00:00 EDT
        "2024-11-03T04:30:00Z",
        "2024-11-03T05:00:00Z",  # 01:00 EDT
        "2024-11-03T05:30:00Z",  # 01:30 EDT; 01:00 and 01:30 EST do not fire again
        "2024-11-03T07:00:00Z",  # 02:00 EST
        "2024-11-03T07:30:00Z",
    ]


def test_every_half_hour_through_the_skipped_hour() -> None:
    s = schedule("*/30 * * * *", "2024-03-31T00:00:00Z", timeZone="Europe/Berlin")
    got = s.occurrences(utc("2024-03-31T00:00:00Z"), 4)
    # 01:00 and 01:30 CET, then 03:00 and 03:30 CEST: thirty minutes apart in UTC throughout
    assert [iso(o) for o in got] == [
        "2024-03-31T00:00:00Z",
        "2024-03-31T00:30:00Z",
        "2024-03-31T01:00:00Z",
        "2024-03-31T01:30:00Z",
    ]
    assert s.ordinal(got[-1]) == 4


@pytest.mark.parametrize(
    ("cron", "extra"),
    [
        ("CRON_TZ=Europe/Berlin 0 9 * * *", {}),
        ("TZ=Europe/Berlin 0 9 * * *", {}),
        ("0 9 * * *", {"timeZone": "Europe/Berlin"}),
        ("CRON_TZ=Europe/Berlin 0 9 * * *", {"timeZone": "W. Europe Standard Time"}),
    ],
)
def test_prefix_zone_equals_time_zone(cron: str, extra: dict[str, str]) -> None:
    # Berlin moves to CEST on 2024-03-31: 09:00 is 08:00Z before, 07:00Z from that day on
    assert fires(cron, "2024-03-29T00:00:00Z", 4, **extra) == [
        "2024-03-29T08:00:00Z",
        "2024-03-30T08:00:00Z",
        "2024-03-31T07:00:00Z",
        "2024-04-01T07:00:00Z",
    ]


# --- 6. quota -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cron", "frequency", "interval", "fits"),
    [
        ("*/10 * * * * *", "Minute", 1, False),
        ("30 * * * * *", "Minute", 1, True),
        ("30 * * * * *", "Minute", 2, False),
        ("0 9 * * *", "Hour", 1, True),
        ("0 9 * * *", "Day", 1, True),
        ("0 9 * * *", "Week", 1, False),
        ("0,30 9 * * *", "Hour", 1, False),
        ("0 9 * * MON", "Week", 1, True),
        (["0 9 * * *", "0 21 * * *"], "Hour", 12, True),
        (["0 9 * * *", "0 21 * * *", "0 9 * * *"], "Hour", 13, False),
        # a burst far from the start: the quota must see it, not just the first few thousand occurrences
        (["0 * * * *", "* * * 12 *"], "Hour", 1, False),
        (["0 9 * * *", "0,1 9 29 2 ?"], "Day", 1, False),
    ],
)
def test_quota_uses_the_smallest_gap(cron: object, frequency: str, interval: int, fits: bool) -> None:
    assert validate_against_quota(parse_recurrence({"cron": cron}), frequency, interval) is fits


# --- 7. count, ordinals, and the first occurrence without startTime ---------------------------------------


def test_count_numbers_and_ends_the_series() -> None:
    s = schedule("0 9 * * *", "2024-01-01T00:00:00Z", count=3)
    got = s.occurrences(utc("2024-01-01T00:00:00Z"), 10)
    assert [iso(o) for o in got] == ["2024-01-01T09:00:00Z", "2024-01-02T09:00:00Z", "2024-01-03T09:00:00Z"]
    assert [s.ordinal(o) for o in got] == [1, 2, 3]
    assert s.after(got[-1]) is None
    assert s.is_last(got[-1])
    assert not s.is_last(got[1])
    assert s.occurrences(utc("2024-01-02T12:00:00Z"), 10) == got[2:]


def test_ordinal_of_a_non_occurrence_is_an_error() -> None:
    s = schedule("0 9 * * *", "2024-01-01T00:00:00Z")
    with pytest.raises(ValueError, match="not an occurrence"):
        s.ordinal(utc("2024-01-01T09:00:01Z"))
    assert s.ordinal(utc("2024-02-01T09:00:00Z")) == 32


def test_without_start_time_a_cron_job_waits_for_its_first_match() -> None:
    s = schedule("0 9 * * *", created="2024-01-01T08:59:30Z", count=2)
    assert s.first_occurrence == utc("2024-01-01T09:00:00Z")
    assert [iso(o) for o in s.occurrences(utc("2024-01-01T08:59:30Z"), 5)] == [
        "2024-01-01T09:00:00Z",
        "2024-01-02T09:00:00Z",
    ]
    assert s.ordinal(utc("2024-01-01T09:00:00Z")) == 1
    # created at 09:00:00.5 (after the match): tomorrow; a frequency job would run at once
    s = schedule("0 9 * * *", created="2024-01-01T09:00:00.500000Z")
    assert s.first_occurrence == utc("2024-01-02T09:00:00Z")
    created = utc("2024-01-01T09:00:00.500000Z")
    frequency_job = compile_schedule(None, parse_recurrence({"frequency": "Day"}), created)
    assert frequency_job.first_occurrence == created


def test_without_start_time_creation_on_a_match_is_not_an_occurrence() -> None:
    s = schedule("*/10 * * * * *", created="2024-01-01T09:00:00Z")
    assert s.first_occurrence == utc("2024-01-01T09:00:10Z")
    assert s.ordinal(utc("2024-01-01T09:01:00Z")) == 6


def test_start_time_in_the_past_never_fires_in_the_past() -> None:
    s = schedule("0 9 * * *", "2024-01-01T00:00:00Z", created="2024-03-01T12:00:00Z")
    assert s.first_occurrence == utc("2024-03-02T09:00:00Z")
    assert s.ordinal(utc("2024-03-03T09:00:00Z")) == 2


def test_end_time_cuts_the_series() -> None:
    s = schedule("0 9 * * *", "2024-01-01T00:00:00Z", endTime="2024-01-03T09:00:00Z")
    got = s.occurrences(utc("2024-01-01T00:00:00Z"), 10)
    assert [iso(o) for o in got][-1] == "2024-01-03T09:00:00Z"
    assert len(got) == 3
    assert timedelta(days=2) == got[-1] - got[0]
