"""In a real browser, the operator's console: create and edit jobs (form and JSON, checked and previewed by the
service, ETag-guarded, secrets never wiped silently), bulk actions on a filtered list, the schedule and
target columns and sorting, absolute times in UTC, local or the job's zone, the history grouped by
occurrence, an unknown job's page, and a Reader who sees no write control and whose forged writes get 403.
Each scenario also runs axe-core's WCAG 2.1 A and AA rules on the views it adds."""

from __future__ import annotations

import base64
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from scheduler_core.recurrence import format_instant
from tests.browser.conftest import COLLECTION, GROUP, Dashboard, run_scenario
from tests.support.http_target import http_target
from tests.support.jobs import NO_RETRY, every, fixed_retries, http_action

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PASSWORD = "console-s3cret-never-shown"
FIRST_SAS = "sv=2020-01-01&sig=first-token"
NEW_SAS = "sv=2020-01-01&sig=second-token"


def insight(dashboard: Dashboard, job: str) -> dict[str, Any]:
    response = dashboard.api.call("GET", f"{dashboard.api.base_url}/dashboard/api/job/{dashboard.job_path(job)}")
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def preview_job(dashboard: Dashboard, job: str) -> dict[str, Any]:
    url = dashboard.api.url(dashboard.job_path(job), **{"api-version": "2026-12-01-preview"})
    response = dashboard.api.call("GET", url)
    assert response.status_code == 200, response.text
    properties: dict[str, Any] = response.json()["properties"]
    return properties


def test_create_and_edit_jobs_with_the_form_and_the_json_view(dashboard: Dashboard) -> None:
    dashboard.put_collection()
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).replace(hour=8, minute=0, second=0, microsecond=0)
    with http_target() as target:
        secured = http_action(f"{target.base_url}/secured", body="original", retryPolicy=NO_RETRY)
        secured["request"]["authentication"] = {"type": "Basic", "username": "reporter", "password": PASSWORD}
        dashboard.put_job(
            "secured", {"startTime": format_instant(tomorrow), "action": secured, "recurrence": every("Day")}
        )
        queue = {"storageAccount": "acct", "queueName": "orders", "message": "go", "sasToken": FIRST_SAS}
        dashboard.put_job(
            "queued",
            {"startTime": format_instant(tomorrow), "action": {"type": "StorageQueue", "queueMessage": queue}},
        )
        seen = run_scenario(
            dashboard,
            "editJobs",
            timeout=240,
            group=GROUP,
            collection=COLLECTION,
            created="made-here",
            createdUri=f"{target.base_url}/made",
            start=format_instant(tomorrow),
            secured="secured",
            queued="queued",
            newSas=NEW_SAS,
            audit=True,
        )
        # The edited job still has its password: it is sent with the edited body.
        assert dashboard.api.call("POST", dashboard.job_path("secured") + "/run").status_code == 200
        [call] = target.wait_for(1, timeout=20)

    # A field the service refuses: its ARM message next to the field, marked invalid, focused.
    assert seen["uriError"]["text"].startswith("properties.action.request.uri: "), seen["uriError"]
    assert seen["uriError"]["invalid"] == "true"
    assert seen["focusOnError"] == "request-uri"
    assert seen["uriErrorGone"] == 0
    # The preview came from the service before anything was saved: every 5 minutes from the start.
    assert seen["existsBeforeSave"] == 404
    assert seen["previewTimes"] == [format_instant(tomorrow + timedelta(minutes=5 * n)) for n in range(10)]
    assert seen["savedNotice"] == "Job made-here saved."
    assert seen["createdSchedule"] == "every 5 minutes"
    # Secrets: an edit that keeps what the password belongs to keeps it (the dry run said so).
    assert seen["securedPasswordField"] == "password"
    assert seen["securedFates"] == ["action.request.authentication.password: kept"]
    assert call.body == b"edited body"
    expected = base64.b64encode(f"reporter:{PASSWORD}".encode()).decode()
    assert call.headers.get("Authorization") == f"Basic {expected}"
    # Another queue would drop the SAS token: refused until it is entered again.
    assert "action.queueMessage.sasToken" in seen["dropWarning"]
    assert seen["dropStatus"].startswith("Not saved: this edit would drop stored secrets")
    assert seen["queueAfterRefusal"] == "orders"
    queued = preview_job(dashboard, "queued")
    assert queued["action"]["queueMessage"]["queueName"] == "elsewhere"
    assert [(f["path"], f["set"]) for f in insight(dashboard, "queued")["writeOnly"]] == [
        ("action.queueMessage.sasToken", True)
    ]
    # A concurrent change: the PUT with If-Match got 412; the form said so and reloaded the current job.
    assert seen["concurrentPatch"] == 200
    assert "changed by someone else" in seen["conflict"]
    assert seen["conflictFocus"] == "Reload the job"
    assert seen["stateAfterReload"] == "Disabled"
    # The JSON view: the full preview body; the service's error next to it; preview properties saved.
    assert {"action", "recurrence", "startTime", "state"} <= set(seen["jsonKeys"])
    assert "status" not in seen["jsonKeys"]
    assert seen["jsonError"]["text"].startswith("properties.recurrence.frequency: "), seen["jsonError"]
    assert seen["jsonError"]["invalid"] == "true"
    made = preview_job(dashboard, "made-here")
    assert made["overlapPolicy"] == "Skip"
    assert made["pauseAfterFailures"] == 3
    assert made["state"] == "Disabled"
    assert made["recurrence"]["interval"] == 5  # the 10 typed before the conflict was discarded by the reload
    assert made["action"]["request"] == {
        "uri": f"{target.base_url}/made",
        "method": "POST",
        "headers": {"X-Console": "yes"},
        "body": "from the form",
    }
    assert made["action"]["retryPolicy"] == {"retryType": "None"}
    assert seen["rawAfterJson"]["overlapPolicy"] == "Skip"
    for name, audit in seen["audits"].items():
        assert audit["violations"] == [], name
        assert audit["passes"] >= 10, name
    assert PASSWORD not in str(seen) and FIRST_SAS not in str(seen)


