"""Benchmark: how long a takeover's due-index build takes (docs/regions.md, "Takeover": part of the RTO), on a
private in-memory Azurite, against a raw baseline in the same run.

    .venv/bin/python -m bench.takeover [--jobs 2000]

``--jobs`` recurring jobs (copies of one job row under other names, in one collection) are in the tables, as a
standby's copy holds them. Measured, wall time:

- **build**: :meth:`scheduler_core.regions.takeover.Takeover.rebuild` over an empty due index (read every job,
  compute its next occurrence, write its entry, batched per shard);
- **rebuild**: the same again, which first clears the entries the build wrote (the takeover of a region whose
  index is stale);
- **raw**: the floor of that work with the SDK alone: one query that reads every job row, and as many due rows
  written in batches of 100 per shard.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta

from azure.data.tables import TableClient

from bench.common import azurite_settings, table
from scheduler_core import wiring
from scheduler_core.adapters.azure.clients import table_service
from scheduler_core.adapters.memory.bookmarks import MemoryBookmarks
from scheduler_core.regions.takeover import Takeover
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from scheduler_core.storage.names import DUE_INDEX_TABLE, JOBS_TABLE

COLLECTION = CollectionRef("bench-sub", "rg", "takeover")
PLAN = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}}
JOB = {
    "properties": {
        "startTime": "2026-01-01T00:00:00Z",
        "action": {"type": "Http", "request": {"uri": "https://example.org/hook", "method": "POST"}},
        "recurrence": {"frequency": "Minute", "interval": 5},
    }
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2000)
    args = parser.parse_args()
    with azurite_settings() as config:
        services = wiring.build(config)
        services.service.put_collection(COLLECTION, PLAN)
        services.service.put_job(JobRef(COLLECTION, "job-00000"), JOB)
        jobs = table_service(config).get_table_client(config.table_name(JOBS_TABLE))
        model = dict(jobs.get_entity(JobRef(COLLECTION, "job-00000").partition_key, "job-00000"))
        rows = [{**model, "RowKey": f"job-{index:05d}"} for index in range(1, args.jobs)]
        for start in range(0, len(rows), 100):
            jobs.submit_transaction([("upsert", row) for row in rows[start : start + 100]])
        for shard in range(config.due_shards):  # the one job's own entry: the build starts from an empty index
            due = services.stores.due
            due.delete_many([(entry.shard, entry.row_key) for entry in due.due_before(f"{shard:04d}", "~")])

        takeover = Takeover(services.stores, MemoryBookmarks(), config.due_shards, services.clock)
        since = datetime.now(UTC) - timedelta(minutes=2)
        began = time.perf_counter()
        built = takeover.rebuild(since)
        build = time.perf_counter() - began
        began = time.perf_counter()
        rebuilt = takeover.rebuild(since)
        rebuild = time.perf_counter() - began
        assert built == rebuilt == args.jobs, (built, rebuilt)

        raw = _raw(config, jobs, args.jobs)
    measured: list[tuple[str, int, float]] = [
        ("build (empty index)", built, build),
        ("rebuild (clears first)", rebuilt, rebuild),
        ("raw: read all, write in batches", args.jobs, raw),
    ]
    print(
        table(
            ["what", "jobs", "seconds", "ms per job", "x raw"],
            [[what, n, f"{took:.2f}", f"{1000 * took / n:.2f}", f"{took / raw:.2f}"] for what, n, took in measured],
        )
    )


def _raw(config: Settings, jobs: TableClient, count: int) -> float:
    """One read of every job row and ``count`` rows written 100 at a time per shard, with the SDK."""
    index = table_service(config).get_table_client(config.table_name(DUE_INDEX_TABLE))
    began = time.perf_counter()
    found = list(jobs.list_entities())
    shards = config.due_shards
    for shard in range(shards):
        mine = [row for number, row in enumerate(found) if number % shards == shard]
        for start in range(0, len(mine), 100):
            batch = [
                ("upsert", {"PartitionKey": f"raw{shard:04d}", "RowKey": f"{row['RowKey']}", "Due": "x"})
                for row in mine[start : start + 100]
            ]
            index.submit_transaction(batch)
    assert len(found) == count
    return time.perf_counter() - began


if __name__ == "__main__":
    main()
