"""Storage operations per create and per fire, counted at Azurite by a counting proxy.

    .venv/bin/python -m bench.opcount [--jobs 50] [--idle 120] [--warmup 150] [--measure 180] [--one-shot 200]
        [--plan elastic-premium]

:class:`OpCounter` is a real TCP proxy on 127.0.0.1 in front of Azurite's table and queue ports. It reads
the HTTP requests that pass through it (bytes are forwarded unchanged, both ways) and counts each one by
service and operation (``table get``, ``table query``, ``table insert``, ``table update`` (replace, ETag
guarded), ``table upsert`` (insert or replace), ``table merge`` (ETag guarded), ``table upsert-merge``,
``table delete``, ``table batch``; ``queue put``, ``queue get`` (a receive), ``queue delete``, ``queue
update``, ``queue peek``, ``queue properties``...) and by table or queue. A batch is one operation (one
request, billed as one); the operations inside it are counted apart as ``table batch entities``. Every
request counts, whatever its answer (a 404 or a 412 is billed too). Tests and benchmarks use it through
:func:`counting_azurite` (or :meth:`OpCounter.start` in front of any Azurite).

The benchmark runs the whole function app on the local host (API, dispatch timer, scan and execution
queues; ``--plan elastic-premium``: HTTP and timers on the worker's one pool too) on a private Azurite behind the
proxy, and an HTTP sink on loopback:

1. **idle**: the host runs with no jobs for ``--idle`` seconds: its polling and ticks per second;
2. **create**: ``--jobs`` every-minute HTTP jobs are created through the API: operations per create;
3. **steady state**: after ``--warmup`` seconds of firing, ``--measure`` seconds are counted; the idle rate
   times the window is subtracted and the rest divided by the calls the sink received in the window;
4. **one-shot**: ``--one-shot`` one-shot jobs due over two minutes, counted from their creation until
   every watch entry they left is gone (idle subtracted), per fire.

Each phase prints a table of operations per fire (or per create) by type.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import select
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

#: The services the proxy stands in front of (Azurite's blob port is not used by the app).
SERVICES = ("queue", "table")
#: Bytes of a request body kept to look inside a batch (a batch holds at most 100 operations of ≤ 1 MiB
#: each, but its operation lines come first in each part; the head of each part is what is read).
BATCH_BODY_LIMIT = 4 * 1024 * 1024
_BATCH_LINE = re.compile(rb"^(GET|POST|PUT|PATCH|MERGE|DELETE) https?://\S+ HTTP/1\.1\r?$", re.MULTILINE)
_ENTITY = re.compile(r"^(?P<table>[^/(]+)\((?P<keys>.*)\)$")


@dataclass(frozen=True)
class Request:
    """What the proxy saw of one request: enough to classify it."""

    service: str
    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]
    body: bytes = b""


def classify(request: Request) -> tuple[str, str]:
    """``(operation, resource)`` of a request: the operation as ``"<service> <kind>"``, the resource the
    table or queue it names ("" for account-level calls)."""
    parts = [unquote(p) for p in request.path.split("/") if p]
    rest = parts[1:]  # Azurite's URLs are path-style: /<account>/...
    method = request.method.upper()
    if method == "POST" and request.headers.get("x-http-method", "").upper() == "MERGE":
        method = "MERGE"
    guarded = "if-match" in request.headers and request.headers["if-match"] != "*"
    if request.service == "table":
        if not rest:
            return "table other", ""
        name = rest[0]
        if name == "$batch":
            return "table batch", ""
        if name.startswith("Tables"):
            kind = {"GET": "list tables", "POST": "create table", "DELETE": "delete table"}.get(method, "other")
            return f"table {kind}", ""
        match = _ENTITY.match(name)
        table, keys = (match.group("table"), match.group("keys")) if match else (name, "")
        if keys:  # one entity, named by its keys
            if method == "GET":
                return "table get", table
            if method == "PUT":
                return ("table update" if guarded else "table upsert"), table
            if method in ("PATCH", "MERGE"):
                return ("table merge" if guarded else "table upsert-merge"), table
            if method == "DELETE":
                return "table delete", table
        else:
            if method == "GET":
                return "table query", table
            if method == "POST":
                return "table insert", table
        return "table other", table
    if not rest:
        return ("queue list queues" if "comp" in request.query else "queue other"), ""
    queue = rest[0]
    if len(rest) == 1:
        if method == "GET" and request.query.get("comp") == ["metadata"]:
            return "queue properties", queue
        kind = {"PUT": "create queue", "DELETE": "delete queue"}.get(method, "other")
        return f"queue {kind}", queue
    if rest[1] == "messages" and len(rest) == 2:
        if method == "POST":
            return "queue put", queue
        if method == "GET":
            peek = request.query.get("peekonly", ["false"])[0].lower() == "true"
            return ("queue peek" if peek else "queue get"), queue
        if method == "DELETE":
            return "queue clear", queue
    if rest[1] == "messages" and len(rest) == 3:
        if method == "DELETE":
            return "queue delete", queue
        if method == "PUT":
            return "queue update", queue
    return "queue other", queue


def batch_operations(body: bytes) -> int:
    """How many operations a batch request's body holds (its change set's request lines)."""
    return len(_BATCH_LINE.findall(body))


@dataclass
class Counts:
    """Requests counted: by operation, and by (operation, resource)."""

    by_operation: Counter[str] = field(default_factory=Counter)
    by_resource: Counter[tuple[str, str]] = field(default_factory=Counter)

    def copy(self) -> Counts:
        return Counts(Counter(self.by_operation), Counter(self.by_resource))

    def __sub__(self, other: Counts) -> Counts:
        ops = Counter(self.by_operation)
        ops.subtract(other.by_operation)
        res = Counter(self.by_resource)
        res.subtract(other.by_resource)
        return Counts(+ops, +res)

    def total(self) -> int:
        """Every request, not the operations inside batches."""
        return sum(n for op, n in self.by_operation.items() if op != BATCH_ENTITIES)

    def of(self, operation: str) -> int:
        return self.by_operation.get(operation, 0)


#: The pseudo-operation under which the operations inside batches are counted (not requests of their own).
BATCH_ENTITIES = "table batch entities"


class _Parser:
    """Reads the requests of one client connection from the bytes it sends (HTTP/1.1, keep-alive,
    ``Content-Length`` or chunked bodies) and hands each complete one to ``on_request``."""

    def __init__(self, service: str, on_request: Callable[[Request], None]) -> None:
        self.service = service
        self.on_request = on_request
        self.buffer = bytearray()
        self.head: tuple[str, str, dict[str, str]] | None = None
        self.remaining = 0
        self.chunked = False
        self.body = bytearray()

    def feed(self, data: bytes) -> None:
        self.buffer += data
        while True:
            if self.head is None:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
                del self.buffer[: end + 4]
                method, target, _version = [*lines[0].split(" ", 2), "", ""][:3]
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                self.head = (method, target, headers)
                self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
                self.remaining = int(headers.get("content-length") or 0)
                self.body = bytearray()
            if self.chunked:
                if not self._read_chunks():
                    return
            else:
                take = min(self.remaining, len(self.buffer))
                if len(self.body) < BATCH_BODY_LIMIT:
                    self.body += self.buffer[:take]
                del self.buffer[:take]
                self.remaining -= take
                if self.remaining > 0:
                    return
            method, target, headers = self.head
            self.head = None
            split = urlsplit(target)
            self.on_request(Request(self.service, method, split.path, parse_qs(split.query), headers, bytes(self.body)))

    def _read_chunks(self) -> bool:
        """Consume chunks; True once the last chunk (and its trailer) has been read."""
        while True:
            if self.remaining > 0:
                take = min(self.remaining, len(self.buffer))
                if len(self.body) < BATCH_BODY_LIMIT:
                    self.body += self.buffer[:take]
                del self.buffer[:take]
                self.remaining -= take
                if self.remaining > 0:
                    return False
                if len(self.buffer) < 2:
                    self.remaining = -2  # the CRLF after the chunk is still to come
                    return False
                del self.buffer[:2]
            if self.remaining == -2:
                if len(self.buffer) < 2:
                    return False
                del self.buffer[:2]
                self.remaining = 0
            end = self.buffer.find(b"\r\n")
            if end < 0:
                return False
            size = int(bytes(self.buffer[:end]).split(b";")[0] or b"0", 16)
            if size == 0:
                trailer = self.buffer.find(b"\r\n\r\n")
                if trailer < 0:
                    return False
                del self.buffer[: trailer + 4]
                return True
            del self.buffer[: end + 2]
            self.remaining = size


class OpCounter:
    """A counting TCP proxy in front of Azurite's queue and table ports (see the module's docstring).

    ``OpCounter({"queue": 10001, "table": 10002}).start()`` listens on free ports (:attr:`ports`), and
    :meth:`connection_string` names them. :meth:`snapshot` copies the counts so far; subtract two snapshots
    for a phase. Thread-safe; :meth:`stop` closes every connection."""

    def __init__(self, upstream: Mapping[str, int], host: str = "127.0.0.1") -> None:
        self.upstream = dict(upstream)
        self.host = host
        self._counts = Counts()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._listeners: dict[str, socket.socket] = {}
        self._sockets: list[socket.socket] = []
        self.ports: dict[str, int] = {}

    # ------------------------------------------------------------------------------------------ life

    def start(self) -> OpCounter:
        for service, port in self.upstream.items():
            listener = socket.create_server((self.host, 0))
            self._listeners[service] = listener
            self.ports[service] = int(listener.getsockname()[1])
            thread = threading.Thread(
                target=self._accept, args=(service, listener, port), name=f"opcount-{service}", daemon=True
            )
            thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        for listener in self._listeners.values():
            with contextlib.suppress(OSError):
                listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def __enter__(self) -> OpCounter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def connection_string(self, account: str, key: str) -> str:
        """A connection string for the proxied services (``account`` and ``key`` of the Azurite behind)."""
        base = f"http://{self.host}"
        parts = [f"DefaultEndpointsProtocol=http;AccountName={account};AccountKey={key};"]
        names = {"queue": "QueueEndpoint", "table": "TableEndpoint", "blob": "BlobEndpoint"}
        parts += [f"{names[s]}={base}:{port}/{account};" for s, port in self.ports.items()]
        return "".join(parts)

    # ---------------------------------------------------------------------------------------- counts

    def snapshot(self) -> Counts:
        with self._lock:
            return self._counts.copy()

    def record(self, request: Request) -> None:
        operation, resource = classify(request)
        entities = batch_operations(request.body) if operation == "table batch" else 0
        with self._lock:
            self._counts.by_operation[operation] += 1
            self._counts.by_resource[(operation, resource)] += 1
            if entities:
                self._counts.by_operation[BATCH_ENTITIES] += entities

    # ------------------------------------------------------------------------------------- forwarding

    def _accept(self, service: str, listener: socket.socket, upstream: int) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(service, client, upstream), daemon=True).start()

    def _serve(self, service: str, client: socket.socket, upstream: int) -> None:
        try:
            server = socket.create_connection((self.host, upstream), timeout=10)
        except OSError:
            client.close()
            return
        server.settimeout(None)
        with self._lock:
            self._sockets += [client, server]
        parser = _Parser(service, self.record)
        peers = {client: server, server: client}
        try:
            while not self._stopped.is_set():
                readable, _, _ = select.select(list(peers), [], [], 0.5)
                for source in readable:
                    data = source.recv(65536)
                    if not data:
                        return
                    peers[source].sendall(data)
                    if source is client:
                        parser.feed(data)
        except OSError:
            return
        finally:
            for sock in (client, server):
                with contextlib.suppress(OSError):
                    sock.close()
            with self._lock:
                self._sockets = [s for s in self._sockets if s not in (client, server)]


@contextmanager
def counting_azurite() -> Iterator[tuple[OpCounter, str]]:
    """A private in-memory Azurite behind an :class:`OpCounter`: ``(counter, connection string)``, the
    connection string naming the proxy (every request of a client built from it is counted)."""
    from local_host.azurite import DEV_ACCOUNT, DEV_KEY, Azurite

    with Azurite() as azurite, OpCounter({"queue": azurite.ports.queue, "table": azurite.ports.table}) as counter:
        yield counter, counter.connection_string(DEV_ACCOUNT, DEV_KEY)


# ------------------------------------------------------------------------------------------ reporting


def per_unit(counts: Counts, units: float, idle: Counts | None = None, idle_scale: float = 0.0) -> dict[str, float]:
    """Operations per unit (per create, per fire) by operation, after subtracting ``idle`` scaled by
    ``idle_scale`` (the idle rate per second times the phase's seconds); never below zero."""
    result: dict[str, float] = {}
    for operation, count in counts.by_operation.items():
        base = idle.of(operation) * idle_scale if idle is not None else 0.0
        result[operation] = max(0.0, count - base) / units if units else float("nan")
    return result


def summary_rows(rates: Mapping[str, float]) -> list[list[object]]:
    """Rows ``[operation, per unit]`` sorted by service and operation, with the total of requests last."""
    rows: list[list[object]] = [
        [operation, f"{value:.2f}"] for operation, value in sorted(rates.items()) if operation != BATCH_ENTITIES
    ]
    total = sum(value for operation, value in rates.items() if operation != BATCH_ENTITIES)
    if BATCH_ENTITIES in rates:
        rows.append([f"({BATCH_ENTITIES}: operations inside batches, not requests)", f"{rates[BATCH_ENTITIES]:.2f}"])
    rows.append(["**total requests**", f"**{total:.2f}**"])
    return rows


def by_resource_rows(counts: Counts, units: float, prefix: str) -> list[list[object]]:
    """Operations per unit by (operation, table or queue), the table prefix taken off (no idle subtracted)."""
    rows = []
    for (operation, resource), count in sorted(counts.by_resource.items()):
        name = resource[len(prefix) :] if prefix and resource.lower().startswith(prefix.lower()) else resource
        rows.append([operation, name, count, f"{count / units:.2f}" if units else "-"])
    return rows


# ------------------------------------------------------------------------------------------ benchmark


def main() -> None:  # pragma: no cover - a benchmark, run by hand
    from bench.common import add_plan_option, table

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=50, help="every-minute jobs of the steady state")
    parser.add_argument("--idle", type=int, default=120, help="seconds of idle polling measured first (whole ticks)")
    parser.add_argument("--warmup", type=int, default=150, help="seconds of firing before the steady state")
    parser.add_argument("--measure", type=int, default=180, help="seconds of steady state counted")
    parser.add_argument("--one-shot", type=int, default=200, help="one-shot jobs (0: skip that phase)")
    parser.add_argument("--details", action="store_true", help="print the counts by table and queue too")
    add_plan_option(parser)
    args = parser.parse_args()
    print(f"plan {args.plan}")
    results = run(args.jobs, args.idle, args.warmup, args.measure, args.one_shot, args.plan)
    for title, rates, extra in results.tables:
        print(f"\n### {title}\n")
        print(table(["operation", "per unit"], summary_rows(rates)))
        if extra:
            print(extra)
    if args.details:
        for title, counts, units in results.details:
            print(f"\n### {title}: by table or queue\n")
            rows = by_resource_rows(counts, units, results.prefix)
            print(table(["operation", "table/queue", "count", "per unit"], rows))


