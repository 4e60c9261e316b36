"""In a real browser: a wrong key is refused, the failing-now view lists the failing jobs of every collection,
search and filters narrow the list, the collections show their plan and quota use, a job's write-only
fields show as set (never their values), its next occurrences are in UTC and in its time zone, its charts
draw, the keyboard path starts at the skip link, and signing out forgets the key. The job page of a job with
a mixed history is the README's screenshot (``UPDATE_DASHBOARD_SCREENSHOT=1`` copies it)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from scheduler_core.recurrence import format_instant
from tests.browser.conftest import COLLECTION, GROUP, Dashboard, keep_screenshot, run_scenario
from tests.support.http_target import HttpTarget, http_target
from tests.support.jobs import NO_RETRY, http_action

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PASSWORD = "hunter2-never-shown"
FLAKY_STATUSES = [200, 500, 200, 200, 500, 200]


def http(target: HttpTarget, path: str, retry: bool = False) -> dict[str, Any]:
    policy = {} if retry else {"retryPolicy": NO_RETRY}
    return http_action(f"{target.base_url}{path}", method="GET", body=None, **policy)


def wait_for_history(
    dashboard: Dashboard, job: str, count: int, group: str = GROUP, collection: str = COLLECTION
) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        response = dashboard.api.call("GET", dashboard.job_path(job, group, collection) + "/history")
        if len(response.json()["value"]) >= count:
            return
        time.sleep(0.2)
    raise AssertionError(f"{job}: fewer than {count} history rows after 30 s")


def test_browse_filter_and_inspect(dashboard: Dashboard) -> None:
    dashboard.put_collection()
    dashboard.put_collection("billing", "legacy", plan="Free")
    soon = format_instant((datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0))
    later = (datetime.now(UTC) + timedelta(days=2)).replace(microsecond=0)
    with http_target() as ok, http_target([500]) as bad, http_target(list(FLAKY_STATUSES)) as flaky:
        dashboard.put_job("healthy", {"startTime": soon, "action": http(ok, "/healthy")})
        dashboard.put_job("broken", {"startTime": soon, "action": http(bad, "/broken")})
        dashboard.put_job("invoice-export", {"startTime": soon, "action": http(bad, "/invoices")}, "billing", "legacy")
        dashboard.put_job(
            "paused",
            {"startTime": format_instant(later), "action": http(ok, "/paused"), "state": "Disabled"},
        )
        secured_action = http(ok, "/secured")
        secured_action["request"]["authentication"] = {"type": "Basic", "username": "reporter", "password": PASSWORD}
        dashboard.put_job(
            "secured",
            {
                "startTime": format_instant(later),
                "action": secured_action,
                "recurrence": {
                    "frequency": "Week",
                    "interval": 1,
                    "schedule": {"weekDays": ["Monday"], "hours": [9], "minutes": [0]},
                    "timeZone": "W. Europe Standard Time",
                },
            },
        )
        dashboard.put_job(
            "flaky",
            {
                "startTime": format_instant(later),
                "action": http(flaky, "/flaky"),
                "recurrence": {"frequency": "Minute", "interval": 15},
            },
        )
        for run in range(1, len(FLAKY_STATUSES) + 1):
            assert dashboard.api.call("POST", dashboard.job_path("flaky") + "/run").status_code == 200
            wait_for_history(dashboard, "flaky", run)
        for job in ("healthy", "broken"):
            wait_for_history(dashboard, job, 1)
        wait_for_history(dashboard, "invoice-export", 1, "billing", "legacy")

        seen = run_scenario(
            dashboard,
            "browseAndFilter",
            group=GROUP,
            collection=COLLECTION,
            search="heal",
            secured="secured",
            flaky="flaky",
            flakyRuns=len(FLAKY_STATUSES),
        )

    # A wrong key: an alert, and nothing kept.
    assert seen["wrongKeyAlert"] == "This API key is not valid for this scheduler."
    assert seen["storedAfterWrongKey"] == 0
    # Keyboard only: the skip link is first and moves the focus to the heading; signing in and opening a
    # collection take Tab and Enter; each new view puts the focus on its heading.
    assert seen["keyboard"] == [
        "input#api-key:",
        "a#skip:Skip to content",
        "h1#signin-title:Sign in",
        "input#api-key:",
        "input#subscription:",
        "h1#page-title:Job collections",
        "div:Job collections",
        "a:legacy",
    ]
    assert seen["keyboardJobs"] == ["invoice-export"]
    assert seen["skipLinkVisible"] is True
    # Collections: plan, quota use and failing count (the collection's own quota: Standard allows 50 jobs).
    resource_group, location, plan, quota, recurrence, state, failing = seen["collectionRow"]
    assert (resource_group, location, plan, state) == ("ops", "westeurope", "Standard", "Enabled")
    assert quota == "5 of 50 jobs"
    assert recurrence == "every 1 Minute"
    assert failing == "1 failing"  # broken; flaky failed twice, but its last run succeeded
    # Failing now, across collections: the jobs whose last main action failed.
    assert FLAKY_STATUSES[-1] == 200
    expected_failing = {"broken", "invoice-export"}
    assert set(seen["failing"]) == expected_failing
    # Search and filters.
    assert sorted(seen["all"]) == sorted(["broken", "flaky", "healthy", "invoice-export", "paused", "secured"])
    assert seen["searched"] == ["healthy"]
    assert "q=heal" in seen["searchHash"]
    assert seen["disabledOnly"] == ["paused"]
    assert set(seen["failingOnly"]) == expected_failing
    # The write-only password: set, and its value nowhere on the page.
    assert seen["writeOnly"] == ["request.authentication.password: set"]
    assert PASSWORD not in seen["pageText"]
    assert "reporter" in seen["pageText"]
    # Next occurrences: Mondays 09:00 in Berlin, shown in UTC and in the zone.
    assert "Europe/Berlin" in seen["zone"]
    berlin = ZoneInfo("Europe/Berlin")
    for utc_text, local_text in zip(seen["utcTimes"], seen["localTimes"], strict=True):
        instant = datetime.fromisoformat(utc_text.replace("Z", "+00:00"))
        local = instant.astimezone(berlin)
        assert (local.weekday(), local.hour, local.minute) == (0, 9, 0)
        assert local_text == local.isoformat().replace("T", " ")
    assert len(seen["utcTimes"]) == 10
    # The flaky job's history, as the API has it, and its charts.
    api_rows = dashboard.history("flaky")
    assert [row["Status"] for row in seen["flakyHistory"]] == [row["properties"]["status"] for row in api_rows]
    completed = sum(1 for status in FLAKY_STATUSES if status < 400)
    assert f"{completed} Completed" in seen["outcomeChart"]
    assert f"{len(FLAKY_STATUSES) - completed} Failed" in seen["outcomeChart"]
    width, height = seen["chartPixels"]
    assert width > 200 and height > 100
    # A response opened in the history stays open while the page polls; it is the whole history message.
    assert seen["openAfterPoll"] == 1
    assert seen["openText"] == api_rows[0]["properties"]["message"].strip()
    # Signing out forgets the key.
    assert seen["storedAfterSignOut"] is None
    keep_screenshot(dashboard, "dashboard.png")
    for name in ("collections.png", "failing.png", "job-history.png"):
        assert (dashboard.screenshots / name).stat().st_size > 10_000
