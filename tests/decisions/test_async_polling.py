"""Long-running calls (``request.asyncPolling``, api-version 2026-12-01-preview): a ``202 Accepted`` with
``Location`` is an operation still running. It is polled with GET (``Retry-After`` honoured, 10 s without one)
by scheduled messages, each poll a step of the attempt with a claim of its own, until an answer other than
202 (the attempt's outcome) or ``maxDuration`` after it began (a ``Timeout``). No invocation waits meanwhile,
the overlap policy sees the occurrence running, and the history shows the operation once, not every poll.
Credentials go only to a ``Location`` of the job's own origin. Without ``asyncPolling`` a 202 is a success.

Simulated time on the memory adapter (:class:`tests.support.harness.Deployment`), real HTTP servers on
127.0.0.1."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from scheduler_core.definitions import Wire
from scheduler_core.errors import StorageError
from scheduler_core.model import CLAIM_LEASE, ActionName, HistoryStatus, JobState
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.pipeline.watches import WATCH_GRACE
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget, http_target
from tests.support.jobs import NO_RETRY, http_action, job_body

DUE = START + timedelta(seconds=20)
POLLING = {"maxDuration": "PT2M"}


def polled_job(target: HttpTarget, recurrence: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    action = http_action(target.base_url + "/start", **{"retryPolicy": NO_RETRY, **extra})
    action["request"].setdefault("asyncPolling", POLLING)
    return job_body(DUE, action, recurrence)


def fire(deployment: Deployment, body: dict[str, Any], name: str = "j") -> ExecutionMessage:
    deployment.service.put_job(deployment.ref(name), body, wire=Wire.PREVIEW)
    return deployment.fire_at(DUE)


def next_poll(deployment: Deployment) -> ExecutionMessage:
    """The one message queued now, a poll, once time has come to its due instant."""
    [queued] = deployment.queued()
    message = ExecutionMessage.from_json(queued.text)
    assert message.poll is not None and message.due_time is not None
    deployment.clock.set(message.due_time)
    [taken] = deployment.take()
    return taken


def test_a_202_with_location_is_polled_until_it_ends_and_recorded_once(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([202, 202, 200], headers={"Location": "/operations/7"})
    first = fire(deployment, polled_job(target))

    assert deployment.executor.execute(first).outcome is Outcome.POLLING
    assert deployment.history("j") == [] and deployment.job("j").execution_count == 0  # nothing recorded yet
    poll = next_poll(deployment)
    assert poll.poll is not None and (poll.poll.url, poll.poll.number) == (target.base_url + "/operations/7", 1)
    assert poll.due_time == DUE + timedelta(seconds=10)  # no Retry-After: 10 s
    assert deployment.executor.execute(poll).outcome is Outcome.POLLING
    second = next_poll(deployment)
    assert second.poll is not None and second.poll.number == 2
    assert deployment.executor.execute(second).outcome is Outcome.SUCCEEDED

    assert [(r.method, r.path) for r in target.received] == [
        ("POST", "/start"),
        ("GET", "/operations/7"),
        ("GET", "/operations/7"),
    ]
    assert target.received[1].body == b"" and "Content-Type" not in target.received[1].headers
    [row] = deployment.history("j")
    assert (row.status, row.action_name, row.start_time) == (HistoryStatus.COMPLETED, ActionName.MAIN, DUE)
    assert row.execution_id == first.stable_execution_id() == poll.stable_execution_id()
    assert row.message.endswith("(the operation's outcome, after 2 poll(s))")
    job = deployment.job("j")
    assert (job.state, job.execution_count, job.failure_count) == (JobState.COMPLETED, 1, 0)
    ids = {r.headers["x-ms-scheduler-execution-id"] for r in target.received}
    assert ids == {first.stable_execution_id()}  # the target sees one operation


@pytest.mark.parametrize(("retry_after", "wait"), [("3", 3), ("0", 1), ("86400", 15 * 60)])
def test_retry_after_on_a_202_sets_the_wait_within_bounds(
    deployment: Deployment, target: HttpTarget, retry_after: str, wait: int
) -> None:
    target.answer([202], headers={"Location": "/op", "Retry-After": retry_after})
    body = polled_job(target)
    body["properties"]["action"]["request"]["asyncPolling"] = {"maxDuration": "PT1H"}
    deployment.executor.execute(fire(deployment, body))
    assert next_poll(deployment).due_time == DUE + timedelta(seconds=wait)


def test_the_last_poll_comes_at_max_duration_whatever_retry_after_asks(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([202], headers={"Location": "/op", "Retry-After": "600"})
    deployment.executor.execute(fire(deployment, polled_job(target)))  # maxDuration PT2M
    assert next_poll(deployment).due_time == DUE + timedelta(minutes=2)


def test_a_202_without_location_when_polling_keeps_the_url_and_a_new_location_replaces_it(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([202], headers={"Location": "/a"})
    deployment.executor.execute(fire(deployment, polled_job(target)))
    poll = next_poll(deployment)
    target.answer([202])
    deployment.executor.execute(poll)
    again = next_poll(deployment)
    assert again.poll is not None and again.poll.url == target.base_url + "/a"
    target.answer([202], headers={"Location": "http://127.0.0.1:9/elsewhere"})
    deployment.executor.execute(again)
    assert next_poll(deployment).poll.url == "http://127.0.0.1:9/elsewhere"  # type: ignore[union-attr]


def test_an_operation_past_max_duration_times_out_and_what_follows_a_failure_follows(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([202], headers={"Location": "/slow"})
    retry = {"retryType": "Fixed", "retryInterval": "PT30S", "retryCount": 1, "retryOn": ["Timeout"]}
    body = polled_job(target, retryPolicy=retry)
    body["properties"]["action"]["request"]["asyncPolling"] = {"maxDuration": "PT1M"}
    message = fire(deployment, body)
    outcomes = [deployment.executor.execute(message).outcome]
    while True:
        [queued] = deployment.queued()
        message = ExecutionMessage.from_json(queued.text)
        if message.poll is None:
            break
        outcomes.append(deployment.executor.execute(next_poll(deployment)).outcome)

    assert outcomes == [Outcome.POLLING] * 6 + [Outcome.FAILED]  # polls at +10 s ... +60 s, then no more
    assert (message.attempt, message.poll) == (1, None)  # the retry starts the operation again (a POST)
    [row] = deployment.history("j")
    assert row.status is HistoryStatus.FAILED and row.start_time == DUE
    assert "Operation not finished within asyncPolling's PT1M: still running after 6 poll(s)" in row.message


def test_a_final_failure_is_the_attempts_outcome(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([202, 500], headers={"Location": "/op"})
    deployment.executor.execute(fire(deployment, polled_job(target)))
    assert deployment.executor.execute(next_poll(deployment)).outcome is Outcome.FAILED
    [row] = deployment.history("j")
    assert row.status is HistoryStatus.FAILED and row.message.startswith("500")
    assert deployment.job("j").state is JobState.FAULTED


def test_without_async_polling_a_202_is_a_success_as_before(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([202], headers={"Location": "/op"})
    body = job_body(DUE, http_action(target.base_url + "/start", retryPolicy=NO_RETRY))
    assert deployment.executor.execute(fire(deployment, body)).outcome is Outcome.SUCCEEDED
    assert deployment.queued() == [] and len(target.received) == 1


def test_the_occurrence_runs_while_it_is_polled_for_the_overlap_policy(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([202], headers={"Location": "/op"})
    body = polled_job(target, recurrence={"frequency": "Minute"})
    body["properties"]["overlapPolicy"] = "Skip"
    body["properties"]["action"]["request"]["asyncPolling"] = {"maxDuration": "PT5M"}
    deployment.executor.execute(fire(deployment, body))

    deployment.run_until(DUE + timedelta(minutes=1, seconds=5))

    skipped = [row for row in deployment.history("j") if row.status is HistoryStatus.SKIPPED]
    assert [row.expected_execution_time for row in skipped] == [DUE + timedelta(minutes=1)]
    assert sum(1 for r in target.received if r.method == "POST") == 1


@pytest.fixture
def other_origin() -> Iterator[HttpTarget]:
    with http_target([200]) as server:
        yield server


def test_credentials_go_only_to_a_location_of_the_jobs_own_origin(
    deployment: Deployment, target: HttpTarget, other_origin: HttpTarget
) -> None:
    basic = {"type": "Basic", "username": "ops", "password": "s3cret-pass"}
    body = polled_job(target)
    body["properties"]["action"]["request"]["authentication"] = basic
    target.answer([202], headers={"Location": "/same"})
    deployment.executor.execute(fire(deployment, body))
    deployment.executor.execute(next_poll(deployment))  # a 202 again, now elsewhere
    expected = "Basic " + base64.b64encode(b"ops:s3cret-pass").decode()
    assert target.received[-1].headers.get("Authorization") == expected

    target.answer([202], headers={"Location": other_origin.base_url + "/status"})
    deployment.executor.execute(next_poll(deployment))
    deployment.executor.execute(next_poll(deployment))
    assert [r.path for r in other_origin.received] == ["/status"]
    assert "Authorization" not in other_origin.received[0].headers


def test_a_poll_delivered_twice_runs_once_and_a_lost_poll_is_sent_again_by_its_watch(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([202, 200], headers={"Location": "/op"})
    deployment.executor.execute(fire(deployment, polled_job(target, recurrence={"frequency": "Hour"})))
    [queued] = deployment.drop_queued()  # the poll's message is lost (a host's memory, a dead worker)
    poll = ExecutionMessage.from_json(queued.text)
    assert poll.due_time is not None
    deployment.clock.set(poll.due_time + CLAIM_LEASE + WATCH_GRACE)

    deployment.look_now()  # its watch sends it again
    [resent] = deployment.take()
    outcomes = [deployment.executor.execute(message).outcome for message in (resent, resent)]

    assert outcomes == [Outcome.SUCCEEDED, Outcome.DUPLICATE]
    assert [r.method for r in target.received] == ["POST", "GET"]
    assert len(deployment.history("j")) == 1


def test_a_storage_outage_as_a_poll_step_completes_is_waited_out(
    deployment: Deployment, target: HttpTarget, simulated_durable_waits: None
) -> None:
    target.answer([202, 202, 200], headers={"Location": "/op"})
    deployment.executor.execute(fire(deployment, polled_job(target)))
    poll = next_poll(deployment)
    deployment.storage.claims.fail_next("complete", StorageError("storage answered 503", 503), times=2)

    assert deployment.executor.execute(poll).outcome is Outcome.POLLING
    assert deployment.executor.execute(next_poll(deployment)).outcome is Outcome.SUCCEEDED
    assert len(deployment.history("j")) == 1 and len(target.received) == 3


def test_a_location_longer_than_a_jobs_uri_is_not_followed(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([202], headers={"Location": "/op?" + "a" * 3000})
    assert deployment.executor.execute(fire(deployment, polled_job(target))).outcome is Outcome.FAILED
    [row] = deployment.history("j")
    assert row.message.startswith("Operation not followed: its Location is longer than 2,048 characters")
    assert deployment.queued() == [] and len(target.received) == 1
