"""In a real browser, the job page shows the time an attempt waited for its action's ``flowControl`` limits
(api-version 2026-12-01-preview) apart from its lateness: three jobs due at one second share a key of one call
every 5 seconds, so two of them wait, and their rows say "on time" and "waited 5 s (10 s) for flow control".

The function app on the local host with every trigger, a real HTTP target on 127.0.0.1; the browser steps are
a Node script (Playwright, Chromium)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.definitions import parse_duration
from scheduler_core.recurrence import format_instant
from tests.browser.conftest import COLLECTION, GROUP, Dashboard, run_module
from tests.support.http_target import http_target
from tests.support.jobs import NO_RETRY, http_action

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
JOBS = ("export-a", "export-b", "export-c")


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def isoSeconds(text: str) -> float:
    """The seconds of an ISO 8601 duration the preview answers (``PT5.002S``, ``PT1M``)."""
    return parse_duration(text, "flowWait").total_seconds()


SCRIPT = r"""
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const BASE = process.env.DASHBOARD_URL;
const ARGS = JSON.parse(process.env.SCENARIO_ARGS);
const e = encodeURIComponent;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
});
const problems = [];
const observed = {};
try {
  const page = await (await browser.newContext({ locale: "en-GB", timezoneId: "UTC" })).newPage();
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  await page.goto(BASE);
  await page.getByLabel("API key").fill(process.env.API_KEY);
  await page.getByLabel("Subscription ID").fill(process.env.SUBSCRIPTION);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();
  for (const job of ARGS.jobs) {
    await page.goto(`${BASE}#/job/${e(ARGS.group)}/${e(ARGS.collection)}/${e(job)}`);
    await page.getByRole("heading", { level: 1, name: job }).waitFor();
    const row = page.locator('tbody tr[data-status="Completed"]').first();
    await row.waitFor({ timeout: 60_000 });
    observed[job] = await row.locator("td").nth(4).textContent();
  }
} finally {
  await browser.close();
}
assert.deepEqual(problems, [], `console errors or page errors: ${problems.join(" | ")}`);
process.stdout.write(`${JSON.stringify(observed)}\n`);
"""


def test_the_wait_for_flow_control_is_shown_apart_from_lateness(dashboard: Dashboard) -> None:
    dashboard.put_collection()
    due = (datetime.now(UTC) + timedelta(seconds=5)).replace(microsecond=0)
    with http_target([200]) as target:
        for name in JOBS:
            action = http_action(f"{target.base_url}/{name}", retryPolicy=NO_RETRY)
            action["flowControl"] = {"key": "exports", "ratePerSecond": 0.2}
            url = dashboard.api.url(dashboard.job_path(name), **{"api-version": PREVIEW})
            answer = dashboard.api.call(
                "PUT", url, {"properties": {"startTime": format_instant(due), "action": action}}
            )
            assert answer.status_code in (200, 201), answer.text
        target.wait_for(3, timeout=60)
        rows: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + 30
        while len(rows) < 3 and time.monotonic() < deadline:
            for name in JOBS:
                history = dashboard.api.url(dashboard.job_path(name) + "/history", **{"api-version": PREVIEW})
                found = dashboard.api.call("GET", history).json()["value"]
                if found:
                    rows[name] = found[0]["properties"]
            time.sleep(0.3)
        seen = run_module(
            dashboard, SCRIPT, {"group": GROUP, "collection": COLLECTION, "jobs": list(JOBS)}, timeout=180
        )

    # What the API says: each call's start after the due second, and how much of it was the flow control's wait
    after = {name: (instant(row["startTime"]) - due).total_seconds() for name, row in rows.items()}
    waited = {name: isoSeconds(row["flowWait"]) if row.get("flowWait") else 0.0 for name, row in rows.items()}
    starts = sorted(after.values())
    # one call every 5 s: the documented rule (5 s less at most 100 ms of a late start), less 50 ms for a request
    # to reach the target on a loaded machine
    assert starts[1] - starts[0] >= 4.85 and starts[2] - starts[1] >= 4.85, after
    assert sum(1 for wait in waited.values() if wait == 0) == 1, waited  # the first ran at once
    assert sorted(waited.values())[1:] == pytest.approx([5, 10], abs=1.5), waited  # less its own lateness
    for name, cell in seen.items():
        late = after[name] - waited[name]  # the scheduler's lateness: the wait left out
        assert late >= -0.05, (name, after, waited)
        lateness = "on time" if late < 0.5 else "late"  # the dashboard's words for it (a second or more: "1 s late")
        assert cell.startswith("on time") if late < 0.5 else "late" in cell, (name, cell, lateness)
        shown = re.search(r"waited ([\d.]+) s for flow control$", cell)
        if waited[name] == 0:
            assert shown is None, (name, cell)
        else:
            assert shown is not None and float(shown.group(1)) == pytest.approx(waited[name], abs=0.6), (name, cell)
