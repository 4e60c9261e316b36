"""Notifications per job end to end in real time: the function app on the local host over Azurite, a job
written through the management API (api-version 2026-12-01-preview) that runs every minute twice against a real
HTTP target on 127.0.0.1 that fails its first call and answers the second, and a receiver of the notifications.

* the first occurrence faults: ``onFailure`` is sent at once, knowing the status;
* a minute later its ``deadline`` (``after: PT1M``) comes, the occurrence not having succeeded: it is sent,
  by the pipeline, whatever the target does;
* the second occurrence completes: ``onRecovery`` is sent;
* each is recorded as a ``NotificationAction`` entry, and none changes the job's counters.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core.recurrence import format_instant
from tests.e2e.preview_host import COLLECTION, JC, Host, running_host  # noqa: F401 (the fixture)
from tests.support.http_target import http_target

pytestmark = [pytest.mark.azurite, pytest.mark.e2e, pytest.mark.long(65)]


def test_on_failure_deadline_and_on_recovery_reach_their_receiver(host: Host) -> None:
    due = (datetime.now(UTC) + timedelta(seconds=5)).replace(microsecond=0)
    with http_target([500, 200]) as target, http_target([200]) as receiver:
        action = {"type": "Http", "request": {"uri": target.base_url + "/job", "method": "POST"}}
        action["retryPolicy"] = {"retryType": "None"}

        def notice(path: str, body: str) -> dict[str, object]:
            return {"type": "Http", "request": {"uri": receiver.base_url + path, "method": "POST", "body": body}}

        notifications = {
            "onFailure": notice("/failed", "@{jobName} @{scheduledTime} @{failure.status} @{historyUrl}"),
            "onRecovery": notice("/recovered", "@{jobName} @{scheduledTime}"),
            "deadline": {"after": "PT1M", "action": notice("/late", "@{jobName} @{scheduledTime}")},
        }
        properties = {
            "startTime": format_instant(due),
            "action": action,
            "recurrence": {"frequency": "Minute", "interval": 1, "count": 2},
            "notifications": notifications,
        }
        answer = host.call("PUT", f"{JC}/jobs/nightly", {"properties": properties})
        assert answer.status_code == 201, answer.text
        received = receiver.wait_for(3, timeout=110)
        rows = host.history("nightly", 5, timeout=20)

    first, second = format_instant(due), format_instant(due + timedelta(minutes=1))
    port = host.base_url.rsplit(":", 1)[1]
    link = f"http://localhost:{port}/dashboard/#/job/rg/{COLLECTION}/nightly"  # the job's page on this app
    assert sorted((call.path, call.body) for call in received) == [
        ("/failed", f"nightly {first} 500 {link}".encode()),
        ("/late", f"nightly {first}".encode()),
        ("/recovered", f"nightly {second}".encode()),
    ]
    notes = [row for row in rows if row["properties"]["actionName"] == "NotificationAction"]
    assert len(notes) == 3 and {row["properties"]["status"] for row in notes} == {"Completed"}
    job = host.call("GET", f"{JC}/jobs/nightly").json()
    assert job["properties"]["status"]["executionCount"] == 2 and job["properties"]["status"]["failureCount"] == 1
