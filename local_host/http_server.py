"""The HTTP side of the local host: serves the app's HTTP triggers, bounded in memory, time and threads.

One reactor thread accepts connections and reads request heads from every open connection without
blocking (selectors), so idle, slow or half-open connections cost a file descriptor, not a thread; a
connection that does not complete its head within ``header_timeout`` (or stays idle past
``keep_alive_timeout``) is closed. A complete head goes to a bounded pool of workers
(``max_concurrent_requests``); beyond ``max_outstanding_requests`` waiting requests the host answers 429,
as the Functions host does with host.json's ``extensions.http`` settings of the same names.

A worker checks the request before reading a byte of its body: the framing (``Content-Length`` or
``Transfer-Encoding: chunked``, never both or neither on a POST/PUT/PATCH), the route and the method
(404, 405 with ``Allow``), then the ``preflight`` (e.g. the API key of the management API, see
``host/preflight.py``) and the declared size (``max_body_bytes``, the Functions host's 100 MB by
default). Only then does it send ``100 Continue`` to a client that asked for it and read the body, within
``body_timeout``. Every request the host refuses is answered with an ARM error body
``{"error": {"code", "message"}}`` and the connection closed, or the connection is closed quietly (timeouts
of an idle connection, HTTP/0.9). The host's own answers carry the headers of every answer of the app
(``scheduler_core.triggers.answer_headers``: ``nosniff``, ``Cache-Control: no-store``), since some stand
in for the app's (the preflight's 401 and 413), and a 405 lists the route's methods in ``Allow``.

On Azure a method left out of a trigger's method list is a route constraint
(``HttpMethodRouteConstraint``, azure-functions-host ``WebScriptHostHttpRoutesManager``): the route does
not match and the host answers 404. Here such a request is a 405 with ``Allow`` (RFC 9110 §15.5.6). The
function app declares no method list, so every method reaches its functions on both hosts, and the app
answers a method it does not serve with its own 405 and ``Allow``.

At ``/`` a request no function serves gets the host's home page, as on Azure (``local_host/homepage.py``):
200 with a page, or 204 with ``AzureWebJobsDisableHomepage=true``, whatever the method. This app owns ``/``
with a function of its own (``scheduler_core/home.py``), so this answer is seen only by apps that do not.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import queue
import re
import selectors
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import azure.functions as func

from local_host.app_index import HttpFunction
from local_host.homepage import homepage_response, is_homepage_request
from local_host.hostjson import invocation_log
from local_host.ports import bind_listener
from local_host.routing import Router
from scheduler_core.triggers import answer_headers

log = logging.getLogger("local_host")

#: The methods a route with no method list accepts are not limited; these are what ``Allow`` lists for it.
STANDARD_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")
#: Methods whose requests carry a body: without Content-Length or chunked framing they are a 411.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_DIGITS = re.compile(r"[0-9]{1,19}")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?")
_MAX_CHUNK_LINE = 4096
_MAX_TRAILER_BYTES = 16 * 1024

_ERROR_CODES = {
    400: "BadRequest",
    404: "NotFound",
    405: "InvalidHttpVerb",
    408: "RequestTimeout",
    411: "LengthRequired",
    413: "RequestEntityTooLarge",
    414: "RequestUriTooLong",
    429: "TooManyRequests",
    431: "RequestHeaderFieldsTooLarge",
    500: "InternalError",
}


def invoke(handler: Any, *args: Any) -> Any:
    """Call a function handler, running it to completion if it is a coroutine function."""
    result = handler(*args)
    if inspect.isawaitable(result):
        return asyncio.run(_await(result))
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _error_body(status: int, message: str, code: str | None = None) -> str:
    """The ARM error body ``{"error": {"code", "message"}}``; the code by default from the status."""
    code = code or _ERROR_CODES.get(status, HTTPStatus(status).phrase.replace(" ", ""))
    return json.dumps({"error": {"code": code, "message": message}})


def arm_error(
    status: int, message: str, headers: Mapping[str, str] | None = None, code: str | None = None
) -> func.HttpResponse:
    """An ARM error response ``{"error": {"code", "message"}}`` with an ``x-ms-request-id`` and the headers of
    every answer (:func:`scheduler_core.triggers.answer_headers`)."""
    all_headers = answer_headers(status, {"x-ms-request-id": str(uuid.uuid4()), **(headers or {})})
    return func.HttpResponse(
        _error_body(status, message, code), status_code=status, mimetype="application/json", headers=all_headers
    )


def _raw_error(status: int, message: str) -> bytes:
    """A complete HTTP/1.1 error response that closes the connection (for the reactor, which has no handler)."""
    body = _error_body(status, message).encode()
    fields = "".join(f"{name}: {value}\r\n" for name, value in answer_headers(status, {}).items())
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: application/json\r\n{fields}"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


@dataclass(frozen=True)
class HttpLimits:
    """What one request and the whole server may take. Times are in seconds."""

    #: Largest request body (declared or, for chunked bodies, received): the Functions host's 100 MB.
    max_body_bytes: int = 100 * 1024 * 1024
    #: Largest request line plus headers (Kestrel allows 32 KB of headers).
    max_head_bytes: int = 64 * 1024
    #: From a request's first byte to the end of its headers.
    header_timeout: float = 15.0
    #: How long a connection may wait for its next request (a new connection: for its first byte).
    keep_alive_timeout: float = 60.0
    #: The whole body must arrive within this; also bounds each write of the response.
    body_timeout: float = 60.0
    #: Requests run at once (host.json ``extensions.http.maxConcurrentRequests``).
    max_concurrent_requests: int = 16
    #: Requests running or waiting for a worker before new ones get 429 (``maxOutstandingRequests``).
    max_outstanding_requests: int = 200
    #: Open connections (idle ones included); beyond this new connections are closed at once.
    max_connections: int = 1024
    #: After an early answer the host reads and drops what the client still sends for this long before
    #: closing, so that the client reads the answer instead of a connection reset.
    linger: float = 2.0
    #: ... and at most this many bytes.
    linger_bytes: int = 4 * 1024 * 1024


@dataclass(frozen=True)
class RequestHead:
    """What is known of a request before its body is read (what a :data:`Preflight` judges)."""

    function: str
    method: str
    target: str
    headers: Mapping[str, str]
    content_length: int | None  # None: chunked
    route_params: Mapping[str, str]


#: A check of a request before its body is read: a response to answer it with at once, or None to go on.
Preflight = Callable[[RequestHead], func.HttpResponse | None]


class _Refused(Exception):
    """A request the host answers itself, with an ARM error or its home page (and closes the connection)."""

    def __init__(
        self,
        status: int,
        message: str = "",
        headers: Mapping[str, str] | None = None,
        response: func.HttpResponse | None = None,
    ) -> None:
        super().__init__(message)
        self.response = response if response is not None else arm_error(status, message, headers)


class _Gone(Exception):
    """The client went away or was too slow: close without an answer (or after a best-effort 408)."""


class _SocketReader:
    """A blocking reader over a socket that starts with the bytes already received (the head)."""

    def __init__(self, sock: socket.socket, initial: bytes) -> None:
        self.sock = sock
        self.buffer = bytearray(initial)
        self.deadline: float | None = None

    def _fill(self) -> bool:
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("body timeout")
            self.sock.settimeout(remaining)
        data = self.sock.recv(65536)
        if not data:
            return False
        self.buffer += data
        return True

    def readline(self, limit: int = -1) -> bytes:
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0 and (limit < 0 or end < limit):
                line = bytes(self.buffer[: end + 1])
                del self.buffer[: end + 1]
                return line
            if limit >= 0 and len(self.buffer) >= limit:
                line = bytes(self.buffer[:limit])
                del self.buffer[:limit]
                return line
            if not self._fill():
                line = bytes(self.buffer)
                self.buffer.clear()
                return line

    def read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            if not self._fill():
                raise _Gone("the client closed the connection before sending the whole body")
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data


class _SocketWriter:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def write(self, data: bytes) -> int:
        self.sock.sendall(data)
        return len(data)

    def flush(self) -> None:
        pass


@dataclass
class _Connection:
    sock: socket.socket
    buffer: bytearray
    deadline: float
    idle: bool  # no byte of the next request yet
    lingering: bool = False
    dropped: int = 0  # bytes read and dropped while lingering


def _head_end(buffer: bytearray) -> int:
    """The index just past the blank line that ends a request head, or -1."""
    ends = [i + len(blank) for blank in (b"\r\n\r\n", b"\n\n") if (i := buffer.find(blank)) >= 0]
    return min(ends, default=-1)


class HttpHost:
    """Serves the HTTP triggers of one app on ``host:port`` until :meth:`stop`."""

    def __init__(
        self,
        functions: Iterable[HttpFunction],
        route_prefix: str,
        host: str,
        port: int,
        limits: HttpLimits | None = None,
        preflight: Preflight | None = None,
    ) -> None:
        self.router: Router[HttpFunction] = Router()
        self.limits = limits or HttpLimits()
        self.preflight = preflight
        prefix = route_prefix.strip("/")
        for function in functions:
            route = function.route.strip("/")
            self.router.add(f"{prefix}/{route}" if prefix else route, function)
        self._listener = bind_listener(host, port, "HTTP")  # a busy port is a PortInUseError, not a traceback
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._returns: queue.SimpleQueue[tuple[socket.socket, bytes, bool]] = queue.SimpleQueue()
        self._connections: dict[socket.socket, _Connection] = {}
        self._busy: set[socket.socket] = set()
        self._outstanding = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=self.limits.max_concurrent_requests, thread_name_prefix="http")
        self._thread: threading.Thread | None = None

    # --------------------------------------------------------------------------------------- lifecycle

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    @property
    def base_url(self) -> str:
        host = self._listener.getsockname()[0]
        return f"http://{host}:{self.port}"

    @property
    def open_connections(self) -> int:
        """Connections held open (waiting for a request, being served, or lingering). For tests."""
        with self._lock:
            return len(self._connections) + len(self._busy)

    def peers(self) -> set[tuple[str, int]]:
        """The client addresses of the connections held open (as :attr:`open_connections` counts them). For
        tests that wait until every connection of a client is closed."""
        with self._lock:
            socks = [*self._connections, *self._busy]
        addresses = set()
        for sock in socks:
            with contextlib.suppress(OSError):
                addresses.add(sock.getpeername()[:2])
        return addresses

    @property
    def worker_threads(self) -> int:
        """Threads of the worker pool (never more than ``max_concurrent_requests``). For tests."""
        return len(self._pool._threads)

    def start(self) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ, "accept")
        self._selector.register(self._wake_read, selectors.EVENT_READ, "wake")
        self._thread = threading.Thread(target=self._reactor, name="http-host", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=10)
        with self._lock:
            busy = list(self._busy)
        for sock in busy:  # unblock workers waiting on a client
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._pool.shutdown(wait=True, cancel_futures=True)
        for connection in list(self._connections.values()):
            self._close(connection.sock)
        for sock in (self._listener, self._wake_read, self._wake_write):
            sock.close()
        self._selector.close()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_write.send(b"x")

    # ----------------------------------------------------------------------------------------- reactor

    def _reactor(self) -> None:
        while not self._stopping.is_set():
            for key, _ in self._selector.select(timeout=0.25):
                if key.data == "accept":
                    self._accept()
                elif key.data == "wake":
                    with contextlib.suppress(BlockingIOError):
                        while self._wake_read.recv(4096):
                            pass
                    self._take_returns()
                else:
                    self._readable(key.fileobj)  # type: ignore[arg-type]
            self._expire(time.monotonic())

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. out of file descriptors: try again on the next event
                log.warning("http: accept failed (%s)", exc)
                return
            with self._lock:
                full = len(self._connections) + len(self._busy) >= self.limits.max_connections
            if full:
                sock.close()
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._watch(sock, b"", idle=True, timeout=self.limits.header_timeout)

    def _watch(self, sock: socket.socket, data: bytes, idle: bool, timeout: float) -> None:
        connection = _Connection(sock, bytearray(data), time.monotonic() + timeout, idle)
        with self._lock:
            self._connections[sock] = connection
        self._selector.register(sock, selectors.EVENT_READ, "connection")
        if data:
            self._check_head(connection)

    def _take_returns(self) -> None:
        while True:
            try:
                sock, leftover, linger = self._returns.get_nowait()
            except queue.Empty:
                return
            with self._lock:
                self._busy.discard(sock)
            if self._stopping.is_set():
                sock.close()
            elif linger:
                self._watch(sock, b"", idle=False, timeout=self.limits.linger)
                self._connections[sock].lingering = True
            else:
                sock.setblocking(False)
                self._watch(sock, leftover, idle=not leftover, timeout=self.limits.keep_alive_timeout)

    def _readable(self, sock: socket.socket) -> None:
        connection = self._connections.get(sock)
        if connection is None:
            return
        try:
            data = sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(sock)
            return
        if connection.lingering:  # read and dropped
            connection.dropped += len(data)
            if connection.dropped > self.limits.linger_bytes:
                self._close(sock)
            return
        if connection.idle:
            connection.idle = False
            connection.deadline = time.monotonic() + self.limits.header_timeout
        connection.buffer += data
        self._check_head(connection)

    def _check_head(self, connection: _Connection) -> None:
        buffer = connection.buffer
        while bytes(buffer[:1]) in (b"\r", b"\n"):  # empty lines before a request line are ignored (RFC 9112)
            del buffer[:1]
        end = _head_end(buffer)
        if (end if end >= 0 else len(buffer)) > self.limits.max_head_bytes:
            self._refuse(connection.sock, 431, f"the request head is larger than {self.limits.max_head_bytes} bytes")
            return
        if end < 0:
            return
        sock = connection.sock
        with self._lock:
            admitted = self._outstanding < self.limits.max_outstanding_requests
            if admitted:
                self._outstanding += 1
                del self._connections[sock]
                self._busy.add(sock)
        if not admitted:
            self._refuse(sock, 429, "the host is busy; retry later")
            return
        self._selector.unregister(sock)
        self._pool.submit(self._serve_connection, sock, bytes(buffer))

    def _refuse(self, sock: socket.socket, status: int, message: str) -> None:
        """Answer from the reactor (best effort, without blocking) and linger before closing."""
        log.info("function=- trigger=http -> %d (%s)", status, message)
        with contextlib.suppress(OSError):
            sock.send(_raw_error(status, message))
            sock.shutdown(socket.SHUT_WR)
        connection = self._connections.get(sock)
        if connection is None:
            sock.close()
            return
        connection.lingering = True
        connection.buffer.clear()
        connection.deadline = time.monotonic() + self.limits.linger

    def _expire(self, now: float) -> None:
        expired = [c for c in self._connections.values() if c.deadline <= now]
        for connection in expired:
            if connection.lingering or connection.idle:
                self._close(connection.sock)
            else:  # part of a head arrived, not the rest
                self._refuse(
                    connection.sock, 408, f"the request head did not arrive within {self.limits.header_timeout:g} s"
                )

    def _close(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections.pop(sock, None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(sock)
        sock.close()

    # ----------------------------------------------------------------------------------------- workers

    def _serve_connection(self, sock: socket.socket, head: bytes) -> None:
        keep: bool | None = False
        leftover = b""
        try:
            sock.setblocking(True)
            sock.settimeout(self.limits.body_timeout)
            exchange = _Exchange(self, sock, _SocketReader(sock, head))
            keep = exchange.run()
            leftover = bytes(exchange.reader.buffer)
        except Exception:  # never let a connection's failure take a worker down
            log.exception("http: connection failed")
            keep = False
        finally:
            with self._lock:
                self._outstanding -= 1
        if keep is None:  # answered early: linger, then close
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)
            sock.setblocking(False)
            self._returns.put((sock, b"", True))
            self._wake()
        elif keep and not self._stopping.is_set():
            self._returns.put((sock, leftover, False))
            self._wake()
        else:
            with self._lock:
                self._busy.discard(sock)
            sock.close()

    def route(self, method: str, target: str) -> tuple[HttpFunction, dict[str, str]]:
        """The function serving ``method target`` and its route parameters; else :class:`_Refused`: at ``/``
        the host's home page (``local_host/homepage.py``: 200, or 204 with ``AzureWebJobsDisableHomepage``),
        for any method, as the Functions host answers a request no function serves there; elsewhere 404
        when no route matches, 405 when no matching route accepts the method."""
        path = urlsplit(target).path
        matches = self.router.match(path)
        for function, route_params in matches:
            if not function.methods or method in function.methods:
                return function, route_params
        if is_homepage_request(path):
            answer = homepage_response()
            raise _Refused(answer.status_code, response=answer)
        if not matches:
            raise _Refused(404, f"no function serves the path '{path}'")
        allowed = sorted({m for function, _ in matches for m in (function.methods or STANDARD_METHODS)})
        raise _Refused(
            405, f"the method {method} is not allowed here; use {', '.join(allowed)}", {"Allow": ", ".join(allowed)}
        )

    def run_function(
        self,
        function: HttpFunction,
        route_params: dict[str, str],
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
    ) -> func.HttpResponse:
        parts = urlsplit(target)
        # Like ASP.NET Core, a repeated query parameter is joined with commas.
        params: dict[str, str] = {}
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            params[key] = f"{params[key]},{value}" if key in params else value
        request = func.HttpRequest(
            method=method,
            url=self.base_url + target,
            headers=headers,
            params=params,
            route_params=route_params,
            body=body,
        )
        response = invoke(function.handler, request)
        if not isinstance(response, func.HttpResponse):
            response = func.HttpResponse(status_code=204 if response is None else 200)
        return response


class _Exchange(BaseHTTPRequestHandler):
    """One request on a connection, parsed by the standard library's request-line and header parser.

    Built without the socketserver machinery: :meth:`run` serves one request and says whether the
    connection may carry another (True), must be closed (False) or lingered on then closed (None).
    """

    protocol_version = "HTTP/1.1"
    default_request_version = "HTTP/1.0"  # so that errors about a bad request line still get a status line
    server_version = "scheduler-local-host"

    def __init__(self, host: HttpHost, sock: socket.socket, reader: _SocketReader) -> None:
        self.host = host
        self.request = sock
        self.reader = reader
        self.rfile = reader  # type: ignore[assignment]  # the parser only calls readline
        self.wfile = _SocketWriter(sock)  # type: ignore[assignment]
        self.client_address = ("", 0)
        self.expect_continue = False
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle_expect_100(self) -> bool:
        self.expect_continue = True  # 100 Continue only once the request is accepted (see run)
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors found by the standard parser, as ARM errors (a 505 is a 400: it is the client's)."""
        status = 400 if code >= 500 else code
        self._respond(arm_error(status, message or HTTPStatus(code).phrase), close=True)

    def run(self) -> bool | None:
        started = time.perf_counter()
        self.raw_requestline = self.reader.readline(65537)
        if not self.parse_request():
            return None  # answered (send_error); the client may still be sending
        if self.request_version not in ("HTTP/1.0", "HTTP/1.1") or len(self.requestline.split()) != 3:
            self.request_version = "HTTP/1.0"
            return self._refuse(_Refused(400, "only HTTP/1.0 and HTTP/1.1 requests are served"), started)
        try:
            function, route_params, length = self._admit()
            body = self._read_body(length)
        except _Refused as refused:
            return self._refuse(refused, started)
        except (TimeoutError, _Gone, OSError) as exc:
            if isinstance(exc, TimeoutError):
                with contextlib.suppress(OSError):
                    message = f"the body did not arrive within {self.host.limits.body_timeout:g} s"
                    self._respond(arm_error(408, message), close=True)
            return False
        self.reader.deadline = None
        self.request.settimeout(self.host.limits.body_timeout)
        headers = dict(self.headers.items())
        invocation = uuid.uuid4().hex[:12]
        try:
            response = self.host.run_function(function, route_params, self.command, self.path, headers, body)
        except Exception:
            log.exception("invocation %s %s %s failed", invocation, self.command, self.path.split("?")[0])
            response = arm_error(500, f"the function failed; invocation {invocation}")
        try:
            self._respond(response, close=False)
        except OSError:
            return False
        self._log(function.name, response.status_code, started, invocation)
        return not self.close_connection

    def _refuse(self, refused: _Refused, started: float) -> bool | None:
        with contextlib.suppress(OSError):
            self._respond(refused.response, close=True)
        self._log("-", refused.response.status_code, started, "-")
        return None

    def _admit(self) -> tuple[HttpFunction, dict[str, str], int | None]:
        """Check framing, route, method, preflight and declared size; the body length (None: chunked)."""
        method = self.command or ""
        if not _TOKEN.fullmatch(method):
            raise _Refused(400, f"the method {method!r} is not a valid HTTP token")
        encodings = self.headers.get_all("Transfer-Encoding") or []
        lengths = self.headers.get_all("Content-Length") or []
        length: int | None
        if encodings:
            if lengths:
                raise _Refused(400, "a request cannot have both Content-Length and Transfer-Encoding")
            codings = [c.strip().lower() for value in encodings for c in value.split(",") if c.strip()]
            if codings != ["chunked"] or self.request_version != "HTTP/1.1":
                raise _Refused(
                    400, f"Transfer-Encoding '{', '.join(encodings)}' is not supported; only 'chunked' (HTTP/1.1)"
                )
            length = None
        elif lengths:
            if len(lengths) > 1:
                raise _Refused(400, "Content-Length is given more than once")
            value = lengths[0].strip()
            if not _DIGITS.fullmatch(value):
                raise _Refused(400, f"Content-Length {value[:40]!r} is not a non-negative whole number")
            length = int(value)
        elif method in _BODY_METHODS:
            raise _Refused(411, f"a {method} request needs Content-Length (or Transfer-Encoding: chunked)")
        else:
            length = 0
        function, route_params = self.host.route(method, self.path)
        if self.host.preflight is not None:
            head = RequestHead(function.name, method, self.path, dict(self.headers.items()), length, route_params)
            answer = self.host.preflight(head)
            if answer is not None:
                raise _Refused(answer.status_code, response=answer)
        limit = self.host.limits.max_body_bytes
        if length is not None and length > limit:
            raise _Refused(413, f"the request body is larger than {limit} bytes")
        return function, route_params, length

    def _read_body(self, length: int | None) -> bytes:
        if length == 0:
            return b""
        if self.expect_continue:
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.reader.deadline = time.monotonic() + self.host.limits.body_timeout
        if length is not None:
            return self.reader.read_exactly(length)
        return self._read_chunked()

    def _read_chunked(self) -> bytes:
        limit = self.host.limits.max_body_bytes
        body = bytearray()
        while True:
            line = self.reader.readline(_MAX_CHUNK_LINE + 1)
            if not line.endswith(b"\n"):
                if len(line) > _MAX_CHUNK_LINE:
                    raise _Refused(400, "a chunk size line is too long")
                raise _Gone("the client closed the connection inside a chunked body")
            match = _CHUNK_SIZE.fullmatch(line.rstrip(b"\r\n"))
            if match is None:
                raise _Refused(400, f"bad chunk size line {line[:40]!r}: expected hexadecimal digits")
            size = int(match.group(1), 16)
            if size == 0:
                break
            if len(body) + size > limit:
                raise _Refused(413, f"the request body is larger than {limit} bytes")
            body += self.reader.read_exactly(size)
            if self.reader.read_exactly(2) != b"\r\n":
                raise _Refused(400, "a chunk is not followed by CRLF (its size is wrong)")
        trailers = 0
        while True:  # trailer fields, dropped, up to the empty line
            line = self.reader.readline(_MAX_CHUNK_LINE + 1)
            if not line.endswith(b"\n"):
                raise _Gone("the client closed the connection inside the chunked trailer")
            trailers += len(line)
            if trailers > _MAX_TRAILER_BYTES:
                raise _Refused(400, "the chunked trailer is too large")
            if line in (b"\r\n", b"\n"):
                return bytes(body)

    def _respond(self, response: func.HttpResponse, close: bool) -> None:
        payload = response.get_body() or b""
        self.send_response(response.status_code)
        for header, value in response.headers.items():
            if header.lower() not in ("content-length", "content-type", "transfer-encoding", "connection"):
                self.send_header(header, value)
        if payload or response.mimetype != "text/plain":
            content_type = response.mimetype or "text/plain"
            if response.charset and "charset" not in content_type:
                content_type += f"; charset={response.charset}"
            self.send_header("Content-Type", response.headers.get("Content-Type", content_type))
        self.send_header("Content-Length", str(len(payload)))
        if close or self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _log(self, name: str, status: int, started: float, invocation: str) -> None:
        invocation_log(name).info(
            "function=%s trigger=http %s %s -> %d in %.1f ms (invocation %s)",
            name,
            self.command,
            (self.path or "").split("?")[0],
            status,
            (time.perf_counter() - started) * 1000,
            invocation,
        )
