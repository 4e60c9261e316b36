"""Where outbound calls may go, checked at the connection. Cloud metadata endpoints are refused unless allowed.

A scheduler calls URLs its users give it; pointed at the instance metadata service it would hand out the
function app's own identity tokens. So the check is made where the socket is opened, not on the URL:

- :class:`OutboundPolicy` says which addresses and host names are refused. An address is judged in its
  canonical form, so every spelling of it is judged alike: IPv4 in any form ``inet_aton`` accepts
  (``2852039166``, ``0xa9fea9fe``, ``0251.0376.0251.0376``, ``169.254.43518``), IPv6 in any form, and the
  IPv6 forms that carry an IPv4 address (IPv4-mapped ``::ffff:0:0/96``, IPv4-compatible ``::/96``, NAT64
  ``64:ff9b::/96`` and ``64:ff9b:1::/48``) unwrapped to that IPv4 address.
- :class:`GuardedAdapter` (a ``requests`` adapter) makes every connection of its pools through the policy:
  it resolves the host itself (through the policy's ``resolver``, a seam), refuses the connection if the
  name or any address it resolves to is refused, and connects to the checked address (an IPv4-mapped one
  over IPv4), so nothing can change between the check and the connection (no DNS rebinding gap). TLS
  (SNI, certificate and host name checks) and the ``Host`` header stay on the name. Each redirect hop is a
  connection of its own, so it is checked the same way. Proxies are not used: a proxy would resolve and
  connect on our behalf, out of the check's reach.
- Endpoints (host and port): ``reserved`` ones are refused to every action (the platform's managed identity
  endpoint, ``IDENTITY_ENDPOINT``, which is on loopback or link-local and hands out the app's tokens to
  whoever knows its header), and a policy with ``only`` set connects to nothing but those (the identity
  client's own policy: it reaches that endpoint and nothing else, whatever a response redirects to).
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util.timeout import _DEFAULT_TIMEOUT

from scheduler_core.actions.call import current as current_call

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: Instance metadata services and platform endpoints of the clouds, and link-local space: Azure IMDS, AWS,
#: GCP and Oracle (169.254.169.254, in 169.254.0.0/16), Azure's WireServer (168.63.129.16), Alibaba
#: (100.100.100.200), AWS over IPv6 (fd00:ec2::254) and IPv6 link-local (fe80::/10).
BLOCKED_NETWORKS = tuple(
    ipaddress.ip_network(net)
    for net in ("169.254.0.0/16", "168.63.129.16/32", "100.100.100.200/32", "fd00:ec2::254/128", "fe80::/10")
)
#: Host names of metadata services, refused whatever they resolve to (compared lower-case, without the
#: trailing dot).
BLOCKED_HOSTS = frozenset(
    {
        "metadata",
        "metadata.azure.com",
        "metadata.azure.internal",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
#: IPv6 prefixes whose last 32 bits are an IPv4 address the packets end up at (RFC 6052 / RFC 8215, with
#: the IPv4 address in the low 32 bits, as a /96 prefix places it).
NAT64_NETWORKS = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
#: A call follows at most this many redirects (each hop checked as its own connection).
MAX_REDIRECTS = 10

#: Resolves a host name to IP address strings (``getaddrinfo`` order); raises ``socket.gaierror``.
Resolver = Callable[[str], Sequence[str]]


def system_resolver(host: str) -> list[str]:
    """The system's resolver (``getaddrinfo``), addresses in its order without repeats."""
    seen: dict[str, None] = {}
    for info in socket.getaddrinfo(host, None, socket.AF_UNSPEC, socket.SOCK_STREAM):
        seen.setdefault(str(info[4][0]), None)
    return list(seen)


def literal_address(host: str) -> IPAddress | None:
    """The address ``host`` spells, if it is an IP literal: IPv6 (brackets and a zone allowed) or IPv4 in
    any form ``inet_aton`` (and so ``getaddrinfo``) accepts; ``None`` for a name."""
    text = host.strip().strip("[]").replace("%25", "%", 1)  # a zone in a URL is escaped (RFC 6874)
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    text = text[:-1] if text.endswith(".") else text
    if not text or ":" in text or any(c.isspace() for c in text):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except OSError:
        return None


