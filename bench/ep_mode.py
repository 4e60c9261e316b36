"""Benchmark: the API and firing precision under an execution backlog, with HTTP and timers on threads of their
own (the local host's default) and on the worker's one pool (``--plan elastic-premium``, as the Python worker
runs every sync function in Azure).

    .venv/bin/python -m bench.ep_mode [--backlog 200] [--hold 2] [--probes 15] [--threads 40]

For each plan, on a private Azurite: the whole function app on the local host; ``--backlog`` one-shot HTTP jobs
due at the same second whose target holds each call ``--hold`` seconds (a backlog of slow executions:
backlog x hold / threads seconds of work for the worker's pool), and ``--probes`` one-shot jobs to a target that
answers at once, one due each second from that second on. While the backlog drains, one client GETs a job
through the management API every 100 ms. Printed per plan: the GETs' latency (p50, p99, max) and the probes'
lateness (the instant the target received the call minus the job's start time: p50, p99, max), then the ratios
elastic-premium / default.
"""

from __future__ import annotations

import argparse
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import requests

from bench.common import ROOT, azurite_settings, percentile, table
from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth
from tests.support.http_target import http_target

JC = "subscriptions/bench/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/c"
API = "api-version=2016-03-01"
#: Seconds between one GET's answer and the next GET.
GET_INTERVAL = 0.1


@dataclass
class Outcome:
    plan: str
    gets: list[float]  # seconds
    lateness: list[float]  # seconds, one per probe that fired
    probes: int
    backlog_done: float  # seconds from the backlog's due time until its last call was received

    def row(self) -> list[object]:
        return [
            self.plan,
            len(self.gets),
            f"{percentile(self.gets, 0.5) * 1000:.0f}",
            f"{percentile(self.gets, 0.99) * 1000:.0f}",
            f"{max(self.gets, default=float('nan')) * 1000:.0f}",
            f"{len(self.lateness)}/{self.probes}",
            f"{percentile(self.lateness, 0.5):.2f}",
            f"{percentile(self.lateness, 0.99):.2f}",
            f"{max(self.lateness, default=float('nan')):.2f}",
            f"{self.backlog_done:.1f}",
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backlog", type=int, default=200, help="slow executions due at once")
    parser.add_argument("--hold", type=float, default=2.0, help="seconds the target holds each slow call")
    parser.add_argument("--probes", type=int, default=15, help="fast jobs, one due each second")
    parser.add_argument("--lead", type=int, default=25, help="seconds between the start and the backlog's due time")
    parser.add_argument("--threads", type=int, default=None, help="PYTHON_THREADPOOL_THREAD_COUNT (default: as set)")
    args = parser.parse_args()
    outcomes = [run(plan, args) for plan in ("default", "elastic-premium")]
    headers = [
        "plan",
        "GETs",
        "GET p50 ms",
        "GET p99 ms",
        "GET max ms",
        "probes fired",
        "lateness p50 s",
        "lateness p99 s",
        "lateness max s",
        "backlog drained s",
    ]
    print(table(headers, [o.row() for o in outcomes]))
    default, premium = outcomes

    def ratio(a: float, b: float) -> str:
        return f"{b / a:.1f}x" if a > 0 else "n/a"

    print()
    print(
        table(
            ["elastic-premium / default", "GET p50", "GET p99", "lateness p50", "lateness p99"],
            [
                [
                    "ratio",
                    ratio(percentile(default.gets, 0.5), percentile(premium.gets, 0.5)),
                    ratio(percentile(default.gets, 0.99), percentile(premium.gets, 0.99)),
                    ratio(percentile(default.lateness, 0.5), percentile(premium.lateness, 0.5)),
                    ratio(percentile(default.lateness, 0.99), percentile(premium.lateness, 0.99)),
                ]
            ],
        )
    )


def run(plan: str, args: argparse.Namespace) -> Outcome:
    """One plan on a fresh Azurite: the backlog, the probes and the GETs (see the module's docstring)."""
    key = auth.generate_key()
    extra = {"SCHEDULER_API_KEYS": auth.hash_entry(key)}
    if args.threads is not None:
        extra["PYTHON_THREADPOOL_THREAD_COUNT"] = str(args.threads)
    with azurite_settings(**extra), http_target() as slow, http_target() as fast:
        import function_app

        slow.answer([200], delay=args.hold)
        with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), plan=plan) as host:
            print(f"plan {plan}: functions on {host.worker_threads} threads")
            session = requests.Session()
            session.headers["Authorization"] = f"Bearer {key}"
            body = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}}
            assert session.put(f"{host.base_url}/{JC}?{API}", json=body, timeout=30).ok
            first = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=args.lead)
            jobs: dict[str, tuple[str, datetime]] = {f"slow{i}": (slow.base_url, first) for i in range(args.backlog)}
            jobs |= {f"probe{i}": (fast.base_url, first + timedelta(seconds=1 + i)) for i in range(args.probes)}

            def put(name: str) -> None:
                base, start = jobs[name]
                action: dict[str, Any] = {"type": "Http", "request": {"uri": f"{base}/{name}", "method": "POST"}}
                job = {"properties": {"startTime": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "action": action}}
                response = session.put(f"{host.base_url}/{JC}/jobs/{name}?{API}", json=job, timeout=60)
                assert response.status_code == 201, response.text

            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=8) as pool:
                list(pool.map(put, jobs))
            print(f"created {len(jobs)} jobs in {time.perf_counter() - started:.1f} s; backlog due at {first:%H:%M:%S}")
            time.sleep(max(0.0, first.timestamp() - time.time()))
            gets: list[float] = []
            stop = threading.Event()

            def probe_api() -> None:
                url = f"{host.base_url}/{JC}/jobs/probe0?{API}"
                while not stop.is_set():
                    at = time.perf_counter()
                    response = session.get(url, timeout=120)
                    gets.append(time.perf_counter() - at)
                    assert response.status_code == 200, response.text
                    stop.wait(GET_INTERVAL)

            client = threading.Thread(target=probe_api, name="bench-get", daemon=True)
            client.start()
            deadline = first.timestamp() + args.backlog * args.hold + 120
            while time.time() < deadline and (len(slow.received) < args.backlog or len(fast.received) < args.probes):
                time.sleep(0.2)
            stop.set()
            client.join(timeout=130)
    due = {name: start.timestamp() for name, (_, start) in jobs.items()}
    lateness = [r.at - due[r.path.strip("/")] for r in fast.received]
    drained = max((r.at for r in slow.received), default=float("nan")) + args.hold - first.timestamp()
    return Outcome(plan, gets, lateness, args.probes, drained)


if __name__ == "__main__":
    main()
