"""The storage clients' HTTP/1.1 exchange (``adapters/azure/rest/_http.py``) against a real socket server on
127.0.0.1 that answers with scripted bytes: every answer framing the storage services use, interim answers,
answers cut short or not HTTP, connections the server closes, and a header that would split the request."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from azure.core.exceptions import ServiceRequestError, ServiceResponseError

from scheduler_core.adapters.azure.rest._http import Connections


class Scripted:
    """Accepts connections; each request read (up to its blank line, plus its Content-Length) gets the next
    scripted answer's bytes; ``close_after`` answers close their connection."""

    def __init__(self, answers: list[bytes], close_after: bool = False) -> None:
        self.answers = list(answers)
        self.close_after = close_after
        self.requests: list[bytes] = []
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        buffer = b""
        with client:
            while self.answers:
                while b"\r\n\r\n" not in buffer:
                    data = client.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, rest = buffer.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                while len(rest) < length:
                    rest += client.recv(65536)
                self.requests.append(head + b"\r\n\r\n" + rest[:length])
                buffer = rest[length:]
                client.sendall(self.answers.pop(0))
                if self.close_after:
                    return


@contextmanager
def scripted(answers: list[bytes], close_after: bool = False) -> Iterator[tuple[Scripted, Connections]]:
    server = Scripted(answers, close_after)
    try:
        yield server, Connections("http", "127.0.0.1", server.port, connect_timeout=2, read_timeout=2)
    finally:
        server.listener.close()


def test_every_framing_of_an_answer_is_read_and_the_connection_kept() -> None:
    answers = [
        b'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: W/"a"\r\nx-ms-Thing: 1\r\nx-ms-thing: 2\r\n\r\nhello',
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\nETag: e\r\n\r\n",
    ]
    with scripted(answers) as (server, connections):
        first = connections.request("GET", "/a", {"x-ms-date": "d"})
        assert (first.status, first.reason, first.body) == (200, "OK", b"hello")
        assert first.headers["etag"] == 'W/"a"' and first.headers["x-ms-thing"] == "1, 2"
        assert connections.request("POST", "/b", {}, b'{"k": 1}').status == 201
        assert connections.request("GET", "/c", {}).body == b"hello world"
        assert connections.request("DELETE", "/d", {}).status == 204
    assert server.connections == 1
    assert server.requests[0].startswith(b"GET /a HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b'Content-Length: 8\r\n\r\n{"k": 1}' in server.requests[1]
    assert b"Content-Length" not in server.requests[0] and b"Content-Length" not in server.requests[3]


def test_an_answer_without_a_length_is_read_to_its_end_and_its_connection_closed() -> None:
    with scripted(
        [b"HTTP/1.0 200 OK\r\n\r\nall of it", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"], close_after=True
    ) as (server, connections):
        assert connections.request("GET", "/a", {}).body == b"all of it"
        assert connections.request("GET", "/b", {}).body == b"ok"
    assert server.connections == 2


def test_a_connection_the_server_closed_while_idle_is_not_used_again() -> None:
    answers = [b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na", b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"]
    with scripted(answers, close_after=True) as (server, connections):
        assert connections.request("GET", "/a", {}).body == b"a"  # kept: the answer did not say close
        time.sleep(0.2)  # the server has closed it by now
        assert connections.request("GET", "/b", {}).body == b"b"
    assert server.connections == 2


@pytest.mark.parametrize(
    "answer",
    [
        b"SMTP ready\r\n\r\n",
        b"HTTP/1.1 2OO OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"x-a: b\r\n" * 201 + b"\r\n",
        b"",
    ],
)
def test_an_answer_that_is_not_http_or_cut_short_is_a_read_error(answer: bytes) -> None:
    with scripted([answer], close_after=True) as (_, connections), pytest.raises(ServiceResponseError):
        connections.request("GET", "/a", {})


def test_a_silent_server_times_out_as_a_read_error_and_a_closed_port_as_a_connection_error() -> None:
    listener = socket.create_server(("127.0.0.1", 0))  # accepts (backlog) but never answers
    try:
        silent = Connections("http", "127.0.0.1", listener.getsockname()[1], connect_timeout=1, read_timeout=0.3)
        began = time.monotonic()
        with pytest.raises(ServiceResponseError):
            silent.request("GET", "/a", {})
        assert time.monotonic() - began < 2
    finally:
        listener.close()
    port = _closed_port()
    with pytest.raises(ServiceRequestError):
        Connections("http", "127.0.0.1", port, connect_timeout=1, read_timeout=1).request("GET", "/a", {})


def _closed_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


@pytest.mark.parametrize("value", ["a\r\nx-ms-injected: 1", "a\nb", "a\rb"])
def test_a_header_value_with_a_line_break_is_refused_before_anything_is_sent(value: str) -> None:
    with scripted([b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"]) as (server, connections):
        with pytest.raises(ValueError, match="line break"):
            connections.request("PUT", "/a", {"If-Match": value})
        assert server.requests == []