def spelling(address: IPAddress) -> str:
    """``address`` as text, the same on every Python: an IPv4-mapped IPv6 address as ``::ffff:a.b.c.d``
    (Python 3.13 writes it so, earlier versions as ``::ffff:a9fe:a9fe``)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        zone = f"%{address.scope_id}" if address.scope_id else ""
        return f"::ffff:{address.ipv4_mapped}{zone}"
    return str(address)


def canonical(address: IPAddress) -> IPAddress:
    """One form per destination: no IPv6 zone, and IPv4-mapped, IPv4-compatible and NAT64 addresses
    unwrapped to their IPv4 address."""
    if isinstance(address, ipaddress.IPv4Address):
        return address
    plain = ipaddress.IPv6Address(int(address))
    if plain.ipv4_mapped is not None:
        return plain.ipv4_mapped
    value = int(plain)
    if value >> 32 == 0 and value > 1:  # ::a.b.c.d (but not :: or ::1)
        return ipaddress.IPv4Address(value)
    if any(plain in network for network in NAT64_NETWORKS):
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return plain


def host_name(host: str) -> str:
    """A host name as compared with :data:`BLOCKED_HOSTS`."""
    return host.strip().strip("[]").rstrip(".").lower()


#: A host and a port: the host's canonical address as text when it is an IP literal, else its name as
#: :func:`host_name` gives it.
Endpoint = tuple[str, int]


def endpoint(host: str, port: int) -> Endpoint:
    """``host``:``port`` as :attr:`OutboundPolicy.reserved` and :attr:`OutboundPolicy.only` hold it."""
    literal = literal_address(host)
    return (str(canonical(literal)) if literal is not None else host_name(host), port)


class OutboundRefused(Exception):
    """The target is not allowed by the outbound policy. The message names the host and the address."""

    def __init__(self, message: str, host: str = "", address: str = "") -> None:
        super().__init__(message)
        self.host = host
        self.address = address


@dataclass(frozen=True)
class OutboundPolicy:
    """Which hosts and addresses outbound calls may reach. Loopback and private addresses are allowed;
    metadata endpoints (:data:`BLOCKED_NETWORKS`, :data:`BLOCKED_HOSTS`) are refused unless
    ``allow_metadata_endpoints`` (setting ``SCHEDULER_ALLOW_METADATA_ENDPOINTS``). ``resolver`` is the seam
    that turns names into addresses (the system resolver by default)."""

    allow_metadata_endpoints: bool = False
    resolver: Resolver = field(default=system_resolver, compare=False, repr=False)
    #: Endpoints no action may connect to (see :func:`endpoint`), unless ``allow_metadata_endpoints``.
    reserved: frozenset[Endpoint] = frozenset()
    #: When set, the only endpoints a connection may go to (see :func:`endpoint`).
    only: frozenset[Endpoint] | None = None

    def refused(self, address: IPAddress) -> bool:
        """Whether a connection to ``address`` (in any spelling) is refused."""
        if self.allow_metadata_endpoints:
            return False
        judged = canonical(address)
        return any(judged.version == net.version and judged in net for net in BLOCKED_NETWORKS)

    def addresses(self, host: str) -> list[IPAddress]:
        """Every address a connection to ``host`` may use, in order, all of them allowed. Raises
        :class:`OutboundRefused` if the name is a metadata name or any address it resolves to is refused,
        ``socket.gaierror`` if it does not resolve."""
        literal = literal_address(host)
        if literal is not None:
            found = [literal]
        else:
            if not self.allow_metadata_endpoints and host_name(host) in BLOCKED_HOSTS:
                raise OutboundRefused(f"'{host}' is a cloud metadata host name", host)
            found = []
            for text in self.resolver(host.strip("[]")):
                resolved = literal_address(text)
                if resolved is None:
                    raise socket.gaierror(socket.EAI_FAIL, f"the resolver answered {text!r}, not an address")
                found.append(resolved)
            if not found:
                raise socket.gaierror(socket.EAI_NONAME, f"'{host}' has no address")
        for address in found:
            if self.refused(address):
                judged = canonical(address)
                spelled = str(judged) if judged == address else f"{spelling(address)} ({judged})"
                where = "is" if literal is not None else "resolves to"
                message = f"'{host}' {where} {spelled}, a cloud metadata or link-local address"
                raise OutboundRefused(message, host, str(judged))
        return found

    def check_host(self, host: str) -> None:
        """Raise :class:`OutboundRefused` if ``host`` is, or resolves to, a refused endpoint (a host that
        does not resolve passes: the call itself fails with a clear error)."""
        try:
            self.addresses(host)
        except socket.gaierror:
            return

    def check_endpoint(self, host: str, port: int, addresses: Sequence[IPAddress] = ()) -> None:
        """Raise :class:`OutboundRefused` if ``host``:``port`` is not one of :attr:`only` (when set), or is
        one of :attr:`reserved`, by its name or by any of ``addresses`` (what it resolved to)."""
        if self.only is not None and endpoint(host, port) not in self.only:
            raise OutboundRefused(f"'{host}' port {port} is not an endpoint this client may call", host)
        if self.allow_metadata_endpoints or not self.reserved:
            return
        keys = {endpoint(host, port)} | {(str(canonical(address)), port) for address in addresses}
        if keys & self.reserved:
            raise OutboundRefused(
                f"'{host}' port {port} is the platform's managed identity endpoint (IDENTITY_ENDPOINT), "
                "which only the app's own identity client may call",
                host,
            )

    def socket_addresses(self, host: str, port: int) -> list[tuple[socket.AddressFamily, Any]]:
        """``(family, sockaddr)`` to connect to, each checked by :meth:`addresses` and the endpoint by
        :meth:`check_endpoint`; an IPv4-mapped address is connected to over IPv4 (where the kernel would send
        it anyway)."""
        if self.only is not None:
            self.check_endpoint(host, port)  # before any name is resolved
        found = self.addresses(host)
        self.check_endpoint(host, port, found)
        targets: list[tuple[socket.AddressFamily, Any]] = []
        for checked in found:
            mapped = checked.ipv4_mapped if isinstance(checked, ipaddress.IPv6Address) else None
            address = mapped or checked
            for info in socket.getaddrinfo(str(address), port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST):
                targets.append((info[0], info[4]))
        return targets

    @cached_property
    def pool_classes(self) -> dict[str, type[HTTPConnectionPool]]:
        """urllib3 pool classes whose connections go through this policy (for a ``PoolManager``)."""
        policy = self

        class Connection(_GuardedConnection, HTTPConnection):
            outbound_policy = policy

        class SecureConnection(_GuardedConnection, HTTPSConnection):
            outbound_policy = policy

        class Pool(HTTPConnectionPool):
            ConnectionCls = Connection

        class SecurePool(HTTPSConnectionPool):
            ConnectionCls = SecureConnection

        return {"http": Pool, "https": SecurePool}


class RefusedConnection(NewConnectionError):
    """urllib3's form of a refusal (so that pools and ``requests`` treat it as a failed connection)."""

    def __init__(self, conn: Any, refusal: OutboundRefused) -> None:
        super().__init__(conn, f"Refused by the outbound policy: {refusal}")
        self.refusal = refusal


