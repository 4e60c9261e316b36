"""Benchmark: management API PUT and GET of jobs through the local host on Azurite, next to raw table writes.

    .venv/bin/python -m bench.api [--jobs 2000] [--threads 8] [--collections N] [--rounds 4] [--in-process]
        [--plan elastic-premium]

Serves the function app the way ``make run`` does, in a process of its own (``python -m local_host
run``: HTTP, timers and queue pollers), on a private in-memory Azurite. Prints
throughput and p50/p99 latency of API job PUTs (creates) and GETs from ``--threads`` client threads with
keep-alive sessions, and of the same number of raw ``upsert_entity`` calls from this process with the same
concurrency, and the ratio (the three run in ``--rounds`` alternating slices, so that a machine shared with
other work loads them alike); then the latency of PUTs and GETs from 1 and 2 client threads, where the
machine is not saturated. The CPU time that each process (this client, the host, Azurite) spent per
operation is printed with each row. ``--in-process`` serves the API from a thread of this process instead
(client and server then share one interpreter lock). ``--plan elastic-premium`` serves it with HTTP invocations on
the worker's one pool of ``PYTHON_THREADPOOL_THREAD_COUNT`` threads, as the Python worker runs sync functions on
an Elastic Premium plan (``python -m local_host run --plan``; default: the HTTP server's own threads).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import requests
from azure.data.tables import TableServiceClient

from bench.common import ROOT, add_plan_option, azurite_settings, percentile, table, timed_calls
from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth

JOBS_PER_COLLECTION = 1000  # P20Premium
HEADERS = [
    "operation",
    "count",
    "threads",
    "ops/s",
    "p50 ms",
    "p99 ms",
    "vs raw upsert",
    "CPU ms/op client·host·Azurite",
]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def azurite_pids(connection: str) -> list[int]:
    """This run's Azurite: the one serving the connection string's table port (others may run on the machine,
    such as a test suite's, whose CPU time is not this benchmark's)."""
    endpoints = dict(part.split("=", 1) for part in connection.split(";") if "=" in part)
    port = urlsplit(endpoints["TableEndpoint"]).port
    pattern = f"azurite.*--tablePort {port}( |$)"
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False).stdout
    return [int(pid) for pid in found.split()]


@contextmanager
def served(in_process: bool, plan: str = "default") -> Iterator[tuple[str, int]]:
    """The function app served on a free port with the local host's ``plan``: (base URL, pid of the serving
    process)."""
    port = free_port()
    if in_process:
        import function_app

        host = LocalHost(function_app.app, ROOT / "host.json", port=port, enable=frozenset({"http"}), plan=plan)
        host.start()
        try:
            yield host.base_url, os.getpid()
        finally:
            host.stop()
        return
    command = [sys.executable, "-m", "local_host", "run", "--port", str(port), "--plan", plan]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"{base}/subscriptions/bench/providers/Microsoft.Scheduler/jobCollections", timeout=1)
                break
            except requests.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the local host did not start") from None
                time.sleep(0.2)
        yield base, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument(
        "--collections",
        type=int,
        default=0,
        help="spread the jobs over this many collections (default: as few as P20Premium's 1,000 jobs allow)",
    )
    parser.add_argument("--in-process", action="store_true", help="serve the API from a thread of this process")
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="slices the raw upserts, PUTs and GETs alternate in (so that they share the machine's load)",
    )
    add_plan_option(parser)
    args = parser.parse_args()
    key = auth.generate_key()
    with (
        azurite_settings(SCHEDULER_API_KEYS=auth.hash_entry(key)) as config,
        served(args.in_process, args.plan) as served_at,
    ):
        base, host_pid = served_at
        rows = run(base, host_pid, key, config.storage_connection_string or "", args)
    print(table(HEADERS, rows))


def run(base: str, host_pid: int, key: str, connection: str, args: argparse.Namespace) -> list[list[object]]:
    jobs, threads = args.jobs, args.threads
    local = threading.local()

    def session() -> requests.Session:
        if not hasattr(local, "session"):
            local.session = requests.Session()
            local.session.trust_env = False  # no proxy or ~/.netrc look-ups per call on loopback
            local.session.headers["Authorization"] = f"Bearer {key}"
        return local.session  # type: ignore[no-any-return]

    light = max(jobs // 4, 1)  # requests of each low-concurrency latency row
    total = jobs + 2 * light
    collections = max(args.collections, -(-total // JOBS_PER_COLLECTION), 1)
    print(f"{jobs} jobs in {collections} collections, {threads} client threads, host pid {host_pid}, plan {args.plan}")
    for c in range(collections):
        url = f"{base}/subscriptions/bench/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/c{c}"
        body = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}}
        assert session().put(url + "?api-version=2016-03-01", json=body, timeout=30).status_code in (200, 201)
    start = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def job_url(i: int) -> str:
        return (
            f"{base}/subscriptions/bench/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/"
            f"c{i % collections}/jobs/job{i}?api-version=2016-03-01"
        )

    def put(i: int) -> None:
        body = {
            "properties": {
                "startTime": start,
                "action": {"type": "Http", "request": {"uri": "https://example.org/hook", "method": "POST"}},
                "recurrence": {"frequency": "Hour", "interval": 1},
            }
        }
        response = session().put(job_url(i), json=body, timeout=30)
        assert response.status_code == 201, response.text

    def get(i: int) -> None:
        assert session().get(job_url(i), timeout=30).status_code == 200

    service = TableServiceClient.from_connection_string(connection)
    raw_table = service.create_table("rawbench")

    def upsert(i: int) -> None:
        raw_table.upsert_entity({"PartitionKey": f"p{i % collections}", "RowKey": f"r{i}", "Definition": "x" * 600})

    pids = {
        "client": [os.getpid()],
        "host": [host_pid] if host_pid != os.getpid() else [],
        "azurite": azurite_pids(connection),
    }

    def measured(
        fn: Callable[[int], None], count: int, workers: int, offset: int = 0
    ) -> tuple[float, list[float], dict[str, float]]:
        before = {name: sum(cpu_seconds(p) for p in ps) for name, ps in pids.items()}
        seconds, latencies = timed_calls(lambda i: fn(offset + i), count, workers)
        spent = {name: sum(cpu_seconds(p) for p in ps) - before[name] for name, ps in pids.items()}
        return seconds, latencies, spent

    def row(
        name: str, count: int, workers: int, seconds: float, latencies: list[float], spent: dict[str, float]
    ) -> list[object]:
        rate = count / seconds
        return [
            name,
            count,
            workers,
            f"{rate:.0f}",
            f"{percentile(latencies, 0.5) * 1000:.1f}",
            f"{percentile(latencies, 0.99) * 1000:.1f}",
            f"{rate / raw_rate:.0%}",
            "·".join(f"{spent[name] / count * 1000:.2f}" for name in ("client", "host", "azurite")),
        ]

    # The raw upserts, PUTs and GETs run in alternating slices (raw, PUT, GET, raw, ...), so that all three
    # see the same background load on a shared machine; each row adds up its slices.
    rounds = max(1, min(args.rounds, jobs))
    phases: dict[str, Callable[[int], None]] = {"raw": upsert, "put": put, "get": get}
    seconds = dict.fromkeys(phases, 0.0)
    latencies: dict[str, list[float]] = {kind: [] for kind in phases}
    spent = {kind: dict.fromkeys(pids, 0.0) for kind in phases}
    done = 0
    for index in range(rounds):
        size = jobs * (index + 1) // rounds - done
        for kind, fn in phases.items():
            took, times, cpu = measured(fn, size, threads, done)
            seconds[kind] += took
            latencies[kind] += times
            spent[kind] = {name: spent[kind][name] + cpu[name] for name in pids}
        done += size
    raw_rate = jobs / seconds["raw"]
    results = [
        row(f"API PUT job ({collections} collections)", jobs, threads, seconds["put"], latencies["put"], spent["put"]),
        row("API GET job", jobs, threads, seconds["get"], latencies["get"], spent["get"]),
        row("raw upsert_entity", jobs, threads, seconds["raw"], latencies["raw"], spent["raw"]),
    ]
    for workers in (1, 2):
        offset = jobs + (workers - 1) * light
        results.append(row("API PUT job", light, workers, *measured(put, light, workers, offset)))
        results.append(row("API GET job", light, workers, *measured(get, light, workers, offset)))
    return results


if __name__ == "__main__":
    main()
