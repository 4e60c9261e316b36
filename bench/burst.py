"""Benchmark: a burst of one-shot jobs all due at the same second, through the local host on Azurite, next to a
raw queue consumer on the same Azurite in the same run.

    .venv/bin/python -m bench.burst [--jobs 3000] [--queues 1] [--workers 40] [--threads 8] [--plan elastic-premium]

What it does, on a private in-memory Azurite:

1. serves the function app as ``make run`` does, in a process of its own (``python -m local_host run``: HTTP,
   the dispatch timer, one poller per queue function), with ``SCHEDULER_EXECUTION_QUEUE_COUNT=--queues`` and
   ``PYTHON_THREADPOOL_THREAD_COUNT=--workers`` (the threads that run its queue functions) and ``--plan``
   (``elastic-premium``: HTTP and the timers run on those threads too, as on an Elastic Premium plan);
2. creates ``--jobs`` one-shot HTTP jobs through the management API (``--threads`` client threads), all due
   at the same second T: the first whole minute far enough ahead that every job is written before the
   dispatch timer's tick that picks them up (T - lookahead), so they go the way of a burst at the top of the
   hour: timer tick -> one scan per shard -> execution messages visible at T -> executions;
3. receives the calls on an HTTP sink on 127.0.0.1 (one path per job) and reports, from T: lateness (arrival
   - T) p50/p99/max, misses (never called), duplicates (called twice), the drain rate (calls / (last arrival
   - T)), when the scans finished (from the host's log), the executions' own durations and how they spread
   over the queues, and the CPU that the host and Azurite used;
4. stops the host and runs the raw consumer on the same Azurite: ``--jobs`` messages in one queue,
   consumed by ``--workers`` threads that each receive 32 at a time and, per message, insert one table
   entity and delete the message. Its rate is the ratio's denominator. With ``--queues`` K > 1 it runs on
   K queues first (printed beside it).

Numbers are from one machine where the host, Azurite (single-threaded Node) and this client share the CPUs;
Azurite's queue receive slows down as a queue gets deeper (see the reference notes), which a burst does.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests
from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError, ServiceResponseError
from azure.storage.queue import ExponentialRetry, QueueClient

from bench.common import ROOT, add_plan_option, percentile, table
from local_host.azurite import Azurite, free_port
from scheduler_core import auth, settings, wiring
from scheduler_core.adapters.azure.clients import queue_client, storage_transport, table_service
from scheduler_core.adapters.azure.provision import provision

JOBS_PER_COLLECTION = 1000  # P20Premium's largest collection
RECEIVE_BATCH = 32  # the most one Storage queue receive returns
#: How long the raw consumer holds what it received: long enough that no message comes back to another
#: worker while a batch of 32 is worked through, short enough that one whose receive was lost comes back.
RAW_LEASE_SECONDS = 120
JC = "subscriptions/bench/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections"


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``; 0 elsewhere or when gone)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------------------------------ the sink


@dataclass
class Sink:
    """A real HTTP server on 127.0.0.1: records when each path was called."""

    arrivals: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    lock: threading.Lock = field(default_factory=threading.Lock)
    base_url: str = ""

    def count(self) -> int:
        with self.lock:
            return len(self.arrivals)

    def snapshot(self) -> dict[str, list[float]]:
        with self.lock:
            return {path: list(times) for path, times in self.arrivals.items()}


@contextlib.contextmanager
def http_sink() -> Iterator[Sink]:
    sink = Sink()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            at = time.time()
            with sink.lock:
                sink.arrivals[self.path].append(at)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 512  # a burst opens many connections at once

    server = Server(("127.0.0.1", 0), Handler)
    sink.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield sink
    finally:
        server.shutdown()
        server.server_close()


# ------------------------------------------------------------------------------------------------ the host


@dataclass
class Host:
    process: subprocess.Popen[bytes]
    base_url: str
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


@contextlib.contextmanager
def served(workdir: Path, key: str, plan: str = "default") -> Iterator[Host]:
    """``python -m local_host run --plan plan`` with this process's environment (the benchmark's settings)."""
    port = free_port()
    log = workdir / "host.log"
    command = [sys.executable, "-m", "local_host", "run", "--port", str(port), "--state-dir", str(workdir / "state")]
    command += ["--plan", plan]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    host = Host(process, f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"{host.base_url}/{JC}?api-version=2016-03-01", timeout=2, headers=_auth(key))
                break
            except requests.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the local host did not start:\n" + log.read_text(errors="replace")) from None
                time.sleep(0.2)
        yield host
    finally:
        host.stop()


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


_INVOCATION = re.compile(
    r"^(?P<at>\S+)Z INFO (?:local_host|Function\.\S+): function=(?P<function>\S+) trigger=queue queue=(?P<queue>\S+) "
    r".*-> (?P<outcome>.+?) in (?P<ms>[\d.]+) ms"
)


@dataclass
class HostLog:
    executions: dict[str, list[float]]  # function -> durations in ms
    outcomes: Counter[str]
    scans_done: datetime | None  # when the last scan of the burst finished (log time, whole seconds)
    resent: int = 0  # attempts the watchdog sent again ("...; sent again" lines)


def read_host_log(path: Path, since: datetime, scans_before: datetime) -> HostLog:
    """Executions from ``since`` on; the scans from ``since`` to ``scans_before`` (the burst's tick's)."""
    executions: dict[str, list[float]] = defaultdict(list)
    outcomes: Counter[str] = Counter()
    scans_done: datetime | None = None
    resent = 0
    for line in path.read_text(errors="replace").splitlines():
        if line.endswith("; sent again") and line[:19] >= since.strftime("%Y-%m-%dT%H:%M:%S"):
            resent += 1
        match = _INVOCATION.match(line)
        if match is None:
            continue
        at = datetime.strptime(match["at"], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
        if at < since:
            continue
        if match["function"] == "scan_shard":
            if at < scans_before:
                scans_done = max(scans_done or at, at)
        else:
            executions[match["function"]].append(float(match["ms"]))
            outcomes[match["outcome"].split(",")[0]] += 1
    return HostLog(dict(executions), outcomes, scans_done, resent)


# ------------------------------------------------------------------------------------------------ the burst


@dataclass
class BurstResult:
    jobs: int
    queues: int
    due: datetime
    created_seconds: float
    created_late: int  # jobs written after T - lookahead (dispatched when created, not by the burst's scans)
    lateness: list[float]
    misses: int
    duplicates: int
    drain_seconds: float
    host_cpu: float
    azurite_cpu: float
    cpu_window: float  # seconds over which host_cpu and azurite_cpu (fractions of one core) were measured
    log: HostLog


def create_collections(base: str, key: str, jobs: int) -> int:
    """PUT the P20Premium collections ``c0``, ``c1``, ... that ``jobs`` jobs need; how many."""
    collections = -(-jobs // JOBS_PER_COLLECTION)
    with requests.Session() as session:
        session.trust_env = False
        for c in range(collections):
            body = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}}
            answer = session.put(f"{base}/{JC}/c{c}?api-version=2016-03-01", json=body, headers=_auth(key), timeout=30)
            assert answer.status_code in (200, 201), answer.text
    return collections


def create_jobs(base: str, key: str, sink: Sink, jobs: int, threads: int, due: datetime) -> list[float]:
    """PUT the jobs through the API; returns when each PUT completed (time.time())."""
    local = threading.local()
    collections = create_collections(base, key, jobs)
    start = due.strftime("%Y-%m-%dT%H:%M:%SZ")
    done: list[float] = [0.0] * jobs

    def put(i: int) -> None:
        if not hasattr(local, "session"):
            local.session = requests.Session()
            local.session.trust_env = False
        body = {
            "properties": {
                "startTime": start,
                "action": {"type": "Http", "request": {"uri": f"{sink.base_url}/j{i}", "method": "GET"}},
            }
        }
        url = f"{base}/{JC}/c{i % collections}/jobs/job{i}?api-version=2016-03-01"
        answer = local.session.put(url, json=body, headers=_auth(key), timeout=60)
        assert answer.status_code == 201, answer.text
        done[i] = time.time()

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(put, range(jobs)))
    return done


def next_minute(after: datetime) -> datetime:
    return (after + timedelta(minutes=1)).replace(second=0, microsecond=0)


def run_burst(args: argparse.Namespace, config: settings.Settings, key: str, azurite_pid: int | None) -> BurstResult:
    workdir = Path(tempfile.mkdtemp(prefix="burst-"))
    with http_sink() as sink, served(workdir, key, args.plan) as host:
        lead = args.jobs / args.create_rate + config.lookahead_seconds + 10
        due = next_minute(datetime.now(UTC) + timedelta(seconds=lead))
        print(
            f"{args.jobs} jobs due at {due:%H:%M:%S}Z, {args.queues} execution queue(s), {args.workers} workers, "
            f"plan {args.plan}"
        )
        began = time.time()
        done = create_jobs(host.base_url, key, sink, args.jobs, args.threads, due)
        created_seconds = max(done) - began
        latest_ok = (due - timedelta(seconds=config.lookahead_seconds)).timestamp()
        created_late = sum(1 for at in done if at > latest_ok)
        print(f"created in {created_seconds:.1f} s ({args.jobs / created_seconds:.0f}/s); {created_late} late")
        # CPU while the burst drains: from the second before T (messages visible) to the last call.
        time.sleep(max(0.0, due.timestamp() - 1 - time.time()))
        cpu_host, cpu_azurite, cpu_at = cpu_seconds(host.process.pid), cpu_seconds(azurite_pid), time.time()
        deadline = due.timestamp() + max(180.0, args.jobs / 5)
        while sink.count() < args.jobs and time.time() < deadline:
            time.sleep(0.1)
        elapsed = time.time() - cpu_at
        host_cpu = (cpu_seconds(host.process.pid) - cpu_host) / elapsed
        azurite_cpu = (cpu_seconds(azurite_pid) - cpu_azurite) / elapsed
        time.sleep(args.settle)  # duplicates arrive late, if at all
        arrivals = sink.snapshot()
        host.stop()
        log = read_host_log(
            host.log, due - timedelta(seconds=config.lookahead_seconds + 20), due + timedelta(seconds=40)
        )
    expected = {f"/j{i}" for i in range(args.jobs)}
    firsts = [min(times) for path, times in arrivals.items() if path in expected]
    lateness = [at - due.timestamp() for at in firsts]
    duplicates = sum(len(times) - 1 for times in arrivals.values())
    drain = max(lateness) if lateness else float("nan")
    return BurstResult(
        args.jobs,
        args.queues,
        due,
        created_seconds,
        created_late,
        lateness,
        len(expected - set(arrivals)),
        duplicates,
        drain,
        host_cpu,
        azurite_cpu,
        elapsed,
        log,
    )


# ------------------------------------------------------------------------------------------------ raw consumer


@dataclass
class RawResult:
    queues: int
    messages: int
    seconds: float
    azurite_cpu: float

    @property
    def rate(self) -> float:
        return self.messages / self.seconds


def raw_queue_client(config: settings.Settings, name: str) -> QueueClient:
    """A queue client as the Functions host's (a failed call tried again after about a second, where
    azure-storage-queue's default waits 15 s), on the app's pooled transport."""
    return QueueClient.from_connection_string(
        config.storage_connection_string or "",
        name,
        transport=storage_transport(),
        retry_policy=ExponentialRetry(initial_backoff=1, increment_base=2, retry_total=3),
    )


def raw_consumer(
    config: settings.Settings, queues: int, messages: int, workers: int, azurite_pid: int | None
) -> RawResult:
    """``workers`` threads drain ``messages`` spread over ``queues`` fresh queues: receive 32, then per
    message one table insert and one delete (the floor of what an execution must do)."""
    suffix = uuid.uuid4().hex[:6]
    names = [f"raw-{suffix}-{q}" for q in range(queues)]
    clients = [raw_queue_client(config, name) for name in names]
    for client in clients:
        client.create_queue()
    raw_table = table_service(config).create_table(f"raw{suffix}")  # the app's pooled transport, as its queues
    body = json.dumps({"v": 1, "job_partition": "p" * 40, "job_row": "job", "occurrence": "2030-01-01T00:00:00Z"})

    def fill(i: int) -> None:
        clients[i % queues].send_message(body)

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(fill, range(messages)))
    handled: set[str] = set()
    repeats = Counter[str]()  # what came back: a message received twice, a delete that found it gone
    lock = threading.Lock()

    def work(w: int) -> None:
        client = clients[w % queues]
        while True:
            batch = list(
                client.receive_messages(
                    messages_per_page=RECEIVE_BATCH, max_messages=RECEIVE_BATCH, visibility_timeout=RAW_LEASE_SECONDS
                )
            )
            if not batch:
                with lock:
                    if len(handled) >= messages:
                        return
                time.sleep(0.5)  # the rest are in other workers' hands (or come back after their lease)
                continue
            for message in batch:
                try:
                    again(partial(raw_table.create_entity, {"PartitionKey": "p", "RowKey": message.id, "Body": "x"}))
                except ResourceExistsError:
                    with lock:
                        repeats["received again"] += 1
                try:
                    again(partial(client.delete_message, message))
                except ResourceNotFoundError:  # a retried delete whose first try went through, or a repeat
                    with lock:
                        repeats["delete found it gone"] += 1
                with lock:
                    handled.add(message.id)

    def again(call: Callable[[], object]) -> None:
        """``call``, tried again after a dropped connection (the app's writes after an action retry too)."""
        for attempt in range(5):
            try:
                call()
                return
            except ServiceResponseError:
                with lock:
                    repeats["connection dropped, tried again"] += 1
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))

    cpu = cpu_seconds(azurite_pid)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(work, range(workers)))
    seconds = time.perf_counter() - started
    assert len(handled) >= messages, f"raw consumer handled {len(handled)} of {messages}"
    if len(handled) > messages:  # a send retried after a dropped connection had gone through: sent twice
        repeats["sent twice (a retried send)"] += len(handled) - messages
    if repeats:
        print(f"raw consumer, {queues} queue(s): {dict(repeats)}")
    return RawResult(queues, messages, seconds, (cpu_seconds(azurite_pid) - cpu) / seconds)


