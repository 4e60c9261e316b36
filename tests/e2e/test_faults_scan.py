"""Faults: a scan worker killed in the middle of a shard it fans out. Real processes over the session's
Azurite: a scan worker process (this module run as a program, the real dispatcher over the Azure adapters)
dispatches the first rows of a shard holding many due rows, hands the rest on through the real scan queue,
and is killed with SIGKILL after sending some of its execution messages, before it moves its rows. The
test then does what the other instances would: runs the handed-on scan messages and the next tick's scan,
and executes every execution message from the real queue, calling a real HTTP target on 127.0.0.1.

The promise: no row is lost and none fires twice; each occurrence is recorded once.

    python -m tests.e2e.test_faults_scan <chunk> <sends before it hangs>    (the scan worker)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scheduler_core import settings, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.azure.queues import MessageQueue
from scheduler_core.pipeline.dispatch import Dispatcher
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.pipeline.messages import ExecutionMessage, ScanMessage
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.http_target import HttpTarget
from tests.support.jobs import http_action, job_body

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
JOBS = 30
CHUNK = 8
#: The worker hangs (and is killed) after this many execution messages of its chunk.
SENT_BEFORE_KILL = 5
#: The scans' window (SCHEDULER_LOOKAHEAD_SECONDS): short, so that the executions the scans enqueue become
#: visible a few seconds after them; the jobs are written beyond it all the same.
LOOKAHEAD_SECONDS = 8


def scan_worker(chunk: int, sends_before_hang: int) -> None:
    """The worker: the real dispatcher over the Azure adapters, whose execution queue hangs after some sends
    (a test double around the real queue: the process is killed while it hangs)."""
    from scheduler_core.adapters.azure import connect

    config = settings.load()
    storage = connect(config)
    sent = 0

    def send(text: str, visibility: int) -> None:
        nonlocal sent
        if sent >= sends_before_hang:
            print("hung", flush=True)
            time.sleep(3600)
        storage.executions.send(text, visibility)
        sent += 1

    dispatcher = Dispatcher(
        storage.stores,
        send,
        config.due_shards,
        timedelta(seconds=config.lookahead_seconds),
        storage.claims,
        send_scan=storage.scans.send,
        chunk=chunk,
    )
    print("started", flush=True)
    dispatcher.scan("0000", datetime.now(UTC))
    print("finished", flush=True)  # not reached: it hangs first


def test_a_scan_worker_killed_mid_shard_loses_no_row_and_fires_none_twice(
    storage_env: Settings, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCHEDULER_DUE_SHARDS", "1")
    monkeypatch.setenv("SCHEDULER_LOOKAHEAD_SECONDS", str(LOOKAHEAD_SECONDS))
    config = settings.load()
    provision(config)
    services = wiring.build(config)
    collection = CollectionRef("sub1", "rg", "jc")
    services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}})
    created = datetime.now(UTC)
    due = (created + timedelta(seconds=LOOKAHEAD_SECONDS + 8)).replace(microsecond=0)
    refs = [JobRef(collection, f"j{i:02d}") for i in range(JOBS)]
    for ref in refs:  # beyond the lookahead when written: left to the scans
        services.service.put_job(ref, job_body(due, http_action(f"{target.base_url}/{ref.name}", body=None)))
    time.sleep(max(0.0, (due - timedelta(seconds=LOOKAHEAD_SECONDS - 2) - datetime.now(UTC)).total_seconds()))

    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.test_faults_scan", str(CHUNK), str(SENT_BEFORE_KILL)],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None
        lines = [worker.stdout.readline().strip() for _ in range(2)]
        assert lines == ["started", "hung"], lines
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)

    scans, executions = services.scans, services.executions
    assert isinstance(scans, MessageQueue) and isinstance(executions, MessageQueue)
    handed = [ScanMessage.from_json(m.content) for m in scans.client.peek_messages(max_messages=32)]
    assert [m.after != "" for m in handed] == [True]  # the rest was handed on before the worker died
    assert executions.client.get_queue_properties().approximate_message_count == SENT_BEFORE_KILL
    # The other instances: the handed-on scans (and those they hand on), and the next tick's scan.
    dispatcher = Dispatcher(
        services.stores,
        executions.send,
        1,
        timedelta(seconds=LOOKAHEAD_SECONDS),
        services.executor.claims,
        send_scan=scans.send,
        chunk=CHUNK,
    )
    fired = dispatcher.scan("0000", datetime.now(UTC)).fired  # the tick: the dead worker's rows are still there
    while batch := list(scans.client.receive_messages(max_messages=32, visibility_timeout=60)):
        for message in batch:
            fired += dispatcher.scan_message(ScanMessage.from_json(message.content), datetime.now(UTC)).fired
            scans.client.delete_message(message)
    assert fired == JOBS  # each row dispatched once by the survivors; the dead worker's sends come on top

    outcomes: Counter[Outcome] = Counter()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and outcomes.total() < JOBS + SENT_BEFORE_KILL:
        for message in executions.client.receive_messages(max_messages=32, visibility_timeout=60):
            outcomes[services.executor.execute(ExecutionMessage.from_json(message.content)).outcome] += 1
            executions.client.delete_message(message)
        time.sleep(0.2)

    # The dead worker's messages: each a second message of an occurrence, dropped (its one-shot job has
    # completed: stale, or its claim is done: a duplicate, whichever copy came first).
    assert outcomes[Outcome.SUCCEEDED] == JOBS
    assert outcomes[Outcome.STALE] + outcomes[Outcome.DUPLICATE] == SENT_BEFORE_KILL
    assert outcomes.total() == JOBS + SENT_BEFORE_KILL
    calls = Counter(r.path.lstrip("/") for r in target.received)
    assert calls == Counter({ref.name: 1 for ref in refs}), "each job called exactly once"
    for ref in refs:
        job = services.service.get_job(ref)
        assert (job.state, job.execution_count) == ("Completed", 1), ref.name
        assert [h.status for h in services.service.list_history(ref)] == ["Completed"], ref.name
    occurrences = [row for row in services.stores.due.due_before("0000", "~") if row.kind != "watch"]
    assert occurrences == []  # one-shot jobs: nothing left to fire


if __name__ == "__main__":
    scan_worker(int(sys.argv[1]), int(sys.argv[2]))
