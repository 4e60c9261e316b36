"""The ports the local host listens on, checked before anything starts.

``make run`` needs one HTTP port (``PORT``) and three for Azurite (``AZURITE_PORTS``). Each is tried with a
real bind before Azurite starts or a setting is written, so a busy port is one line naming the port, what it
was for and a free one to choose instead, not a traceback after the start-up work.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterable

from scheduler_core.errors import ConfigurationError

#: Where :func:`suggest_azurite_ports` starts looking for three free ports in a row (away from the defaults).
AZURITE_SUGGESTION_BASE = 20000


class PortInUseError(ConfigurationError):
    """A port the local host or its Azurite needs is taken. ``service`` says what it was for."""

    def __init__(self, port: int, service: str, host: str = "127.0.0.1", reason: str = "is already in use") -> None:
        super().__init__(f"port {port} on {host} ({service}) {reason}")
        self.port = port
        self.service = service
        self.host = host


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def bind_listener(host: str, port: int, service: str, backlog: int = 128) -> socket.socket:
    """A listening socket on ``host:port`` (``SO_REUSEADDR``, as every server here); a busy port raises
    :class:`PortInUseError`, another refusal (a privileged port, an address this machine does not have) a
    :class:`ConfigurationError` naming it."""
    if not 0 <= port <= 65535:
        raise ConfigurationError(f"port {port} ({service}) is not a TCP port (0 to 65535)")
    try:
        return socket.create_server((host, port), family=_family(host), backlog=backlog)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise PortInUseError(port, service, host) from None
        raise ConfigurationError(f"cannot listen on {host} port {port} ({service}): {exc.strerror or exc}") from None


def ensure_free(host: str, port: int, service: str) -> None:
    """Raise as :func:`bind_listener` does unless ``host:port`` can be listened on right now."""
    bind_listener(host, port, service, backlog=1).close()


def is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether ``host:port`` can be listened on right now."""
    try:
        ensure_free(host, port, "probe")
    except ConfigurationError:
        return False
    return True


def suggest_port(busy: int, avoid: Iterable[int] = (), host: str = "127.0.0.1") -> int:
    """A free port to offer instead of ``busy``: the next free one above it, else any free one."""
    skip = set(avoid)
    for candidate in range(busy + 1, min(busy + 100, 65536)):
        if candidate not in skip and is_free(candidate, host):
            return candidate
    with socket.create_server((host, 0), family=_family(host)) as sock:
        return int(sock.getsockname()[1])


def suggest_azurite_ports(avoid: Iterable[int] = (), host: str = "127.0.0.1") -> tuple[int, int, int]:
    """Three free ports in a row to offer for Azurite's blob, queue and table services."""
    skip = set(avoid)
    for base in range(AZURITE_SUGGESTION_BASE, 65533, 10):
        trio = (base, base + 1, base + 2)
        if not skip.intersection(trio) and all(is_free(p, host) for p in trio):
            return trio
    raise ConfigurationError("no three free ports in a row were found for Azurite")
