"""``ActionResult.status_code``: the HTTP sender reports the status of the answer it got (the last one after
redirects) as a typed field, and None when there was no answer; real servers on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from scheduler_core.actions.http import HttpSender
from scheduler_core.model.actions import HttpAction
from tests.actions.conftest import action_context


@contextmanager
def answering_server() -> Iterator[str]:
    """``/status/<n>`` answers ``n``; ``/redirect`` answers 302 to ``/status/204``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", "/status/204")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = int(self.path.rsplit("/", 1)[1])
            body = b"" if status == 204 else f"status {status}".encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def server() -> Iterator[str]:
    with answering_server() as base_url:
        yield base_url


@pytest.mark.parametrize(("status", "succeeded"), [(200, True), (201, True), (404, False), (500, False), (503, False)])
def test_the_status_code_is_the_answers(server: str, status: int, succeeded: bool) -> None:
    result = HttpSender(timeout=5).send(HttpAction(uri=f"{server}/status/{status}", method="GET"), action_context())
    assert (result.succeeded, result.status_code) == (succeeded, status)
    assert result.message.startswith(f"{status} ")  # the history message starts with it


def test_after_a_redirect_the_status_code_is_the_last_answers(server: str) -> None:
    result = HttpSender(timeout=5).send(HttpAction(uri=f"{server}/redirect", method="GET"), action_context())
    assert result.succeeded and result.status_code == 204


def test_a_call_without_an_answer_has_no_status_code() -> None:
    with socket.socket() as listener:  # a port that refuses connections: bound, never listening
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        result = HttpSender(timeout=5).send(HttpAction(uri=f"http://127.0.0.1:{port}/", method="GET"), action_context())
    assert not result.succeeded and result.status_code is None
    assert result.message.startswith("Request failed: Connection refused (ConnectionError) | Http Action"), (
        result.message
    )