# ------------------------------------------------------------------------------------------------ main


@contextlib.contextmanager
def benchmark_settings(args: argparse.Namespace, key: str) -> Iterator[tuple[settings.Settings, Azurite]]:
    """A private in-memory Azurite and this process's environment pointing at it (as ``make run`` sets it)."""
    with Azurite() as azurite:
        suffix = uuid.uuid4().hex[:6]
        sample = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
        os.environ.update(
            {
                **sample,
                "AzureWebJobsStorage": azurite.connection_string,
                "SCHEDULER_TABLE_PREFIX": f"b{suffix}",
                "SCHEDULER_SCAN_QUEUE": f"scan-{suffix}",
                "SCHEDULER_EXECUTION_QUEUE": f"exec-{suffix}",
                "SCHEDULER_EXECUTION_QUEUE_COUNT": str(args.queues),
                "PYTHON_THREADPOOL_THREAD_COUNT": str(args.workers),
                "SCHEDULER_API_KEYS": auth.hash_entry(key),
            }
        )
        wiring.reset()
        config = settings.load()
        provision(config)
        for name in config.execution_queues:  # every execution queue exists before the first send
            for queue in (name, f"{name}-poison"):
                with contextlib.suppress(Exception):
                    queue_client(config, queue).create_queue()
        yield config, azurite


