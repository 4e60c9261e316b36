"""Test peers and test doubles for the outbound-policy (SSRF) tests. Test helpers, never product code.

- :class:`FakeDns` is a **test double** of DNS: names and the addresses they resolve to (a name may answer
  differently on each lookup, as a rebinding attacker's DNS does). No real DNS can be used in tests.
- :class:`Tripwire` makes sure no test reaches anything but loopback: while installed, ``socket.getaddrinfo``
  answers IP literals (numerically) and :class:`FakeDns` names only, and ``socket.connect`` to any address
  outside 127.0.0.0/8 and ::1 is recorded and fails (``ENETUNREACH``) instead of leaving the machine. The
  record is what tests check to show that a refused target was never even attempted.
- :func:`scripted_server` is a real HTTP(S) server on 127.0.0.1 that answers each request as a function
  says (status, headers, body), records the requests and, over TLS, the SNI name and client certificate.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import ssl
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.serialization import Encoding

from tests.support.tls import TestCa


@dataclass
class FakeDns:
    """**Test double** of DNS. ``records[name]`` is a list of answers; each lookup takes the next answer
    (the last one repeats). Unknown names do not resolve (``socket.gaierror``). Lookups are recorded."""

    records: dict[str, list[list[str]]] = field(default_factory=dict)
    lookups: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, *answers: Sequence[str]) -> None:
        with self.lock:
            self.records[name.lower().rstrip(".")] = [list(answer) for answer in answers]

    def resolve(self, host: str) -> list[str]:
        key = host.lower().rstrip(".")
        with self.lock:
            self.lookups.append(key)
            answers = self.records.get(key)
            if not answers:
                raise socket.gaierror(socket.EAI_NONAME, f"{host}: not a name of the test DNS")
            return list(answers.pop(0) if len(answers) > 1 else answers[0])


def is_loopback(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host.split("%", maxsplit=1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


@dataclass
class Tripwire:
    """Records every ``connect`` and refuses those that would leave loopback (see the module)."""

    dns: FakeDns
    attempts: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def outside_loopback(self) -> list[str]:
        with self.lock:
            return [a for a in self.attempts if not is_loopback(a)]

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real_getaddrinfo = socket.getaddrinfo
        real_connect = socket.socket.connect
        real_connect_ex = socket.socket.connect_ex
        tripwire = self

        def getaddrinfo(host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0) -> Any:
            text = host.decode() if isinstance(host, bytes) else host
            if text is None:
                return real_getaddrinfo(host, port, family, type, proto, flags)
            try:
                return real_getaddrinfo(text, port, family, type, proto, flags | socket.AI_NUMERICHOST)
            except socket.gaierror:
                pass
            infos: list[Any] = []
            for address in tripwire.dns.resolve(text):
                infos += real_getaddrinfo(address, port, family, type, proto, flags | socket.AI_NUMERICHOST)
            return infos

        def check(address: Any) -> None:
            host = str(address[0]) if isinstance(address, tuple) else str(address)
            with tripwire.lock:
                tripwire.attempts.append(host)
            if not is_loopback(host):
                raise OSError(errno.ENETUNREACH, f"test tripwire: no connection to {host} (loopback only)")

        def connect(sock: socket.socket, address: Any) -> None:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                check(address)
            real_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                check(address)
            return real_connect_ex(sock, address)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        monkeypatch.setattr(socket.socket, "connect", connect)
        monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    sni: str | None
    client_subject: str | None


#: (status, headers, body)
Reply = tuple[int, dict[str, str], bytes]
Respond = Callable[[Request], Reply]


@dataclass
class ScriptedServer:
    base_url: str
    port: int
    received: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests(self) -> list[Request]:
        with self.lock:
            return list(self.received)


def ok(_: Request) -> Reply:
    return 200, {"Content-Type": "text/plain"}, b"reached"


def redirect_to(location: str, status: int = 302) -> Respond:
    def respond(_: Request) -> Reply:
        return status, {"Location": location}, b""

    return respond


def tls_server_context(ca: TestCa, folder: Path, *, require_client_cert: bool = False) -> ssl.SSLContext:
    """A server context with a certificate from ``ca`` for ``localhost`` and 127.0.0.1."""
    cert_path, key_path = ca.issue("localhost", server=True).write_pem(folder, "server")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    if require_client_cert:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cadata=ca.cert.public_bytes(Encoding.PEM).decode())
    return context


@contextmanager
def scripted_server(respond: Respond = ok, tls: ssl.SSLContext | None = None) -> Iterator[ScriptedServer]:
    """A real server on 127.0.0.1 (HTTPS with ``tls``) answering each request with ``respond(request)``."""
    sni_names: dict[int, str | None] = {}
    if tls is not None:

        def remember_sni(sock: ssl.SSLObject | ssl.SSLSocket, name: str | None, _: ssl.SSLContext) -> None:
            sni_names[id(sock)] = name

        tls.sni_callback = remember_sni
    server_box: list[ScriptedServer] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            peer = server_box[0]
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            subject = None
            cert: Any = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
            if cert:
                subject = ",".join(f"{k}={v}" for rdn in cert.get("subject", ()) for k, v in rdn)
            request = Request(
                self.command, self.path, dict(self.headers), body, sni_names.get(id(self.connection)), subject
            )
            with peer.lock:
                peer.received.append(request)
            status, headers, payload = respond(request)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _serve

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def get_request(self) -> tuple[Any, Any]:
            sock, address = self.socket.accept()
            if tls is None:
                return sock, address
            return tls.wrap_socket(sock, server_side=True), address

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # refused TLS handshakes are expected in some tests

    server = Server(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    scheme = "https" if tls is not None else "http"
    server_box.append(ScriptedServer(f"{scheme}://127.0.0.1:{port}", int(port)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server_box[0]
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def tls_folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ssrf-tls-") as folder:
        yield Path(folder)
