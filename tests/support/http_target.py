"""A real HTTP server on 127.0.0.1 that records what it receives and answers as told (a test peer)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.time() when it arrived


@dataclass
class HttpTarget:
    """Answers each request with the next status of ``statuses`` (the last one repeats), with ``headers`` and
    ``body`` (None: ``status <code>``, as text/plain)."""

    statuses: list[int] = field(default_factory=lambda: [200])
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)
    base_url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    content_type: str = "text/plain"

    def answer(
        self,
        statuses: list[int],
        delay: float = 0.0,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        content_type: str = "text/plain",
    ) -> None:
        with self.lock:
            self.statuses = list(statuses)
            self.delay = delay
            self.headers = dict(headers or {})
            self.body = body
            self.content_type = content_type

    def _next_status(self) -> int:
        with self.lock:
            return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.received) >= count:
                    return list(self.received)
            time.sleep(0.02)
        raise AssertionError(f"expected {count} requests, got {len(self.received)}")


@contextmanager
def http_target(statuses: list[int] | None = None) -> Iterator[HttpTarget]:
    target = HttpTarget(statuses=statuses or [200])

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with target.lock:
                target.received.append(Received(self.command, self.path, dict(self.headers), body, time.time()))
                delay = target.delay
            if delay:
                time.sleep(delay)
            status = target._next_status()
            with target.lock:
                payload = target.body if target.body is not None else f"status {status}".encode()
                extra = dict(target.headers)
                content_type = target.content_type
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    target.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    # shutdown() waits for the loop's next poll: every 50 ms, not the default 0.5 s added to every test.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield target
    finally:
        server.shutdown()
        server.server_close()