class _GuardedConnection:
    """Mixed into urllib3's connection classes: ``_new_conn`` resolves and checks the host through
    ``outbound_policy`` and connects to a checked address (urllib3's own resolution is never used)."""

    outbound_policy: OutboundPolicy
    # provided by urllib3's HTTPConnection
    _dns_host: str
    host: str
    port: int
    timeout: Any
    source_address: tuple[str, int] | None
    socket_options: Any

    def connect(self) -> None:
        call = current_call()
        if call is not None:
            call.phase = f"connecting to '{self.host}'"
        super().connect()  # type: ignore[misc]
        if call is not None:
            call.phase = f"waiting for the answer's head from '{self.host}'"

    def _new_conn(self) -> socket.socket:
        call = current_call()
        timeout = self.timeout
        if call is not None and isinstance(timeout, int | float):
            timeout = min(timeout, max(call.remaining(), 0.001))
        host, port, policy = self._dns_host, self.port, self.outbound_policy
        try:
            if call is not None and literal_address(host) is None:  # a lookup: bounded by the call's deadline
                targets = call.within(lambda: policy.socket_addresses(host, port), f"looking up '{self.host}'")
            else:
                targets = policy.socket_addresses(host, port)
        except TimeoutError:
            raise ConnectTimeoutError(self, f"Looking up {self.host} ran out of the call's deadline") from None
        except OutboundRefused as refusal:
            raise RefusedConnection(self, refusal) from None
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc  # type: ignore[arg-type]
        error: OSError | None = None
        for family, sockaddr in targets:
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                for option in self.socket_options or ():
                    sock.setsockopt(*option)
                if timeout is not _DEFAULT_TIMEOUT:
                    sock.settimeout(timeout)
                if self.source_address:
                    sock.bind(self.source_address)
                if call is not None:
                    call.watch(sock)  # from here on, the deadline shuts it down
                sock.connect(sockaddr)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            sys.audit("http.client.connect", self, self.host, self.port)
            return sock
        if isinstance(error, TimeoutError):
            raise ConnectTimeoutError(self, f"Connection to {self.host} timed out. (connect timeout={self.timeout})")
        raise NewConnectionError(self, f"Failed to establish a new connection: {error}")  # type: ignore[arg-type]


