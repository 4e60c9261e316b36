"""Test PKI and TLS peers (test helpers, never product code): a CA made in the test, server and client
certificates it issues (client ones also as base64 PFX), and an HTTPS server on 127.0.0.1 (stdlib ``ssl``)
that can require a client certificate from that CA and answers with a handler function."""

from __future__ import annotations

import base64
import ipaddress
import json
import ssl
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
    pkcs12,
)
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class Issued:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def pfx_base64(self, password: str | None) -> str:
        encryption = BestAvailableEncryption(password.encode()) if password else NoEncryption()
        data = pkcs12.serialize_key_and_certificates(b"test", self.key, self.cert, None, encryption)
        return base64.b64encode(data).decode()

    def write_pem(self, folder: Path, name: str) -> tuple[Path, Path]:
        cert_path, key_path = folder / f"{name}.crt", folder / f"{name}.key"
        cert_path.write_bytes(self.cert.public_bytes(Encoding.PEM))
        key_path.write_bytes(self.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
        return cert_path, key_path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@dataclass
class TestCa:
    """A certificate authority that exists only for one test session."""

    __test__ = False  # not a pytest test class

    name: str = "Scheduler Test CA"
    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    cert: x509.Certificate = field(init=False)

    def __post_init__(self) -> None:
        now = datetime.now(UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name(self.name))
            .issuer_name(_name(self.name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )

    def issue(self, common_name: str, *, server: bool, names: Sequence[str] = ("localhost", "127.0.0.1")) -> Issued:
        """A certificate for ``common_name``, for a server (valid for ``names``: DNS names and IP addresses)
        or a client, with the extensions a strict verifier asks for (Python 3.13's default context)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.now(UTC)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
        )
        if server:
            alternatives: list[x509.GeneralName] = []
            for name in names:
                try:
                    alternatives.append(x509.IPAddress(ipaddress.ip_address(name)))
                except ValueError:
                    alternatives.append(x509.DNSName(name))
            builder = builder.add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
        return Issued(builder.sign(self.key, hashes.SHA256()), key)

    def write_pem(self, folder: Path) -> Path:
        path = folder / "ca.crt"
        path.write_bytes(self.cert.public_bytes(Encoding.PEM))
        return path


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    client_subject: str | None


#: A handler gets what was seen and returns (status, content type, body).
Respond = Callable[[Seen], tuple[int, str, bytes]]


def ok_text(_: Seen) -> tuple[int, str, bytes]:
    return 200, "text/plain", b"hello over mutual TLS"


@dataclass
class HttpsPeer:
    base_url: str
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests_to(self, suffix: str) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.path.endswith(suffix)]


@contextmanager
def https_peer(ca: TestCa, respond: Respond = ok_text, *, require_client_cert: bool) -> Iterator[HttpsPeer]:
    """An HTTPS server on 127.0.0.1 with a certificate from ``ca``; with ``require_client_cert`` the TLS
    handshake fails unless the client presents a certificate issued by ``ca``."""
    server_cert = ca.issue("127.0.0.1", server=True)
    with tempfile.TemporaryDirectory() as folder:
        cert_path, key_path = server_cert.write_pem(Path(folder), "server")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        if require_client_cert:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(cadata=ca.cert.public_bytes(Encoding.PEM).decode())
        peer = HttpsPeer("")

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                subject = None
                peer_cert = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
                if peer_cert:
                    subject = ",".join(f"{k}={v}" for rdn in peer_cert.get("subject", ()) for k, v in rdn)
                seen = Seen(self.command, self.path, dict(self.headers), body, subject)
                with peer.lock:
                    peer.seen.append(seen)
                status, content_type, payload = respond(seen)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = _serve

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def get_request(self) -> tuple[Any, Any]:
                sock, address = self.socket.accept()
                return context.wrap_socket(sock, server_side=True), address

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # refused handshakes are expected in the wrong-certificate tests

        server = Server(("127.0.0.1", 0), Handler)
        peer.base_url = f"https://127.0.0.1:{server.server_address[1]}"
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            yield peer
        finally:
            server.shutdown()
            server.server_close()


def token_endpoint(tokens: list[str], expires_in: int) -> Respond:
    """An Entra ID look-alike: OpenID configuration and a client-credentials token endpoint that hands out
    ``tokens`` in order (recording each request is the peer's job)."""
    issued = iter(tokens)

    def respond(seen: Seen) -> tuple[int, str, bytes]:
        host = seen.headers.get("Host", "")
        if seen.path.endswith("/.well-known/openid-configuration"):
            tenant = seen.path.strip("/").split("/")[0]
            base = f"https://{host}/{tenant}"
            doc = {
                "token_endpoint": f"{base}/oauth2/v2.0/token",
                "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                "issuer": f"{base}/v2.0",
                "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode",
            }
            return 200, "application/json", json.dumps(doc).encode()
        if seen.path.endswith("/oauth2/v2.0/token") and seen.method == "POST":
            body = {"token_type": "Bearer", "expires_in": expires_in, "access_token": next(issued)}
            return 200, "application/json", json.dumps(body).encode()
        return 404, "application/json", b'{"error": "not_found"}'

    return respond
