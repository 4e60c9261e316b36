"""The history stream (``SchedulerHistoryStream``): every history record, whichever path writes it, is sent to the
stream's queue once its write landed, with an id of its own; a send lost with its worker is sent again when the
attempt's message is delivered again, so a consumer that keeps each id once sees every record once.

Simulated time on the memory adapter, real HTTP servers on 127.0.0.1; the stream is a memory queue."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from scheduler_core import wiring
from scheduler_core.adapters.memory import MemoryQueue, SimulatedClock, memory_storage
from scheduler_core.definitions import Wire
from scheduler_core.errors import StorageError
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.settings import Settings
from tests.support.harness import COLLECTION, STANDARD, START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, fixed_retries, http_action, job_body

DUE = START + timedelta(seconds=20)


class WorkerDied(BaseException):
    """What a worker that dies mid-step leaves behind: nothing after the point it was raised at."""


@pytest.fixture
def streamed(memory_env: Settings) -> tuple[Deployment, MemoryQueue]:
    clock = SimulatedClock(START)
    storage = memory_storage(clock)
    stream = MemoryQueue(clock)
    services = wiring.build(memory_env, clock=clock, sleep=clock.advance, storage=storage, history_stream=stream)
    deployment = Deployment(memory_env, clock, services, storage.executions, COLLECTION, storage)
    return deployment._ready(STANDARD), stream


def consumed(stream: MemoryQueue) -> list[dict[str, Any]]:
    """What a consumer takes from the stream (every message, in order)."""
    return [json.loads(message.text) for message in stream.receive(at=START + timedelta(days=30))]


def every_entry(deployment: Deployment, *names: str) -> set[str]:
    return {
        f"{deployment.ref(name).resource_id}/history/{entry.row_key}"
        for name in names
        for entry in deployment.history(name)
    }


def test_every_record_of_every_path_is_streamed_once_with_its_id(
    streamed: tuple[Deployment, MemoryQueue], target: HttpTarget
) -> None:
    deployment, stream = streamed
    target.answer([500])  # every call fails: retries, the error action, and overlapping occurrences
    failing = http_action(target.base_url + "/retried", retryPolicy=fixed_retries(1, "PT20S"))
    failing["errorAction"] = http_action(target.base_url + "/error", retryPolicy=NO_RETRY)
    deployment.service.put_job(deployment.ref("retried"), job_body(DUE, failing), wire=Wire.PREVIEW)
    slow = http_action(target.base_url + "/minutely", retryPolicy=fixed_retries(2, "PT40S"))
    body = job_body(DUE, slow, {"frequency": "Minute", "interval": 1, "count": 3}, overlapPolicy="Skip")
    deployment.service.put_job(deployment.ref("minutely"), body, wire=Wire.PREVIEW)
    deployment.run_until(DUE + timedelta(minutes=5))

    records = consumed(stream)
    ids = Counter(record["recordId"] for record in records)
    assert set(ids) == every_entry(deployment, "retried", "minutely")
    assert set(ids.values()) == {1}  # each once, when nothing failed
    statuses = Counter(record["entry"]["properties"]["status"] for record in records)
    assert statuses["Failed"] >= 5 and statuses["Skipped"] >= 1  # written by the executor and by the overlap gate
    actions = {record["entry"]["properties"]["actionName"] for record in records}
    assert actions == {"MainAction", "ErrorAction"}
    record = records[0]
    assert record["v"] == 1 and record["job"].startswith("/subscriptions/sub1/resourceGroups/rg1/")
    assert record["entry"]["type"] == "Microsoft.Scheduler/jobCollections/jobs/history"
    assert "trigger" in record["entry"]["properties"]  # as the preview api-version answers it


def test_a_send_that_fails_is_tried_again_with_its_write_and_history_keeps_one_entry(
    streamed: tuple[Deployment, MemoryQueue], target: HttpTarget
) -> None:
    deployment, stream = streamed
    deployment.service.put_job(deployment.ref("j"), job_body(DUE, http_action(target.base_url)), wire=Wire.PREVIEW)
    stream.fail_next("send", StorageError("storage could not be reached (ConnectionError)"), times=2)
    deployment.run_until(DUE + timedelta(seconds=30))
    assert len(deployment.history("j")) == 1 and len(target.received) == 1
    ids = [record["recordId"] for record in consumed(stream)]
    assert set(ids) == every_entry(deployment, "j") and len(ids) == 1


def test_a_worker_that_dies_between_the_record_and_its_send_leaves_it_to_the_next_delivery(
    streamed: tuple[Deployment, MemoryQueue], target: HttpTarget
) -> None:
    deployment, stream = streamed
    deployment.service.put_job(deployment.ref("j"), job_body(DUE, http_action(target.base_url)), wire=Wire.PREVIEW)
    deployment.clock.set(DUE)
    [message] = deployment.take()
    stream.fail_next("send", WorkerDied())  # the entry is written, then the worker is gone
    with pytest.raises(WorkerDied):
        deployment.executor.execute(message)
    assert len(deployment.history("j")) == 1 and consumed(stream) == []
    # the queue shows the message again after the host's processing lease: the job has ended, the record is sent
    again = ExecutionMessage.from_json(message.to_json())
    assert deployment.executor.execute(again).outcome is Outcome.STALE
    ids = [record["recordId"] for record in consumed(stream)]
    assert ids == sorted(every_entry(deployment, "j"))
    assert len(target.received) == 1


def test_a_recurring_jobs_record_lost_with_its_worker_is_sent_by_the_duplicate_delivery(
    streamed: tuple[Deployment, MemoryQueue], target: HttpTarget
) -> None:
    deployment, stream = streamed
    body = job_body(DUE, http_action(target.base_url), {"frequency": "Hour", "interval": 1})
    deployment.service.put_job(deployment.ref("hourly"), body, wire=Wire.PREVIEW)
    deployment.clock.set(DUE)
    [message] = deployment.take()
    stream.fail_next("send", WorkerDied())
    with pytest.raises(WorkerDied):
        deployment.executor.execute(message)
    assert deployment.executor.execute(ExecutionMessage.from_json(message.to_json())).outcome is Outcome.DUPLICATE
    assert [record["recordId"] for record in consumed(stream)] == sorted(every_entry(deployment, "hourly"))


def test_without_a_stream_nothing_is_sent_and_history_is_written_as_before(
    deployment: Deployment, target: HttpTarget
) -> None:
    assert deployment.executor.stream is None
    deployment.service.put_job(deployment.ref("j"), job_body(DUE, http_action(target.base_url)), wire=Wire.PREVIEW)
    deployment.run_until(DUE + timedelta(seconds=30))
    assert len(deployment.history("j")) == 1
    assert type(deployment.stores.history).__name__ == "MemoryHistory"  # not wrapped
