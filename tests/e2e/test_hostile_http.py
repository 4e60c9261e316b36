"""Hostile HTTP against the local host: huge bodies, slow and half-open connections, malformed framing.

Every such request gets an ARM error (``{"error": {"code", "message"}}``) or a clean close, never a hang,
a traceback or a thread per connection. Raw sockets on 127.0.0.1; the sample app in-process (with short
timeouts) and the real function app in its own process (to measure its memory).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from local_host.azurite import free_port
from local_host.hostjson import HostConfig
from local_host.http_server import HttpLimits
from local_host.runtime import LocalHost
from scheduler_core import auth
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.settings import Settings
from tests.e2e import sample_app
from tests.e2e.host_process import HostProcess

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

LIMITS = HttpLimits(
    max_body_bytes=64 * 1024,
    header_timeout=1.5,
    keep_alive_timeout=3.0,
    body_timeout=1.5,
    max_concurrent_requests=4,
    max_connections=1024,
    linger=0.5,
)
JOB = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc?api-version=2016-03-01"


@dataclass
class Answer:
    status: int | None  # None: closed without an answer
    headers: dict[str, str]
    body: bytes

    def error(self) -> dict[str, str]:
        payload = json.loads(self.body)
        assert set(payload) == {"error"}, payload
        assert payload["error"]["code"] and payload["error"]["message"], payload
        return dict(payload["error"])


def read_answer(sock: socket.socket, timeout: float = 5.0) -> Answer:
    """Read one response (skipping 100 Continue) up to its Content-Length or EOF; a hang fails the test.

    Never reads past the response: the head a byte at a time, then exactly the body, so that the next
    answer of a keep-alive or pipelined connection stays in the socket for the next call.
    """
    sock.settimeout(timeout)
    while True:
        data = b""
        while not data.endswith(b"\r\n\r\n"):
            try:
                chunk = sock.recv(1)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                assert not data, f"the connection closed inside a response head: {data!r}"
                return Answer(None, {}, b"")
            data += chunk
        lines = data[:-4].decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        if status == 100:
            continue
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        body = b""
        while len(body) < length:
            chunk = sock.recv(length - len(body))
            if not chunk:
                break
            body += chunk
        return Answer(status, headers, body)


def send(port: int, raw: bytes) -> Answer:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(raw)
        return read_answer(sock)


def closed_by_server(sock: socket.socket, timeout: float = 5.0) -> bool:
    """True when the server closes the connection (EOF or reset) within ``timeout``."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return True


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalHost]:
    with LocalHost(
        sample_app.app, HostConfig(route_prefix="api"), port=free_port(), enable=frozenset({"http"}), http_limits=LIMITS
    ) as running:
        yield running


def port_of(host: LocalHost) -> int:
    assert host.http is not None
    return host.http.port


# ------------------------------------------------------------------------------------- malformed framing

