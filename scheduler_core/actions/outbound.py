"""Where outbound calls may go. Cloud metadata endpoints are refused unless explicitly allowed.

A scheduler calls URLs its users give it; pointed at the instance metadata service it would hand out the
function app's own identity tokens. Every address a host name resolves to is checked before the call.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

#: Instance metadata services of the clouds (Azure, AWS, GCP, Oracle, Alibaba) and link-local space.
BLOCKED_NETWORKS = tuple(
    ipaddress.ip_network(net) for net in ("169.254.0.0/16", "fd00:ec2::254/128", "100.100.100.200/32", "fe80::/10")
)
BLOCKED_HOSTS = frozenset({"metadata.google.internal", "metadata.azure.com", "metadata"})


class OutboundRefused(Exception):
    """The target address is not allowed by the outbound policy."""


@dataclass(frozen=True)
class OutboundPolicy:
    allow_metadata_endpoints: bool = False

    def check_host(self, host: str) -> None:
        """Raise :class:`OutboundRefused` if ``host`` is, or resolves to, a metadata endpoint."""
        if self.allow_metadata_endpoints:
            return
        name = host.strip("[]").rstrip(".").lower()
        if name in BLOCKED_HOSTS:
            raise OutboundRefused(f"calls to '{host}' (a cloud metadata endpoint) are not allowed")
        try:
            infos = socket.getaddrinfo(name, None)
        except socket.gaierror:
            return  # unresolvable: the call itself will fail with a clear error
        for info in infos:
            address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
            if any(address in network for network in BLOCKED_NETWORKS):
                raise OutboundRefused(f"calls to '{host}' ({address}, link-local/metadata) are not allowed")
