"""Benchmark: firing precision, end to end, in real time.

    .venv/bin/python bench/precision.py [--jobs 600] [--spread 120]

Runs the whole function app on the local host (HTTP API, dispatch timer, scan and execution queues) on a
private Azurite, creates ``--jobs`` one-shot HTTP jobs through the API with start times spread over
``--spread`` seconds (second-level start times), and measures for each the lateness: the instant the HTTP
server on loopback received the call minus the job's start time. Prints p50 / p99 / max lateness.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import requests

from bench.common import ROOT, azurite_settings, percentile, table
from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth
from tests.support.http_target import http_target

JC = "subscriptions/bench/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/c"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=600)
    parser.add_argument("--spread", type=int, default=120)
    parser.add_argument("--lead", type=int, default=45, help="seconds between the start and the first due time")
    args = parser.parse_args()
    key = auth.generate_key()
    with azurite_settings(SCHEDULER_API_KEYS=auth.hash_entry(key)), http_target() as target:
        import function_app

        with LocalHost(function_app.app, ROOT / "host.json", port=free_port()) as host:
            session = requests.Session()
            session.headers["Authorization"] = f"Bearer {key}"
            body = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}}
            assert session.put(f"{host.base_url}/{JC}?api-version=2016-03-01", json=body, timeout=30).ok
            first = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=args.lead)
            due = {f"j{i}": first + timedelta(seconds=(i * args.spread) // args.jobs) for i in range(args.jobs)}

            def put(name: str) -> None:
                job = {
                    "properties": {
                        "startTime": due[name].strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "action": {"type": "Http", "request": {"uri": f"{target.base_url}/{name}", "method": "POST"}},
                    }
                }
                response = session.put(f"{host.base_url}/{JC}/jobs/{name}?api-version=2016-03-01", json=job, timeout=60)
                assert response.status_code == 201, response.text

            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=8) as pool:
                list(pool.map(put, due))
            print(f"created {args.jobs} jobs in {time.perf_counter() - started:.1f} s; first due at {first:%H:%M:%S}")
            last_due = max(due.values())
            deadline = last_due.timestamp() + 60
            while time.time() < deadline and len(target.received) < args.jobs:
                time.sleep(0.5)
    lateness = []
    seen = set()
    for request in target.received:
        name = request.path.strip("/")
        if name in due and name not in seen:
            seen.add(name)
            lateness.append(request.at - due[name].timestamp())
    missing = args.jobs - len(seen)
    duplicates = len(target.received) - len(seen)
    print(
        table(
            [
                "jobs",
                "fired",
                "missing",
                "duplicates",
                "p50 lateness s",
                "p99 lateness s",
                "max lateness s",
                "min lateness s",
            ],
            [
                [
                    args.jobs,
                    len(seen),
                    missing,
                    duplicates,
                    f"{percentile(lateness, 0.5):.2f}",
                    f"{percentile(lateness, 0.99):.2f}",
                    f"{max(lateness, default=float('nan')):.2f}",
                    f"{min(lateness, default=float('nan')):.2f}",
                ]
            ],
        )
    )


if __name__ == "__main__":
    main()