MALFORMED = {
    "content-length-not-a-number": (b"POST /api/x HTTP/1.1\r\nHost: h\r\nContent-Length: abc\r\n\r\n", 400),
    "content-length-negative": (b"POST /api/x HTTP/1.1\r\nHost: h\r\nContent-Length: -5\r\n\r\nhello", 400),
    "content-length-signed": (b"POST /api/x HTTP/1.1\r\nHost: h\r\nContent-Length: +5\r\n\r\nhello", 400),
    "content-length-list": (b"POST /api/x HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\nhello", 400),
    "content-length-duplicate": (
        b"POST /api/x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        400,
    ),
    "content-length-and-chunked": (
        b"POST /api/x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n0\r\n\r\n",
        400,
    ),
    "transfer-encoding-unknown": (b"POST /api/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
    "transfer-encoding-chunked-not-last": (
        b"POST /api/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        400,
    ),
    "chunk-size-not-hex": (
        b"POST /api/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhi\r\n0\r\n\r\n",
        400,
    ),
    "chunk-size-negative": (
        b"POST /api/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n-2\r\nhi\r\n0\r\n\r\n",
        400,
    ),
    "chunk-longer-than-its-size": (
        b"POST /api/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n",
        400,
    ),
    "chunk-size-huge": (
        b"POST /api/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffff\r\nhello\r\n",
        413,
    ),
    "declared-body-too-large": (b"POST /api/x HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999\r\n\r\n", 413),
    "content-length-absurd": (b"POST /api/x HTTP/1.1\r\nHost: h\r\nContent-Length: 1" + b"0" * 40 + b"\r\n\r\n", 400),
    "post-without-length": (b"POST /api/x HTTP/1.1\r\nHost: h\r\n\r\n", 411),
    "unknown-method": (b"BREW /api/items/1 HTTP/1.1\r\nHost: h\r\n\r\n", 405),
    "method-not-a-token": (b"G(E)T /api/items/1 HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    "http-2-request-line": (b"GET /api/items/1 HTTP/2.0\r\nHost: h\r\n\r\n", 400),
    "http-0.9-version": (b"GET /api/items/1 HTTP/0.9\r\n\r\n", 400),
    "bad-version": (b"GET /api/items/1 HTTQ/1.1\r\n\r\n", 400),
    "request-line-four-words": (b"GET /api/items/1 HTTP/1.1 extra\r\nHost: h\r\n\r\n", 400),
    "head-too-large": (b"GET /api/items/1 HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431),
    "no-such-path": (b"GET /elsewhere HTTP/1.1\r\nHost: h\r\n\r\n", 404),
}


@pytest.mark.parametrize(("raw", "status"), MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_requests_get_an_arm_error_and_the_connection_closes(
    host: LocalHost, raw: bytes, status: int
) -> None:
    with socket.create_connection(("127.0.0.1", port_of(host)), timeout=5) as sock:
        sock.sendall(raw)
        answer = read_answer(sock)
        assert answer.status == status, answer
        assert answer.headers["content-type"].startswith("application/json")
        answer.error()
        assert closed_by_server(sock)
    # The host still serves.
    assert requests.get(f"{host.base_url}/api/items/7", timeout=5).json()["id"] == 7


def test_a_method_no_route_allows_is_a_405_that_names_the_allowed_methods(host: LocalHost) -> None:
    for method in (b"BREW", b"DELETE"):
        answer = send(port_of(host), method + b" /api/items/1 HTTP/1.1\r\nHost: h\r\n\r\n")
        assert answer.status == 405
        assert answer.headers["allow"] == "GET, POST"  # get_item and the catch-all
        assert answer.error()["code"] == "InvalidHttpVerb"


@pytest.mark.parametrize(
    "raw",
    [
        b"GET /\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(40)) + b"\r\n\r\n",
        b"\r\n\r\n\r\n",
    ],
    ids=["http-0.9", "tls-hello", "empty-lines"],
)
def test_garbage_gets_an_arm_error_or_a_clean_close(host: LocalHost, raw: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port_of(host)), timeout=5) as sock:
        sock.sendall(raw)
        if raw.strip():
            answer = read_answer(sock)
            assert answer.status == 400
            answer.error()
        assert closed_by_server(sock, timeout=LIMITS.header_timeout + 3)


def test_valid_chunked_bodies_reach_the_function(host: LocalHost) -> None:
    raw = (
        b"POST /api/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
    )
    answer = send(port_of(host), raw)
    assert answer.body == b"catch-all echo hello world"
    streamed = requests.post(f"{host.base_url}/api/echo", data=iter([b"a" * 10, b"b" * 5]), timeout=5)
    assert streamed.text == "catch-all echo " + "a" * 10 + "b" * 5


def test_keep_alive_and_pipelined_requests_are_served_in_order(host: LocalHost) -> None:
    raw = b"GET /api/items/1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /api/p HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok"
    with socket.create_connection(("127.0.0.1", port_of(host)), timeout=5) as sock:
        sock.sendall(raw)
        assert json.loads(read_answer(sock).body)["id"] == 1
        assert read_answer(sock).body == b"catch-all p ok"
        sock.sendall(b"GET /api/items/2 HTTP/1.1\r\nHost: h\r\n\r\n")
        assert json.loads(read_answer(sock).body)["id"] == 2
    with requests.Session() as session:
        for number in range(3):
            assert session.get(f"{host.base_url}/api/items/{number}", timeout=5).json()["id"] == number


def test_expect_100_continue_is_answered_only_for_an_accepted_request(host: LocalHost) -> None:
    head = b"POST /api/x HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port_of(host)), timeout=5) as sock:
        sock.sendall(head % 5)
        assert sock.recv(64).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(b"hello")
        assert read_answer(sock).body == b"catch-all x hello"
    with socket.create_connection(("127.0.0.1", port_of(host)), timeout=5) as sock:
        sock.sendall(head % (LIMITS.max_body_bytes + 1))
        answer = read_answer(sock)  # no 100 Continue first: the 413 straight away
        assert answer.status == 413


# ---------------------------------------------------------------------------- slow and half-open clients


def test_slowloris_connections_hold_no_threads_and_are_closed_after_the_header_timeout(host: LocalHost) -> None:
    assert host.http is not None
    threads_before = threading.active_count()
    slow: list[socket.socket] = []
    try:
        for index in range(300):
            sock = socket.create_connection(("127.0.0.1", port_of(host)), timeout=5)
            if index % 3:  # two in three send part of a head; the others nothing at all (half-open)
                sock.sendall(b"GET /api/items/1 HTTP/1.1\r\nHost: h\r\nX-Slow: ")
            slow.append(sock)
        # Normal requests are still answered while the slow connections are open.
        for number in range(5):
            assert requests.get(f"{host.base_url}/api/items/{number}", timeout=5).json()["id"] == number
        assert threading.active_count() <= threads_before + LIMITS.max_concurrent_requests
        # Within the header timeout (plus the linger) every slow connection is answered or closed.
        for index, sock in enumerate(slow):
            if index % 3:
                answer = read_answer(sock, timeout=LIMITS.header_timeout + LIMITS.linger + 5)
                assert answer.status == 408
                answer.error()
            assert closed_by_server(sock, timeout=LIMITS.header_timeout + LIMITS.linger + 5)
        deadline = time.monotonic() + 5
        while host.http.open_connections and time.monotonic() < deadline:
            time.sleep(0.05)
        assert host.http.open_connections == 0
    finally:
        for sock in slow:
            sock.close()


def test_a_body_that_does_not_arrive_in_time_frees_its_worker(host: LocalHost) -> None:
    assert host.http is not None
    socks = []
    try:
        for _ in range(LIMITS.max_concurrent_requests * 2):  # more than there are workers
            sock = socket.create_connection(("127.0.0.1", port_of(host)), timeout=5)
            sock.sendall(b"POST /api/x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nonly part")
            socks.append(sock)
        for sock in socks:
            answer = read_answer(sock, timeout=LIMITS.body_timeout * 3 + 5)
            assert answer.status in (408, None)
        assert requests.get(f"{host.base_url}/api/items/3", timeout=5).json()["id"] == 3
        assert host.http.worker_threads <= LIMITS.max_concurrent_requests
    finally:
        for sock in socks:
            sock.close()


def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout(host: LocalHost) -> None:
    with socket.create_connection(("127.0.0.1", port_of(host)), timeout=5) as sock:
        sock.sendall(b"GET /api/items/1 HTTP/1.1\r\nHost: h\r\n\r\n")
        assert read_answer(sock).status == 200
        assert closed_by_server(sock, timeout=LIMITS.keep_alive_timeout + 3)


# ------------------------------------------------------------------- huge bodies, the real app in a process


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.fixture
def service(
    storage_env: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[tuple[HostProcess, str]]:
    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    provision(storage_env)
    process = HostProcess(dict(os.environ), tmp_path / "state", tmp_path / "host.log", "--body-timeout", "5")
    try:
        process.wait_ready(key)
        yield process, key
    finally:
        process.stop()


HUGE = 300 * 1024 * 1024


def test_huge_unauthenticated_bodies_are_refused_before_they_are_read_and_memory_stays_bounded(
    service: tuple[HostProcess, str],
) -> None:
    process, key = service
    rss_before = rss_bytes(process.process.pid)
    put = "PUT " + JOB + " HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
    cases = [
        (put + f"Content-Length: {HUGE}\r\n\r\n", 401),
        (put + "Transfer-Encoding: chunked\r\n\r\n", 401),
        (put + f"Authorization: Bearer {key}\r\nContent-Length: {HUGE}\r\n\r\n", 413),
        (put + f"Expect: 100-continue\r\nContent-Length: {HUGE}\r\n\r\n", 401),
    ]
    for head, status in cases:
        with socket.create_connection(("127.0.0.1", process.port), timeout=5) as sock:
            sock.sendall(head.encode())
            answer = read_answer(sock)  # answered from the head alone, before a byte of body
            assert answer.status == status, (head, answer)
            assert answer.error()["code"] in ("AuthenticationFailed", "RequestEntityTooLarge")
            # Send the body anyway: the host drops it and closes; it never buffers it.
            block = (b"%x\r\n" % (1 << 20) + b"x" * (1 << 20) + b"\r\n") if "chunked" in head else b"x" * (1 << 20)
            sent = 0
            try:
                while sent < HUGE:
                    sock.sendall(block)
                    sent += len(block)
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                pass
            assert sent < HUGE, "the host read the whole body"
    growth = rss_bytes(process.process.pid) - rss_before
    assert growth < 32 * 1024 * 1024, f"the host grew by {growth / 2**20:.0f} MB"
    # An authenticated request within the limits is still served normally.
    response = requests.put(
        process.base_url + JOB, json={"location": "westus"}, headers={"x-functions-key": key}, timeout=10
    )
    assert response.status_code == 201, response.text
