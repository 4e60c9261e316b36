"""ISO 8601 instants: strict parsing to aware UTC datetimes, and the canonical ``...Z`` text form."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo

from scheduler_core.errors import ValidationError

__all__ = ["format_instant", "parse_instant", "to_utc_from_wall"]

_INSTANT = re.compile(
    r"""
    (?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})
    (?:[Tt\ ]
        (?P<hour>\d{2}):(?P<minute>\d{2})
        (?::(?P<second>\d{2})(?:[.,](?P<fraction>\d{1,9}))?)?
        (?P<offset>[Zz]|[+-]\d{2}(?::?\d{2})?)?
    )?
    """,
    re.VERBOSE,
)

_RULE = (
    "must be an ISO 8601 date-time such as 2024-01-31T06:00:00Z (an offset is optional; a date alone means midnight)"
)


def parse_instant(value: object, path: str, tz: tzinfo | None = None) -> datetime:
    """Parse an ISO 8601 date-time (or date) into an aware UTC datetime.

    A value with ``Z`` or an offset is that instant. A value without one is wall-clock time in ``tz``
    when given (a time repeated by a daylight-saving change means its first instance; a time skipped by
    one is read with the offset in force before the change, that is, it moves forward), else UTC.
    Fractions beyond microseconds (.NET writes seven digits) are truncated.
    Raises :class:`ValidationError` naming ``path`` on anything else.
    """
    if not isinstance(value, str):
        raise ValidationError(path, _RULE)
    match = _INSTANT.fullmatch(value.strip())
    if match is None:
        raise ValidationError(path, _RULE)
    parts = match.groupdict()
    fraction = parts["fraction"] or ""
    micro = int((fraction + "000000")[:6]) if fraction else 0
    try:
        naive = datetime(
            int(parts["year"]),
            int(parts["month"]),
            int(parts["day"]),
            int(parts["hour"] or 0),
            int(parts["minute"] or 0),
            int(parts["second"] or 0),
            micro,
        )
    except ValueError as exc:
        raise ValidationError(path, f"{_RULE}; {exc}") from None
    offset = parts["offset"]
    try:
        if offset is None:
            return naive.replace(tzinfo=UTC) if tz is None else to_utc_from_wall(naive, tz)
        if offset in ("Z", "z"):
            return naive.replace(tzinfo=UTC)
        sign = -1 if offset[0] == "-" else 1
        digits = offset[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:] or 0)
        if hours > 23 or minutes > 59:
            raise ValidationError(path, f"{_RULE}; the UTC offset {offset} is out of range")
        delta = timedelta(hours=hours, minutes=minutes) * sign
        return naive.replace(tzinfo=timezone(delta)).astimezone(UTC)
    except OverflowError:
        raise ValidationError(path, f"{_RULE}; the instant is out of range") from None


def to_utc_from_wall(naive: datetime, tz: tzinfo) -> datetime:
    """The UTC instant of a wall-clock time in ``tz`` (first instance of a repeated time)."""
    return naive.replace(tzinfo=tz, fold=0).astimezone(UTC)


def format_instant(dt: datetime) -> str:
    """``2024-01-31T06:00:00Z``; fractional seconds appear only when non-zero (trailing zeros trimmed)."""
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError("format_instant needs an aware datetime")
    utc = dt.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.year < 1000:
        text = f"{utc.year:04d}{text[len(str(utc.year)) :]}"
    if utc.microsecond:
        text += f".{utc.microsecond:06d}".rstrip("0")
    return text + "Z"
