"""IANA and Windows time zone names."""

from __future__ import annotations

from datetime import UTC
from zoneinfo import ZoneInfo

import pytest

from scheduler_core.timezones import UnknownTimeZoneError, resolve_time_zone


@pytest.mark.parametrize(
    ("name", "canonical", "iana"),
    [
        ("Europe/Berlin", "Europe/Berlin", "Europe/Berlin"),
        ("europe/berlin", "Europe/Berlin", "Europe/Berlin"),
        ("W. Europe Standard Time", "W. Europe Standard Time", "Europe/Berlin"),
        ("eastern standard time", "Eastern Standard Time", "America/New_York"),
        ("Tokyo Standard Time", "Tokyo Standard Time", "Asia/Tokyo"),
        ("India Standard Time", "India Standard Time", "Asia/Calcutta"),
    ],
)
def test_resolves_iana_and_windows_names(name: str, canonical: str, iana: str) -> None:
    resolved = resolve_time_zone(name)
    assert resolved.name == canonical
    assert resolved.iana == iana
    assert resolved.zone == ZoneInfo(iana)


@pytest.mark.parametrize("name", ["UTC", "utc", "Etc/UTC"])
def test_utc_is_the_fast_fixed_zone(name: str) -> None:
    assert resolve_time_zone(name).zone is UTC


@pytest.mark.parametrize("name", ["", "Mars/Olympus_Mons", "Berlin", "../etc/passwd", "W. Europe"])
def test_unknown_names(name: str) -> None:
    with pytest.raises(UnknownTimeZoneError):
        resolve_time_zone(name)
