"""A fault-injecting TCP proxy on 127.0.0.1 (a test peer): a real proxy that forwards bytes both ways
between its clients and one upstream address, and that on command breaks the path as networks do.

Modes (:meth:`FaultProxy.set_mode`):
- ``pass``: forward everything.
- ``refuse``: new connections are reset at once (existing ones keep working): a service that is down.
- ``cut``: every open connection is reset, and new ones are refused: a restart or a broken link.
- ``blackhole``: nothing moves on any connection, open or new (they connect, then hang): a network
  partition. Back in ``pass``, what was held moves on, as after a partition heals (a request sent during
  the partition may reach the server after its client gave up waiting).
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

MODES = ("pass", "refuse", "cut", "blackhole")


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a dropped connection looks to its peer."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


class FaultProxy:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.mode = "pass"
        self.connections = 0  # accepted so far
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, name=f"fault-proxy-{self.port}", daemon=True)

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        with self._lock:
            self.mode = mode
            doomed = self._pairs if mode == "cut" else []
            if mode == "cut":
                self._pairs = []
        for client, server in doomed:
            _reset(client)
            _reset(server)

    def stop(self) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for client, server in pairs:
            _reset(client)
            _reset(server)

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                mode = self.mode
                self.connections += 1
            if mode in ("refuse", "cut"):
                _reset(client)
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        while self._held():  # a partition: the connection opened, but nothing reaches the server
            time.sleep(0.05)
        try:
            server = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            _reset(client)
            return
        server.settimeout(None)
        with self._lock:
            if self.mode in ("refuse", "cut"):
                _reset(client)
                _reset(server)
                return
            self._pairs.append((client, server))
        self._pump(client, server)

    def _held(self) -> bool:
        with self._lock:
            return self.mode == "blackhole" and not self._stopped.is_set()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        peers = {client: server, server: client}
        try:
            while not self._stopped.is_set():
                if self._held():
                    time.sleep(0.05)
                    continue
                readable, _, _ = select.select(list(peers), [], [], 0.05)
                for source in readable:
                    data = source.recv(65536)
                    if not data:
                        return
                    peers[source].sendall(data)
        except (OSError, ValueError):
            return
        finally:
            with self._lock:
                if (client, server) in self._pairs:
                    self._pairs.remove((client, server))
            _reset(client)
            _reset(server)


@contextmanager
def fault_proxy(upstream: tuple[str, int]) -> Iterator[FaultProxy]:
    proxy = FaultProxy(upstream).start()
    try:
        yield proxy
    finally:
        proxy.stop()
