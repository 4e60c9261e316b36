"""A webhook receiver for the signing tests: a real HTTP server on 127.0.0.1 that verifies every request with
the Standard Webhooks specification's own library (``standardwebhooks`` from PyPI), as a receiver in
production does, and answers 401 to one that does not verify, else the next status it was told (204 by
default, the last one repeating), so a test can make a verified delivery fail and see it retried."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Lock, Thread
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass
class Delivery:
    headers: dict[str, str]
    body: bytes
    verified: bool
    reason: str  # why it did not verify ("" when it did)
    status: int  # what the receiver answered
    at: float  # time.time() when it arrived


@dataclass
class Receiver:
    """What the receiver got, verified under ``secret``; ``statuses``: the answers to verified deliveries."""

    secret: str
    statuses: list[int] = field(default_factory=lambda: [204])
    base_url: str = ""
    deliveries: list[Delivery] = field(default_factory=list)
    lock: Lock = field(default_factory=Lock)

    def received(self) -> list[Delivery]:
        with self.lock:
            return list(self.deliveries)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Delivery]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(got := self.received()) >= count:
                return got
            time.sleep(0.05)
        raise AssertionError(f"expected {count} deliveries, got {len(self.received())}")

    def _status(self) -> int:
        with self.lock:
            return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]


@contextmanager
def receiver(secret: str, statuses: list[int] | None = None) -> Iterator[Receiver]:
    state = Receiver(secret, list(statuses or [204]))
    webhook = Webhook(secret)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = dict(self.headers)
            try:
                webhook.verify(body, headers, json_parse=False)
                verified, reason = True, ""
            except WebhookVerificationError as exc:
                verified, reason = False, str(exc)
            status = state._status() if verified else 401
            with state.lock:
                state.deliveries.append(Delivery(headers, body, verified, reason, status, time.time()))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_PUT = do_GET = do_POST

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
