"""Durations: ISO 8601 (``PT30S``, ``P1DT2H``) or .NET TimeSpan (``00:00:30``, ``1.02:00:00``) on input,
ISO 8601 on output (the only form azure-mgmt-scheduler 7.0.0 can read back)."""

from __future__ import annotations

import re
from datetime import timedelta

from scheduler_core.errors import ValidationError

__all__ = ["format_duration", "parse_duration"]

_ISO = re.compile(
    r"""
    P(?!$)
    (?:(?P<weeks>\d+(?:[.,]\d+)?)W)?
    (?:(?P<days>\d+(?:[.,]\d+)?)D)?
    (?:T(?=\d)
        (?:(?P<hours>\d+(?:[.,]\d+)?)H)?
        (?:(?P<minutes>\d+(?:[.,]\d+)?)M)?
        (?:(?P<seconds>\d+(?:[.,]\d+)?)S)?
    )?
    """,
    re.VERBOSE | re.IGNORECASE,
)
# .NET TimeSpan "c" format: [d.]hh:mm[:ss[.fffffff]]
_TIMESPAN = re.compile(
    r"(?:(?P<days>\d+)\.)?(?P<hours>\d{1,2}):(?P<minutes>\d{1,2})(?::(?P<seconds>\d{1,2})(?:\.(?P<fraction>\d{1,7}))?)?"
)
_YEARS_OR_MONTHS = re.compile(r"P(?:[\d.,]+W)?(?:[\d.,]+[YM])", re.IGNORECASE)

_RULE = "must be a duration, ISO 8601 (PT30S, PT1H, P1DT12H) or .NET TimeSpan (00:00:30, 1.00:00:00)"


def _number(text: str | None) -> float:
    return float(text.replace(",", ".")) if text else 0.0


def parse_duration(value: object, path: str) -> timedelta:
    """Parse a non-negative duration. Years and months are refused (their length is not fixed)."""
    if not isinstance(value, str):
        raise ValidationError(path, _RULE)
    text = value.strip()
    iso = _ISO.fullmatch(text)
    if iso is not None:
        parts = iso.groupdict()
        return timedelta(
            weeks=_number(parts["weeks"]),
            days=_number(parts["days"]),
            hours=_number(parts["hours"]),
            minutes=_number(parts["minutes"]),
            seconds=_number(parts["seconds"]),
        )
    span = _TIMESPAN.fullmatch(text)
    if span is not None:
        parts = span.groupdict()
        hours, minutes, seconds = int(parts["hours"]), int(parts["minutes"]), int(parts["seconds"] or 0)
        if hours > 23 or minutes > 59 or seconds > 59:
            raise ValidationError(path, f"{_RULE}; hours, minutes or seconds out of range")
        fraction = parts["fraction"] or ""
        return timedelta(
            days=int(parts["days"] or 0),
            hours=hours,
            minutes=minutes,
            seconds=seconds,
            microseconds=int((fraction + "000000")[:6]) if fraction else 0,
        )
    if _YEARS_OR_MONTHS.match(text):
        raise ValidationError(path, f"{_RULE}; years and months are not allowed (use days, e.g. P30D)")
    raise ValidationError(path, _RULE)


def format_duration(delta: timedelta) -> str:
    """ISO 8601, shortest form: ``PT30S``, ``PT1H30M``, ``P1D``, ``P2DT0.5S``; zero is ``PT0S``."""
    if delta < timedelta(0):
        raise ValueError("format_duration needs a non-negative duration")
    days = delta.days
    rest = delta.seconds
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    text = "P"
    if days:
        text += f"{days}D"
    time = ""
    if hours:
        time += f"{hours}H"
    if minutes:
        time += f"{minutes}M"
    if seconds or delta.microseconds:
        if delta.microseconds:
            time += f"{seconds}.{delta.microseconds:06d}".rstrip("0") + "S"
        else:
            time += f"{seconds}S"
    if time:
        text += "T" + time
    return text if text != "P" else "PT0S"
