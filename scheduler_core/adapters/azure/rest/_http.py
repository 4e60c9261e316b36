"""Kept-alive HTTP connections to one storage endpoint, shared by every thread of an instance.

A call takes an idle connection (one the server closed meanwhile is dropped first), sends one request,
reads the whole answer and gives the connection back unless the answer closes it. Failures leave as
azure-core's errors, as its transport raises them, so that the retry rules (:mod:`._retry`) read them the same
way: :class:`~azure.core.exceptions.ServiceRequestError` when no connection could be opened (the request did not
reach the service), :class:`~azure.core.exceptions.ServiceResponseError` when it broke or timed out after the
request was sent.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
from dataclasses import dataclass
from email.utils import formatdate

from azure.core.exceptions import ServiceRequestError, ServiceResponseError

#: Idle connections kept per endpoint (as many as an instance's queue workers and HTTP threads may use at once).
MAX_IDLE = 64


@dataclass(frozen=True)
class Answer:
    """One HTTP answer, read whole: the status, the headers (names lower-cased) and the body."""

    status: int
    reason: str
    headers: dict[str, str]
    body: bytes


def http_date() -> str:
    """Now, as an HTTP date (the ``x-ms-date`` header)."""
    return formatdate(usegmt=True)


class Connections:
    """The connections to ``scheme://host:port``; ``connect_timeout`` and ``read_timeout`` (seconds) bound every
    call unless the call names its own. ``tls``: how an HTTPS endpoint is verified (None: the system's CAs)."""

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
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._tls = (tls or ssl.create_default_context()) if scheme == "https" else None

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
        connection = self._take(connect_timeout or self.connect_timeout)
        try:
            assert connection.sock is not None
            connection.sock.settimeout(read_timeout or self.read_timeout)
            connection.request(method, target, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise ServiceResponseError(f"{type(error).__name__}: {error}", error=error) from error
        answer = Answer(response.status, response.reason, {k.lower(): v for k, v in response.getheaders()}, data)
        if response.will_close:
            connection.close()
        else:
            self._give_back(connection)
        return answer

    def _take(self, timeout: float) -> http.client.HTTPConnection:
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self._open(timeout)
            if not _dropped(connection):
                return connection
            connection.close()

    def _open(self, timeout: float) -> http.client.HTTPConnection:
        connection: http.client.HTTPConnection
        if self._tls is not None:
            connection = http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self._tls)
        else:
            connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            connection.connect()
            assert connection.sock is not None
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as error:
            connection.close()
            raise ServiceRequestError(f"{type(error).__name__}: {error}", error=error) from error
        return connection

    def _give_back(self, connection: http.client.HTTPConnection) -> None:
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


def _dropped(connection: http.client.HTTPConnection) -> bool:
    """Whether an idle connection was closed by the server (or holds bytes nobody asked for): readable while
    idle means either."""
    sock = connection.sock
    if sock is None:
        return True
    try:
        if hasattr(select, "poll"):  # any descriptor number (select() stops at 1,024)
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)
