"""A test guard: name resolution of anything but loopback fails and is recorded, so a test that judges
hosts such as ``evil.example.com`` or ``10.0.0.4`` can show nothing was even looked up, and nothing can leave
the machine if the code under test regresses. A test helper, never product code."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every host name looked up while the test runs; anything not loopback fails with ``gaierror``."""
    asked: list[str] = []
    real = socket.getaddrinfo

    def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
        text = host.decode() if isinstance(host, bytes) else str(host)
        asked.append(text)
        if not _loopback(text):
            raise socket.gaierror(socket.EAI_NONAME, f"test guard: '{text}' is not looked up (loopback only)")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    return asked
