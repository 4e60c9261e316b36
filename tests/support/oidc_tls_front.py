"""A TLS-terminating front for a local http server (a test peer): what App Service's front end is to the
function app. The local host serves http; ``azure-core``'s bearer-token policy sends tokens only over
https, so the SDK talks to this front (certificate from a test CA) and the front forwards the bytes to the
local host unchanged, one upstream connection per client connection."""

from __future__ import annotations

import contextlib
import socket
import ssl
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.tls import TestCa


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


def _serve(client: socket.socket, context: ssl.SSLContext, upstream: tuple[str, int]) -> None:
    try:
        secure = context.wrap_socket(client, server_side=True)
    except (OSError, ssl.SSLError):
        client.close()
        return
    try:
        plain = socket.create_connection(upstream, timeout=30)
    except OSError:
        secure.close()
        return
    back = threading.Thread(target=_pump, args=(plain, secure), daemon=True)
    back.start()
    _pump(secure, plain)
    back.join(timeout=60)
    for sock in (plain, secure):
        with contextlib.suppress(OSError):
            sock.close()


@contextmanager
def tls_front(ca: TestCa, upstream_port: int, upstream_host: str = "127.0.0.1") -> Iterator[str]:
    """Serve https on a free port of 127.0.0.1 in front of ``upstream_host:upstream_port``; yields its base
    URL (``https://127.0.0.1:<port>``)."""
    issued = ca.issue("127.0.0.1", server=True)
    with tempfile.TemporaryDirectory() as folder:
        cert_path, key_path = issued.write_pem(Path(folder), "front")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stopped = threading.Event()

    def accept() -> None:
        while not stopped.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            threading.Thread(target=_serve, args=(client, context, (upstream_host, upstream_port)), daemon=True).start()

    thread = threading.Thread(target=accept, name="tls-front", daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stopped.set()
        thread.join(timeout=5)
        listener.close()
