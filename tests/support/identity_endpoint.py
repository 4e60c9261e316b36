"""A real HTTP server on 127.0.0.1 **posing as App Service's managed identity endpoint** (API 2019-08-01), the
way Azure Functions hands an app its identity (``IDENTITY_ENDPOINT`` + ``IDENTITY_HEADER``): ``GET
?resource=...&api-version=2019-08-01`` with the ``X-IDENTITY-HEADER`` secret gets a token for that resource.
It is the endpoint of ``tests/e2e/test_tracing_azure_monitor.py`` (helper A's, for the Application Insights
exporter) with what the managed-identity action tests need besides: a new token on each request, named after
the resource and the request's number, a lifetime of choice (to see a token refreshed near its expiry), and
refusals as told (status and body; a body that quotes the identity header, as a careless endpoint might)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class TokenRequest:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]

    @property
    def resource(self) -> str:
        return self.query.get("resource", [""])[0]


@dataclass
class IdentityEndpoint:
    """What the endpoint was asked, and how it answers: tokens living ``lifetime`` seconds, or, while
    ``refusal`` is set, that status and body."""

    url: str = ""
    header: str = field(default_factory=lambda: uuid.uuid4().hex)
    lifetime: float = 3600.0
    refusal: tuple[int, dict[str, Any]] | None = None
    requests: list[TokenRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def env(self) -> dict[str, str]:
        """The app settings the platform sets for an app with an identity."""
        return {"IDENTITY_ENDPOINT": self.url, "IDENTITY_HEADER": self.header}

    def seen(self) -> list[TokenRequest]:
        with self.lock:
            return list(self.requests)

    @staticmethod
    def token_for(resource: str, number: int) -> str:
        """The token the endpoint hands out as its ``number``-th answer (from 1) for ``resource``."""
        return f"mi-token-{number}-for-{resource}"

    def answer(self, request: TokenRequest) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append(request)
            number = len(self.requests)
            refusal = self.refusal
        if request.headers.get("X-IDENTITY-HEADER") != self.header:
            return 401, {"error": "invalid identity header"}
        if refusal is not None:
            return refusal
        if request.path != "/msi/token" or request.query.get("api-version") != ["2019-08-01"]:
            return 400, {"error": "not the 2019-08-01 token endpoint"}
        return 200, {
            "access_token": self.token_for(request.resource, number),
            "expires_on": str(int(time.time() + self.lifetime)),
            "resource": request.resource,
            "token_type": "Bearer",
            "client_id": "00000000-0000-0000-0000-00000000a001",
        }


@contextmanager
def identity_endpoint(lifetime: float = 3600.0) -> Iterator[IdentityEndpoint]:
    """The endpoint, running on a free port of 127.0.0.1 (its URL ends in ``/msi/token``, as App Service's)."""
    endpoint = IdentityEndpoint(lifetime=lifetime)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            status, body = endpoint.answer(TokenRequest(parts.path, parse_qs(parts.query), dict(self.headers)))
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    endpoint.url = f"http://127.0.0.1:{server.server_address[1]}/msi/token"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
