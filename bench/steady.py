"""Benchmark: steady load, every-minute jobs spread over the minute's seconds, minute after minute, through the
local host on Azurite.

    .venv/bin/python -m bench.steady [--jobs 600] [--minutes 10] [--workers 40] [--plan elastic-premium]

What it does, on a private in-memory Azurite:

1. serves the function app as ``make run`` does (``python -m local_host run``, as ``bench.burst`` does);
2. creates ``--jobs`` every-minute HTTP jobs through the management API, job *i* starting at second *i* mod 60 of
   the first whole minute far enough ahead (so ``--jobs`` / 60 fires a second, every second);
3. receives the calls on an HTTP sink on 127.0.0.1 (one path per job) for ``--minutes`` minutes from that
   minute and reports, minute by minute, lateness (arrival minus the occurrence's second) p50/p99/max, the
   fires, the occurrences missed (a minute of a job without a call) and doubled (two calls in one minute of a
   job), and the CPU per fire that the host and Azurite used over the whole window (the host's idle polling
   included, as it is on a deployed instance).

The issue's bar: p99 at most 1 s every minute, with no growth from minute to minute. Numbers are from one
machine where the host, Azurite (single-threaded Node) and this client share the CPUs.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests

from bench.burst import JC, Sink, _auth, benchmark_settings, cpu_seconds, create_collections, http_sink, served
from bench.common import add_plan_option, percentile, table
from scheduler_core import auth


@dataclass
class Minute:
    """One minute of the run: its lateness (seconds, one per fired occurrence), misses and doubles."""

    index: int
    lateness: list[float]
    missed: int
    doubled: int


def create_jobs(base: str, key: str, sink: Sink, jobs: int, threads: int, start: datetime) -> None:
    """PUT ``jobs`` every-minute jobs, job *i* starting at ``start`` + (*i* mod 60) seconds."""
    collections = create_collections(base, key, jobs)
    local = threading.local()

    def put(i: int) -> None:
        if not hasattr(local, "session"):
            local.session = requests.Session()
            local.session.trust_env = False
        first = start + timedelta(seconds=i % 60)
        body = {
            "properties": {
                "startTime": first.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "action": {"type": "Http", "request": {"uri": f"{sink.base_url}/j{i}", "method": "GET"}},
                "recurrence": {"frequency": "Minute", "interval": 1},
            }
        }
        url = f"{base}/{JC}/c{i % collections}/jobs/job{i}?api-version=2016-03-01"
        answer = local.session.put(url, json=body, headers=_auth(key), timeout=60)
        assert answer.status_code == 201, answer.text

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(put, range(jobs)))


def minutes_of(arrivals: dict[str, list[float]], jobs: int, start: datetime, count: int) -> list[Minute]:
    """Each measured minute's lateness, misses and doubles: job *i*'s occurrence of minute *m* is due at
    ``start`` + *m* minutes + (*i* mod 60) seconds; a call belongs to the occurrence due last before it (a call
    more than a minute late counts for a later minute's occurrence, and that one as missed)."""
    minutes = [Minute(m, [], 0, 0) for m in range(count)]
    for i in range(jobs):
        first = start.timestamp() + i % 60
        calls: dict[int, list[float]] = {}
        for at in arrivals.get(f"/j{i}", []):
            m = int((at - first) // 60)
            if 0 <= m < count:
                calls.setdefault(m, []).append(at - (first + 60 * m))
        for m in range(count):
            late = calls.get(m, [])
            if not late:
                minutes[m].missed += 1
                continue
            minutes[m].lateness.append(min(late))
            minutes[m].doubled += len(late) - 1
    return minutes


def seconds_of_minute(
    arrivals: dict[str, list[float]], jobs: int, start: datetime, count: int
) -> dict[int, list[float]]:
    """Lateness by the second of the minute its occurrences are due at (every minute together): where in the
    minute the late ones are (a dispatch tick's second, say)."""
    out: dict[int, list[float]] = {}
    for i in range(jobs):
        first = start.timestamp() + i % 60
        for at in arrivals.get(f"/j{i}", []):
            m = int((at - first) // 60)
            if 0 <= m < count:
                out.setdefault(i % 60, []).append(at - (first + 60 * m))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=600)
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--workers", type=int, default=40, help="PYTHON_THREADPOOL_THREAD_COUNT of the host")
    parser.add_argument("--threads", type=int, default=8, help="API client threads that create the jobs")
    parser.add_argument("--queues", type=int, default=1, help="SCHEDULER_EXECUTION_QUEUE_COUNT")
    add_plan_option(parser)
    args = parser.parse_args()
    key = auth.generate_key()
    with benchmark_settings(args, key) as (_config, azurite), http_sink() as sink:
        workdir = Path(tempfile.mkdtemp(prefix="steady-"))
        with served(workdir, key, args.plan) as host:
            start = (datetime.now(UTC) + timedelta(seconds=args.jobs / 30 + 75)).replace(second=0, microsecond=0)
            print(f"{args.jobs} every-minute jobs from {start:%H:%M:%S}Z for {args.minutes} minutes, plan {args.plan}")
            create_jobs(host.base_url, key, sink, args.jobs, args.threads, start)
            time.sleep(max(0.0, start.timestamp() - time.time()))
            cpu_host, cpu_azurite = cpu_seconds(host.process.pid), cpu_seconds(azurite.pid)
            end = start + timedelta(minutes=args.minutes)
            time.sleep(max(0.0, end.timestamp() - time.time()))
            host_cpu = cpu_seconds(host.process.pid) - cpu_host
            azurite_cpu = cpu_seconds(azurite.pid) - cpu_azurite
            time.sleep(5)  # calls of the last seconds, and any late double
            arrivals = sink.snapshot()
    minutes = minutes_of(arrivals, args.jobs, start, args.minutes)
    fires = sum(len(m.lateness) for m in minutes)
    rows = [
        [
            m.index + 1,
            len(m.lateness),
            m.missed,
            m.doubled,
            f"{percentile(m.lateness, 0.5):.2f}",
            f"{percentile(m.lateness, 0.99):.2f}",
            f"{max(m.lateness):.2f}" if m.lateness else "n/a",
        ]
        for m in minutes
    ]
    print(table(["minute", "fired", "missed", "doubled", "lateness p50 s", "p99 s", "max s"], rows))
    by_second = seconds_of_minute(arrivals, args.jobs, start, args.minutes)
    worst = sorted(by_second.items(), key=lambda item: -percentile(item[1], 0.99))[:5]
    print(
        "\nworst seconds of the minute (p99 lateness): "
        + ", ".join(f":{second:02d} {percentile(late, 0.99):.2f} s" for second, late in worst)
    )
    every = [late for m in minutes for late in m.lateness]
    print(
        f"\nall minutes: {fires} fires, p50 {percentile(every, 0.5):.2f} s, p99 {percentile(every, 0.99):.2f} s, "
        f"max {max(every):.2f} s; CPU per fire: host {host_cpu / fires * 1000:.1f} ms, "
        f"Azurite {azurite_cpu / fires * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
