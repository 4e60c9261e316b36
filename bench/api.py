"""Benchmark: management API PUT and GET of jobs through the local host on Azurite, next to raw table writes.

    .venv/bin/python bench/api.py [--jobs 2000] [--threads 8]

Prints throughput and p50/p99 latency of API job PUTs and GETs (8 client threads), and of the same number
of raw ``upsert_entity`` calls from this process with the same concurrency, and the ratio.
"""

from __future__ import annotations

import argparse
import threading
from datetime import UTC, datetime, timedelta

import requests
from azure.data.tables import TableServiceClient

from bench.common import ROOT, azurite_settings, percentile, table, timed_calls
from scheduler_core import auth
from scheduler_core.host.azurite import free_port
from scheduler_core.host.runtime import LocalHost

JOBS_PER_COLLECTION = 1000  # P20Premium


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
    args = parser.parse_args()
    key = auth.generate_key()
    with azurite_settings(SCHEDULER_API_KEYS=auth.hash_entry(key)) as config:
        import function_app

        host = LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"}))
        host.start()
        try:
            rows = run(
                host.base_url, key, config.storage_connection_string or "", args.jobs, args.threads, args.collections
            )
        finally:
            host.stop()
    print(table(["operation", "count", "threads", "ops/s", "p50 ms", "p99 ms", "vs raw upsert"], rows))


def run(base: str, key: str, connection: str, jobs: int, threads: int, collections: int) -> list[list[object]]:
    local = threading.local()

    def session() -> requests.Session:
        if not hasattr(local, "session"):
            local.session = requests.Session()
            local.session.headers["Authorization"] = f"Bearer {key}"
        return local.session  # type: ignore[no-any-return]

    collections = max(collections, -(-jobs // JOBS_PER_COLLECTION), 1)
    print(f"{jobs} jobs in {collections} collections, {threads} client threads")
    for c in range(collections):
        url = f"{base}/subscriptions/bench/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/c{c}"
        body = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}}
        assert session().put(url + "?api-version=2016-03-01", json=body, timeout=30).status_code in (200, 201)
    start = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def job_url(i: int) -> str:
        c = i % collections
        return (
            f"{base}/subscriptions/bench/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/c{c}"
            f"/jobs/job{i}?api-version=2016-03-01"
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

    results = []
    raw_seconds, raw_lat = timed_calls(upsert, jobs, threads)
    raw_rate = jobs / raw_seconds
    for name, fn in (("API PUT job", put), ("API GET job", get)):
        seconds, latencies = timed_calls(fn, jobs, threads)
        rate = jobs / seconds
        results.append(
            [
                name,
                jobs,
                threads,
                f"{rate:.0f}",
                f"{percentile(latencies, 0.5) * 1000:.1f}",
                f"{percentile(latencies, 0.99) * 1000:.1f}",
                f"{rate / raw_rate:.0%}",
            ]
        )
    results.append(
        [
            "raw upsert_entity",
            jobs,
            threads,
            f"{raw_rate:.0f}",
            f"{percentile(raw_lat, 0.5) * 1000:.1f}",
            f"{percentile(raw_lat, 0.99) * 1000:.1f}",
            "100%",
        ]
    )
    return results


if __name__ == "__main__":
    main()