def seconds(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--queues", type=int, default=1, help="SCHEDULER_EXECUTION_QUEUE_COUNT")
    parser.add_argument("--workers", type=int, default=40, help="PYTHON_THREADPOOL_THREAD_COUNT of the host")
    parser.add_argument("--threads", type=int, default=8, help="API client threads that create the jobs")
    parser.add_argument("--create-rate", type=float, default=40.0, help="expected creates/s, to choose T")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds to wait for late duplicates")
    parser.add_argument("--no-raw", action="store_true", help="skip the raw consumer")
    add_plan_option(parser)
    args = parser.parse_args()
    key = auth.generate_key()
    with benchmark_settings(args, key) as (config, azurite):
        burst = run_burst(args, config, key, azurite.pid)
        report(burst, [], args)  # printed now, and again with the raw consumer's numbers
        raws = [] if args.no_raw else [raw_consumer(config, args.queues, args.jobs, args.workers, azurite.pid)]
        if args.queues > 1 and not args.no_raw:  # the baseline: one queue
            raws.append(raw_consumer(config, 1, args.jobs, args.workers, azurite.pid))
    if raws:
        report(burst, raws, args)


def report(burst: BurstResult, raws: list[RawResult], args: argparse.Namespace) -> None:
    late = burst.lateness
    fired = len(late)
    drain = fired / burst.drain_seconds if fired and burst.drain_seconds > 0 else float("nan")
    # The ratio's denominator is the raw consumer on one queue (issue 15's baseline); with K queues the raw
    # consumer on K queues is printed beside it.
    raw = next((r for r in raws if r.queues == 1), None)
    print()
    print(
        table(
            [
                "run",
                "jobs",
                "queues",
                "workers",
                "fired",
                "misses",
                "duplicates",
                "lateness p50 s",
                "p99 s",
                "max s",
                "drain fires/s",
                "raw consumer msgs/s (1 queue)",
                "drain vs raw",
            ],
            [
                [
                    "burst (tick → scans → executions → HTTP sink)",
                    burst.jobs,
                    burst.queues,
                    args.workers,
                    fired,
                    burst.misses,
                    burst.duplicates,
                    seconds(percentile(late, 0.5)),
                    seconds(percentile(late, 0.99)),
                    seconds(max(late) if late else float("nan")),
                    f"{drain:.1f}",
                    f"{raw.rate:.1f}" if raw else "n/a",
                    f"{drain / raw.rate:.0%}" if raw else "n/a",
                ]
            ],
        )
    )
    print()
    rows: list[list[object]] = [
        [
            "burst: due second → last call",
            fired,
            burst.queues,
            f"{burst.drain_seconds:.1f}",
            f"{drain:.1f}",
            f"{burst.host_cpu:.0%}",
            f"{burst.azurite_cpu:.0%}",
        ]
    ]
    cpu_ms = burst.host_cpu * burst.cpu_window / fired * 1000 if fired else float("nan")
    azurite_ms = burst.azurite_cpu * burst.cpu_window / fired * 1000 if fired else float("nan")
    rows += [
        [
            f"raw consumer (receive 32, insert, delete), {r.queues} queue(s)",
            r.messages,
            r.queues,
            f"{r.seconds:.1f}",
            f"{r.rate:.1f}",
            "-",
            f"{r.azurite_cpu:.0%}",
        ]
        for r in raws
    ]
    print(table(["phase", "messages", "queues", "seconds", "per second", "host CPU", "Azurite CPU"], rows))
    print()
    log = burst.log
    scans = (
        f"{(log.scans_done - burst.due).total_seconds():+.0f} s from T"
        if log.scans_done is not None
        else "not in the log (host.json logs Function.scan_shard at Warning and above)"
    )
    print(f"created {burst.jobs} jobs in {burst.created_seconds:.1f} s; {burst.created_late} after T - lookahead")
    print(f"CPU per fire while draining: host {cpu_ms:.1f} ms, Azurite {azurite_ms:.1f} ms")
    print(f"last scan of the burst finished {scans} (host log, whole seconds)")
    executions = [ms for durations in log.executions.values() for ms in durations]
    per_function = ", ".join(f"{name}: {len(d)}" for name, d in sorted(log.executions.items()))
    print(
        f"executions (host log): {len(executions)} ({per_function}); duration p50 "
        f"{percentile(executions, 0.5):.0f} ms, p99 {percentile(executions, 0.99):.0f} ms; "
        f"outcomes {dict(log.outcomes)}"
    )
    print(f"attempts the watchdog sent again (host log): {log.resent}")


if __name__ == "__main__":
    main()
