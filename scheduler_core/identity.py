"""Where the function app's own identity may go: :class:`IdentityScope`, the hosts that identity may ever
be presented to (the credential itself is built by ``scheduler_core.adapters.azure.credentials``).

The rule: a Storage queue action without ``sasToken`` and a Service Bus action without ``sasKey``
authenticate as the function app, whose token opens every queue and namespace the app has a role on. So
that token goes only to hosts under the configured endpoints: the DNS suffix of
``SCHEDULER_STORAGE_QUEUE_ENDPOINT`` / ``SCHEDULER_SERVICE_BUS_ENDPOINT`` (public cloud by default; a
sovereign cloud's suffix by setting), or the host of a URL template set there (a local emulator), plus
the hosts and suffixes listed in ``SCHEDULER_IDENTITY_ALLOWED_HOSTS``. Anything else (a namespace written
as ``evil.example.com``, ``169.254.169.254``, ``10.0.0.4``) is refused: with a 400 naming the field when
the job is written, and again, without connecting, when it runs. A job's own SAS key or token may go to
the host the job names; only the app's identity is restricted.

This module imports no Azure SDK (the definitions layer uses :class:`IdentityScope`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scheduler_core.endpoints import (
    DEFAULT_SERVICE_BUS_ENDPOINT,
    DEFAULT_STORAGE_QUEUE_ENDPOINT,
    account_url,
    host_name,
    namespace_endpoint,
)

if TYPE_CHECKING:
    from scheduler_core.settings import Settings

__all__ = ["HostRule", "IdentityScope", "normal_host"]


# ------------------------------------------------------------------------------ where it may go


def normal_host(host: str) -> str:
    """A host name or address as compared: lower-case, no brackets, no trailing dot, no ``*.``."""
    text = host.strip().lower()
    if text.startswith("*."):
        text = text[2:]
    return text.strip(".").strip("[]").rstrip(".")


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class HostRule:
    """Hosts allowed exactly (``exact``), and hosts strictly under a DNS suffix (``suffixes``: a host
    ``x.suffix`` matches, ``suffix`` itself does not). An IP address never matches a suffix."""

    exact: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()

    def allows(self, host: str) -> bool:
        name = normal_host(host)
        if not name:
            return False
        if name in self.exact:
            return True
        if _is_address(name):
            return False
        return any(name.endswith("." + suffix) for suffix in self.suffixes)

    def describe(self) -> str:
        parts = [f"*.{suffix}" for suffix in self.suffixes] + sorted(self.exact)
        return ", ".join(parts) if parts else "no host"

    @classmethod
    def from_endpoint(cls, setting: str, placeholder: str, extra: Iterable[str] = ()) -> HostRule:
        """The hosts an endpoint setting points at: under its DNS suffix; for a URL template, its host
        (without a placeholder), or the suffix after the placeholder (``{namespace}.example.net``);
        plus ``extra`` entries (each a host, matched exactly, and for names also as a DNS suffix)."""
        exact: set[str] = set()
        suffixes: list[str] = []
        text = setting.strip()
        if "://" not in text:
            if text.strip("."):
                suffixes.append(normal_host(text))
        else:
            netloc = urlsplit(text).netloc.rsplit("@", 1)[-1]
            if placeholder.lower() not in netloc.lower():
                if host_name(netloc):
                    exact.add(normal_host(host_name(netloc)))
            else:
                host = netloc.lower().split(placeholder.lower())[-1]
                host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
                if host.startswith(".") and host.strip("."):
                    suffixes.append(normal_host(host))
        for entry in extra:
            name = normal_host(entry)
            if not name:
                continue
            exact.add(name)
            if not _is_address(name):
                suffixes.append(name)
        return cls(frozenset(exact), tuple(dict.fromkeys(suffixes)))


@dataclass(frozen=True)
class IdentityScope:
    """Where the app's own identity may be presented, for each action type that can use it."""

    service_bus_endpoint: str = DEFAULT_SERVICE_BUS_ENDPOINT
    storage_queue_endpoint: str = DEFAULT_STORAGE_QUEUE_ENDPOINT
    extra_hosts: tuple[str, ...] = ()
    service_bus: HostRule = field(init=False, repr=False, compare=False)
    storage_queue: HostRule = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        sb = HostRule.from_endpoint(self.service_bus_endpoint, "{namespace}", self.extra_hosts)
        sq = HostRule.from_endpoint(self.storage_queue_endpoint, "{account}", self.extra_hosts)
        object.__setattr__(self, "service_bus", sb)
        object.__setattr__(self, "storage_queue", sq)

    @classmethod
    def from_settings(cls, config: Settings) -> IdentityScope:
        return cls(config.service_bus_endpoint, config.storage_queue_endpoint, config.identity_allowed_hosts)

    def service_bus_host(self, namespace: str) -> str:
        return namespace_endpoint(self.service_bus_endpoint, namespace).hostname

    def storage_queue_host(self, account: str) -> str:
        try:
            return (urlsplit(account_url(self.storage_queue_endpoint, account)).hostname or "").rstrip(".")
        except ValueError:
            return ""

    def service_bus_refusal(self, host: str) -> str | None:
        """Why the app's identity may not go to Service Bus host ``host`` (``None``: it may)."""
        if self.service_bus.allows(host):
            return None
        return (
            "the function app's identity is presented only to Service Bus hosts under "
            f"{self.service_bus.describe()} (settings SCHEDULER_SERVICE_BUS_ENDPOINT and "
            "SCHEDULER_IDENTITY_ALLOWED_HOSTS)"
        )

    def storage_queue_refusal(self, host: str) -> str | None:
        """Why the app's identity may not go to Storage queue host ``host`` (``None``: it may)."""
        if self.storage_queue.allows(host):
            return None
        return (
            "the function app's identity is presented only to Storage hosts under "
            f"{self.storage_queue.describe()} (settings SCHEDULER_STORAGE_QUEUE_ENDPOINT and "
            "SCHEDULER_IDENTITY_ALLOWED_HOSTS)"
        )
