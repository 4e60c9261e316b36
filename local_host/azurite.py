"""Start and stop the Azurite storage emulator (npm package ``azurite``, pinned in ``package.json``).

Used by ``make run`` (data kept under the git-ignored ``.azurite/``) and by the test suite (in memory, on
free ports, so tests never collide with an Azurite the user already runs).

By default Azurite speaks plain HTTP and accepts the development account's key (and SAS) only. With
:class:`AzuriteHttps` it serves HTTPS with the given PEM certificate and key (``--cert``/``--key``) and, with
``oauth``, also accepts bearer tokens (``--oauth basic``, which Azurite allows over HTTPS only: its
README's "OAuth Configuration"). Basic OAuth checks a token's shape, issuer, audience and lifetime, not its
signature (``node_modules/azurite/dist/src/queue/authentication/QueueTokenAuthenticator.js``), so identity-based
connections can be exercised locally with a stand-in credential (``local_host/connections.py``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from local_host.ports import PortInUseError, ensure_free
from scheduler_core.errors import ConfigurationError

#: The emulator's well-known development account (public, documented by Microsoft; not a secret).
DEV_ACCOUNT = "devstoreaccount1"
DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` different TCP ports on 127.0.0.1 that are free right now.

    Every socket stays bound until all are chosen: two separate :func:`free_port` calls may return the same
    port (the kernel hands a closed ephemeral port out again), which is not free for two servers at once."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


@dataclass(frozen=True)
class AzuritePorts:
    """The three service ports of one Azurite instance."""

    blob: int = 10000
    queue: int = 10001
    table: int = 10002

    @classmethod
    def any(cls) -> AzuritePorts:
        """Port 0 for each service: the kernel picks a free one as Azurite binds it (known once it listens)."""
        return cls(0, 0, 0)

    @classmethod
    def free(cls) -> AzuritePorts:
        blob, queue, table = free_ports(3)
        return cls(blob=blob, queue=queue, table=table)

    @classmethod
    def parse(cls, text: str) -> AzuritePorts:
        """``"blob,queue,table"`` (``make run AZURITE_PORTS=...``, ``--azurite-ports``)."""
        try:
            blob, queue, table = (int(p) for p in text.split(","))
        except ValueError:
            raise ConfigurationError(f"Azurite ports must be three ports 'blob,queue,table', got {text!r}") from None
        ports = cls(blob, queue, table)
        if len(set(ports.by_service().values())) != 3 or not all(0 < p < 65536 for p in ports.by_service().values()):
            raise ConfigurationError(f"Azurite ports must be three different TCP ports (1 to 65535), got {text!r}")
        return ports

    def by_service(self) -> dict[str, int]:
        """The ports by Azurite service name (``blob``, ``queue``, ``table``)."""
        return {"blob": self.blob, "queue": self.queue, "table": self.table}

    def __str__(self) -> str:
        return f"{self.blob},{self.queue},{self.table}"

    def queue_endpoint(self) -> str:
        """The ``SCHEDULER_STORAGE_QUEUE_ENDPOINT`` template of Storage queue actions sent to this Azurite."""
        return f"http://127.0.0.1:{self.queue}/{{account}}"

    def connection_string(self, scheme: str = "http") -> str:
        """The explicit connection string for these ports (``UseDevelopmentStorage`` assumes defaults), over
        ``scheme`` (``https`` for an Azurite started with :class:`AzuriteHttps`)."""
        base = f"{scheme}://127.0.0.1"
        return (
            f"DefaultEndpointsProtocol={scheme};AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
            f"BlobEndpoint={base}:{self.blob}/{DEV_ACCOUNT};"
            f"QueueEndpoint={base}:{self.queue}/{DEV_ACCOUNT};"
            f"TableEndpoint={base}:{self.table}/{DEV_ACCOUNT};"
        )

    def service_uri(self, service: str, scheme: str = "http") -> str:
        """The development account's endpoint of ``service`` (``blob``, ``queue``, ``table``), path-style as
        Azurite serves it on an IP address: the value of an identity-based ``<connection>__<service>ServiceUri``."""
        return f"{scheme}://127.0.0.1:{self.by_service()[service]}/{DEV_ACCOUNT}"


def _executable() -> str:
    local = PROJECT_ROOT / "node_modules" / ".bin" / "azurite"
    if local.exists():
        return str(local)
    found = shutil.which("azurite")
    if found:
        return found
    raise ConfigurationError("Azurite is not installed: run 'npm ci' in the project root (make does it)")


#: The line Azurite prints once a service listens (``dist/src/azurite.js``), with the address it bound.
_LISTENING = re.compile(r"Azurite (Blob|Queue|Table) service is successfully listening at https?://[^\s]*:(\d+)")


def _listening(output: str) -> dict[str, int]:
    """The ports Azurite says its services listen on, by service name (those that listen so far)."""
    return {service.lower(): int(port) for service, port in _LISTENING.findall(output)}


@dataclass(frozen=True)
class AzuriteHttps:
    """HTTPS for every Azurite service: a PEM certificate and its private key (``--cert``, ``--key``; the
    certificate must name 127.0.0.1, and its CA be trusted by the clients), and with ``oauth`` bearer tokens
    accepted besides the account key (``--oauth basic``)."""

    cert: Path
    key: Path
    oauth: bool = True

    def arguments(self) -> list[str]:
        """Azurite's command-line options for this."""
        return ["--cert", str(self.cert), "--key", str(self.key), *(["--oauth", "basic"] if self.oauth else [])]


