"""What one fired occurrence costs in storage operations, counted by the benchmarks' counting proxy
(``bench/opcount.py``) in front of the session's Azurite: the scan that fires it, the attempt, and the watch
look that finds its watch entry due. The counts are the design (``pipeline/execute.py``, ``pipeline/watchdog.py``),
so a change that adds a round trip to the hot path fails here."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from bench.opcount import BATCH_ENTITIES, OpCounter
from local_host.azurite import DEV_ACCOUNT, DEV_KEY, Azurite
from scheduler_core import settings, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.azure.queues import MessageQueue
from scheduler_core.adapters.memory import SimulatedClock
from scheduler_core.model import CLAIM_LEASE
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.pipeline.watches import WATCH_GRACE
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.http_target import HttpTarget, http_target
from tests.support.jobs import every, http_action, job_body

pytestmark = [pytest.mark.azurite]


@pytest.fixture
def counter(azurite: Azurite) -> Iterator[OpCounter]:
    with OpCounter({"queue": azurite.ports.queue, "table": azurite.ports.table}) as proxy:
        yield proxy


@pytest.fixture
def target() -> Iterator[HttpTarget]:
    with http_target() as server:
        yield server


def test_a_fired_occurrence_costs_a_send_a_job_read_a_claim_a_counters_write_and_a_record(
    storage_env: settings.Settings, counter: OpCounter, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AzureWebJobsStorage", counter.connection_string(DEV_ACCOUNT, DEV_KEY))
    config = settings.load()
    provision(config)
    start = SimulatedClock().now.replace(year=2031)
    clock = SimulatedClock(start)
    services = wiring.build(config, clock=clock, sleep=clock.advance)
    collection = CollectionRef("sub1", "rg", "jc")
    services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    due = start + timedelta(minutes=10)
    ref = JobRef(collection, "j")
    job = services.service.put_job(ref, job_body(due, http_action(target.base_url, body=None), every("Hour")))[0]
    services.service.slots.give_back_ahead()  # now, not by a timer while operations are counted
    assert job.due is not None
    executions = services.executions
    assert isinstance(executions, MessageQueue)

    clock.set(due - timedelta(seconds=30))
    before = counter.snapshot()
    assert services.dispatcher.scan(job.due.shard, clock()).fired == 1
    scan = counter.snapshot() - before
    assert dict(scan.by_operation) == {
        # the shard's due rows, the jobs they name, and its watch entries whose look was lost (once a tick a shard)
        "table query": 3,
        "queue put": 2,  # the execution message, and the look of its watch entry's slot (once a shard a slot)
        "table batch": 1,  # the fired row moved to the next occurrence, and the attempt's watch entry
        BATCH_ENTITIES: 3,
    }

    clock.set(due)
    # The message the scan sent (shown 29 s later in real time: the clock here is simulated).
    message = ExecutionMessage(job.ref.partition_key, job.ref.row_key, job.generation, format_instant(due))
    assert executions.client.get_queue_properties().approximate_message_count == 1
    before = counter.snapshot()
    assert services.executor.execute(message).outcome is Outcome.SUCCEEDED
    attempt = counter.snapshot() - before
    assert dict(attempt.by_operation) == {
        "table get": 1,  # the job
        "table insert": 1,  # the claim
        "table update": 1,  # the counters, over the job as read (ETag-guarded)
        "table merge": 1,  # the history entry, in the claim's row as it is completed (ETag-guarded)
    }
    assert [h.status for h in services.service.list_history(ref)] == ["Completed"]

    clock.set(due + CLAIM_LEASE + WATCH_GRACE)
    before = counter.snapshot()
    services.dispatcher.look(job.due.shard, clock())  # the watch look of its slot
    watch = counter.snapshot() - before
    assert dict(watch.by_operation) == {
        "table query": 2,  # the shard's due rows, the watch entry's job (which counted the attempt)
        "table batch": 1,  # the watch entry dropped
        BATCH_ENTITIES: 1,
    }  # no read of the claim
    assert len(target.received) == 1
