"""Replay (``POST .../jobs/{job}/history/{historyId}/rerun``, api-version 2026-12-01-preview): the occurrence of
a history entry runs again now, its main action with the occurrence's own expected time, a new execution id,
history trigger ``Replay``, under the job's retry policy and error action, whatever the job's state; it never
changes the job's count or state. Each request runs the occurrence once more, however often its message is
delivered. A classic client, a Reader and an unknown entry are refused, and nothing is sent.

The management API in process (the real handler, gate and service) over the memory adapter in simulated time,
and a real HTTP server on 127.0.0.1 as the target."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from scheduler_core.definitions import Wire
from scheduler_core.model import HistoryStatus, JobState
from scheduler_core.model.history import Trigger
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.backfills import CLASSIC, JOB_PATH, READER_KEY, post
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, fixed_retries, http_action, job_body

DUE = START + timedelta(seconds=20)
EXPECTED = "x-ms-scheduler-expected-execution-time"


def failed_once(
    deployment: Deployment, target: HttpTarget, recurrence: dict[str, Any] | None = None, **action: Any
) -> str:
    """A job ``j`` (one-shot unless ``recurrence``) due at :data:`DUE` whose first attempt failed (what would
    follow it is dropped); the entry's id."""
    target.answer([500])
    body = job_body(DUE, http_action(target.base_url + "/hook", **{"retryPolicy": NO_RETRY, **action}), recurrence)
    deployment.service.put_job(deployment.ref("j"), body, wire=Wire.PREVIEW)
    assert deployment.executor.execute(deployment.fire_at(DUE)).outcome is Outcome.FAILED
    deployment.drop_queued()
    [entry] = deployment.history("j")
    return str(entry.execution_id)


def rerun(deployment: Deployment, history_id: str, **options: Any) -> tuple[int, dict[str, Any]]:
    return post(deployment, {}, path=f"{JOB_PATH}/history/{history_id}/rerun", **options)


def test_a_failed_occurrence_runs_again_with_its_own_time_a_new_id_and_the_replay_trigger(
    deployment: Deployment, target: HttpTarget
) -> None:
    failed = failed_once(deployment, target)
    assert deployment.job("j").state is JobState.FAULTED
    deployment.clock.advance(3600)
    target.answer([200])
    counts = (deployment.job("j").execution_count, deployment.job("j").failure_count)

    status, answer = rerun(deployment, failed)

    assert status == 202, answer
    assert answer["scheduledTime"] == format_instant(DUE) and answer["executionId"] != failed
    [message] = deployment.take()
    assert (message.cause, message.occurrence_time, message.due_time) == (Cause.REPLAY, DUE, deployment.clock.now)
    assert deployment.executor.execute(message).outcome is Outcome.SUCCEEDED
    assert target.received[-1].headers[EXPECTED] == format_instant(DUE)
    assert target.received[-1].headers["x-ms-scheduler-execution-id"] == answer["executionId"]
    replayed = next(row for row in deployment.history("j") if row.execution_id == answer["executionId"])
    assert (replayed.status, replayed.trigger, replayed.expected_execution_time) == (
        HistoryStatus.COMPLETED,
        Trigger.REPLAY,
        DUE,
    )
    assert replayed.message.endswith("(replay)")
    job = deployment.job("j")
    assert job.state is JobState.FAULTED  # never ends or revives the job
    assert (job.execution_count, job.failure_count) == (counts[0] + 1, counts[1])  # the attempt is counted


def test_a_replay_is_retried_under_the_jobs_policy_and_its_webhook_id_is_its_own(
    deployment: Deployment, target: HttpTarget
) -> None:
    failed = failed_once(deployment, target, retryPolicy=fixed_retries(1, "PT15S"))
    original_webhook = target.received[0].headers.get("x-ms-scheduler-execution-id")
    target.answer([503, 200])
    rerun(deployment, failed)
    [first] = deployment.take()
    assert deployment.executor.execute(first).outcome is Outcome.FAILED

    [queued] = deployment.queued()
    retry = ExecutionMessage.from_json(queued.text)
    assert (retry.cause, retry.attempt, retry.replay) == (Cause.REPLAY, 1, first.replay)
    deployment.clock.advance(15)
    assert deployment.executor.execute(retry).outcome is Outcome.SUCCEEDED
    rows = [row for row in deployment.history("j") if row.trigger is Trigger.REPLAY]
    assert sorted((row.retry_count, row.status) for row in rows) == [
        (0, HistoryStatus.FAILED),
        (1, HistoryStatus.COMPLETED),
    ]
    assert first.message_id() != retry.stable_execution_id()
    assert first.message_id() == retry.message_id() != original_webhook  # a new delivery, the same on each retry


def test_two_replays_each_run_once_however_often_their_messages_come(
    deployment: Deployment, target: HttpTarget
) -> None:
    failed = failed_once(deployment, target)
    target.answer([200])
    rerun(deployment, failed)
    rerun(deployment, failed)
    first, second = deployment.take()
    assert first.replay != second.replay

    outcomes = [deployment.executor.execute(message).outcome for message in (first, second, first, second)]

    assert outcomes == [Outcome.SUCCEEDED, Outcome.SUCCEEDED, Outcome.DUPLICATE, Outcome.DUPLICATE]
    replays = [row for row in deployment.history("j") if row.trigger is Trigger.REPLAY]
    assert len(replays) == 2 and len(target.received) == 3


