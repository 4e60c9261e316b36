"""Retries that listen to the target (api-version 2026-12-01-preview): ``retryPolicy.retryOn`` names the
failures that are retried, a 429 or 503's ``Retry-After`` sets the wait when it is longer than the policy's,
``retryPolicy.maxRetryDuration`` bounds when the last retry may start, and the error action knows how the main
action failed (``@{failure.*}``). A job without them behaves as before: every failure retried at the policy's
interval.

Simulated time on the memory adapter (:class:`tests.support.harness.Deployment`), a real HTTP server on
127.0.0.1 as the target."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from scheduler_core.definitions import Wire
from scheduler_core.errors import ValidationError
from scheduler_core.model import HistoryStatus
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.recurrence import format_instant
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import http_action, job_body

#: Inside the lookahead window: a job written with this start is dispatched at once.
DUE = START + timedelta(seconds=20)


def fire(deployment: Deployment, action: dict[str, Any], name: str = "j") -> ExecutionMessage:
    """Write a one-shot job due at :data:`DUE` on the preview wire, move time there and take its message."""
    deployment.service.put_job(deployment.ref(name), job_body(DUE, action), wire=Wire.PREVIEW)
    return deployment.fire_at(DUE)


def retrying(count: int, interval: str = "PT20S", **preview: Any) -> dict[str, Any]:
    return {"retryType": "Fixed", "retryInterval": interval, "retryCount": count, **preview}


def error_hook(target: HttpTarget, **request: Any) -> dict[str, Any]:
    return {"type": "Http", "request": {"uri": target.base_url + "/error", "method": "POST", **request}}


def next_message(deployment: Deployment) -> tuple[ExecutionMessage, datetime]:
    """The one execution message queued now, and when it is due (it shows a second before)."""
    [queued] = deployment.queued()
    message = ExecutionMessage.from_json(queued.text)
    assert message.due_time is not None
    assert queued.visible_at == max(deployment.clock.now, message.due_time - timedelta(seconds=1))
    return message, message.due_time


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# ------------------------------------------------------------------------------------------------- retryOn


def test_a_status_retry_on_does_not_name_ends_the_occurrence_at_once_and_its_error_action_runs(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([404])
    action = http_action(
        target.base_url + "/main", retryPolicy=retrying(4, retryOn=["5xx", "429"]), errorAction=error_hook(target)
    )
    message = fire(deployment, action)

    assert deployment.executor.execute(message).outcome is Outcome.FAILED

    error, shows = next_message(deployment)
    assert (error.action, error.attempt, shows) == ("error", 0, DUE)  # not a retry: the error action, now
    [entry] = deployment.history("j")
    assert entry.status is HistoryStatus.FAILED
    assert "not retried: retryOn does not name 404 (5xx, 429)" in entry.message


@pytest.mark.parametrize("status", [500, 503, 429])
def test_a_status_retry_on_names_by_code_or_class_is_retried(
    deployment: Deployment, target: HttpTarget, status: int
) -> None:
    target.answer([status])
    message = fire(deployment, http_action(target.base_url, retryPolicy=retrying(2, retryOn=["5xx", "429"])))

    deployment.executor.execute(message)

    retry, shows = next_message(deployment)
    assert (retry.action, retry.attempt, shows) == ("main", 1, DUE + timedelta(seconds=20))


def test_without_retry_on_every_failure_is_retried_as_before(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([404])
    message = fire(deployment, http_action(target.base_url, retryPolicy=retrying(2)))

    deployment.executor.execute(message)

    retry, shows = next_message(deployment)
    assert (retry.attempt, shows) == (1, DUE + timedelta(seconds=20))
    assert "not retried" not in deployment.history("j")[0].message


def test_a_timeout_is_retried_only_when_retry_on_names_it(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([200], delay=2.5)
    request_timeout = {"timeout": "PT1S"}
    slow = http_action(target.base_url, retryPolicy=retrying(2, retryOn=["Timeout"]))
    slow["request"].update(request_timeout)
    deployment.executor.execute(fire(deployment, slow, "named"))
    retry, _ = next_message(deployment)
    assert retry.attempt == 1
    deployment.drop_queued()

    other = http_action(target.base_url, retryPolicy=retrying(2, retryOn=["5xx"]))
    other["request"].update(request_timeout)
    deployment.executor.execute(fire(deployment, other, "unnamed"))
    assert deployment.queued() == []
    [entry] = deployment.history("unnamed")
    assert "Request timed out after 1 s" in entry.message
    assert "not retried: retryOn does not name Timeout (5xx)" in entry.message


def test_a_refused_connection_is_retried_only_when_retry_on_names_connection_errors(deployment: Deployment) -> None:
    url = f"http://127.0.0.1:{closed_port()}/hook"
    deployment.executor.execute(
        fire(deployment, http_action(url, retryPolicy=retrying(2, retryOn=["ConnectionError"])))
    )
    retry, _ = next_message(deployment)
    assert retry.attempt == 1
    deployment.drop_queued()

    deployment.executor.execute(fire(deployment, http_action(url, retryPolicy=retrying(2, retryOn=["Timeout"])), "k"))
    assert deployment.queued() == []
    assert "not retried: retryOn does not name ConnectionError (Timeout)" in deployment.history("k")[0].message


# ----------------------------------------------------------------------------------------------- Retry-After


@pytest.mark.parametrize("status", [429, 503])
def test_a_retry_after_longer_than_the_policy_interval_sets_the_wait(
    deployment: Deployment, target: HttpTarget, status: int
) -> None:
    target.answer([status], headers={"Retry-After": "120"})
    deployment.executor.execute(fire(deployment, http_action(target.base_url, retryPolicy=retrying(2, "PT20S"))))

    retry, shows = next_message(deployment)
    assert (retry.attempt, shows) == (1, DUE + timedelta(seconds=120))


def test_a_retry_after_as_an_http_date_sets_the_wait(deployment: Deployment, target: HttpTarget) -> None:
    # The sender reads the date against the wall clock; the wait it yields starts at the attempt's end.
    target.answer([503], headers={"Retry-After": format_datetime(datetime.now(UTC) + timedelta(seconds=300), True)})
    deployment.executor.execute(fire(deployment, http_action(target.base_url, retryPolicy=retrying(2, "PT20S"))))

    _, shows = next_message(deployment)
    assert DUE + timedelta(seconds=290) <= shows <= DUE + timedelta(seconds=300)


@pytest.mark.parametrize(
    ("status", "retry_after"),
    [(503, "5"), (500, "120"), (503, "soon"), (503, format_datetime(datetime(2000, 1, 1, tzinfo=UTC), True))],
)
def test_a_retry_after_that_is_shorter_not_asked_by_a_429_or_503_or_unreadable_leaves_the_policy_interval(
    deployment: Deployment, target: HttpTarget, status: int, retry_after: str
) -> None:
    target.answer([status], headers={"Retry-After": retry_after})
    deployment.executor.execute(fire(deployment, http_action(target.base_url, retryPolicy=retrying(2, "PT20S"))))

    _, shows = next_message(deployment)
    assert shows == DUE + timedelta(seconds=20)


def test_a_retry_after_is_capped_by_max_retry_interval(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([503], headers={"Retry-After": "3600"})
    policy = {"retryType": "Exponential", "retryInterval": "PT20S", "retryCount": 3, "maxRetryInterval": "PT5M"}
    deployment.executor.execute(fire(deployment, http_action(target.base_url, retryPolicy=policy)))

    _, shows = next_message(deployment)
    assert shows == DUE + timedelta(minutes=5)


def test_a_retry_after_without_max_retry_interval_is_capped_at_an_hour(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([429], headers={"Retry-After": str(7 * 86400)})
    deployment.executor.execute(fire(deployment, http_action(target.base_url, retryPolicy=retrying(2, "PT20S"))))

    _, shows = next_message(deployment)
    assert shows == DUE + timedelta(hours=1)


# ------------------------------------------------------------------------------------------ maxRetryDuration


def test_no_retry_starts_later_than_max_retry_duration_after_the_first_attempt(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([503])
    action = http_action(
        target.base_url + "/main",
        retryPolicy=retrying(10, "PT30S", maxRetryDuration="PT1M30S"),
        errorAction=error_hook(target),
    )
    message = fire(deployment, action)
    starts = []
    while message.action == "main":
        starts.append(deployment.clock.now)
        deployment.executor.execute(message)
        message, shows = next_message(deployment)
        deployment.fire_at(shows)

    # First attempt at DUE, retries at +30 s, +60 s and +90 s; the one at +120 s would pass the 90 s.
    assert [start - DUE for start in starts] == [timedelta(seconds=s) for s in (0, 30, 60, 90)]
    assert message.action == "error"
    last = max(deployment.history("j"), key=lambda row: row.retry_count)
    assert last.retry_count == 3
    assert "not retried: maxRetryDuration (PT1M30S) would pass first" in last.message


def test_max_retry_duration_counts_from_when_the_first_attempt_started_not_its_occurrence(
    deployment: Deployment, target: HttpTarget
) -> None:
    """A first attempt that starts late (a backlog) still gets its whole budget."""
    target.answer([503])
    deployment.service.put_job(
        deployment.ref("j"),
        job_body(DUE, http_action(target.base_url, retryPolicy=retrying(5, "PT30S", maxRetryDuration="PT30S"))),
        wire=Wire.PREVIEW,
    )
    message = deployment.fire_at(DUE)
    deployment.clock.set(DUE + timedelta(seconds=45))  # the first attempt starts 45 s late
    deployment.executor.execute(message)

    retry, shows = next_message(deployment)
    assert (retry.attempt, shows) == (1, DUE + timedelta(seconds=75))
    assert retry.first_time == DUE + timedelta(seconds=45)


# ------------------------------------------------------------------------------------- failure placeholders


def test_the_error_action_says_how_the_main_action_failed(deployment: Deployment, target: HttpTarget) -> None:
    hostile = b'{"error": "db \\"down\\"\r\nX-Injected: yes"}\n\x1b[31m'
    target.answer([503], body=hostile)
    body = json.dumps(
        {
            "status": "@{failure.status}",
            "reason": "@{failure.reason}",
            "body": "@{failure.body}",
            "execution": "@{failure.executionId}",
            "attempts": "@{failure.attempts}",
            "scheduled": "@{scheduledTime}",
        }
    )
    error_action = error_hook(
        target, body=body, headers={"Content-Type": "application/json", "X-Failure": "@{failure.body}"}
    )
    action = http_action(target.base_url + "/main", retryPolicy=retrying(1, "PT15S"), errorAction=error_action)
    action["expandPlaceholders"] = True
    message = fire(deployment, action)
    deployment.executor.execute(message)
    retry, shows = next_message(deployment)
    deployment.fire_at(shows)
    deployment.executor.execute(retry)
    error, _ = next_message(deployment)
    deployment.drop_queued()
    target.answer([200])

    assert deployment.executor.execute(error).outcome is Outcome.SUCCEEDED

    call = target.received[-1]
    sent = json.loads(call.body)  # still JSON: the body was JSON-escaped where it was placed
    assert sent["status"] == "503"
    assert sent["reason"] == "Status"
    assert sent["execution"] == retry.stable_execution_id()
    assert sent["attempts"] == "2"
    assert sent["scheduled"] == format_instant(DUE) == error.occurrence
    # One line: the CR LF, the line feed and the escape are written as visible escapes, nothing raw.
    assert sent["body"] == '{"error": "db \\"down\\"\\nX-Injected: yes"}\\n\\x1b[31m'
    assert "X-Injected" not in {name.title() for name in call.headers}  # a header cannot be ended or added
    assert call.headers["X-Failure"] == sent["body"]


def test_a_timeout_gives_the_error_action_a_reason_and_no_status(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([200], delay=2.5)
    error_action = error_hook(target, body="@{failure.reason}/@{failure.status}/@{failure.attempts}")
    action = http_action(target.base_url + "/main", retryPolicy={"retryType": "None"}, errorAction=error_action)
    action["request"]["timeout"] = "PT1S"
    action["expandPlaceholders"] = True
    deployment.executor.execute(fire(deployment, action))
    error, _ = next_message(deployment)
    deployment.drop_queued()
    target.answer([200])

    deployment.executor.execute(error)

    assert target.received[-1].body == b"Timeout//1"


def test_failure_placeholders_belong_to_the_error_action_only(deployment: Deployment, target: HttpTarget) -> None:
    action = http_action(target.base_url, body="@{failure.status}")
    action["expandPlaceholders"] = True
    with pytest.raises(ValidationError) as refused:
        deployment.service.put_job(deployment.ref("j"), job_body(DUE, action), wire=Wire.PREVIEW)
    assert refused.value.path == "properties.action.request.body"
    assert "only an errorAction knows" in str(refused.value)
    assert deployment.stores.jobs.get(deployment.ref("j")) is None