def wait_for_history(dashboard: Dashboard, job: str, count: int, timeout: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = dashboard.history(job)
        if len(rows) >= count:
            return rows
        time.sleep(0.5)
    raise AssertionError(f"{job}: fewer than {count} history rows after {timeout} s")


def test_bulk_actions_columns_sorting_times_history_and_a_reader(dashboard: Dashboard) -> None:
    dashboard.put_collection()
    start = (datetime.now(UTC) + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    with http_target() as ok, http_target([500]) as bad:

        def job(name: str, recurrence: dict[str, Any]) -> None:
            action = http_action(f"{ok.base_url}/{name}", method="GET", body=None, retryPolicy=NO_RETRY)
            dashboard.put_job(name, {"startTime": format_instant(start), "action": action, "recurrence": recurrence})

        job("bulk-a", every("Minute", 5))
        job("bulk-b", every("Week", schedule={"weekDays": ["Wednesday", "Monday"], "hours": [8], "minutes": [0]}))
        job("bulk-c", every("Day", schedule={"hours": [6], "minutes": [30]}, timeZone="Tokyo Standard Time"))
        job("tokyo-report", every("Day", schedule={"hours": [9], "minutes": [15]}, timeZone="Tokyo Standard Time"))
        error_action = http_action(f"{ok.base_url}/error-action", method="GET", body=None, retryPolicy=NO_RETRY)
        retried = http_action(f"{bad.base_url}/fails", retryPolicy=fixed_retries(1, "PT15S"), errorAction=error_action)
        dashboard.put_job(
            "retried", {"startTime": format_instant(start), "action": retried, "recurrence": every("Day")}
        )
        assert dashboard.api.call("POST", dashboard.job_path("retried") + "/run").status_code == 200
        history = wait_for_history(dashboard, "retried", 3)
        expected_next = sorted(
            ["bulk-a", "bulk-b", "bulk-c"],
            key=lambda name: dashboard.job(name)["properties"]["status"]["nextExecutionTime"],
        )
        seen = run_scenario(
            dashboard,
            "operateJobs",
            timeout=240,
            group=GROUP,
            collection=COLLECTION,
            runThese=["bulk-a", "bulk-b"],
            deleteThis="bulk-c",
            zoned="tokyo-report",
            retried="retried",
            retriedRows=len(history),
            audit=True,
        )
        ran = sorted(r.path for r in ok.wait_for(3, timeout=20) if r.path.startswith("/bulk"))
        reader = run_scenario(dashboard, "readerView", group=GROUP, collection=COLLECTION, job="bulk-a")

    # Columns: the schedule in words and the target; sorting by next run and by name, kept in the address.
    assert seen["columns"][:5] == ["Job", "Collection", "State", "Schedule", "Target"]
    assert seen["byName"] == [
        ["bulk-a", "every 5 minutes", f"GET {ok.base_url}/bulk-a"],
        ["bulk-b", "Mon, Wed 08:00", f"GET {ok.base_url}/bulk-b"],
        ["bulk-c", "every day 06:30 (Tokyo Standard Time)", f"GET {ok.base_url}/bulk-c"],
    ]
    assert seen["sortedByNext"] == expected_next
    assert seen["ariaSort"] == ["Next run ▲", "ascending"]
    assert seen["sortedByNameDescending"] == ["bulk-c", "bulk-b", "bulk-a"]
    assert "sort=job" in seen["sortHash"] and "dir=desc" in seen["sortHash"]
    # Bulk disable of the filtered list, with a confirmation naming the count.
    assert seen["selectedText"] == "3 of 3 shown selected"
    assert seen["disableDialog"] == "Disable 3 jobs?"
    assert seen["disableDialogFocus"] == "Cancel"
    assert seen["disableResult"] == "3 of 3 jobs disabled."
    assert dashboard.job("bulk-a")["properties"]["state"] == "Disabled"
    assert dashboard.job("bulk-b")["properties"]["state"] == "Disabled"
    # Bulk run now: both ran on demand (they are not due before tomorrow, and are disabled).
    assert seen["runDialog"] == "Run 2 jobs?"
    assert seen["runDialogList"] == [f"{GROUP}/{COLLECTION}/bulk-b", f"{GROUP}/{COLLECTION}/bulk-a"]  # as listed
    assert ran == ["/bulk-a", "/bulk-b"]
    # Bulk delete: cancelled first (nothing happened), then confirmed.
    assert seen["deleteDialog"] == "Delete 1 job?"
    assert seen["stillThere"] == 200
    assert dashboard.api.call("GET", dashboard.job_path("bulk-c")).status_code == 404
    assert seen["afterDelete"] == ["bulk-b", "bulk-a"]
    # Absolute times: UTC, the browser's zone (Europe/Berlin), the job's zone (Asia/Tokyo, from the server).
    instant = datetime.fromisoformat(seen["nextRunIso"].replace("Z", "+00:00"))
    assert seen["times"]["utc"].startswith(instant.strftime("%Y-%m-%d %H:%M:%S UTC"))
    berlin = instant.astimezone(ZoneInfo("Europe/Berlin"))
    assert seen["times"]["local"].startswith(
        berlin.strftime("%Y-%m-%d %H:%M:%S ") + ("CEST" if berlin.dst() else "CET")
    )
    tokyo = instant.astimezone(ZoneInfo("Asia/Tokyo"))
    assert (tokyo.hour, tokyo.minute) == (9, 15)
    assert seen["times"]["job"].startswith(tokyo.strftime("%Y-%m-%d %H:%M:%S GMT+9"))
    # The history: the attempt, its retry and the error action under their one occurrence.
    [group] = seen["groups"]
    assert sorted(tuple(row) for row in group["rows"]) == sorted(
        (
            "error action" if r["properties"]["actionName"] == "ErrorAction" else "main",
            r["properties"]["status"],
            str(r["properties"]["retryCount"]),
        )
        for r in history
    )
    assert "(manual)" in group["heading"]
    # A run on demand, its retry and its error action are not lateness: none has any, in the table or the chart.
    assert group["lateness"] == ["—"] * len(history)
    assert seen["groupsChart"].startswith("Lateness: no scheduled run yet")
    assert "2 attempts, 1 retry, error action Completed; Failed" in group["heading"]
    # An unknown job: "not found", no button, nothing loading.
    assert "no-such-job was not found" in seen["unknown"]["alert"]
    assert seen["unknown"]["buttons"] == 0
    assert seen["unknown"]["loading"] == 0
    for name, audit in seen["audits"].items():
        assert audit["violations"] == [], name
    # A Reader sees the jobs and no write control; a forged write with the Reader's key is the service's 403.
    assert sorted(reader["jobs"]) == ["bulk-a", "bulk-b", "retried", "tokyo-report"]
    assert reader["listControls"] == {"checkboxes": 0, "bulkVisible": 0, "newJob": 0}
    assert reader["jobControls"] == []
    assert "Reader" in reader["editor"]
    assert reader["editorInputs"] == 0
    (run_status, run_code), (patch_status, patch_message) = reader["forged"]
    assert (run_status, run_code) == (403, "AuthorizationFailed")
    assert patch_status == 403 and "jobs/write" in patch_message
    assert dashboard.job("bulk-a")["properties"]["state"] == "Disabled"
