"""Notifications per job (``properties.notifications``, api-version 2026-12-01-preview): ``onFailure`` is sent once
per failure streak (the first faulted scheduled occurrence, not every one) and knows how the main action failed;
``onRecovery`` when the next occurrence completes after a streak. A notification is any action, its placeholders
always expanded, retried under its own policy and recorded; it never fails the job or changes its counters.
Runs on demand, backfills and replays notify nothing. A 2016-03-01 client sees none of it and keeps it.

Simulated time on the memory adapter (:class:`tests.support.harness.Deployment`), real HTTP servers on
127.0.0.1: the job's target and a receiver of the notifications."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from scheduler_core.api import views
from scheduler_core.definitions import Wire
from scheduler_core.errors import StorageError, ValidationError
from scheduler_core.model import ActionName, HistoryStatus, JobState
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.recurrence import format_instant
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget, http_target
from tests.support.jobs import NO_RETRY, http_action, job_body

T0 = START + timedelta(minutes=5)
MINUTE = timedelta(minutes=1)


@pytest.fixture
def receiver() -> Iterator[HttpTarget]:
    with http_target([200]) as server:
        yield server


def notify(receiver: HttpTarget, path: str, body: str, **extra: Any) -> dict[str, Any]:
    request = {"uri": f"{receiver.base_url}{path}", "method": "POST", "body": body}
    return {"type": "Http", "request": request, **extra}


def put(deployment: Deployment, target: HttpTarget, notifications: dict[str, Any], **action: Any) -> None:
    body = job_body(
        T0, http_action(target.base_url + "/hook", **{"retryPolicy": NO_RETRY, **action}), {"frequency": "Minute"}
    )
    body["properties"]["notifications"] = notifications
    deployment.service.put_job(deployment.ref("j"), body, wire=Wire.PREVIEW)


def run_occurrences(deployment: Deployment, target: HttpTarget, statuses: list[int]) -> None:
    """Let one occurrence run per minute from :data:`T0`, the target answering ``statuses`` in turn."""
    for index, status in enumerate(statuses):
        target.answer([status])
        deployment.run_until(T0 + index * MINUTE + timedelta(seconds=50))


def streak_notifications(receiver: HttpTarget) -> list[tuple[str, bytes]]:
    return [(call.path, call.body) for call in receiver.received]


def test_on_failure_once_per_streak_and_on_recovery_when_it_ends(
    deployment: Deployment, target: HttpTarget, receiver: HttpTarget
) -> None:
    put(
        deployment,
        target,
        {
            "onFailure": notify(receiver, "/failed", "@{jobName} @{scheduledTime} @{failure.status}"),
            "onRecovery": notify(receiver, "/recovered", "@{jobName} @{scheduledTime}"),
        },
    )

    run_occurrences(deployment, target, [200, 500, 503, 500, 200, 200, 404, 200])

    t = [format_instant(T0 + index * MINUTE) for index in range(8)]
    assert streak_notifications(receiver) == [
        ("/failed", f"j {t[1]} 500".encode()),  # the first of the streak, not the next two
        ("/recovered", f"j {t[4]}".encode()),
        ("/failed", f"j {t[6]} 404".encode()),
        ("/recovered", f"j {t[7]}".encode()),
    ]
    job = deployment.job("j")
    assert (job.state, job.execution_count, job.failure_count) == (JobState.ENABLED, 8, 4)
    notes = [row for row in deployment.history("j") if row.action_name is ActionName.NOTIFICATION]
    assert len(notes) == 4 and all(row.status is HistoryStatus.COMPLETED for row in notes)
    assert sorted(row.message.rsplit("(", 1)[1] for row in notes) == [
        "onFailure notification)",
        "onFailure notification)",
        "onRecovery notification)",
        "onRecovery notification)",
    ]


def test_on_failure_knows_the_main_actions_failure_after_its_error_action(
    deployment: Deployment, target: HttpTarget, receiver: HttpTarget
) -> None:
    body = json.dumps({"status": "@{failure.status}", "reason": "@{failure.reason}", "attempts": "@{failure.attempts}"})
    on_failure = notify(receiver, "/failed", body)
    on_failure["request"]["headers"] = {"Content-Type": "application/json"}
    error_action = {"type": "Http", "request": {"uri": receiver.base_url + "/error-action", "method": "POST"}}
    retry = {"retryType": "Fixed", "retryInterval": "PT15S", "retryCount": 1}
    put(deployment, target, {"onFailure": on_failure}, retryPolicy=retry, errorAction=error_action)

    run_occurrences(deployment, target, [503])

    paths = [call.path for call in receiver.received]
    assert paths == ["/error-action", "/failed"]  # the occurrence faulted once its error action ran
    assert json.loads(receiver.received[1].body) == {"status": "503", "reason": "Status", "attempts": "2"}


def test_a_failing_notification_is_retried_recorded_and_never_fails_the_job(
    deployment: Deployment, target: HttpTarget, receiver: HttpTarget
) -> None:
    retry = {"retryType": "Fixed", "retryInterval": "PT15S", "retryCount": 2}
    put(deployment, target, {"onFailure": notify(receiver, "/failed", "x", retryPolicy=retry)})
    receiver.answer([500])

    run_occurrences(deployment, target, [500])

    assert len(receiver.received) == 3  # the try and two retries
    notes = [row for row in deployment.history("j") if row.action_name is ActionName.NOTIFICATION]
    assert sorted((row.retry_count, row.status) for row in notes) == [
        (0, HistoryStatus.FAILED),
        (1, HistoryStatus.FAILED),
        (2, HistoryStatus.FAILED),
    ]
    job = deployment.job("j")
    assert (job.state, job.execution_count, job.failure_count, job.faulted_count) == (JobState.ENABLED, 1, 1, 1)


def test_runs_on_demand_notify_nothing(deployment: Deployment, target: HttpTarget, receiver: HttpTarget) -> None:
    put(deployment, target, {"onFailure": notify(receiver, "/failed", "x")})
    target.answer([500])
    deployment.service.run_job(deployment.ref("j"))
    deployment.deliver()
    assert receiver.received == []


def test_a_notification_removed_before_it_runs_sends_nothing(
    deployment: Deployment, target: HttpTarget, receiver: HttpTarget
) -> None:
    put(deployment, target, {"onFailure": notify(receiver, "/failed", "x")})
    target.answer([500])
    deployment.clock.set(T0 - timedelta(seconds=30))
    deployment.scan()
    deployment.executor.execute(deployment.fire_at(T0))  # the occurrence faulted: its notification is queued
    [notification] = [message for message in deployment.take() if message.notification is not None]
    put(deployment, target, {"onRecovery": notify(receiver, "/recovered", "x")})

    report = deployment.executor.execute(notification)

    assert report.outcome is Outcome.STALE and "onFailure notification was removed" in report.message
    assert receiver.received == []


def test_a_classic_client_sees_none_of_it_and_keeps_it(
    deployment: Deployment, target: HttpTarget, receiver: HttpTarget
) -> None:
    put(deployment, target, {"onFailure": notify(receiver, "/failed", "x")})
    run_occurrences(deployment, target, [500])
    ref = deployment.ref("j")

    classic = deployment.service.get_job(ref)
    shown = views.job(classic, Wire.CLASSIC)
    assert "notifications" not in json.dumps(shown)
    properties = {key: value for key, value in shown["properties"].items() if key != "status"}
    properties["recurrence"]["interval"] = 2
    deployment.service.put_job(ref, {"properties": properties})
    kept = deployment.job("j").definition.notifications
    assert kept is not None and kept.on_failure is not None
    assert "notifications" in json.dumps(views.job(deployment.job("j"), Wire.PREVIEW))


@pytest.mark.parametrize(
    ("notifications", "field", "rule"),
    [
        (
            {
                "onRecovery": {
                    "type": "Http",
                    "request": {"uri": "https://x.example/?s=@{failure.status}", "method": "GET"},
                }
            },
            "properties.notifications.onRecovery.request.uri",
            "only an errorAction or onFailure knows",
        ),
        (
            {
                "onFailure": {
                    "type": "Http",
                    "request": {"uri": "https://x.example/", "method": "GET"},
                    "errorAction": {"type": "Http", "request": {"uri": "https://y.example/", "method": "GET"}},
                }
            },
            "properties.notifications.onFailure.errorAction",
            "without an errorAction",
        ),
        (
            {
                "onFailure": {
                    "type": "Http",
                    "request": {"uri": "https://x.example/", "method": "GET"},
                    "expandPlaceholders": False,
                }
            },
            "properties.notifications.onFailure.expandPlaceholders",
            "always expanded",
        ),
        (
            {"onSuccess": {"type": "Http", "request": {"uri": "https://x.example/", "method": "GET"}}},
            "properties.notifications.onSuccess",
            "onFailure, onRecovery",
        ),
        (
            {"onFailure": {"type": "Http", "request": {"uri": "https://x.example/?@{nope}", "method": "GET"}}},
            "properties.notifications.onFailure.request.uri",
            "unknown placeholder",
        ),
        ([], "properties.notifications", "JSON object"),
    ],
)
def test_a_hostile_notification_is_a_400_naming_the_field(
    deployment: Deployment, target: HttpTarget, notifications: Any, field: str, rule: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        put(deployment, target, notifications)
    assert refused.value.path.startswith(field), refused.value
    assert rule in refused.value.rule, refused.value
    assert deployment.stores.jobs.get(deployment.ref("j")) is None


# ---------------------------------------------------------------------------------------------- deadline


def put_deadline(deployment: Deployment, target: HttpTarget, receiver: HttpTarget, after: str = "PT10M") -> None:
    body = "@{jobName} @{scheduledTime} late"
    put(deployment, target, {"deadline": {"after": after, "action": notify(receiver, "/late", body)}})


def dispatch_first(deployment: Deployment) -> None:
    """The scan before :data:`T0` sends the first occurrence (and its deadline's message)."""
    deployment.clock.set(T0 - timedelta(seconds=30))
    deployment.scan()


def test_a_deadline_is_sent_when_the_occurrence_has_not_succeeded_by_then(
    deployment: Deployment, target: HttpTarget, receiver: HttpTarget
) -> None:
    put_deadline(deployment, target, receiver)
    dispatch_first(deployment)
    target.answer([500])
    deployment.executor.execute(deployment.fire_at(T0))
    deployment.clock.set(T0 + timedelta(minutes=9, seconds=58))
    assert [message.action for message in deployment.take()] == []  # not before its time

    deployment.clock.set(T0 + timedelta(minutes=10))
    notices = [message for message in deployment.take() if message.action == "deadline"]
    assert len(notices) == 1
    deployment.executor.execute(notices[0])
    deployment.executor.execute(notices[0])  # a second delivery runs once

    assert [(call.path, call.body) for call in receiver.received] == [
        ("/late", f"j {format_instant(T0)} late".encode())
    ]
    [note] = [row for row in deployment.history("j") if row.action_name is ActionName.NOTIFICATION]
    assert note.expected_execution_time == T0 and note.message.endswith("(deadline notification)")


def test_a_deadline_is_sent_even_if_the_occurrence_never_ran(
    deployment: Deployment, target: HttpTarget, receiver: HttpTarget
) -> None:
    """The occurrence's worker hangs on a target that never answers: the deadline is the pipeline's own."""
    put_deadline(deployment, target, receiver, after="PT1M")
    dispatch_first(deployment)
    occurrence = deployment.fire_at(T0)  # taken by a worker that never finishes it
    assert occurrence.action == "main"

    deployment.clock.set(T0 + MINUTE)
    [notice] = deployment.take()
    deployment.executor.execute(notice)

    assert [call.path for call in receiver.received] == ["/late"]


def test_a_deadline_met_or_of_an_edited_job_sends_nothing(
    deployment: Deployment, target: HttpTarget, receiver: HttpTarget
) -> None:
    put_deadline(deployment, target, receiver)
    dispatch_first(deployment)
    target.answer([200])
    deployment.executor.execute(deployment.fire_at(T0))
    deployment.clock.set(T0 + timedelta(minutes=10))
    [met] = [message for message in deployment.take() if message.action == "deadline"]
    report = deployment.executor.execute(met)
    assert report.outcome is Outcome.STALE and "succeeded before its deadline" in report.message

    put_deadline(deployment, target, receiver, after="PT20M")  # a new generation
    report = deployment.executor.execute(met)
    assert report.outcome is Outcome.STALE and "changed since" in report.message
    assert receiver.received == []


@pytest.mark.parametrize(
    ("deadline", "field", "rule"),
    [
        ({"after": "PT59S", "action": {}}, "properties.notifications.deadline.after", "between PT1M"),
        ({"after": "P7D", "action": {}}, "properties.notifications.deadline.after", "(six days)"),
        ({"action": {"type": "Http"}}, "properties.notifications.deadline.after", "is required"),
        ({"after": "PT1H"}, "properties.notifications.deadline.action", "is required"),
        ({"after": "PT1H", "action": {}, "every": 2}, "properties.notifications.deadline.every", "not a known field"),
        (
            {
                "after": "PT1H",
                "action": {"type": "Http", "request": {"uri": "https://x.example/?q=@{failure.body}", "method": "GET"}},
            },
            "properties.notifications.deadline.action.request.uri",
            "only an errorAction or onFailure knows",
        ),
    ],
)
def test_a_hostile_deadline_is_a_400_naming_the_field(
    deployment: Deployment, target: HttpTarget, deadline: Any, field: str, rule: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        put(deployment, target, {"deadline": deadline})
    assert refused.value.path.startswith(field), refused.value
    assert rule in refused.value.rule, refused.value


def test_a_storage_outage_as_the_occurrence_ends_still_notifies_once(
    deployment: Deployment, target: HttpTarget, receiver: HttpTarget, simulated_durable_waits: None
) -> None:
    put(deployment, target, {"onFailure": notify(receiver, "/failed", "x")})
    deployment.storage.history.fail_next("list", StorageError("storage answered 503", 503), times=3)

    run_occurrences(deployment, target, [500])
    for message in deployment.take() + deployment.take():  # nothing more comes, however often looked for
        deployment.executor.execute(message)

    assert [call.path for call in receiver.received] == ["/failed"]


def test_a_storage_outage_as_a_deadline_is_checked_is_waited_out(
    deployment: Deployment, target: HttpTarget, receiver: HttpTarget, simulated_durable_waits: None
) -> None:
    put_deadline(deployment, target, receiver, after="PT1M")
    dispatch_first(deployment)
    deployment.fire_at(T0)  # taken, never run
    deployment.clock.set(T0 + MINUTE)
    [notice] = deployment.take()
    deployment.storage.history.fail_next("list", StorageError("storage answered 503", 503), times=3)

    deployment.executor.execute(notice)

    assert [call.path for call in receiver.received] == ["/late"]
