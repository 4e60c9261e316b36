"""Benchmark: dispatch of many jobs due in the same minute, next to raw queue sends.

    .venv/bin/python -m bench.dispatch [--jobs 20000] [--threads 8] [--shards 16] [--fan-out W] [--chunk 200]

Writes ``--jobs`` hourly jobs due in the same minute straight into the tables (batched, not timed), then
times the scans of every due-index shard (``--threads`` shards at a time) from the first read to the last
execution message sent, and the same number of raw ``send_message`` calls on the same queue from this
process with the same concurrency. Prints executions per second of each and the ratio.

``--fan-out W``: the scans hand the rest of a shard on after ``--chunk`` rows (a scan message on the real
scan queue), and ``W`` worker threads take scan messages from that queue, as W scan-queue invocations on
instances that scale out would; one scan message per shard starts it, as a tick does. Timed until the scan
queue is empty and every worker idle. ``--shards 1`` puts every job into one shard: the case fan-out is for.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from bench.common import azurite_settings, table, timed_calls
from scheduler_core import wiring
from scheduler_core.adapters.azure.queues import MessageQueue
from scheduler_core.adapters.azure.tables import MAX_BATCH, TableDueIndex, TableJobs
from scheduler_core.definitions import parse_job
from scheduler_core.errors import StorageError
from scheduler_core.model import DueEntry, DueSlot, Job, JobState
from scheduler_core.pipeline.dispatch import Dispatcher
from scheduler_core.storage.keys import CollectionRef, JobRef, due_row_key, shard_of

#: Tries of one shard's scan in the whole-shard run (a storage error fails a scan; the host would try again).
SCAN_TRIES = 3


def seed(jobs: int, due: datetime) -> None:
    services = wiring.services()
    shards = services.settings.due_shards
    job_store, due_index = services.stores.jobs, services.stores.due
    assert isinstance(job_store, TableJobs) and isinstance(due_index, TableDueIndex)
    per_collection = 1000
    definition = parse_job(
        {
            "properties": {
                "startTime": due.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "action": {"type": "Http", "request": {"uri": "https://example.org/", "method": "GET"}},
                "recurrence": {"frequency": "Hour", "interval": 1},
            }
        },
        validate_limits=False,
    ).definition
    due_rows: dict[str, list[DueEntry]] = {}
    for c in range(-(-jobs // per_collection)):
        collection = CollectionRef("bench", "rg", f"c{c}")
        batch = []
        for i in range(c * per_collection, min(jobs, (c + 1) * per_collection)):
            ref = JobRef(collection, f"job{i}")
            shard = shard_of(ref.identity, shards)
            row = DueEntry(shard, due_row_key(due, ref.identity, 1), ref.partition_key, ref.row_key, 1, due)
            due_rows.setdefault(shard, []).append(row)
            record = Job(
                ref=ref,
                definition=definition,
                state=JobState.ENABLED,
                generation=1,
                defined_at=due - timedelta(hours=1),
                created_at=due - timedelta(hours=1),
                next_execution_time=due,
                due=DueSlot(shard, row.row_key),
            )
            batch.append(("upsert", TableJobs.entity(record)))
        for start in range(0, len(batch), MAX_BATCH):
            job_store.table.submit_transaction(batch[start : start + MAX_BATCH])
    for _shard, rows in due_rows.items():
        for start in range(0, len(rows), MAX_BATCH):
            ops = [("upsert", TableDueIndex._entity(r)) for r in rows[start : start + MAX_BATCH]]
            due_index.table.submit_transaction(ops)


def whole_shard_dispatcher(services: wiring.Services) -> Dispatcher:
    """The deployment's dispatcher without a scan queue to hand on to: each scan dispatches its whole shard
    (the deployed one hands the rest of a shard on past :data:`~scheduler_core.pipeline.dispatch.SCAN_CHUNK`
    rows, which ``--fan-out`` measures)."""
    base = services.dispatcher
    return Dispatcher(services.stores, base.attempts.send, base.shards, base.lookahead, services.executor.claims)


def fan_out(workers: int, chunk: int, now: datetime) -> tuple[int, int]:
    """Scan every shard with hand-on: one scan message per shard, taken by ``workers`` threads from the real
    scan queue (each runs ``Dispatcher.scan_message``), until the queue is empty and every worker is idle.
    Returns (rows fired, scans run)."""
    import threading

    from scheduler_core.pipeline.messages import ScanMessage

    services = wiring.services()
    scans = services.scans
    assert isinstance(scans, MessageQueue)
    base = services.dispatcher
    dispatcher = Dispatcher(
        services.stores,
        base.attempts.send,
        base.shards,
        base.lookahead,
        services.executor.claims,
        send_scan=scans.send,
        chunk=chunk,
    )
    for shard in range(base.shards):
        scans.send(ScanMessage(shard=f"{shard:04d}", tick="bench").to_json())
    lock = threading.Lock()
    busy, fired, runs = 0, 0, 0

    def work() -> None:
        nonlocal busy, fired, runs
        while True:
            with lock:
                busy += 1
            taken = list(scans.client.receive_messages(max_messages=1, visibility_timeout=300))
            for message in taken:
                report = dispatcher.scan_message(ScanMessage.from_json(message.content), now)
                scans.client.delete_message(message)
                with lock:
                    fired, runs = fired + report.fired, runs + 1
            with lock:
                busy -= 1
                if not taken and busy == 0:
                    return  # nobody is scanning, so nothing more can be handed on
            if not taken:
                time.sleep(0.05)

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return fired, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--shards", type=int, default=16, help="due-index shards")
    parser.add_argument("--fan-out", type=int, default=0, help="scan workers taking handed-on scans (0: off)")
    parser.add_argument("--chunk", type=int, default=200, help="rows per scan before it hands the rest on")
    args = parser.parse_args()
    with azurite_settings(SCHEDULER_DUE_SHARDS=str(args.shards)) as config:
        services = wiring.services()
        now = datetime.now(UTC).replace(microsecond=0)
        due = now + timedelta(seconds=30)
        started = time.perf_counter()
        seed(args.jobs, due)
        print(f"seeded {args.jobs} jobs in {time.perf_counter() - started:.1f} s (not timed)")
        shards = [f"{s:04d}" for s in range(config.due_shards)]
        started = time.perf_counter()
        runs = len(shards)
        if args.fan_out:
            fired, runs = fan_out(args.fan_out, args.chunk, now)
        else:
            whole = whole_shard_dispatcher(services)

            def scan(shard: str) -> int:
                """One shard's scan, tried again after a storage error as the host delivers a failed scan
                message again (rows it sent before the error are sent again: their claims drop the copies)."""
                for _ in range(SCAN_TRIES - 1):
                    try:
                        return whole.scan(shard, now).fired
                    except StorageError as error:
                        print(f"scan of shard {shard} failed ({error}); scanning it again")
                        retried.append(shard)
                return whole.scan(shard, now).fired

            retried: list[str] = []
            with ThreadPoolExecutor(max_workers=args.threads) as pool:
                fired = sum(pool.map(scan, shards))
            if retried:
                print(f"{len(retried)} scan(s) run again after a storage error (their time counts)")
        dispatch_seconds = time.perf_counter() - started
        # A scan run again sends again what it sent before its error: at least every job, at most those twice.
        assert fired >= args.jobs, f"dispatched {fired} of {args.jobs}"
        assert isinstance(services.executions, MessageQueue)
        queue = services.executions.client

        def send(i: int) -> None:
            queue.send_message(f'{{"v":1,"raw":{i}}}', visibility_timeout=30)

        raw_seconds, _ = timed_calls(send, args.jobs, args.threads)
    dispatch_rate, raw_rate = args.jobs / dispatch_seconds, args.jobs / raw_seconds  # jobs, not sends
    print(
        table(
            ["operation", "count", "threads", "seconds", "per second", "vs raw send"],
            [
                [
                    f"dispatch (scan → execution message), {args.shards} shards"
                    + (f", fan-out: {runs} scans of ≤ {args.chunk} rows" if args.fan_out else ""),
                    fired,
                    args.fan_out or args.threads,
                    f"{dispatch_seconds:.1f}",
                    f"{dispatch_rate:.0f}",
                    f"{dispatch_rate / raw_rate:.0%}",
                ],
                ["raw send_message", args.jobs, args.threads, f"{raw_seconds:.1f}", f"{raw_rate:.0f}", "100%"],
            ],
        )
    )


if __name__ == "__main__":
    main()
