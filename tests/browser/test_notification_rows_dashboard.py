"""In a real browser, the job page shows a job's notifications (``properties.notifications``, api-version
2026-12-01-preview) as what they are: a scheduled occurrence that faulted sent its ``onFailure`` notification,
and the occurrence's heading counts one attempt and one notification sent, its rows saying "main" and
"notification", not two attempts.

The function app on the local host with every trigger (the job fires at its second), a real HTTP target on
127.0.0.1 that fails the job's call and a receiver of the notification; the browser steps are a Node script
(Playwright, Chromium)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.recurrence import format_instant
from tests.browser.conftest import COLLECTION, GROUP, Dashboard, run_module
from tests.support.http_target import http_target
from tests.support.jobs import NO_RETRY, http_action

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
JOB = "nightly-sync"

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
  await page.goto(`${BASE}#/job/${e(ARGS.group)}/${e(ARGS.collection)}/${e(ARGS.job)}`);
  await page.getByRole("heading", { level: 1, name: ARGS.job }).waitFor();
  await page.locator('tbody tr[data-status="Failed"]').first().waitFor({ timeout: 60_000 });
  await page.locator("tbody tr[data-status]").nth(1).waitFor({ timeout: 60_000 });
  observed.groups = await page.locator("tbody.occurrence").evaluateAll((bodies) =>
    bodies.map((body) => ({
      heading: body.querySelector("tr.occurrence-head th").textContent,
      rows: [...body.querySelectorAll("tr[data-status]")].map((row) => [
        row.cells[1].textContent,
        row.cells[2].textContent,
      ]),
    })),
  );
} finally {
  await browser.close();
}
assert.deepEqual(problems, [], `console errors or page errors: ${problems.join(" | ")}`);
process.stdout.write(`${JSON.stringify(observed)}\n`);
"""


def test_a_notification_row_is_shown_as_a_notification_not_an_attempt(dashboard: Dashboard) -> None:
    dashboard.put_collection()
    due = (datetime.now(UTC) + timedelta(seconds=5)).replace(microsecond=0)
    with http_target([500]) as target, http_target([200]) as receiver:
        notice = {"type": "Http", "request": {"uri": f"{receiver.base_url}/failed", "method": "POST"}}
        properties = {
            "startTime": format_instant(due),
            "action": http_action(f"{target.base_url}/sync", method="GET", body=None, retryPolicy=NO_RETRY),
            "notifications": {"onFailure": notice},
        }
        url = dashboard.api.url(dashboard.job_path(JOB), **{"api-version": PREVIEW})
        answer = dashboard.api.call("PUT", url, {"properties": properties})
        assert answer.status_code in (200, 201), answer.text
        receiver.wait_for(1, timeout=60)
        history_url = dashboard.api.url(dashboard.job_path(JOB) + "/history", **{"api-version": PREVIEW})
        deadline = time.monotonic() + 30
        rows: list[dict[str, Any]] = []
        while len(rows) < 2 and time.monotonic() < deadline:
            rows = dashboard.api.call("GET", history_url).json()["value"]
            time.sleep(0.3)
        assert sorted(row["properties"]["actionName"] for row in rows) == ["MainAction", "NotificationAction"]
        seen = run_module(dashboard, SCRIPT, {"group": GROUP, "collection": COLLECTION, "job": JOB}, timeout=180)

    [group] = seen["groups"]
    assert group["heading"].endswith(": 1 attempt, 1 notification sent; Failed"), group["heading"]
    assert sorted(group["rows"]) == [["main", "Failed"], ["notification", "Completed"]]
