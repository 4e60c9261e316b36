"""Benchmark: next-occurrence latency of the recurrence engine vs ``dateutil.rrule(...).after()``.

Run with ``python bench/recurrence.py`` (add ``--quick`` for fewer calls). For each schedule it prints
the median microseconds of one "next occurrence at or after now" call for this engine (compiled once)
and for the equivalent ``dateutil.rrule`` (built once, ``cache=False``, ``.after(now, inc=True)``), and
their ratio. Every call asks about a slightly different "now" (7 seconds apart) so nothing is cached
between calls; the first results of both are checked to agree.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from dateutil import rrule as du

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler_core.recurrence import compile_schedule, parse_recurrence, parse_start_time

NOW = datetime(2025, 6, 16, 10, 7, 13, tzinfo=UTC)  # a Monday
RECENT = "2025-05-01T00:00:00Z"  # six weeks before NOW
TEN_YEARS_BACK = "2015-06-15T00:00:00Z"
NEW_YORK = ZoneInfo("America/New_York")
WEEKDAYS = [du.MO, du.TU, du.WE, du.TH, du.FR]


@dataclass
class Row:
    name: str
    recurrence: dict[str, Any]
    start: str
    rule: dict[str, Any]
    zone: Any = UTC
    far_past: bool = False


def _utc(text: str, zone: Any = UTC) -> datetime:
    if text.endswith("Z"):
        return datetime.fromisoformat(text[:-1]).replace(tzinfo=UTC).astimezone(zone)
    return datetime.fromisoformat(text).replace(tzinfo=zone)


ROWS = [
    Row("every minute", {"frequency": "Minute"}, RECENT, {"freq": du.MINUTELY}),
    Row(
        "every 15 minutes on weekdays",
        {
            "frequency": "Week",
            "schedule": {
                "minutes": [0, 15, 30, 45],
                "weekDays": ["monday", "tuesday", "wednesday", "thursday", "friday"],
            },
        },
        RECENT,
        {"freq": du.WEEKLY, "byweekday": WEEKDAYS, "byhour": range(24), "byminute": [0, 15, 30, 45]},
    ),
    Row(
        "5:15, 5:45, 17:15, 17:45 Mon/Wed/Fri",
        {
            "frequency": "Week",
            "schedule": {"minutes": [15, 45], "hours": [5, 17], "weekDays": ["monday", "wednesday", "friday"]},
        },
        RECENT,
        {"freq": du.WEEKLY, "byweekday": [du.MO, du.WE, du.FR], "byhour": [5, 17], "byminute": [15, 45]},
    ),
    Row(
        "last day of month 06:00",
        {"frequency": "Month", "schedule": {"minutes": [0], "hours": [6], "monthDays": [-1]}},
        RECENT,
        {"freq": du.MONTHLY, "bymonthday": [-1], "byhour": [6], "byminute": [0]},
    ),
    Row(
        "first and last Friday",
        {
            "frequency": "Month",
            "schedule": {
                "monthlyOccurrences": [{"day": "Friday", "Occurrence": 1}, {"day": "Friday", "Occurrence": -1}]
            },
        },
        RECENT,
        {"freq": du.MONTHLY, "byweekday": [du.FR(1), du.FR(-1)]},
    ),
    Row(
        "fifth Friday",
        {"frequency": "Month", "schedule": {"monthlyOccurrences": [{"day": "Friday", "Occurrence": 5}]}},
        RECENT,
        {"freq": du.MONTHLY, "byweekday": [du.FR(5)]},
    ),
    Row(
        "daily 09:00 America/New_York (DST)",
        {"frequency": "Day", "timeZone": "America/New_York"},
        "2025-01-01T09:00:00",  # before the March change
        {"freq": du.DAILY},
        zone=NEW_YORK,
    ),
    Row(
        "every minute, started 10 years back",
        {"frequency": "Minute"},
        TEN_YEARS_BACK,
        {"freq": du.MINUTELY},
        far_past=True,
    ),
    Row(
        "every 15 minutes on weekdays, 10 years back",
        {
            "frequency": "Week",
            "schedule": {
                "minutes": [0, 15, 30, 45],
                "weekDays": ["monday", "tuesday", "wednesday", "thursday", "friday"],
            },
        },
        TEN_YEARS_BACK,
        {"freq": du.WEEKLY, "byweekday": WEEKDAYS, "byhour": range(24), "byminute": [0, 15, 30, 45]},
        far_past=True,
    ),
    Row(
        "hourly at :00 and :30, 10 years back",
        {"frequency": "Hour", "schedule": {"minutes": [0, 30]}},
        TEN_YEARS_BACK,
        {"freq": du.HOURLY, "byminute": [0, 30]},
        far_past=True,
    ),
    Row(
        "last day of month, 10 years back",
        {"frequency": "Month", "schedule": {"minutes": [0], "hours": [6], "monthDays": [-1]}},
        TEN_YEARS_BACK,
        {"freq": du.MONTHLY, "bymonthday": [-1], "byhour": [6], "byminute": [0]},
        far_past=True,
    ),
    Row(
        "daily 09:00 New York, 10 years back",
        {"frequency": "Day", "timeZone": "America/New_York"},
        "2015-06-15T09:00:00",
        {"freq": du.DAILY},
        zone=NEW_YORK,
        far_past=True,
    ),
]


def _median_us(call: Callable[[datetime], object], calls: int, budget_s: float) -> float:
    samples: list[float] = []
    deadline = time.perf_counter() + budget_s
    for i in range(calls):
        after = NOW + timedelta(seconds=7 * i)
        t0 = time.perf_counter_ns()
        call(after)
        samples.append((time.perf_counter_ns() - t0) / 1000)
        if time.perf_counter() > deadline and (len(samples) >= 3 or samples[0] > budget_s * 1e6):
            break
    return statistics.median(samples)


def run(quick: bool) -> list[tuple[str, float, float]]:
    results = []
    for row in ROWS:
        recurrence = parse_recurrence(row.recurrence)
        start = parse_start_time(row.start, recurrence)
        assert start is not None
        schedule = compile_schedule(start, recurrence, start)
        rule = du.rrule(dtstart=start.astimezone(row.zone), cache=False, **row.rule)

        def engine(after: datetime, schedule: Any = schedule) -> object:
            return schedule.after(after, inclusive=True)

        def dateutil(after: datetime, rule: Any = rule, zone: Any = row.zone) -> object:
            return rule.after(after.astimezone(zone), inc=True)

        ours, theirs = engine(NOW), dateutil(NOW)
        if ours != theirs:
            raise SystemExit(f"{row.name}: engine {ours} != rrule {theirs}")
        calls = 200 if quick else 2000
        engine_us = _median_us(engine, calls, 2.0)
        rrule_us = _median_us(dateutil, calls, 1.0 if quick else 5.0)
        results.append((row.name, engine_us, rrule_us))
    return results


def table(results: list[tuple[str, float, float]]) -> str:
    lines = [
        "| schedule | engine µs | rrule.after µs | speed-up |",
        "|---|---:|---:|---:|",
    ]
    for name, ours, theirs in results:
        lines.append(f"| {name} | {ours:,.1f} | {theirs:,.1f} | {theirs / ours:,.0f}× |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls per row")
    args = parser.parse_args()
    print(f"median µs per next-occurrence call at {NOW.isoformat()} (Python {sys.version.split()[0]})")
    print(table(run(args.quick)))


if __name__ == "__main__":
    main()
