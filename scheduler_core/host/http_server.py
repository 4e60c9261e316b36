"""The HTTP side of the local host: a threaded stdlib server that routes to the app's HTTP triggers."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
import uuid
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import azure.functions as func

from scheduler_core.host.app_index import HttpFunction
from scheduler_core.host.routing import Router

log = logging.getLogger("scheduler_core.host")

_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


def invoke(handler: Any, *args: Any) -> Any:
    """Call a function handler, running it to completion if it is a coroutine function."""
    result = handler(*args)
    if inspect.isawaitable(result):
        return asyncio.run(_await(result))
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


class HttpHost:
    """Serves the HTTP triggers of one app on ``host:port`` until :meth:`stop`."""

    def __init__(self, functions: Iterable[HttpFunction], route_prefix: str, host: str, port: int) -> None:
        self.router: Router[HttpFunction] = Router()
        prefix = route_prefix.strip("/")
        for function in functions:
            route = function.route.strip("/")
            self.router.add(f"{prefix}/{route}" if prefix else route, function)
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        host = self._server.server_address[0]
        return f"http://{host if isinstance(host, str) else host.decode()}:{self.port}"

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, name="http-host", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def handle(
        self, method: str, target: str, headers: dict[str, str], body: bytes, base_url: str
    ) -> tuple[str, func.HttpResponse]:
        """Route one request and run its function: (function name or "-", response). Exposed for tests."""
        parts = urlsplit(target)
        matches = self.router.match(parts.path)
        if not matches:
            return "-", func.HttpResponse(status_code=404)
        for function, route_params in matches:
            if function.methods and method not in function.methods:
                continue
            # Like ASP.NET Core, a repeated query parameter is joined with commas.
            params: dict[str, str] = {}
            for key, value in parse_qsl(parts.query, keep_blank_values=True):
                params[key] = f"{params[key]},{value}" if key in params else value
            request = func.HttpRequest(
                method=method,
                url=base_url + target,
                headers=headers,
                params=params,
                route_params=route_params,
                body=body,
            )
            response = invoke(function.handler, request)
            if not isinstance(response, func.HttpResponse):
                response = func.HttpResponse(status_code=204 if response is None else 200)
            return function.name, response
        return "-", func.HttpResponse(status_code=405)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        host = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "scheduler-local-host"
            # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and the
            # client's delayed ACK hold every keep-alive response back by ~40 ms.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                started = time.perf_counter()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = dict(self.headers.items())
                invocation = uuid.uuid4().hex[:12]
                name = "-"
                try:
                    name, response = host.handle(self.command, self.path, headers, body, host.base_url)
                except Exception:
                    log.exception("invocation %s %s %s failed", invocation, self.command, self.path.split("?")[0])
                    response = func.HttpResponse(status_code=500)
                payload = response.get_body() or b""
                self.send_response(response.status_code)
                for header, value in response.headers.items():
                    if header.lower() not in ("content-length", "content-type", "transfer-encoding"):
                        self.send_header(header, value)
                if payload or response.mimetype != "text/plain":
                    content_type = response.mimetype or "text/plain"
                    if response.charset and "charset" not in content_type:
                        content_type += f"; charset={response.charset}"
                    self.send_header("Content-Type", response.headers.get("Content-Type", content_type))
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)
                log.info(
                    "function=%s trigger=http %s %s -> %d in %.1f ms (invocation %s)",
                    name,
                    self.command,
                    self.path.split("?")[0],
                    response.status_code,
                    (time.perf_counter() - started) * 1000,
                    invocation,
                )

        for verb in _METHODS:
            setattr(Handler, f"do_{verb}", Handler._serve)
        return Handler
