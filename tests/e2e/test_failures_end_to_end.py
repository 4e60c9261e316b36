"""Failures people can act on, end to end in real time: the function app on the local host over Azurite, jobs
written through the management API (api-version 2026-12-01-preview), real HTTP targets on 127.0.0.1.

* a 404 that ``retryOn`` does not name ends the occurrence at once: the target is called once and the error
  action, at once, says what failed (``@{failure.status}``, ``@{failure.reason}``, ``@{failure.attempts}``);
* a 503 with ``Retry-After: 20`` under a 15 s policy: the retry comes 20 s after the first call, not 15 s;
* ``maxRetryDuration: PT20S`` under a 15 s policy of five retries: the try and one retry, then the error action;
* a target that sleeps past ``request.timeout`` is retried under ``retryOn: ["Timeout"]``, and its error
  action says ``Timeout``;
* a ``202 Accepted`` with ``Location`` under ``asyncPolling`` is polled until its ``200``, one history entry;
* the failed occurrence replayed (``POST .../history/{id}/rerun``) calls the target again with the
  occurrence's own expected time and a new execution id, recorded with trigger ``Replay``;
* the job's ``onFailure`` notification is sent once, its placeholders expanded, and recorded;
* a 2016-03-01 client reading the job sees none of it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from scheduler_core.recurrence import format_instant
from tests.e2e.preview_host import JC, Host, running_host  # noqa: F401 (the fixture)
from tests.support.http_target import http_target

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


def soon(seconds: int = 4) -> datetime:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).replace(microsecond=0)


def error_action(url: str) -> dict[str, Any]:
    body = "@{failure.status}|@{failure.reason}|@{failure.attempts}|@{failure.body}"
    return {"type": "Http", "request": {"uri": url, "method": "POST", "body": body}}


def test_retries_listen_to_the_target_and_the_error_action_knows_the_failure(host: Host) -> None:
    due = soon(5)
    with (
        http_target([404]) as missing,
        http_target([503, 200]) as busy,
        http_target([200]) as slow,
        http_target([200]) as errors,
        http_target([202, 202, 200]) as operation,
        http_target([503]) as down,
    ):
        operation.answer([202, 202, 200], headers={"Location": "/operations/1", "Retry-After": "1"})
        busy.answer([503, 200], headers={"Retry-After": "20"})
        slow.answer([200], delay=2.5)
        fixed = {"retryType": "Fixed", "retryInterval": "PT15S", "retryCount": 1}
        not_found = {
            "type": "Http",
            "request": {"uri": f"{missing.base_url}/main", "method": "POST"},
            "retryPolicy": {**fixed, "retryCount": 3, "retryOn": ["5xx", "429", "Timeout", "ConnectionError"]},
            "errorAction": error_action(f"{errors.base_url}/missing"),
            "expandPlaceholders": True,
        }
        notified = {"type": "Http", "request": {"uri": f"{errors.base_url}/notified", "method": "POST"}}
        notified["request"]["body"] = "@{jobName}|@{failure.status}|@{scheduledTime}"
        written = host.put_job("not-found", not_found, due, notifications={"onFailure": notified})
        host.put_job(
            "busy",
            {"type": "Http", "request": {"uri": f"{busy.base_url}/main", "method": "GET"}, "retryPolicy": fixed},
            due,
        )
        timing_out = {
            "type": "Http",
            "request": {"uri": f"{slow.base_url}/main", "method": "POST", "timeout": "PT1S"},
            "retryPolicy": {**fixed, "retryOn": ["Timeout"]},
            "errorAction": error_action(f"{errors.base_url}/slow"),
            "expandPlaceholders": True,
        }
        host.put_job("slow", timing_out, due)
        long_running = {"uri": f"{operation.base_url}/start", "method": "POST", "asyncPolling": {"maxDuration": "PT5M"}}
        host.put_job("long-running", {"type": "Http", "request": long_running}, due)
        budget = {
            "type": "Http",
            "request": {"uri": f"{down.base_url}/main", "method": "POST"},
            "retryPolicy": {**fixed, "retryCount": 5, "maxRetryDuration": "PT20S"},
            "errorAction": error_action(f"{errors.base_url}/budget"),
            "expandPlaceholders": True,
        }
        host.put_job("budget", budget, due)

        first, second = busy.wait_for(2, timeout=45)
        operation.wait_for(3, timeout=20)
        [operation_row] = host.history("long-running", 1)
        errors.wait_for(4, timeout=30)
        by_path = {call.path: call for call in errors.received}
        calls_before_replay = len(missing.received)
        rows = host.history("not-found", 2)
        [main] = [row for row in rows if row["properties"]["actionName"] == "MainAction"]
        replay = host.call("POST", f"{JC}/jobs/not-found/history/{main['name']}/rerun")
        assert replay.status_code == 202, replay.text
        again = missing.wait_for(2, timeout=20)[1]
        replays = host.history("not-found", 5)

    assert written["properties"]["action"]["retryPolicy"]["retryOn"] == ["5xx", "429", "Timeout", "ConnectionError"]
    # The 404: one call, and the error action at once with what failed.
    assert calls_before_replay == 1
    assert by_path["/missing"].body == b"404|Status|1|status 404"
    # The job's onFailure notification: its placeholders expanded, recorded as a NotificationAction.
    assert by_path["/notified"].body == f"not-found|404|{format_instant(due)}".encode()
    assert by_path["/missing"].at - missing.received[0].at < 10
    # The 202 with Location: polled (Retry-After: 1) until its 200, recorded once as the operation.
    assert [(call.method, call.path) for call in operation.received] == [
        ("POST", "/start"),
        ("GET", "/operations/1"),
        ("GET", "/operations/1"),
    ]
    assert operation_row["properties"]["status"] == "Completed"
    assert operation_row["properties"]["message"].endswith("(the operation's outcome, after 2 poll(s))")
    # maxRetryDuration PT20S with a 15 s interval: the try and one retry, then the error action (5 allowed).
    assert len(down.received) == 2 and 14 <= down.received[1].at - down.received[0].at < 20
    assert by_path["/budget"].body == b"503|Status|2|status 503"
    # The 503's Retry-After (20 s) outweighs the policy's 15 s.
    assert 20 <= second.at - first.at < 30, second.at - first.at
    # The timeout: retried once (retryOn names it), then the error action.
    assert len(slow.received) == 2
    assert by_path["/slow"].body == b"|Timeout|2|"
    assert "not retried: retryOn does not name 404" in main["properties"]["message"]
    # The replay: the occurrence's own time, a new execution id, its error action too, all trigger Replay.
    assert replay.json()["scheduledTime"] == format_instant(due)
    assert again.headers["x-ms-scheduler-expected-execution-time"] == format_instant(due)
    assert again.headers["x-ms-scheduler-execution-id"] == replay.json()["executionId"] != main["name"]
    triggers = sorted((row["properties"]["trigger"], row["properties"]["actionName"]) for row in replays)
    assert triggers == [
        ("Replay", "ErrorAction"),
        ("Replay", "MainAction"),
        ("Scheduled", "ErrorAction"),
        ("Scheduled", "MainAction"),
        ("Scheduled", "NotificationAction"),
    ]

    classic = requests.get(
        f"{host.base_url}/{JC}/jobs/not-found?api-version=2016-03-01",
        headers={"Authorization": f"Bearer {host.key}"},
        timeout=30,
    )
    assert classic.status_code == 200
    assert "retryOn" not in classic.text and "expandPlaceholders" not in classic.text
    assert "notifications" not in classic.text
    assert json.loads(classic.text)["properties"]["action"]["retryPolicy"]["retryCount"] == 3