def test_a_disabled_or_edited_job_is_replayed_with_its_action_as_it_is_now(
    deployment: Deployment, target: HttpTarget
) -> None:
    failed = failed_once(deployment, target, {"frequency": "Hour", "interval": 1})
    target.answer([200])
    body = job_body(DUE, http_action(target.base_url + "/edited", retryPolicy=NO_RETRY), {"frequency": "Day"})
    body["properties"]["state"] = "Disabled"
    deployment.service.put_job(deployment.ref("j"), body, wire=Wire.PREVIEW)

    rerun(deployment, failed)
    [message] = deployment.take()

    assert deployment.executor.execute(message).outcome is Outcome.SUCCEEDED
    assert target.received[-1].path == "/edited"
    assert deployment.job("j").state is JobState.DISABLED


def test_a_replay_of_a_recurring_job_leaves_its_count_to_the_schedule(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([500])
    action = http_action(target.base_url + "/hook", retryPolicy=NO_RETRY)
    body = job_body(DUE, action, {"frequency": "Minute", "interval": 1, "count": 2})
    deployment.service.put_job(deployment.ref("j"), body, wire=Wire.PREVIEW)
    deployment.executor.execute(deployment.fire_at(DUE))
    [failed] = deployment.history("j")
    target.answer([200])

    rerun(deployment, failed.execution_id)
    deployment.deliver()
    assert deployment.job("j").state is JobState.ENABLED  # the replay did not use up the second occurrence

    deployment.run_until(DUE + timedelta(minutes=2))
    assert deployment.job("j").state is JobState.COMPLETED
    scheduled = [row for row in deployment.history("j") if row.trigger is Trigger.SCHEDULED]
    assert sorted(row.expected_execution_time for row in scheduled) == [DUE, DUE + timedelta(minutes=1)]


def test_classic_clients_readers_and_unknown_entries_are_refused_and_nothing_is_sent(
    deployment: Deployment, target: HttpTarget
) -> None:
    failed = failed_once(deployment, target)
    before = deployment.queued()

    status, answer = rerun(deployment, failed, version=CLASSIC)
    assert status == 400, answer
    assert answer["error"]["message"] == "api-version: re-running a history entry needs api-version 2026-12-01-preview"
    status, answer = rerun(deployment, failed, key=READER_KEY)
    assert status == 403 and "jobs/jobHistories/rerun/action" in answer["error"]["message"], answer
    status, answer = rerun(deployment, "0" * 32)
    assert status == 404 and answer["error"]["message"].startswith("historyId: job 'j' has no history entry"), answer
    status, answer = post(deployment, {}, path=f"{JOB_PATH[:-1]}missing/history/{failed}/rerun")
    assert status == 404, answer
    status, answer = rerun(deployment, "%00")
    assert status == 400 and "historyId" in answer["error"]["message"], answer
    status, answer = post(deployment, {}, path=f"{JOB_PATH}/history/{failed}/RERUN/")
    assert status == 202, answer  # paths are matched without regard to case, as ARM's
    assert len(deployment.queued()) == len(before) + 1


def test_concurrent_replays_of_one_entry_each_run_once(deployment: Deployment, target: HttpTarget) -> None:
    """An operator's double clicks and a script's retries racing: every accepted request is one replay."""
    failed = failed_once(deployment, target)
    target.answer([200])
    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(lambda _: rerun(deployment, failed), range(20)))

    assert [status for status, _ in answers] == [202] * 20
    ids = {answer["executionId"] for _, answer in answers}
    assert len(ids) == 20
    messages = deployment.take()
    assert {message.stable_execution_id() for message in messages} == ids
    outcomes = [deployment.executor.execute(message).outcome for message in messages + messages]
    assert outcomes.count(Outcome.SUCCEEDED) == 20 and outcomes.count(Outcome.DUPLICATE) == 20
    replays = {row.execution_id for row in deployment.history("j") if row.trigger is Trigger.REPLAY}
    assert replays == ids


def test_an_entry_of_another_job_or_collection_is_not_replayed_through_this_one(
    deployment: Deployment, target: HttpTarget
) -> None:
    """Another tenant's execution id (a job elsewhere) names nothing here: 404, nothing sent."""
    failed = failed_once(deployment, target)
    other = JobRef(CollectionRef("sub1", "rg1", "other-jc"), "j")
    deployment.service.put_collection(
        other.collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}
    )
    deployment.service.put_job(other, job_body(DUE + timedelta(hours=1), http_action(target.base_url)))
    status, answer = post(deployment, {}, path=f"{JOB_PATH.replace('/jc1/', '/other-jc/')}/history/{failed}/rerun")
    assert status == 404 and "has no history entry" in answer["error"]["message"], answer
    assert deployment.queued() == []
