"""A fault-injecting TCP proxy on 127.0.0.1 (a test peer): a real proxy that forwards bytes both ways
between its clients and one upstream address, and that on command breaks the path as networks do.

Modes (:meth:`FaultProxy.set_mode`):
- ``pass``: forward everything.
- ``refuse``: new connections are reset at once (existing ones keep working): a service that is down.
- ``cut``: every open connection is reset, and new ones are refused: a restart or a broken link.
- ``blackhole``: nothing moves on any connection, open or new (they connect, then hang): a network
  partition. Back in ``pass``, what was held moves on, as after a partition heals (a request sent during
  the partition may reach the server after its client gave up waiting).
- ``down``: every open connection is reset, and the port stops listening, so that new connections are
  refused by the operating system (``ECONNREFUSED`` at connect, not a reset after it): a host that is down.
  Any other mode listens again, on the same port.
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

MODES = ("pass", "refuse", "cut", "blackhole", "down")
#: Modes in which a connection is reset (or never accepted).
REFUSING = ("refuse", "cut", "down")
#: Seconds a pump thread waits in select() (or while held) before it looks again.
PUMP_WAIT = 0.05


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a dropped connection looks to its peer."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


def _listener() -> socket.socket:
    """A listening socket on a free port of 127.0.0.1, bound to that port by number, so that it keeps the port
    while it stops listening (``down``: shut down, then listening again on the same port)."""
    for _ in range(20):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        try:
            return socket.create_server(("127.0.0.1", port))
        except OSError:  # taken in between by another process: another free port
            continue
    return socket.create_server(("127.0.0.1", 0))


class FaultProxy:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.mode = "pass"
        self.connections = 0  # accepted so far
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._listener = _listener()
        self.port: int = self._listener.getsockname()[1]
        self._stopped = threading.Event()
        self._listening = threading.Event()  # clear while ``down``
        self._listening.set()
        self._thread = threading.Thread(target=self._accept, name=f"fault-proxy-{self.port}", daemon=True)

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        with self._lock:
            was, self.mode = self.mode, mode
            doomed = self._pairs if mode in ("cut", "down") else []
            if mode in ("cut", "down"):
                self._pairs = []
            if mode == "down" and was != "down":
                self._stop_listening()
            elif was == "down" and mode != "down":
                self._listen_again()
        for client, server in doomed:
            _reset(client)
            _reset(server)
        if doomed and mode == "down":
            # A socket closed while its pump thread waits in select() is reset when that wait ends (within
            # PUMP_WAIT): return once the resets went out, so that the next call finds storage refusing.
            time.sleep(2 * PUMP_WAIT)

    def _stop_listening(self) -> None:
        """Stop listening but keep the port (Linux: a listening socket shut down refuses connections and can
        listen again); elsewhere, close it (:meth:`_listen_again` binds the port anew)."""
        self._listening.clear()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            self._listener.close()

    def _listen_again(self) -> None:
        try:
            self._listener.listen()
        except OSError:  # closed by _stop_listening: bind the port again
            self._listener = socket.create_server(("127.0.0.1", self.port))
        self._listening.set()

    def stop(self) -> None:
        self._stopped.set()
        self._listening.set()
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
                if self._stopped.is_set():
                    return
                self._listening.wait()  # down: until set_mode listens again (or stop)
                time.sleep(0.01)
                continue
            with self._lock:
                mode = self.mode
                self.connections += 1
            if mode in REFUSING:
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
            if self.mode in REFUSING:
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
                    time.sleep(PUMP_WAIT)
                    continue
                readable, _, _ = select.select(list(peers), [], [], PUMP_WAIT)
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
