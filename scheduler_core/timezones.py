"""Time zone names: IANA (``Europe/Berlin``) and Windows (``W. Europe Standard Time``).

Logic Apps accepts Windows zone names in ``recurrence.timeZone``; so do we. Windows names are mapped to
IANA names with the CLDR table shipped in ``tzlocal.windows_tz``. Both kinds of name are matched without
regard to case; :func:`resolve_time_zone` returns the canonical spelling together with the zone.
"""

from __future__ import annotations

import functools
import zoneinfo
from datetime import UTC, tzinfo

from tzlocal.windows_tz import win_tz

__all__ = ["ResolvedTimeZone", "UnknownTimeZoneError", "resolve_time_zone"]


class UnknownTimeZoneError(LookupError):
    """The name is neither an IANA time zone nor a Windows time zone name."""


class ResolvedTimeZone:
    """A resolved zone: ``name`` is the canonical spelling of what the user wrote, ``iana`` the IANA key."""

    __slots__ = ("iana", "name", "zone")

    def __init__(self, name: str, iana: str, zone: tzinfo) -> None:
        self.name = name
        self.iana = iana
        self.zone = zone

    def __repr__(self) -> str:
        return f"ResolvedTimeZone(name={self.name!r}, iana={self.iana!r})"


@functools.cache
def _iana_names() -> dict[str, str]:
    names = {name.lower(): name for name in zoneinfo.available_timezones()}
    names.setdefault("utc", "UTC")
    return names


@functools.cache
def _windows_names() -> dict[str, tuple[str, str]]:
    return {name.lower(): (name, iana) for name, iana in win_tz.items()}


@functools.lru_cache(maxsize=1024)
def resolve_time_zone(name: str) -> ResolvedTimeZone:
    """Resolve an IANA or Windows zone name (any casing). Raises :class:`UnknownTimeZoneError`."""
    key = name.strip().lower()
    if not key:
        raise UnknownTimeZoneError(name)
    if key in ("utc", "etc/utc", "z"):
        return ResolvedTimeZone("UTC", "UTC", UTC)
    windows = _windows_names().get(key)
    if windows is not None:
        canonical, iana = windows
        return ResolvedTimeZone(canonical, iana, _zone(iana))
    iana_name = _iana_names().get(key)
    if iana_name is None:
        raise UnknownTimeZoneError(name)
    return ResolvedTimeZone(iana_name, iana_name, _zone(iana_name))


def _zone(iana: str) -> tzinfo:
    if iana in ("UTC", "Etc/UTC"):
        return UTC
    return zoneinfo.ZoneInfo(iana)