class Azurite:
    """An Azurite child process. Use as a context manager, or call :meth:`start` and :meth:`stop`.

    ``ports``: the three ports to serve on; None (the default): ports the kernel picks as Azurite binds them, known
    (:attr:`ports`) once :meth:`start` returns, so that no other process can take one between a check and the bind.
    ``https``: serve HTTPS (and accept bearer tokens) as :class:`AzuriteHttps` says; None (the default): plain
    HTTP with the account key, as before."""

    def __init__(
        self,
        ports: AzuritePorts | None = None,
        location: Path | None = None,
        own_session: bool = False,
        https: AzuriteHttps | None = None,
    ) -> None:
        #: The ports asked for; None: the kernel picks free ones as Azurite binds them (:attr:`ports` once started).
        self.requested = ports
        self.ports = ports or AzuritePorts.any()
        self.location = location
        self.https = https
        #: Start Azurite in a session of its own, so that a Ctrl-C at the terminal reaches the host alone and
        #: the host stops Azurite after it has released its timer leases (``python -m local_host run``).
        self.own_session = own_session
        self._process: subprocess.Popen[bytes] | None = None
        self._output: IO[bytes] | None = None

    @property
    def scheme(self) -> str:
        """``https`` when started with :class:`AzuriteHttps`, else ``http``."""
        return "https" if self.https is not None else "http"

    @property
    def connection_string(self) -> str:
        return self.ports.connection_string(self.scheme)

    def service_uri(self, service: str) -> str:
        """The endpoint of ``service`` for an identity-based connection (see :meth:`AzuritePorts.service_uri`)."""
        return self.ports.service_uri(service, self.scheme)

    @property
    def pid(self) -> int | None:
        """The process id of the running Azurite (benchmarks read its CPU time), None when stopped."""
        return self._process.pid if self._process is not None else None

    def start(self, timeout: float = 30.0) -> None:
        """Start Azurite and return once it says each service listens (its own output names the ports it bound: a
        port that merely answers may be another process's)."""
        if self.requested is not None:
            for service, port in self.requested.by_service().items():
                ensure_free("127.0.0.1", port, f"Azurite {service}")
        args = [_executable(), "--silent", "--disableTelemetry", "--skipApiVersionCheck"]
        for service, port in (self.requested or AzuritePorts.any()).by_service().items():
            args += [f"--{service}Host", "127.0.0.1", f"--{service}Port", str(port)]
        if self.https is not None:
            args += self.https.arguments()
        if self.location is None:
            args.append("--inMemoryPersistence")
        else:
            self.location.mkdir(parents=True, exist_ok=True)
            args += ["--location", str(self.location)]
        output = tempfile.TemporaryFile()  # noqa: SIM115 (Azurite writes to it while it runs; closed by stop)
        self._output = output
        self._process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.PIPE,
            start_new_session=self.own_session,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                err = self._process.stderr.read().decode(errors="replace") if self._process.stderr else ""
                self.stop()
                raise self._taken_port(err) or ConfigurationError(f"Azurite exited at start-up: {err.strip()[:500]}")
            bound = _listening(os.pread(output.fileno(), 1 << 16, 0).decode(errors="replace"))
            if len(bound) == 3:
                self.ports = AzuritePorts(bound["blob"], bound["queue"], bound["table"])
                return
            time.sleep(0.1)
        self.stop()
        raise ConfigurationError(f"Azurite did not start listening within {timeout:.0f} s")

    def _taken_port(self, stderr: str) -> PortInUseError | None:
        """The port another process took between the check and Azurite's own bind, if that is why it exited."""
        if "EADDRINUSE" not in stderr:
            return None
        for service, port in self.ports.by_service().items():
            if re.search(rf":{port}(?!\d)", stderr):
                return PortInUseError(port, f"Azurite {service}")
        return None

    def stop(self) -> None:
        process, self._process = self._process, None
        output, self._output = self._output, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        if output is not None:
            output.close()

    def __enter__(self) -> Azurite:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
