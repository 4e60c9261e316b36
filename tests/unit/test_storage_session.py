"""``StorageSession`` sends what ``requests`` sends and answers what it answers: the same calls through a plain
``requests.Session`` and a ``StorageSession``, as azure-core's ``RequestsTransport`` makes them, reach a real
server on 127.0.0.1 byte for byte the same, and their answers read the same; whatever the direct path does not
cover goes through ``requests`` whole."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from scheduler_core.adapters.azure.session import StorageSession

ANSWER = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json;odata=minimalmetadata\r\nETag: W/\"datetime'x'\"\r\n"
    b'x-ms-request-id: 42\r\nContent-Length: 11\r\n\r\n{"a": "\xc3\xa9"}'
)


class Recorder:
    """A server on 127.0.0.1 that keeps each request's bytes (head and body) and answers :data:`ANSWER`."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.seen: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, rest = data.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                while len(rest) < length:
                    rest += conn.recv(65536)
                self.seen.append(head + b"\r\n\r\n" + rest[:length])
                data = rest[length:]
                conn.sendall(ANSWER)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    yield server
    server.sock.close()


def _session(kind: type[requests.Session]) -> requests.Session:
    session = kind()
    session.trust_env = False
    adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=4)
    for scheme in ("http://", "https://"):
        session.mount(scheme, adapter)
    return session


def _calls(base: str) -> list[dict[str, Any]]:
    """Calls as ``RequestsTransport.send`` makes them (keywords only, ``allow_redirects=False``)."""
    common = {"files": None, "verify": True, "timeout": (5.0, 20.0), "cert": None, "allow_redirects": False}
    return [
        {
            "method": "GET",
            "url": f"{base}/Jobs(PartitionKey='a%7Cb',RowKey='j%20%27x%27')",
            "headers": {"Accept": "application/json;odata=minimalmetadata", "x-ms-version": "2019-02-02"},
            "data": None,
            "proxies": None,
            **common,
        },
        {
            "method": "MERGE",
            "url": f"{base}/Jobs(PartitionKey='p',RowKey='r')?timeout=30",
            "headers": {
                "If-Match": "W/\"datetime'2026'\"",
                "Content-Type": "application/json",
                "Accept-Encoding": None,
            },
            "data": '{"ExecutionCount": 3, "Name": "\u00e9\u20ac"}',
            **common,
        },
        {
            "method": "POST",
            "url": f"{base}/Claims",
            "headers": {"Content-Type": "application/json", "Prefer": "return-no-content"},
            "data": b'{"PartitionKey": "p", "RowKey": "r"}',
            "stream": False,
            **common,
        },
        {
            "method": "DELETE",
            "url": f"{base}/Jobs(PartitionKey='p',RowKey='r')",
            "headers": {"If-Match": "*"},
            "data": None,
            **common,
        },
        {
            "method": "PUT",
            "url": f"{base}/q/messages?visibilitytimeout=5",
            "headers": {},
            "data": "<QueueMessage/>",
            "stream": True,
            **common,
        },
    ]


def test_the_direct_path_sends_and_answers_what_requests_does(recorder: Recorder) -> None:
    base = f"http://127.0.0.1:{recorder.port}"
    plain, direct = _session(requests.Session), _session(StorageSession)
    for call in _calls(base):
        before = len(recorder.seen)
        expected = plain.request(**call)
        got = direct.request(**call)
        assert len(recorder.seen) == before + 2
        assert recorder.seen[-1] == recorder.seen[-2], (call["method"], recorder.seen[-2:])
        assert got.status_code == expected.status_code and got.reason == expected.reason
        assert dict(got.headers) == dict(expected.headers)
        assert got.content == expected.content and got.text == expected.text and got.json() == expected.json()
        assert got.url == expected.url and got.request.method == expected.request.method
        assert got.elapsed.total_seconds() > 0


def test_what_the_direct_path_does_not_read_goes_through_requests(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = f"http://127.0.0.1:{recorder.port}"
    merged: list[str] = []
    real = requests.Session.prepare_request

    def spy(self: requests.Session, request: requests.Request) -> requests.PreparedRequest:
        merged.append(str(request.method))
        return real(self, request)

    monkeypatch.setattr(requests.Session, "prepare_request", spy)
    call = _calls(base)[0]
    session = _session(StorageSession)
    session.request(**call)
    assert merged == []  # the direct path
    variants: list[tuple[str, Any]] = [
        ("redirects followed", {**call, "allow_redirects": True}),
        ("params", {**call, "params": {"a": "b"}}),
        ("files", {**call, "method": "POST", "files": {"f": b"x"}}),
        (
            "proxies",
            {**call, "proxies": {"http": "http://127.0.0.1:9"}, "url": call["url"].replace("127.0.0.1", "localhost")},
        ),
    ]
    for label, variant in variants:
        merged.clear()
        if label == "proxies":
            with pytest.raises(requests.ConnectionError):  # requests used the (closed) proxy
                session.request(**variant)
        else:
            session.request(**variant)
        assert merged, label
    for change in ("trust_env", "auth", "hooks", "cookies"):
        other = _session(StorageSession)
        if change == "trust_env":
            other.trust_env = True
        elif change == "auth":
            other.auth = ("u", "p")
        elif change == "hooks":
            other.hooks["response"].append(lambda response, **_: response)
        else:
            other.cookies.set("c", "v")
        merged.clear()
        other.request(**call)
        assert merged, change
