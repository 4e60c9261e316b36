"""Kept-alive HTTP/1.1 connections to one storage endpoint, shared by every thread of an instance.

A call takes an idle connection (one the server closed meanwhile is dropped first), sends one request,
reads the whole answer and gives the connection back unless the answer closes it. The exchange is HTTP/1.1 as
the storage services speak it: a request with ``Content-Length``, an answer with ``Content-Length`` or
``chunked`` (or none, ending with the connection), read here directly from the socket: ``http.client`` parses
an answer's headers through the ``email`` package, which cost more CPU than the rest of a storage call.

Failures leave as azure-core's errors, as its transport raises them, so that the retry rules (:mod:`._retry`)
read them the same way: :class:`~azure.core.exceptions.ServiceRequestError` when no connection could be opened
(the request did not reach the service), :class:`~azure.core.exceptions.ServiceResponseError` when it broke,
timed out or answered something that is not HTTP after the request was sent.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
from dataclasses import dataclass
from email.utils import formatdate
from typing import BinaryIO

import certifi
from azure.core.exceptions import ServiceRequestError, ServiceResponseError

#: Idle connections kept per endpoint (as many as an instance's queue workers and HTTP threads may use at once).
MAX_IDLE = 64
#: The longest status or header line read, and the most header lines (a storage answer has about a dozen).
MAX_LINE = 65536
MAX_HEADERS = 200
#: Methods whose request always states its length (``Content-Length: 0`` without a body), as ``http.client``.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "MERGE"})


@dataclass(frozen=True)
class Answer:
    """One HTTP answer, read whole: the status, the headers (names lower-cased) and the body."""

    status: int
    reason: str
    headers: dict[str, str]
    body: bytes


class BadAnswer(Exception):
    """What came back is not an HTTP/1.x answer this client reads."""


def http_date() -> str:
    """Now, as an HTTP date (the ``x-ms-date`` header)."""
    return formatdate(usegmt=True)


class _Connection:
    """One socket, with a buffered reader of what it receives."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader: BinaryIO = sock.makefile("rb")

    def close(self) -> None:
        for part in (self.reader, self.sock):
            with contextlib.suppress(OSError):
                part.close()


class Connections:
    """The connections to ``scheme://host:port``; ``connect_timeout`` and ``read_timeout`` (seconds) bound every
    call unless the call names its own. ``tls``: how an HTTPS endpoint is verified (None: certifi's CAs, as the
    SDK's ``requests`` transport verifies storage)."""

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int,
        connect_timeout: float,
        read_timeout: float,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.scheme, self.host, self.port = scheme, host, port
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        default = 443 if scheme == "https" else 80
        name = f"[{host}]" if ":" in host else host
        self._host_header = name if port == default else f"{name}:{port}"
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self._tls = (tls or ssl.create_default_context(cafile=certifi.where())) if scheme == "https" else None

    def request(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes | None = None,
        *,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
    ) -> Answer:
        """Send ``method target`` (path and query) and read the answer whole."""
        head = _head(method, target, self._host_header, headers, body)
        connection = self._take(connect_timeout or self.connect_timeout)
        try:
            connection.sock.settimeout(read_timeout or self.read_timeout)
            connection.sock.sendall(head + body if body else head)
            answer, keep = _read(connection.reader, method)
        except (OSError, BadAnswer, ValueError) as error:
            connection.close()
            raise ServiceResponseError(f"{type(error).__name__}: {error}", error=error) from error
        if keep:
            self._give_back(connection)
        else:
            connection.close()
        return answer

    def _take(self, timeout: float) -> _Connection:
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self._open(timeout)
            if not _dropped(connection.sock):
                return connection
            connection.close()

    def _open(self, timeout: float) -> _Connection:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=timeout)
        except OSError as error:
            raise ServiceRequestError(f"{type(error).__name__}: {error}", error=error) from error
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_hostname=self.host)
        except OSError as error:
            sock.close()
            raise ServiceRequestError(f"{type(error).__name__}: {error}", error=error) from error
        return _Connection(sock)

    def _give_back(self, connection: _Connection) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE:
                self._idle.append(connection)
                return
        connection.close()

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


def _head(method: str, target: str, host: str, headers: dict[str, str], body: bytes | None) -> bytes:
    """The request line and headers; a header value holding a line break is refused (it would start a header
    of its own)."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Accept-Encoding: identity"]
    for name, value in headers.items():
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
            raise ValueError(f"header {name!r} holds a line break")
        lines.append(f"{name}: {value}")
    if body is not None or method in _BODY_METHODS:
        lines.append(f"Content-Length: {len(body or b'')}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _read(reader: BinaryIO, method: str) -> tuple[Answer, bool]:
    """One answer (interim 1xx answers skipped) and whether the connection may be used again."""
    while True:
        line = reader.readline(MAX_LINE + 1)
        if not line:
            raise BadAnswer("the connection closed before an answer")
        version, _, rest = line.decode("latin-1").rstrip("\r\n").partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise BadAnswer(f"not an HTTP answer: {line[:40]!r}")
        status = int(code)
        headers = _headers(reader)
        if not 100 <= status < 200:
            break
    keep = headers.get("connection", "").lower() != "close" and version != "HTTP/1.0"
    if method == "HEAD" or status in (204, 304):
        return Answer(status, reason, headers, b""), keep
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return Answer(status, reason, headers, _chunks(reader)), keep
    length = headers.get("content-length")
    if length is None:
        return Answer(status, reason, headers, reader.read()), False
    size = int(length)
    body = reader.read(size) if size else b""
    if len(body) != size:
        raise BadAnswer(f"the answer ended after {len(body)} of {size} bytes")
    return Answer(status, reason, headers, body), keep


def _headers(reader: BinaryIO) -> dict[str, str]:
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADERS):
        line = reader.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise BadAnswer("a header line too long")
        if line in (b"\r\n", b"\n", b""):
            return headers
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep:
            raise BadAnswer(f"not a header: {line[:40]!r}")
        key, value = name.strip().lower(), value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    raise BadAnswer("too many headers")


def _chunks(reader: BinaryIO) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = reader.readline(MAX_LINE + 1)
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise BadAnswer(f"not a chunk size: {size_line[:40]!r}") from None
        if size == 0:
            _headers(reader)  # trailers, if any, and the blank line
            return b"".join(parts)
        chunk = reader.read(size)
        if len(chunk) != size or reader.readline(3) not in (b"\r\n", b"\n"):
            raise BadAnswer("a chunk ended early")
        parts.append(chunk)


def _dropped(sock: socket.socket) -> bool:
    """Whether an idle connection was closed by the server (or holds bytes nobody asked for): readable while
    idle means either."""
    try:
        if hasattr(select, "poll"):  # any descriptor number (select() stops at 1,024)
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)
