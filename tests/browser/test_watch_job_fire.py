"""In a real browser: a person signs in, finds a job, opens it before it is due and watches it fire. The
execution appears in the page's history, counters and charts by polling, without a reload, and what the page
shows is what the API and the HTTP target saw."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core.recurrence import format_instant
from tests.browser.conftest import COLLECTION, GROUP, Dashboard, run_scenario
from tests.support.http_target import http_target

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

#: How far ahead the job is due: the browser starts, signs in and opens the job page well before it.
LEAD = timedelta(seconds=20)


def test_a_person_watches_a_job_fire(dashboard: Dashboard) -> None:
    dashboard.put_collection()
    with http_target() as target:
        due = (datetime.now(UTC) + LEAD).replace(microsecond=0)
        dashboard.put_job(
            "nightly-report",
            {
                "startTime": format_instant(due),
                "action": {
                    "type": "Http",
                    "request": {"uri": f"{target.base_url}/report", "method": "POST", "body": "go"},
                },
                "recurrence": {"frequency": "Hour", "interval": 1},
            },
        )
        dashboard.put_job(
            "other",
            {"action": {"type": "Http", "request": {"uri": target.base_url, "method": "GET"}}, "state": "Disabled"},
        )
        seen = run_scenario(dashboard, "watchJobFire", job="nightly-report", group=GROUP, collection=COLLECTION)
        received = target.wait_for(1, timeout=5)

    # The list, searched for the job, showed it enabled and due at its start time.
    assert seen["listRows"] == 1
    assert seen["listState"] == "Enabled"
    assert seen["listNextRun"] == format_instant(due)
    # Before it fired: no executions, and the next occurrences from the recurrence engine.
    assert seen["beforeExecutions"] == "0"
    assert seen["occurrences"] == [format_instant(due + timedelta(hours=n)) for n in range(10)]
    # It fired while the page was open: the same document, updated by polling.
    assert seen["sameDocument"] is True
    assert [(r.method, r.path, r.body) for r in received] == [("POST", "/report", b"go")]
    [api_row] = dashboard.history("nightly-report")
    assert api_row["properties"]["status"] == "Completed"
    [row] = seen["history"]
    assert row["Status"] == "Completed"
    assert row["Action"] == "main"
    assert row["Retry"] == "0"
    started = datetime.fromisoformat(api_row["properties"]["startTime"].replace("Z", "+00:00"))
    assert row["Started (UTC)"] == started.strftime("%Y-%m-%d %H:%M:%S UTC")
    message = " ".join(api_row["properties"]["message"].split())
    assert row["Response"].rstrip("…")[:60] == message[:60]
    assert row["Lateness"] == "on time" or row["Lateness"].endswith(("late", "early"))
    assert seen["summary"]["Executions"] == "1"
    assert seen["summary"]["Failures"] == "0"
    assert seen["summary"]["Last outcome"] == "Completed"
    assert seen["summary"]["State"] == "Enabled"
    assert "1 Completed" in seen["outcomeChart"]
    assert "Lateness of the last 1 executions" in seen["latenessChart"]
    assert seen["announced"] == "1 new execution: Completed."
    # The key is in session storage, and nothing else is kept.
    assert sorted(seen["sessionStorageKeys"]) == ["scheduler.dashboard.apiKey", "scheduler.dashboard.subscription"]
    assert (dashboard.screenshots / "job-fired.png").stat().st_size > 10_000
    assert (dashboard.screenshots / "collections.png").is_file()