def refusal_in(exc: BaseException) -> OutboundRefused | None:
    """The policy refusal behind an exception that ``requests``/urllib3 wrapped around it, if any."""
    pending: list[Any] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OutboundRefused):
            return current
        if isinstance(current, RefusedConnection):
            return current.refusal
        if isinstance(current, BaseException):
            pending.extend([current.__cause__, current.__context__, getattr(current, "reason", None)])
            pending.extend(arg for arg in current.args if isinstance(arg, BaseException))
    return None


class GuardedAdapter(HTTPAdapter):
    """A ``requests`` adapter whose every connection is checked by ``policy`` (see the module). A refusal
    is raised as :class:`OutboundRefused`. ``ssl_context`` (optional) is used for every TLS connection
    (a client certificate's context)."""

    def __init__(self, policy: OutboundPolicy, ssl_context: ssl.SSLContext | None = None) -> None:
        self.policy = policy
        self._ssl_context = ssl_context
        super().__init__()

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any) -> None:
        if self._ssl_context is not None:
            pool_kwargs["ssl_context"] = self._ssl_context
        super().init_poolmanager(connections, maxsize, block=block, **pool_kwargs)
        self.poolmanager.pool_classes_by_scheme = self.policy.pool_classes

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Any = None,
    ) -> requests.Response:
        call = current_call()
        if call is not None:
            # the host this hop's connection is made to, by requests' own reading of the prepared URL
            host = str(self.build_connection_pool_key_attributes(request, verify, cert)[0].get("host") or "")
            call.hops.append(host)
            call.phase = f"waiting for the answer's head from '{host}'"
            bound = call.credentials_host
            if bound is not None and host_name(host) != bound and "Authorization" in request.headers:
                raise OutboundRefused(
                    f"the request's credentials were made for '{bound}' and would have gone to '{host}'", host
                )
        try:
            # no proxy: the connection must be to the address the policy checked
            return super().send(request, stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=None)
        except requests.ConnectionError as exc:
            refusal = refusal_in(exc)
            if refusal is not None:
                raise refusal from exc
            raise


def guard_session(
    session: requests.Session, policy: OutboundPolicy, ssl_context: ssl.SSLContext | None = None
) -> requests.Session:
    """Mount a :class:`GuardedAdapter` on ``session`` for http and https, and bound its redirects."""
    adapter = GuardedAdapter(policy, ssl_context)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.max_redirects = MAX_REDIRECTS
    return session


def guarded_session(policy: OutboundPolicy, ssl_context: ssl.SSLContext | None = None) -> requests.Session:
    """A new ``requests`` session whose every connection is checked by ``policy``."""
    return guard_session(requests.Session(), policy, ssl_context)