@dataclass
class Results:
    prefix: str
    tables: list[tuple[str, dict[str, float], str]] = field(default_factory=list)
    details: list[tuple[str, Counts, float]] = field(default_factory=list)


def run(  # pragma: no cover
    jobs: int, idle_seconds: int, warmup: int, measure: int, one_shot: int, plan: str = "default"
) -> Results:
    """The benchmark's phases (see the module's docstring)."""
    import json
    import os
    import uuid
    from concurrent.futures import ThreadPoolExecutor
    from datetime import UTC, datetime, timedelta

    import requests

    from bench.common import ROOT
    from local_host.azurite import free_port
    from local_host.runtime import LocalHost
    from scheduler_core import auth, settings, wiring
    from scheduler_core.adapters.azure.provision import provision
    from tests.support.http_target import http_target

    key = auth.generate_key()
    suffix = uuid.uuid4().hex[:6]
    prefix = f"b{suffix}"
    results = Results(prefix)
    with counting_azurite() as (counter, connection), http_target() as target:
        sample = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
        os.environ.update(
            {
                **sample,
                "AzureWebJobsStorage": connection,
                "SCHEDULER_TABLE_PREFIX": prefix,
                "SCHEDULER_SCAN_QUEUE": f"scan-{suffix}",
                "SCHEDULER_EXECUTION_QUEUE": f"exec-{suffix}",
                "SCHEDULER_API_KEYS": auth.hash_entry(key),
            }
        )
        wiring.reset()
        provision(settings.load())
        import function_app

        collection = "subscriptions/bench/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/c"
        with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), plan=plan) as host:
            session = requests.Session()
            session.headers["Authorization"] = f"Bearer {key}"
            api = f"{host.base_url}/{collection}"
            body = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}}
            assert session.put(f"{api}?api-version=2016-03-01", json=body, timeout=30).ok

            def received() -> int:
                with target.lock:
                    return len(target.received)

            # 1. idle
            time.sleep(5)
            start = counter.snapshot()
            time.sleep(idle_seconds)
            idle = counter.snapshot() - start
            idle_rate = 1.0 / idle_seconds
            results.tables.append(("idle: requests per second", per_unit(idle, idle_seconds), ""))

            # 2. creates of every-minute jobs, started a minute from now at different seconds
            first = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=60)

            def put(i: int, start_at: datetime, recurrence: dict[str, object] | None, name: str) -> None:
                job: dict[str, object] = {
                    "startTime": start_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "action": {"type": "Http", "request": {"uri": f"{target.base_url}/{name}", "method": "POST"}},
                }
                if recurrence is not None:
                    job["recurrence"] = recurrence
                url = f"{api}/jobs/{name}?api-version=2016-03-01"
                response = session.put(url, json={"properties": job}, timeout=60)
                assert response.status_code == 201, response.text

            before = counter.snapshot()
            began = time.monotonic()
            with ThreadPoolExecutor(max_workers=4) as pool:
                every_minute = {"frequency": "Minute", "interval": 1}
                list(pool.map(lambda i: put(i, first + timedelta(seconds=i % 60), every_minute, f"m{i}"), range(jobs)))
            created = counter.snapshot() - before
            took = time.monotonic() - began
            rates = per_unit(created, jobs, idle, idle_rate * took)
            results.tables.append((f"per create ({jobs} every-minute jobs, idle subtracted)", rates, ""))
            results.details.append(("creates", created, jobs))

            # 3. steady state
            time.sleep(max(0.0, (first - datetime.now(UTC)).total_seconds()) + warmup)
            before, fired_before, began = counter.snapshot(), received(), time.monotonic()
            time.sleep(measure)
            window = counter.snapshot() - before
            fires = received() - fired_before
            took = time.monotonic() - began
            rates = per_unit(window, fires, idle, idle_rate * took)
            note = f"\n{fires} fires in {took:.0f} s; idle rate × {took:.0f} s subtracted"
            results.tables.append((f"per fire, steady state ({jobs} every-minute jobs)", rates, note))
            results.details.append(("steady state", window, fires))

            # 4. one-shot jobs: delete the every-minute jobs first, then count until the one-shots are done
            if one_shot:
                for i in range(jobs):
                    session.delete(f"{api}/jobs/m{i}?api-version=2016-03-01", timeout=60)
                time.sleep(200)  # their last attempts and watch entries are done
                before, fired_before, began = counter.snapshot(), received(), time.monotonic()
                due0 = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=90)
                with ThreadPoolExecutor(max_workers=4) as pool:
                    list(
                        pool.map(
                            lambda i: put(i, due0 + timedelta(seconds=(i * 120) // one_shot), None, f"o{i}"),
                            range(one_shot),
                        )
                    )
                creates_done = counter.snapshot() - before
                # fired over two minutes; watch entries end a lease (2 min) later, looked at by the next scan
                time.sleep(max(0.0, (due0 - datetime.now(UTC)).total_seconds()) + 120 + 200)
                window = counter.snapshot() - before - creates_done
                fires = received() - fired_before
                took = time.monotonic() - began
                rates = per_unit(window, fires, idle, idle_rate * took)
                note = f"\n{fires} fires of {one_shot} one-shot jobs (creates not counted); idle × {took:.0f} s off"
                results.tables.append((f"per fire, one-shot jobs ({one_shot})", rates, note))
                results.details.append(("one-shot", window, fires))
            wiring.reset()
    return results


if __name__ == "__main__":  # pragma: no cover
    main()
