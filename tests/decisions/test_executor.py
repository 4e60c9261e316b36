"""The executor's decisions: what an attempt records, when it is retried, when the error action runs and
the job ends, which deliveries are dropped, and how it stays exactly-once through lost workers, lost
answers and storage outages."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from scheduler_core.api import views
from scheduler_core.definitions import Wire
from scheduler_core.errors import EtagMismatchError, StorageError
from scheduler_core.model import CLAIM_LEASE, ActionName, HistoryStatus, JobState, claim_key
from scheduler_core.model.retry import FailureFacts
from scheduler_core.pipeline import durable
from scheduler_core.pipeline.execute import WORKER_LOST, Outcome
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.pipeline.watches import WATCH_GRACE
from scheduler_core.recurrence import format_instant
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, fixed_retries, http_action, job_body

#: Inside the lookahead window: a job written with this start is dispatched at once.
DUE = START + timedelta(seconds=20)
HOURLY = {"frequency": "Hour", "interval": 1}


def fire(
    deployment: Deployment, name: str, action: dict[str, Any], recurrence: dict[str, Any] | None = None
) -> ExecutionMessage:
    """Write a job due at :data:`DUE` (dispatched at once), move time there and take its message."""
    deployment.put_job(name, job_body(DUE, action, recurrence))
    return deployment.fire_at(DUE)


def counters(deployment: Deployment, name: str) -> tuple[int, int, int]:
    job = deployment.job(name)
    return job.execution_count, job.failure_count, job.faulted_count


def claim_of(deployment: Deployment, name: str, message: ExecutionMessage) -> Any:
    row = claim_key(message.occurrence_time, message.action, message.attempt, message.cause)
    return deployment.storage.claims.state(deployment.job(name).ref.identity, row)


# --------------------------------------------------------------------------------------------- success


def test_a_successful_attempt_is_recorded_completed_and_counted(deployment: Deployment, target: HttpTarget) -> None:
    message = fire(deployment, "ok", http_action(target.base_url), HOURLY)

    report = deployment.executor.execute(message)

    assert report.outcome is Outcome.SUCCEEDED
    assert report.execution_id == message.stable_execution_id()
    [received] = target.received
    assert received.headers["x-ms-scheduler-execution-id"] == report.execution_id
    assert received.headers["x-ms-scheduler-expected-execution-time"] == format_instant(DUE)
    [entry] = deployment.history("ok")
    assert (entry.status, entry.action_name, entry.retry_count, entry.repeat_count) == (
        HistoryStatus.COMPLETED,
        ActionName.MAIN,
        0,
        1,
    )
    assert entry.execution_id == report.execution_id
    assert entry.expected_execution_time == DUE
    job = deployment.job("ok")
    assert counters(deployment, "ok") == (1, 0, 0)
    assert job.last_execution_time == DUE
    assert job.state is JobState.ENABLED  # a recurring job goes on
    assert claim_of(deployment, "ok", message).done
    assert deployment.queued() == []  # nothing follows a success


def test_a_message_shown_early_is_held_until_its_due_instant(deployment: Deployment, target: HttpTarget) -> None:
    deployment.put_job("early", job_body(DUE, http_action(target.base_url), HOURLY))
    deployment.clock.set(DUE - timedelta(seconds=1))  # the queue shows it a second ahead
    [message] = deployment.take()

    assert deployment.executor.execute(message).outcome is Outcome.SUCCEEDED

    [entry] = deployment.history("early")
    assert entry.start_time == DUE


def test_the_last_occurrence_that_succeeds_completes_the_job(deployment: Deployment, target: HttpTarget) -> None:
    message = fire(deployment, "once", http_action(target.base_url))
    assert message.last

    assert deployment.executor.execute(message).outcome is Outcome.SUCCEEDED

    job = deployment.job("once")
    assert job.state is JobState.COMPLETED
    assert job.state == JobState.COMPLETED and views.job(job)["properties"]["state"] == "Completed"
    assert (job.ended_at, job.next_execution_time) == (DUE, None)
    assert job.generation == message.generation  # the end of a series is not a new definition


# --------------------------------------------------------------------------------------------- failure


def test_a_failed_attempt_with_retries_left_is_sent_again_after_the_policy_delay_and_watched(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([500])
    message = fire(deployment, "r", http_action(target.base_url, retryPolicy=fixed_retries(2, "PT20S")))

    assert deployment.executor.execute(message).outcome is Outcome.FAILED

    [queued] = deployment.queued()
    retry = ExecutionMessage.from_json(queued.text)
    # The retry says when it is due: the executor holds it to that instant, its lateness is measured from it.
    # It carries when the occurrence's first attempt started (maxRetryDuration counts from it).
    expected = replace(message, attempt=1, cause=Cause.RETRY, due=format_instant(DUE + timedelta(seconds=20)))
    assert retry == replace(expected, first=format_instant(DUE))
    assert queued.visible_at == DUE + timedelta(seconds=20 - 1)  # the policy's delay (shown a second early)
    [watch] = [entry for entry in deployment.watch_entries() if entry.message == queued.text]
    assert watch.due == DUE + timedelta(seconds=20) + CLAIM_LEASE + WATCH_GRACE
    [entry] = deployment.history("r")
    assert (entry.status, entry.retry_count) == (HistoryStatus.FAILED, 0)
    assert "500" in entry.message
    assert counters(deployment, "r") == (1, 1, 0)
    assert deployment.job("r").state is JobState.ENABLED  # the occurrence is not over yet

    target.answer([200])
    deployment.clock.set(queued.visible_at)
    [report] = deployment.deliver()
    assert report.outcome is Outcome.SUCCEEDED
    assert [r.headers["x-ms-scheduler-retry-count"] for r in target.received] == ["0", "1"]
    assert [(e.status, e.retry_count) for e in deployment.history("r")] == [
        (HistoryStatus.COMPLETED, 1),
        (HistoryStatus.FAILED, 0),
    ]
    assert counters(deployment, "r") == (2, 1, 0)
    assert deployment.job("r").state is JobState.COMPLETED


def test_when_the_last_retry_fails_the_error_action_runs_and_the_occurrence_faults(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([503, 503, 200])
    error_action = {"type": "Http", "request": {"uri": target.base_url + "/error", "method": "POST"}}
    action = http_action(target.base_url + "/main", retryPolicy=fixed_retries(1, "PT15S"), errorAction=error_action)
    message = fire(deployment, "f", action)
    assert deployment.executor.execute(message).outcome is Outcome.FAILED
    deployment.clock.advance(15)
    [retry] = deployment.take()

    assert deployment.executor.execute(retry).outcome is Outcome.FAILED

    [queued] = deployment.queued()
    error = ExecutionMessage.from_json(queued.text)
    # It knows how the main action's last attempt failed (@{failure.*}), and starts its own retries' clock.
    failure = FailureFacts("Status", 503, "status 503", retry.stable_execution_id(), 2)
    assert error == replace(retry, action="error", attempt=0, first="", failure=failure)
    assert queued.visible_at == deployment.clock.now  # at once
    assert any(entry.message == queued.text for entry in deployment.watch_entries())
    assert counters(deployment, "f") == (2, 2, 1)
    assert deployment.job("f").state is JobState.ENABLED  # ends when the error action's chain ends

    deployment.clock.advance(1)  # history lists newest first: the error action runs after the retry
    [report] = deployment.deliver()
    assert report.outcome is Outcome.SUCCEEDED
    assert [r.path for r in target.received] == ["/main", "/main", "/error"]
    history = deployment.history("f")
    assert [(e.action_name, e.status) for e in history] == [
        (ActionName.ERROR, HistoryStatus.COMPLETED),
        (ActionName.MAIN, HistoryStatus.FAILED),
        (ActionName.MAIN, HistoryStatus.FAILED),
    ]
    job = deployment.job("f")
    assert (job.execution_count, job.failure_count, job.faulted_count) == (2, 2, 1)  # the error action is not one
    assert job.state is JobState.FAULTED
    assert job.ended_at == deployment.clock.now


def test_the_last_occurrence_failing_without_an_error_action_faults_the_job_at_once(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([500])
    message = fire(deployment, "f", http_action(target.base_url, retryPolicy=NO_RETRY))

    assert deployment.executor.execute(message).outcome is Outcome.FAILED

    assert deployment.job("f").state is JobState.FAULTED
    assert counters(deployment, "f") == (1, 1, 1)
    assert deployment.queued() == []


def test_a_recurring_job_whose_occurrence_faults_goes_on(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([500])
    message = fire(deployment, "f", http_action(target.base_url, retryPolicy=NO_RETRY), HOURLY)

    assert deployment.executor.execute(message).outcome is Outcome.FAILED

    job = deployment.job("f")
    assert job.state is JobState.ENABLED
    assert (job.execution_count, job.failure_count, job.faulted_count) == (1, 1, 1)
    assert job.ended_at is None


def test_a_failing_error_action_is_retried_under_the_main_action_policy(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([500])
    error_action = {"type": "Http", "request": {"uri": target.base_url + "/error", "method": "POST"}}
    action = http_action(target.base_url, retryPolicy=fixed_retries(1, "PT15S"), errorAction=error_action)
    message = fire(deployment, "f", action)
    deployment.executor.execute(message)
    deployment.clock.advance(15)
    deployment.deliver()  # the retry fails: the error action is sent
    [error] = deployment.take()
    assert error.due == format_instant(deployment.clock.now)  # sent when the retry failed

    failed_at = deployment.clock.now
    assert deployment.executor.execute(error).outcome is Outcome.FAILED

    [queued] = deployment.queued()
    due = format_instant(failed_at + timedelta(seconds=15))
    assert ExecutionMessage.from_json(queued.text) == replace(
        error, attempt=1, due=due, first=format_instant(failed_at)
    )
    assert deployment.job("f").state is JobState.ENABLED
    deployment.clock.set(queued.visible_at)
    deployment.deliver()
    assert [r.path for r in target.received] == ["/", "/", "/error", "/error"]
    assert deployment.job("f").state is JobState.FAULTED
    assert counters(deployment, "f") == (2, 2, 1)


# ------------------------------------------------------------------------------------------ on demand


def test_a_run_on_demand_never_ends_the_job(deployment: Deployment, target: HttpTarget) -> None:
    later = START + timedelta(hours=1)
    deployment.put_job("once", job_body(later, http_action(target.base_url)))
    before = deployment.job("once")

    deployment.service.run_job(deployment.ref("once"))
    [message] = deployment.take()
    assert (message.cause, message.occurrence) == (Cause.MANUAL, format_instant(START))
    report = deployment.executor.execute(message)

    assert report.outcome is Outcome.SUCCEEDED
    job = deployment.job("once")
    assert (job.state, job.generation, job.due) == (JobState.ENABLED, before.generation, before.due)
    assert job.execution_count == 1
    [entry] = deployment.history("once")
    assert entry.message.endswith("(run on demand)")
    assert entry.repeat_count == 0
    # Even a message that names the last occurrence does not end the schedule when it is a run on demand.
    deployment.clock.advance(60)
    last = replace(message, occurrence=format_instant(deployment.clock.now), last=True)
    assert deployment.executor.execute(last).outcome is Outcome.SUCCEEDED
    assert deployment.job("once").state is JobState.ENABLED
    assert deployment.job("once").execution_count == 2


# ------------------------------------------------------------------------------------ dropped messages


@pytest.mark.parametrize("change", ["edited", "disabled", "deleted"])
def test_a_message_for_a_job_changed_disabled_or_deleted_since_dispatch_does_nothing(
    deployment: Deployment, target: HttpTarget, change: str
) -> None:
    message = fire(deployment, "s", http_action(target.base_url), HOURLY)
    ref = deployment.ref("s")
    job = deployment.job("s")
    if change == "edited":
        deployment.service.patch_job(ref, {"properties": {"action": {"request": {"uri": target.base_url + "/v2"}}}})
    elif change == "disabled":
        deployment.service.patch_job(ref, {"properties": {"state": "Disabled"}})
    else:
        deployment.service.delete_job(ref)

    report = deployment.executor.execute(message)

    assert report.outcome is Outcome.STALE
    assert target.received == []
    assert list(deployment.storage.history.list(ref)) == []
    assert deployment.storage.claims.state(job.ref.identity, claim_key(DUE, "main", 0, "schedule")) is None


def test_a_duplicate_delivery_of_a_done_attempt_is_dropped(deployment: Deployment, target: HttpTarget) -> None:
    message = fire(deployment, "d", http_action(target.base_url), HOURLY)
    assert deployment.executor.execute(message).outcome is Outcome.SUCCEEDED

    for worker in (deployment.executor, deployment.executor_named("another")):
        report = worker.execute(message)
        assert report.outcome is Outcome.DUPLICATE
        assert report.execution_id == message.stable_execution_id()

    assert len(target.received) == 1
    assert len(deployment.history("d")) == 1
    assert counters(deployment, "d") == (1, 0, 0)


# ------------------------------------------------------------------------------------ lease and takeover


def test_an_attempt_under_another_workers_live_lease_is_left_alone_and_sent_again_for_its_end(
    deployment: Deployment, target: HttpTarget
) -> None:
    message = fire(deployment, "b", http_action(target.base_url), HOURLY)
    identity, row = deployment.job("b").ref.identity, claim_key(DUE, "main", 0, "schedule")
    holder_claimed = DUE - timedelta(seconds=7)  # its lease live at DUE, for 8 s more
    deployment.storage.claims.claim(identity, row, "holder", holder_claimed, CLAIM_LEASE)

    report = deployment.executor.execute(message)

    assert report.outcome is Outcome.BUSY
    assert target.received == []
    [queued] = deployment.queued()
    assert queued.text == message.to_json()
    lease_end = holder_claimed + CLAIM_LEASE
    assert queued.visible_at == lease_end + timedelta(seconds=1)  # looked at again once the lease has ended
    assert deployment.history("b") == []
    assert counters(deployment, "b") == (0, 0, 0)
    state = deployment.storage.claims.state(identity, row)
    assert state is not None
    assert (state.done, state.lease_until) == (False, lease_end)


def test_a_takeover_of_an_expired_lease_records_the_lost_attempt_and_runs_it_once(
    deployment: Deployment, target: HttpTarget
) -> None:
    message = fire(deployment, "t", http_action(target.base_url))
    identity, row = deployment.job("t").ref.identity, claim_key(DUE, "main", 0, "schedule")
    deployment.storage.claims.claim(identity, row, "dead-worker", DUE, CLAIM_LEASE)  # died mid-call
    deployment.clock.set(DUE + CLAIM_LEASE + timedelta(seconds=1))

    report = deployment.executor.execute(message)

    assert report.outcome is Outcome.SUCCEEDED
    assert len(target.received) == 1
    completed, lost = deployment.history("t")
    assert (completed.status, lost.status) == (HistoryStatus.COMPLETED, HistoryStatus.FAILED)
    assert lost.message.startswith(WORKER_LOST)
    assert "worker dead-worker" in lost.message
    assert (lost.start_time, lost.expected_execution_time) == (DUE, DUE)
    assert completed.execution_id == lost.execution_id == report.execution_id
    assert counters(deployment, "t") == (1, 0, 0)  # one attempt, counted once
    assert deployment.job("t").state is JobState.COMPLETED
    assert deployment.storage.claims.state(identity, row).done  # type: ignore[union-attr]


def test_a_takeover_of_an_attempt_whose_holder_counted_it_only_completes_its_claim(
    deployment: Deployment, target: HttpTarget
) -> None:
    message = fire(deployment, "c", http_action(target.base_url), HOURLY)
    # The first worker ran the attempt and counted it, then could not complete its claim.
    deployment.storage.claims.fail_next("complete", StorageError("refused", 403))
    with pytest.raises(StorageError):
        deployment.executor.execute(message)
    assert not claim_of(deployment, "c", message).done
    deployment.clock.set(DUE + CLAIM_LEASE + timedelta(seconds=1))

    report = deployment.executor_named("successor").execute(message)

    assert report.outcome is Outcome.DUPLICATE
    assert len(target.received) == 1
    assert len(deployment.history("c")) == 1  # no lost attempt recorded: it was recorded by its holder
    assert counters(deployment, "c") == (1, 0, 0)
    assert claim_of(deployment, "c", message).done


# ---------------------------------------------------------------------------------------------- counters


def test_a_counters_write_that_landed_but_lost_its_answer_is_not_counted_twice(
    deployment: Deployment, target: HttpTarget, simulated_durable_waits: None
) -> None:
    target.answer([500])
    message = fire(deployment, "n", http_action(target.base_url, retryPolicy=NO_RETRY), HOURLY)
    deployment.storage.jobs.fail_next("save", StorageError("connection reset"), landed=True)

    assert deployment.executor.execute(message).outcome is Outcome.FAILED

    assert counters(deployment, "n") == (1, 1, 1)
    assert deployment.job("n").counted == (message.attempt_key,)


def test_a_counters_write_that_lost_a_race_is_applied_on_the_job_as_it_is_now(
    deployment: Deployment, target: HttpTarget
) -> None:
    message = fire(deployment, "n", http_action(target.base_url), HOURLY)
    deployment.storage.jobs.fail_next("save", EtagMismatchError("changed by another request"))

    assert deployment.executor.execute(message).outcome is Outcome.SUCCEEDED

    assert counters(deployment, "n") == (1, 0, 0)


def test_a_job_edited_while_its_last_occurrence_runs_keeps_the_edit_and_gets_the_counters(
    deployment: Deployment, target: HttpTarget
) -> None:
    message = fire(deployment, "e", http_action(target.base_url))
    target.answer([200], delay=0.5)  # the edit below lands while the call is in flight
    reports = []
    worker = threading.Thread(target=lambda: reports.append(deployment.executor.execute(message)))
    worker.start()
    target.wait_for(1)
    deployment.service.patch_job(deployment.ref("e"), {"properties": {"state": "Disabled"}})  # while it runs
    worker.join(timeout=10)

    assert [r.outcome for r in reports] == [Outcome.SUCCEEDED]
    job = deployment.job("e")
    assert job.state is JobState.DISABLED  # the client's change wins over the end of the old definition
    assert job.generation == message.generation + 1
    assert (job.execution_count, job.failure_count) == (1, 0)


# ------------------------------------------------------------------------------------------ durability


def test_durable_writes_wait_out_a_transient_storage_error(
    deployment: Deployment, target: HttpTarget, simulated_durable_waits: None
) -> None:
    message = fire(deployment, "h", http_action(target.base_url), HOURLY)
    deployment.storage.history.fail_next("add", StorageError("storage answered 503", 503), times=3)
    before = deployment.clock.now

    assert deployment.executor.execute(message).outcome is Outcome.SUCCEEDED

    assert deployment.clock.now - before == timedelta(seconds=0.5 + 1 + 2)  # the first three waits
    assert len(deployment.history("h")) == 1
    assert claim_of(deployment, "h", message).done


def test_a_durable_write_that_keeps_failing_transiently_raises_after_the_last_wait(
    deployment: Deployment, target: HttpTarget, simulated_durable_waits: None
) -> None:
    message = fire(deployment, "h", http_action(target.base_url), HOURLY)
    deployment.storage.history.fail_next(
        "add", StorageError("storage answered 503", 503), times=len(durable.BACKOFF) + 1
    )
    before = deployment.clock.now

    with pytest.raises(StorageError, match="503"):
        deployment.executor.execute(message)

    assert deployment.clock.now - before == timedelta(seconds=sum(durable.BACKOFF))
    assert deployment.history("h") == []
    assert not claim_of(deployment, "h", message).done  # so the watchdog or a redelivery runs it again


def test_a_final_storage_error_is_raised_at_once(
    deployment: Deployment, target: HttpTarget, simulated_durable_waits: None
) -> None:
    message = fire(deployment, "h", http_action(target.base_url), HOURLY)
    deployment.storage.history.fail_next("add", StorageError("storage answered 400", 400))
    before = deployment.clock.now

    with pytest.raises(StorageError, match="400"):
        deployment.executor.execute(message)

    assert deployment.clock.now == before  # no wait: trying again cannot help


def test_a_job_read_that_fails_transiently_is_waited_out_before_the_call(
    deployment: Deployment, target: HttpTarget, simulated_durable_waits: None
) -> None:
    message = fire(deployment, "h", http_action(target.base_url), HOURLY)
    deployment.storage.jobs.fail_next("get_by_keys", StorageError("timed out"))

    assert deployment.executor.execute(message).outcome is Outcome.SUCCEEDED
    assert len(target.received) == 1


# ------------------------------------------------------------------------------------- request timeout


def test_a_jobs_own_request_timeout_bounds_its_call_and_others_keep_the_apps(
    deployment: Deployment, target: HttpTarget
) -> None:
    """``action.request.timeout`` (api-version 2026-12-01-preview) ends a call to a target slower than it, and
    the history says after how long; a job without one waits the app's timeout (60 s) and gets the answer."""
    target.answer([200], delay=2.5)
    short = http_action(target.base_url + "/short")
    short["request"]["timeout"] = "PT1S"
    deployment.service.put_job(deployment.ref("short"), job_body(DUE, short, HOURLY), wire=Wire.PREVIEW)
    message = deployment.fire_at(DUE)
    began = time.monotonic()
    report = deployment.executor.execute(message)
    assert report.outcome is Outcome.FAILED and time.monotonic() - began < 2.4
    [entry] = deployment.history("short")
    assert entry.status is HistoryStatus.FAILED and "Request timed out after 1 s" in entry.message, entry.message

    patient = fire(deployment, "patient", http_action(target.base_url + "/patient"), HOURLY)
    assert deployment.executor.execute(patient).outcome is Outcome.SUCCEEDED
    [entry] = deployment.history("patient")
    assert entry.status is HistoryStatus.COMPLETED
