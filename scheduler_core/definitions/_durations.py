"""Durations: ISO 8601 (``PT30S``, ``P1DT2H``) or .NET TimeSpan (``00:00:30``, ``1.02:00:00``).

A duration is answered in the format it was written in (its *style*): ISO 8601 in, ISO 8601 out (the
only form azure-mgmt-scheduler 7.0.0 reads); TimeSpan in, TimeSpan out (the form the original service
answered, and the only one the SDK's ``azure.mgmt.scheduler.patch.patch_client`` reads). Within its
style a value is normalised: ISO 8601 to its shortest form (``PT90S`` -> ``PT1M30S``), TimeSpan to .NET's
``c`` format (``0:1`` -> ``00:01:00``, ``1.02:00:00``, ``00:00:00.5000000``).

Every duration is non-negative and at most :data:`MAX_DURATION` (.NET ``TimeSpan.MaxValue``, the largest
the original service could hold); anything else, however large or malformed, is a
:class:`~scheduler_core.errors.ValidationError` naming the field and the rule, never an overflow.
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal, InvalidOperation

from scheduler_core.errors import ValidationError
from scheduler_core.model.retry import Duration, DurationStyle

__all__ = [
    "ISO",
    "MAX_DURATION",
    "TIMESPAN",
    "DurationStyle",
    "duration_style",
    "format_duration",
    "parse_duration",
    "read_bounded",
    "read_duration",
]

ISO: DurationStyle = "iso"
TIMESPAN: DurationStyle = "timespan"

#: .NET ``TimeSpan.MaxValue`` (10675199.02:48:05.4775807), to the microsecond.
MAX_DURATION = timedelta(days=10_675_199, hours=2, minutes=48, seconds=5, microseconds=477_580)
_MAX_MICROSECONDS = (MAX_DURATION.days * 86_400 + MAX_DURATION.seconds) * 1_000_000 + MAX_DURATION.microseconds

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
    re.VERBOSE | re.IGNORECASE | re.ASCII,
)
_ISO_UNITS = {"weeks": 604_800, "days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}
# .NET TimeSpan "c" format: [d.]hh:mm[:ss[.fffffff]]
_TIMESPAN = re.compile(
    r"(?:(?P<days>\d+)\.)?(?P<hours>\d{1,2}):(?P<minutes>\d{1,2})(?::(?P<seconds>\d{1,2})(?:\.(?P<fraction>\d{1,7}))?)?",
    re.ASCII,
)
_YEARS_OR_MONTHS = re.compile(r"P(?:[\d.,]+W)?(?:[\d.,]+[YM])", re.IGNORECASE | re.ASCII)

_RULE = "must be a duration, ISO 8601 (PT30S, PT1H, P1DT12H) or .NET TimeSpan (00:00:30, 1.00:00:00)"
_TOO_LONG = "must be at most 10675199.02:48:05 (P10675199DT2H48M5S, the largest .NET TimeSpan)"


def _micros(total: Decimal | int, path: str) -> timedelta:
    """A duration from a non-negative number of microseconds, refused beyond :data:`MAX_DURATION`."""
    if total > _MAX_MICROSECONDS:
        raise ValidationError(path, _TOO_LONG)
    return timedelta(microseconds=int(total))


def _iso(match: re.Match[str], path: str) -> timedelta:
    total = Decimal(0)
    for unit, seconds in _ISO_UNITS.items():
        text = match.group(unit)
        if text:
            try:
                total += Decimal(text.replace(",", ".")) * seconds
            except InvalidOperation:  # pragma: no cover - the pattern admits digits only
                raise ValidationError(path, _RULE) from None
    return _micros(total * 1_000_000, path)


def _timespan(match: re.Match[str], path: str) -> timedelta:
    parts = match.groupdict()
    hours, minutes, seconds = int(parts["hours"]), int(parts["minutes"]), int(parts["seconds"] or 0)
    if hours > 23 or minutes > 59 or seconds > 59:
        raise ValidationError(path, f"{_RULE}; hours, minutes or seconds out of range")
    days_text = (parts["days"] or "0").lstrip("0") or "0"
    if len(days_text) > 20:  # also keeps int() below Python's limit on digits
        raise ValidationError(path, _TOO_LONG)
    fraction = parts["fraction"] or ""
    micros = int((fraction + "000000")[:6])
    whole = ((int(days_text) * 24 + hours) * 60 + minutes) * 60 + seconds
    return _micros(whole * 1_000_000 + micros, path)


def read_duration(value: object, path: str) -> tuple[timedelta, DurationStyle]:
    """Parse a duration and tell its style. Years and months are refused (their length is not fixed),
    and so are negative values and values beyond :data:`MAX_DURATION`."""
    if not isinstance(value, str):
        raise ValidationError(path, _RULE)
    text = value.strip()
    iso = _ISO.fullmatch(text)
    if iso is not None:
        return _iso(iso, path), ISO
    span = _TIMESPAN.fullmatch(text)
    if span is not None:
        return _timespan(span, path), TIMESPAN
    if _YEARS_OR_MONTHS.match(text):
        raise ValidationError(path, f"{_RULE}; years and months are not allowed (use days, e.g. P30D)")
    if text.startswith("-") and (_ISO.fullmatch(text[1:]) or _TIMESPAN.fullmatch(text[1:])):
        raise ValidationError(path, f"{_RULE}; it must not be negative")
    raise ValidationError(path, _RULE)


def parse_duration(value: object, path: str) -> timedelta:
    """Parse a non-negative duration (see :func:`read_duration`)."""
    return read_duration(value, path)[0]


def duration_style(value: object) -> DurationStyle | None:
    """The style a value is written in, or ``None`` when it is not a duration (nothing is raised)."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if _ISO.fullmatch(text):
        return ISO
    if _TIMESPAN.fullmatch(text):
        return TIMESPAN
    return None


def format_duration(delta: timedelta, style: DurationStyle = ISO) -> str:
    """The text of ``delta`` in ``style``. ISO 8601: shortest form (``PT30S``, ``PT1H30M``, ``P1D``,
    ``P2DT0.5S``; zero is ``PT0S``). TimeSpan: .NET's ``c`` format (``00:00:30``, ``1.02:00:00``,
    ``00:00:00.5000000``)."""
    if delta < timedelta(0):
        raise ValueError("format_duration needs a non-negative duration")
    days = delta.days
    hours, rest = divmod(delta.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if style == TIMESPAN:
        text = f"{days}." if days else ""
        text += f"{hours:02d}:{minutes:02d}:{seconds:02d}"
        if delta.microseconds:
            text += f".{delta.microseconds:06d}0"
        return text
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


def read_bounded(value: object, path: str, low: tuple[timedelta, str], high: tuple[timedelta, str]) -> Duration:
    """A duration (:func:`read_duration`) of ``low`` to ``high``, each given with its words ("15 seconds"),
    kept in the style it was written in; else a 400 naming ``path`` with both bounds in that style."""
    value_read, style = read_duration(value, path)
    (least, least_words), (most, most_words) = low, high
    if not least <= value_read <= most:
        raise ValidationError(
            path,
            f"must be between {format_duration(least, style)} ({least_words}) and "
            f"{format_duration(most, style)} ({most_words}), not {format_duration(value_read, style)}",
        )
    return Duration(value_read, style)
