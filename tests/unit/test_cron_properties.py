"""The engine's cron instants against an independent cron implementation (``cronsim``, the cron engine of
Healthchecks.io), on thousands of random expressions, in UTC and in zones with daylight saving.

``cronsim`` enumerates wall times; the zone rule this engine documents (docs/recurrence.md: a wall time that
does not exist is skipped, a repeated one fires once, at its first instance) is applied to them here, so the
zoned comparison checks the engine's cron matching and its daylight-saving rule together. Ranges with a
step whose start equals its end (``5-5/5``) are not generated: cronsim reads them as ``5/5`` where Vixie cron
and this engine read ``{5}``. ``count`` is checked too: the engine's ordinal of each instant is its position.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim

from scheduler_core.recurrence import compile_schedule, parse_recurrence

_ZONES = ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Kolkata")
_FIELDS = ((0, 59), (0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_INSTANTS = 12


def _field(rng: random.Random, low: int, high: int) -> str:
    kind = rng.random()
    if kind < 0.3:
        return "*"
    if kind < 0.42:
        return f"*/{rng.randint(1, high - low + 1)}"
    if kind < 0.55:
        first = rng.randint(low, high)
        return f"{first}-{rng.randint(first, high)}"
    if kind < 0.65:
        first = rng.randint(low, high - 1)
        return f"{first}-{rng.randint(first + 1, high)}/{rng.randint(1, 5)}"
    return ",".join(str(rng.randint(low, high)) for _ in range(rng.randint(1, 3)))


def _expression(rng: random.Random) -> str:
    fields = [_field(rng, low, high) for low, high in _FIELDS]
    kind = rng.random()
    if kind < 0.08:
        fields[3] = "L"
    elif kind < 0.12:
        fields[3] = "LW"
    elif kind < 0.2:
        fields[5] = f"{rng.randint(0, 7)}#{rng.randint(1, 5)}"
    elif kind < 0.25:
        fields[5] = f"{rng.randint(0, 7)}L"
    if rng.random() < 0.3:  # sparse times, so that a series spans days and months
        fields[0], fields[1] = str(rng.randint(0, 59)), str(rng.randint(0, 59))
    return " ".join(fields if rng.random() < 0.5 else fields[1:])


def _accepted(expression: str) -> bool:
    """Whether cronsim takes the expression and it fires at all (both refuse a day-of-month no month has)."""
    try:
        next(CronSim(expression, datetime(2026, 1, 1)))
    except Exception:  # cronsim's own error, or StopIteration: nothing ever matches
        return False
    return True


def _oracle(expression: str, start: datetime, zone: ZoneInfo | None) -> Iterator[datetime]:
    """cronsim's wall times from ``start`` (UTC) on, as instants: each existing wall time at its first
    instance; a wall time that does not exist is skipped."""
    wall = start.astimezone(zone).replace(tzinfo=None) if zone is not None else start.replace(tzinfo=None)
    for match in CronSim(expression, wall - timedelta(seconds=1)):
        if zone is None:
            instant = match.replace(tzinfo=UTC)
        else:
            local = match.replace(tzinfo=zone, fold=0)
            if local.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != match:
                continue  # skipped by daylight saving
            instant = local.astimezone(UTC)
        if instant >= start:
            yield instant


def _engine(expression: str, start: datetime, zone: str | None, n: int) -> list[datetime]:
    body: dict[str, object] = {"cron": expression}
    if zone is not None:
        body["timeZone"] = zone
    recurrence = parse_recurrence(body)
    schedule = compile_schedule(start, recurrence, start)
    found = schedule.occurrences(start, n)
    assert [schedule.ordinal(instant) for instant in found] == list(range(1, len(found) + 1)), expression
    return found


def _random_start(rng: random.Random) -> datetime:
    return datetime(2024, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randrange(3 * 365 * 86400))


def _compare(rng: random.Random, zone: str | None) -> int:
    expression = _expression(rng)
    if not _accepted(expression):
        return 0
    start = _random_start(rng)
    ours = _engine(expression, start, zone, _INSTANTS)
    theirs: list[datetime] = []
    for instant in _oracle(expression, start, ZoneInfo(zone) if zone else None):
        theirs.append(instant)
        if len(theirs) == _INSTANTS:
            break
    assert ours == theirs, f"{expression!r} in {zone or 'UTC'} from {start.isoformat()}"
    return 1


@pytest.mark.parametrize("seed", range(4))
def test_cron_instants_agree_with_cronsim_in_utc(seed: int) -> None:
    rng = random.Random(f"utc-{seed}")
    compared = sum(_compare(rng, None) for _ in range(400))
    assert compared > 300  # most random expressions are valid: the comparison is not vacuous


@pytest.mark.parametrize("zone", _ZONES)
def test_cron_instants_agree_with_cronsim_and_the_zone_rule(zone: str) -> None:
    rng = random.Random(f"zone-{zone}")
    compared = sum(_compare(rng, zone) for _ in range(300))
    assert compared > 220


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe"])
@pytest.mark.parametrize("expression", ["*/7 * * * *", "30 2 * * *", "0,30 1-3 * * *", "15 */1 * * * *"])
def test_cron_at_every_transition_of_a_year(zone: str, expression: str) -> None:
    """Every daylight-saving transition of 2025 and 2026 (the hours around each, where the rule matters)."""
    tz = ZoneInfo(zone)
    hour = datetime(2025, 1, 1, tzinfo=UTC)
    transitions = []
    while hour < datetime(2027, 1, 1, tzinfo=UTC):
        following = hour + timedelta(minutes=30)
        if hour.astimezone(tz).utcoffset() != following.astimezone(tz).utcoffset():
            transitions.append(hour)
        hour = following
    assert len(transitions) == 4
    for moment in transitions:
        start = moment - timedelta(hours=3)
        ours = _engine(expression, start, zone, 40)
        theirs = [instant for _, instant in zip(range(40), _oracle(expression, start, tz), strict=False)]
        assert ours == theirs, f"{expression!r} in {zone} around {moment.isoformat()}"
        assert len(set(ours)) == len(ours)  # a repeated wall time fires once
