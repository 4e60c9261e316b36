"""In a real browser: a person signs in, finds a job, opens it and watches it fire (its first run, or the next
one a minute later when the browser was slow to get there). The execution appears in the page's history,
counters and charts by polling, without a reload, and what the page shows is what the API and the HTTP
target saw."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core.recurrence import format_instant
from tests.browser.conftest import COLLECTION, GROUP, Dashboard, run_scenario
from tests.support.http_target import http_target
from tests.support.jobs import every, http_action

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

#: How far ahead the job is due: the browser starts, signs in and opens the job page well before it (in
#: about 4 s, on a machine running other tests; a later page waits for the next minute's execution).
LEAD = timedelta(seconds=12)


def test_a_person_watches_a_job_fire(dashboard: Dashboard) -> None:
    dashboard.put_collection()
    with http_target() as target:
        due = (datetime.now(UTC) + LEAD).replace(microsecond=0)
        dashboard.put_job(
            "nightly-report",
            {
                "startTime": format_instant(due),
                "action": http_action(f"{target.base_url}/report", body="go"),
                "recurrence": every("Minute"),
            },
        )
        dashboard.put_job(
            "other",
            {"action": http_action(target.base_url, method="GET", body=None), "state": "Disabled"},
        )
        seen = run_scenario(dashboard, "watchJobFire", job="nightly-report", group=GROUP, collection=COLLECTION)
        received = list(target.received)

    # The page was open before an execution (the first, unless the browser took over 12 s to get there).
    before = seen["before"]
    assert before in (0, 1)
    first = due + timedelta(minutes=before)
    # The list, searched for the job, showed it enabled and due at its next occurrence.
    assert seen["listRows"] == 1
    assert seen["listState"] == "Enabled"
    assert seen["listNextRun"] in (format_instant(due), format_instant(first))
    # Before it fired: its counters, and the next occurrences from the recurrence engine.
    assert seen["beforeExecutions"] == str(before)
    assert seen["occurrences"] == [format_instant(first + timedelta(minutes=n)) for n in range(10)]
    # It fired while the page was open: the same document, updated by polling.
    assert seen["sameDocument"] is True
    assert [(r.method, r.path, r.body) for r in received] == [("POST", "/report", b"go")] * (before + 1)
    api_rows = dashboard.history("nightly-report")
    assert [r["properties"]["status"] for r in api_rows] == ["Completed"] * (before + 1)
    assert len(seen["history"]) == before + 1
    row, api_row = seen["history"][0], api_rows[0]  # the newest
    assert row["Status"] == "Completed"
    assert row["Action"] == "main"
    assert row["Retry"] == "0"
    started = datetime.fromisoformat(api_row["properties"]["startTime"].replace("Z", "+00:00"))
    assert row["Started (UTC)"] == started.strftime("%Y-%m-%d %H:%M:%S UTC")
    message = " ".join(api_row["properties"]["message"].split())
    assert row["Response"].rstrip("…")[:60] == message[:60]
    assert row["Lateness"] == "on time" or row["Lateness"].endswith(("late", "early"))
    assert seen["summary"]["Executions"] == str(before + 1)
    assert seen["summary"]["Failures"] == "0"
    assert seen["summary"]["Last outcome"] == "Completed"
    assert seen["summary"]["State"] == "Enabled"
    assert f"{before + 1} Completed" in seen["outcomeChart"]
    assert f"Lateness of the last {before + 1} executions" in seen["latenessChart"]
    assert seen["announced"] == "1 new execution: Completed."
    # The key is in session storage, and nothing else is kept.
    assert sorted(seen["sessionStorageKeys"]) == ["scheduler.dashboard.apiKey", "scheduler.dashboard.subscription"]
    assert (dashboard.screenshots / "job-fired.png").stat().st_size > 10_000
    assert (dashboard.screenshots / "collections.png").is_file()
