"""A TCP proxy on 127.0.0.1 that loses the answers of chosen HTTP requests (a test peer): the request reaches
the server and is carried out there, and its answer never reaches the client, whose connection is reset
instead, as when a network breaks between a storage call's request and its answer.

Everything else is forwarded unchanged both ways. The proxy reads the HTTP/1.1 requests a client sends on
each connection (one at a time: the storage clients never pipeline) to know which answer belongs to which
request; requests with a body give its length (``Content-Length``), as the Azure SDKs' requests do.

:meth:`AnswerLossProxy.lose` arms it: the answers of the next ``times`` requests that ``request`` accepts
(method and path with query) and whose answer ``answer`` accepts (its bytes: status line, headers and
body) are lost. :attr:`AnswerLossProxy.lost` lists the requests whose answers were lost.

:meth:`AnswerLossProxy.close_before` arms the other fault of a kept-alive connection: the next ``times`` requests
that ``request`` accepts never reach the server, and the client's connection is closed (an orderly close, no
answer), as when a server closes a connection it found idle just as the client reuses it for a request.
:attr:`AnswerLossProxy.refused` lists them.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: How long an answer is read in whole before it is judged (an answer the server is slow to finish).
ANSWER_WINDOW_SECONDS = 5.0


@dataclass(frozen=True)
class Lost:
    """A request whose answer the proxy lost, and that answer's first line."""

    method: str
    target: str
    answer: str


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a dropped connection looks to its peer."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


def _complete(answer: bytes) -> bool:
    """Whether ``answer`` holds a whole HTTP answer (by its length, or the end of a chunked body)."""
    head, sep, body = answer.partition(b"\r\n\r\n")
    if not sep:
        return False
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        return body.endswith(b"0\r\n\r\n")
    return len(body) >= int(headers.get(b"content-length", b"0") or 0)


class AnswerLossProxy:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.lost: list[Lost] = []
        self.refused: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._closing: list[tuple[Callable[[str, str], bool], int]] = []
        self._rules: list[tuple[Callable[[str, str], bool], Callable[[bytes], bool], int]] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._stopped = threading.Event()
        self._open: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._accept, name=f"answer-loss-{self.port}", daemon=True)

    def start(self) -> AnswerLossProxy:
        self._thread.start()
        return self

    def lose(
        self, request: Callable[[str, str], bool], answer: Callable[[bytes], bool] = lambda _: True, times: int = 1
    ) -> None:
        """Lose the answers of the next ``times`` requests ``request(method, target)`` accepts whose answer
        ``answer`` accepts (the others pass)."""
        with self._lock:
            self._rules.append((request, answer, times))

    def close_before(self, request: Callable[[str, str], bool], times: int = 1) -> None:
        """Close the connection, without an answer and before it reaches the server, of the next ``times``
        requests ``request(method, target)`` accepts."""
        with self._lock:
            self._closing.append((request, times))

    def _refuses(self, method: str, target: str) -> bool:
        """Whether the request is one :meth:`close_before` armed for (and count it if so)."""
        with self._lock:
            for index, (request, times) in enumerate(self._closing):
                if times > 0 and request(method, target):
                    self._closing[index] = (request, times - 1)
                    self.refused.append((method, target))
                    return True
        return False

    def stop(self) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            open_sockets, self._open = self._open, set()
        for sock in open_sockets:
            _reset(sock)

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _rule_for(self, method: str, target: str) -> int | None:
        with self._lock:
            for index, (request, _, times) in enumerate(self._rules):
                if times > 0 and request(method, target):
                    return index
        return None

    def _judge(self, index: int, method: str, target: str, answer: bytes) -> bool:
        """Whether the answer of a request that rule ``index`` accepted is lost (and count it if so)."""
        with self._lock:
            request, accepts, times = self._rules[index]
            if times <= 0 or not accepts(answer):
                return False
            self._rules[index] = (request, accepts, times - 1)
            self.lost.append(Lost(method, target, answer.split(b"\r\n", 1)[0].decode(errors="replace")))
            return True

    def _serve(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            _reset(client)
            return
        server.settimeout(None)
        with self._lock:
            self._open |= {client, server}
        try:
            self._relay(client, server)
        except (OSError, ValueError):
            pass
        finally:
            with self._lock:
                self._open -= {client, server}
            _reset(client)
            _reset(server)

    def _relay(self, client: socket.socket, server: socket.socket) -> None:
        pending = b""  # bytes of the client's next request, not yet sent on
        watched: tuple[int, str, str] | None = None  # the rule, method and target of the request answered next
        answer = b""
        while not self._stopped.is_set():
            readable, _, _ = select.select([client, server], [], [], 0.05)
            if client in readable:
                data = client.recv(65536)
                if not data:
                    return
                pending += data
                while (request := self._next_request(pending)) is not None:
                    size, method, target = request
                    if self._refuses(method, target):
                        with contextlib.suppress(OSError):
                            client.shutdown(socket.SHUT_RDWR)
                        return  # never sent on: the client reads an orderly close and no answer
                    rule = self._rule_for(method, target)
                    watched = (rule, method, target) if rule is not None else None
                    answer = b""
                    server.sendall(pending[:size])
                    pending = pending[size:]
            if server in readable:
                data = server.recv(65536)
                if not data:
                    return
                if watched is None:
                    client.sendall(data)
                    continue
                answer += data
                if not _complete(answer) and not self._wait_more(server):
                    continue
                rule, method, target = watched
                watched = None
                if self._judge(rule, method, target, answer):
                    return  # carried out by the server; the client never learns: reset
                client.sendall(answer)

    @staticmethod
    def _wait_more(server: socket.socket) -> bool:
        """False while more of an answer may come (within :data:`ANSWER_WINDOW_SECONDS`)."""
        readable, _, _ = select.select([server], [], [], ANSWER_WINDOW_SECONDS)
        return not readable

    @staticmethod
    def _next_request(buffer: bytes) -> tuple[int, str, str] | None:
        """The size, method and target of the whole request at the start of ``buffer`` (None: not whole yet)."""
        head, sep, _ = buffer.partition(b"\r\n\r\n")
        if not sep:
            return None
        lines = head.split(b"\r\n")
        method, target, _ = lines[0].decode("latin-1").split(" ", 2)
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        size = len(head) + len(sep) + length
        return (size, method, target) if len(buffer) >= size else None


@contextmanager
def answer_loss_proxy(upstream: tuple[str, int]) -> Iterator[AnswerLossProxy]:
    proxy = AnswerLossProxy(upstream).start()
    try:
        yield proxy
    finally:
        proxy.stop()
