"""The history stream across a killed worker, on Azurite (issue 29): real host processes stream every history
record to a Storage queue (``SchedulerHistoryStream``); one is killed (SIGKILL) in the middle of a call and a
successor runs the attempt again, so the job's history holds the lost attempt and the re-run. A consumer that
reads the real queue and keeps each ``recordId`` once sees every record of the history, once, and nothing else.
"""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from azure.storage.queue import QueueClient

from local_host.azurite import Azurite
from scheduler_core.definitions import Wire
from scheduler_core.model.claim import CLAIM_LEASE, heartbeat_every
from scheduler_core.pipeline.execute import WORKER_LOST
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import JobRef
from tests.e2e import fault_host
from tests.e2e.test_faults_worker import held_job
from tests.support.http_target import HttpTarget
from tests.support.jobs import http_action, job_body
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


def drain(queue: QueueClient) -> list[dict[str, Any]]:
    """What a consumer of the stream reads now: every message, decoded (base64 JSON), taken off the queue."""
    out = []
    for message in queue.receive_messages(messages_per_page=32, visibility_timeout=60):
        out.append(json.loads(base64.b64decode(message.content)))
        queue.delete_message(message)
    return out


def test_a_consumer_sees_every_record_once_across_a_killed_worker(
    storage_env: Settings, azurite: Azurite, target: HttpTarget, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stream_queue = f"history-{storage_env.table_prefix.lower()}"
    monkeypatch.setenv("SchedulerHistoryStream", azurite.connection_string)
    monkeypatch.setenv("SCHEDULER_HISTORY_STREAM_QUEUE", stream_queue)
    queue = QueueClient.from_connection_string(azurite.connection_string, stream_queue)
    queue.create_queue()
    lease = CLAIM_LEASE.total_seconds()
    services, ref, _, _ = held_job(storage_env, target, "jc-stream", "held", CLAIM_LEASE)
    hourly = JobRef(ref.collection, "hourly")
    doomed = fault_host.spawn(lease, log=tmp_path / "doomed.log")
    successor = None
    seen: list[dict[str, Any]] = []
    try:
        due = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
        services.service.put_job(ref, job_body(due, http_action(target.base_url + "/hook")), wire=Wire.PREVIEW)
        target.wait_for(1, timeout=30)
        time.sleep(heartbeat_every(CLAIM_LEASE).total_seconds() + 1)
        doomed.kill()  # SIGKILL mid-call
        doomed.wait(timeout=10)
        target.answer([500, 200], delay=0)
        successor = fault_host.spawn(lease, log=tmp_path / "successor.log")
        # and a job that fails once and is retried, recorded by the successor as it runs
        retried = http_action(
            target.base_url + "/retried", retryPolicy={"retryType": "Fixed", "retryInterval": "PT15S", "retryCount": 1}
        )
        services.service.put_job(hourly, job_body(datetime.now(UTC) + timedelta(seconds=3), retried), wire=Wire.PREVIEW)

        def recorded() -> bool:
            seen.extend(drain(queue))
            return len(services.service.list_history(ref)) == 2 and len(services.service.list_history(hourly)) >= 2

        wait_until(recorded, 90, "the re-run and the retry recorded")
        time.sleep(2)
        seen.extend(drain(queue))
    finally:
        doomed.kill()
        if successor is not None:
            fault_host.stop(successor)
    seen.extend(drain(queue))
    history = {
        f"{job.resource_id}/history/{entry.row_key}": entry
        for job in (ref, hourly)
        for entry in services.service.list_history(job)
    }
    kept = {record["recordId"]: record for record in seen}  # the consumer keeps each id once
    assert set(kept) == set(history), (sorted(kept), sorted(history))
    lost = [record for record in kept.values() if record["entry"]["properties"]["message"].startswith(WORKER_LOST)]
    assert len(lost) == 1 and lost[0]["job"] == ref.resource_id
    for record_id, record in kept.items():
        entry = history[record_id]
        assert record["entry"]["properties"]["status"] == entry.status
        assert record["entry"]["name"] == entry.execution_id
    print(f"{len(seen)} messages for {len(history)} records")
