"""In a real browser: run now, disable, and delete (a cancelled confirmation first) with the job page's
buttons; each goes through the management API, and the API and the HTTP target show it happened. The page's
reads take the dashboard's read route (``/dashboard/api/arm/...``), so the management API's function sees
the writes alone."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core.recurrence import format_instant
from tests.browser.conftest import COLLECTION, GROUP, Dashboard, run_scenario
from tests.support.http_target import http_target
from tests.support.jobs import every, http_action
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


def test_run_now_disable_and_delete_from_the_job_page(dashboard: Dashboard, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="Function.management_api")
    dashboard.put_collection()
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    job = f"/{dashboard.job_path('')}"

    def calls() -> list[str]:
        """What the management API's function logged (the host logs a line once it has answered)."""
        lines = [
            r.getMessage().split(" trigger=http ", 1)[1] for r in caplog.records if r.name == "Function.management_api"
        ]
        return [re.sub(r" -> .*", "", line) for line in lines]

    with http_target() as target:
        for name in ("daily-sync", "obsolete"):
            dashboard.put_job(
                name,
                {
                    "startTime": format_instant(tomorrow),
                    "action": http_action(f"{target.base_url}/{name}", method="GET", body=None),
                    "recurrence": every("Day"),
                },
            )
        written = [f"PUT /{dashboard.collection_path()}", f"PUT {job}daily-sync", f"PUT {job}obsolete"]
        wait_until(lambda: all(put in calls() for put in written), timeout=10, what="the test's own writes logged")
        caplog.clear()
        seen = run_scenario(
            dashboard, "runDisableDelete", run="daily-sync", remove="obsolete", group=GROUP, collection=COLLECTION
        )
        operations = sorted(calls())
        received = target.wait_for(1, timeout=5)

    # The management API's function saw the page's three writes and the scenario's own check (a GET sent by
    # the test, not by the page); every read of the page, polls included, took the dashboard's route.
    assert operations == sorted(
        [f"POST {job}daily-sync/run", f"PATCH {job}daily-sync", f"GET {job}obsolete", f"DELETE {job}obsolete"]
    )

    # Run now: the job ran once, on demand (it is not due before tomorrow), and its row appeared.
    assert [r.path for r in received] == ["/daily-sync"]
    assert received[0].headers.get("x-ms-scheduler-jobid", "").endswith("/jobs/daily-sync")
    [row] = seen["runHistory"]
    assert row["Status"] == "Completed"
    assert [r["properties"]["status"] for r in dashboard.history("daily-sync")] == ["Completed"]
    # Disable: the page shows it and the API has it.
    assert seen["afterDisable"]["State"] == "Disabled"
    assert seen["afterDisable"]["Next run"] == "none: not enabled"
    assert dashboard.job("daily-sync")["properties"]["state"] == "Disabled"
    # Delete: the dialog opens on Cancel; Escape cancels and gives the focus back; then confirmed.
    assert seen["dialogFocus"] == "Cancel"
    assert seen["focusAfterCancel"] == "Delete…"
    assert seen["stillThere"] == 200
    assert dashboard.api.call("GET", dashboard.job_path("obsolete")).status_code == 404
    assert seen["listedAfterDelete"] == ["daily-sync"]
    assert "deleted=obsolete" in seen["hashAfterDelete"]
    for name in ("job-disabled.png", "delete-dialog.png"):
        assert (dashboard.screenshots / name).stat().st_size > 10_000
