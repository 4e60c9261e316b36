"""The writes around an action are idempotent and retried only when it is worth it (Azurite, real stores):
a retried claim, history row or counters write whose first try landed does not apply twice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from azure.core.exceptions import HttpResponseError, ResourceModifiedError, ServiceRequestError

from scheduler_core.adapters.azure.errors import storage_error
from scheduler_core.model import ClaimOutcome
from scheduler_core.pipeline.counters import count_attempt
from scheduler_core.pipeline.durable import durably, is_transient
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.support.harness import Deployment, near_now
from tests.support.jobs import job_body

pytestmark = [pytest.mark.azurite]


@pytest.fixture
def pipeline(storage_env: Settings) -> Deployment:
    return near_now(storage_env, azurite=True, start=datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=1))


def _job_message(pipeline: Deployment, name: str) -> ExecutionMessage:
    due = pipeline.clock.now + timedelta(hours=1)
    pipeline.put_job(
        name,
        job_body(
            due,
            {"type": "Http", "request": {"uri": "http://127.0.0.1:9/", "method": "GET"}},
            {"frequency": "Hour", "interval": 1},
        ),
    )
    job = pipeline.services.service.get_job(pipeline.ref(name))
    return ExecutionMessage(job.ref.partition_key, job.ref.row_key, job.generation, format_instant(due))


def test_counters_of_one_attempt_are_applied_once_however_often_they_are_written(pipeline: Deployment) -> None:
    message = _job_message(pipeline, "c")
    jobs = pipeline.services.stores.jobs
    job = pipeline.services.service.get_job(pipeline.ref("c"))
    for _ in range(3):  # a write repeated after its answer was lost, or by a worker taking over
        count_attempt(jobs, job, message, False, False, None, pipeline.clock())
    other = ExecutionMessage(message.job_partition, message.job_row, message.generation, message.occurrence, attempt=1)
    count_attempt(jobs, job, other, True, False, None, pipeline.clock())
    stored = pipeline.services.service.get_job(pipeline.ref("c"))
    assert (stored.execution_count, stored.failure_count) == (2, 1)


def test_a_claim_retried_after_its_answer_was_lost_is_still_this_callers(pipeline: Deployment) -> None:
    claims = pipeline.services.executor.claims
    now = pipeline.clock()
    first = claims.claim("job", "row", "w1", now, timedelta(minutes=2), token="t1")
    again = claims.claim("job", "row", "w1", now, timedelta(minutes=2), token="t1")
    other = claims.claim("job", "row", "w2", now, timedelta(minutes=2), token="t2")
    assert (first.outcome, again.outcome, other.outcome) == (
        ClaimOutcome.CLAIMED,
        ClaimOutcome.CLAIMED,
        ClaimOutcome.BUSY,
    )
    later = claims.claim("job", "row", "w2", now + timedelta(minutes=3), timedelta(minutes=2), token="t3")
    assert later.outcome is ClaimOutcome.CLAIMED
    assert later.lost is not None and later.lost.worker == "w1"


def test_the_execution_id_is_the_same_for_every_message_of_one_attempt() -> None:
    one = ExecutionMessage("p", "r", 1, "2030-01-01T00:00:00Z")
    same = ExecutionMessage("p", "r", 2, "2030-01-01T00:00:00Z", missed=3)
    assert one.stable_execution_id() == same.stable_execution_id()
    retry = ExecutionMessage("p", "r", 1, "2030-01-01T00:00:00Z", attempt=1, cause=Cause.RETRY)
    other_job = ExecutionMessage("p", "r2", 1, "2030-01-01T00:00:00Z")
    assert len({one.stable_execution_id(), retry.stable_execution_id(), other_job.stable_execution_id()}) == 3


def test_only_transient_storage_errors_are_retried() -> None:
    def status(code: int) -> HttpResponseError:
        error = HttpResponseError(message=str(code))
        error.status_code = code
        return error

    def as_adapters_raise(error: Exception) -> BaseException:
        return storage_error(error) or error

    assert all(
        is_transient(as_adapters_raise(e))
        for e in (ServiceRequestError("refused"), status(503), status(500), status(429), status(408))
    )
    assert not any(
        is_transient(as_adapters_raise(e))
        for e in (status(404), status(409), status(412), status(400), ValueError("x"))
    )
    tries: list[int] = []

    def final() -> None:
        tries.append(1)
        raise ResourceModifiedError("412")

    with pytest.raises(ResourceModifiedError):
        durably("final", final, sleep=lambda _s: None)
    assert len(tries) == 1
    waits: list[float] = []

    def flaky() -> str:
        if len(waits) < 3:
            raise as_adapters_raise(ServiceRequestError("connection refused"))
        return "ok"

    assert durably("flaky", flaky, sleep=waits.append) == "ok"
    assert waits == [0.5, 1, 2]


def test_the_retry_budget_rides_out_more_than_a_minute() -> None:
    from scheduler_core.pipeline.durable import BACKOFF

    assert sum(BACKOFF) > 60
