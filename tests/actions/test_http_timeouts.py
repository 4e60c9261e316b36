"""The HTTP action's timeout bounds the whole call, and the history keeps at most 2,048 bytes of a body.

The targets are real servers on 127.0.0.1 (raw sockets, so that they can send a body as slowly as told).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from scheduler_core.actions.http import MAX_BODY_IN_HISTORY, HttpSender
from scheduler_core.model.actions import HttpAction
from tests.actions.conftest import action_context


@contextmanager
def slow_server(body: bytes, pause: float) -> Iterator[str]:
    """Answers each connection with 200 and ``body``, one byte every ``pause`` seconds."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
                try:
                    for i in range(len(body)):
                        if stop.is_set():
                            return
                        conn.sendall(body[i : i + 1])
                        time.sleep(pause)
                except OSError:
                    pass  # the client gave up: that is the point

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/slow"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def http(uri: str) -> HttpAction:
    return HttpAction(uri, "GET")


def test_a_target_sending_its_body_slowly_cannot_hold_the_action_past_its_timeout() -> None:
    with slow_server(b"x" * 40, pause=0.25) as uri:  # every byte in time, but 10 s for the body
        started = time.monotonic()
        result = HttpSender(timeout=1.5).send(http(uri), action_context())
        took = time.monotonic() - started
    assert not result.succeeded
    assert "timed out after 1.5 s" in result.message
    assert took < 3.0


def test_the_history_keeps_at_most_2048_bytes_of_a_body_without_reading_the_rest() -> None:
    body = b"a" * MAX_BODY_IN_HISTORY + b"b" * 4096  # the b's arrive slowly: they must not be waited for
    with slow_server(body, pause=0.0) as uri:
        result = HttpSender(timeout=5).send(http(uri), action_context())
    assert result.succeeded
    assert result.message.startswith(
        "200 OK: " + "a" * MAX_BODY_IN_HISTORY + "… (body cut at 2,048 bytes) | Http Action"
    )
    assert "b" not in result.message.split("…", 1)[0]
