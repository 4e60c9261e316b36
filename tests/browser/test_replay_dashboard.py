"""In a real browser, the job page's **Re-run** of a failed history row: the management API's replay
(``POST .../jobs/{job}/history/{historyId}/rerun``, api-version 2026-12-01-preview).

* A failed occurrence's row has a Re-run button whose name says which occurrence it runs again (rows that did
  not fail have none); clicking it says, next to the history, which occurrence runs again and as which
  execution, keeps the focus on the button, and the replay's row appears by polling under an occurrence
  heading of its own ("replay"), as the API records it (trigger ``Replay``, the occurrence's own expected
  time, the execution id the confirmation named). axe-core's WCAG 2.1 A and AA rules pass on that page.
* A Reader (the dashboard's access route says so) sees the failed row with no Re-run column or button, and a
  rerun forged with the Reader's key is the service's 403: nothing runs.
* An API error is said as the page says other refusals: the job deleted meanwhile (live updates paused, so
  the page still shows it), Re-run names the occurrence and the service's 404 message.

The browser steps are a Node script (Playwright, ``playwright-core`` from npm, driving Chromium) given to
``node`` on its standard input, with the whole-visit checks of ``scenarios.mjs``: no console error or warning
but the refusals provoked on purpose, no page error or CSP violation, no request outside the dashboard's
origin, no cookie.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.recurrence import format_instant
from tests.browser.conftest import COLLECTION, GROUP, Dashboard, run_module
from tests.support.http_target import http_target
from tests.support.jobs import NO_RETRY, every, http_action

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
JOB = "nightly-export"

# The browser's part. ARGS: group, collection, job (whose history holds one failed row, the newest).
SCRIPT = r"""
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const BASE = process.env.DASHBOARD_URL;
const KEY = process.env.API_KEY;
const READER_KEY = process.env.READER_KEY;
const ARGS = JSON.parse(process.env.SCENARIO_ARGS);
const ORIGIN = new URL(BASE).origin;
const WAIT = 60_000;
const e = encodeURIComponent;
const step = (text) => process.stderr.write(`[${new Date().toISOString().slice(11, 23)}] ${text}\n`);
const JOB_URL = `${BASE}#/job/${e(ARGS.group)}/${e(ARGS.collection)}/${e(ARGS.job)}`;
const JOB_PATH =
  `/subscriptions/${e(process.env.SUBSCRIPTION)}/resourceGroups/${e(ARGS.group)}` +
  `/providers/Microsoft.Scheduler/jobCollections/${e(ARGS.collection)}/jobs/${e(ARGS.job)}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
});
const problems = [];
const foreign = [];
const contexts = [];

/** A browser context of its own (its own session storage: one sign-in each) and its page. */
async function visit(options = {}) {
  const context = await browser.newContext({
    viewport: { width: 1360, height: 900 },
    locale: "en-GB",
    timezoneId: "Europe/Berlin",
    ...options,
  });
  contexts.push(context);
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (event) =>
      console.error(`CSP violation: ${event.violatedDirective} blocked ${event.blockedURI || "inline code"}`),
    );
  });
  context.on("request", (request) => {
    const url = request.url();
    if (!url.startsWith(ORIGIN) && !url.startsWith("data:")) foreign.push(url);
  });
  const page = await context.newPage();
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") {
      problems.push(`${message.type()}: ${message.text()}`);
    }
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  return page;
}

/** Sign in with ``key``; the caller's role as the dashboard's access route answered it. */
async function signIn(page, key) {
  await page.goto(BASE);
  const access = page.waitForResponse((response) => response.url().includes("/dashboard/api/access/"));
  await page.getByLabel("API key").fill(key);
  await page.getByLabel("Subscription ID").fill(process.env.SUBSCRIPTION);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();
  return (await (await access).json()).role;
}

/** The job page, once its history shows a failed row. */
async function jobPage(page) {
  await page.goto(JOB_URL);
  await page.getByRole("heading", { level: 1, name: ARGS.job }).waitFor();
  await page.locator('tbody tr[data-status="Failed"]').first().waitFor({ timeout: WAIT });
}

/** The history as the page shows it: each occurrence's heading and its rows' status, action and Re-run button. */
const historyGroups = (page) =>
  page.locator("tbody.occurrence").evaluateAll((bodies) =>
    bodies.map((body) => ({
      heading: body.querySelector("tr.occurrence-head th").textContent,
      rows: [...body.querySelectorAll("tr[data-status]")].map((row) => ({
        status: row.cells[2].textContent,
        action: row.cells[1].textContent,
        button: row.querySelector("button")?.getAttribute("aria-label") ?? null,
      })),
    })),
  );
const columnHeads = (page) =>
  page.getByRole("table", { name: /executions, newest first/ }).locator("thead th").allTextContents();
const statusOfHistory = (page) => page.locator("section[aria-labelledby=history-title] p[role=status]");
const observed = {};

try {
  step("a writer: Re-run on the failed row");
  const page = await visit();
  observed.writerRole = await signIn(page, KEY);
  await jobPage(page);
  const rerun = page.locator('tbody tr[data-status="Failed"]').first().getByRole("button", { name: /^Re-run / });
  await rerun.waitFor();
  observed.columns = await columnHeads(page);
  observed.buttonText = (await rerun.textContent()).trim();
  observed.buttonName = await rerun.getAttribute("aria-label");
  observed.before = await historyGroups(page);
  await rerun.click();
  const confirmation = statusOfHistory(page).filter({ hasText: "Re-run of" });
  await confirmation.waitFor();
  observed.confirmation = (await confirmation.textContent()).trim();
  observed.confirmationIsError = await confirmation.evaluate((p) => p.classList.contains("error"));
  const replayHead = page.locator("tr.occurrence-head th").filter({ hasText: "(replay)" });
  await replayHead.waitFor({ timeout: WAIT });
  const replayRows = page.locator("tbody.occurrence", { has: replayHead }).locator('tr[data-status="Completed"]');
  await replayRows.waitFor({ timeout: WAIT });
  observed.after = await historyGroups(page);
  observed.focus = await page.evaluate(() => document.activeElement?.getAttribute("aria-label"));
  observed.confirmationAfterPolls = (await confirmation.textContent()).trim();
  await page.screenshot({ path: join(process.env.SCREENSHOTS, "rerun.png"), fullPage: true });

  step("the page with the replay: axe-core's WCAG 2.1 A and AA rules (CSP bypassed to inject axe)");
  const audited = await visit({ bypassCSP: true });
  await signIn(audited, KEY);
  await jobPage(audited);
  await audited.locator("tr.occurrence-head th").filter({ hasText: "(replay)" }).waitFor({ timeout: WAIT });
  await audited.locator("td.rerun button").first().waitFor();
  await audited.evaluate(readFileSync(join(process.cwd(), "node_modules", "axe-core", "axe.min.js"), "utf8"));
  const result = await audited.evaluate(() =>
    axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } }),
  );
  observed.audit = {
    passes: result.passes.length,
    violations: result.violations.map(
      (v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
    ),
  };

  step("a Reader: the failed row, no Re-run; a forged rerun is refused");
  const reader = await visit();
  observed.readerRole = await signIn(reader, READER_KEY);
  await jobPage(reader);
  await reader.locator("tr.occurrence-head th").filter({ hasText: "(replay)" }).waitFor({ timeout: WAIT });
  observed.readerColumns = await columnHeads(reader);
  observed.readerGroups = await historyGroups(reader);
  observed.readerButtons = await reader.locator("main button").evaluateAll((buttons) =>
    buttons.filter((b) => b.offsetParent !== null).map((b) => b.getAttribute("aria-label") ?? b.textContent),
  );
  observed.forged = await reader.evaluate(async ({ url, key }) => {
    const answer = await fetch(url, { method: "POST", headers: { Authorization: `Bearer ${key}` } });
    return [answer.status, (await answer.json()).error.code];
  }, { url: `${JOB_PATH}/history/${e(ARGS.failedId)}/rerun?api-version=2026-12-01-preview`, key: READER_KEY });

  step("an API error: the job deleted meanwhile (live updates paused), then Re-run");
  await page.getByRole("button", { name: "Pause live updates" }).click();
  const deleted = await page.request.delete(`${ORIGIN}${JOB_PATH}?api-version=2026-12-01-preview`, {
    headers: { Authorization: `Bearer ${KEY}` },
  });
  observed.deleted = deleted.status();
  await rerun.click();
  const refusal = statusOfHistory(page).and(page.locator(".error"));
  await refusal.waitFor();
  observed.refusal = (await refusal.textContent()).trim();
  observed.enabledAgain = await rerun.isEnabled();
} finally {
  for (const context of contexts) observed.cookies = [...(observed.cookies ?? []), ...(await context.cookies())];
  await browser.close();
}
// The refusals provoked on purpose (the Reader's forged rerun: 403; the deleted job: 404) show up as failed
// resource loads; nothing else may.
const unexpected = problems.filter((text) => ![403, 404].some((code) => text.includes(`status of ${code}`)));
assert.deepEqual(unexpected, [], `console errors, page errors or CSP violations: ${unexpected.join(" | ")}`);
assert.deepEqual(foreign, [], `requests outside the dashboard's origin: ${foreign.join(", ")}`);
assert.deepEqual(observed.cookies, [], "the dashboard set a cookie");
process.stdout.write(`${JSON.stringify(observed)}\n`);
"""


def history(dashboard: Dashboard, count: int, timeout: float = 60) -> list[dict[str, Any]]:
    """The job's history once it holds at least ``count`` rows, each ended (api-version 2026-12-01-preview:
    with its trigger)."""
    url = dashboard.api.url(dashboard.job_path(JOB) + "/history", **{"api-version": PREVIEW})
    deadline = time.monotonic() + timeout
    while True:
        response = dashboard.api.call("GET", url)
        assert response.status_code == 200, response.text
        rows: list[dict[str, Any]] = response.json()["value"]
        if len(rows) >= count or time.monotonic() > deadline:
            assert len(rows) >= count, f"fewer than {count} history rows after {timeout} s: {rows}"
            return rows
        time.sleep(0.5)


def shown_utc(instant: str) -> str:
    """An instant as the page writes it in its default time mode (UTC)."""
    return datetime.fromisoformat(instant.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%S UTC")


def test_rerun_a_failed_occurrence_from_its_history_row(dashboard: Dashboard) -> None:
    dashboard.put_collection()
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    with http_target([500, 200]) as target:  # the occurrence fails; its replay succeeds
        action = http_action(f"{target.base_url}/export", method="GET", body=None, retryPolicy=NO_RETRY)
        dashboard.put_job(JOB, {"startTime": format_instant(tomorrow), "action": action, "recurrence": every("Hour")})
        assert dashboard.api.call("POST", dashboard.job_path(JOB) + "/run").status_code == 200
        [failed] = history(dashboard, 1)
        assert failed["properties"]["status"] == "Failed"
        seen = run_module(
            dashboard,
            SCRIPT,
            {"group": GROUP, "collection": COLLECTION, "job": JOB, "failedId": failed["name"]},
            timeout=240,
        )
        calls = list(target.received)

    occurrence = failed["properties"]["expectedExecutionTime"]
    name = f"Re-run the occurrence due {shown_utc(occurrence)}"
    # The failed row's button: "Re-run", named for its occurrence; the column is a writer's.
    assert seen["writerRole"] == "Contributor"
    assert seen["columns"][-1] == "Re-run"
    assert (seen["buttonText"], seen["buttonName"]) == ("Re-run", name)
    [before] = seen["before"]
    assert before["rows"] == [{"status": "Failed", "action": "main", "button": name}]
    assert "(manual)" in before["heading"]

    # The API replayed it: one call more, the occurrence's own time, the execution id the page named.
    assert len(calls) == 2
    replay = calls[1].headers["x-ms-scheduler-execution-id"]
    assert replay != failed["name"]
    assert calls[1].headers["x-ms-scheduler-expected-execution-time"] == occurrence
    assert seen["confirmation"] == (
        f"Re-run of the occurrence due {shown_utc(occurrence)} requested: it runs again now as execution {replay}, "
        "shown in the history as a replay within seconds."
    )
    assert seen["confirmationIsError"] is False
    assert seen["confirmationAfterPolls"] == seen["confirmation"]
    assert seen["focus"] == name  # the focus stays on the button while the history is drawn again

    # The replay's row under a heading of its own; a row that did not fail has no button.
    replayed, original = seen["after"]
    assert "(replay)" in replayed["heading"] and replayed["heading"].endswith("; Completed")
    assert replayed["rows"] == [{"status": "Completed", "action": "main", "button": None}]
    assert original == before
    assert seen["audit"]["violations"] == []

    # A Reader: the same rows, no Re-run column or button, and a forged rerun is the service's 403.
    assert seen["readerRole"] == "Reader"
    assert "Re-run" not in seen["readerColumns"]
    assert [[row["status"] for row in group["rows"]] for group in seen["readerGroups"]] == [["Completed"], ["Failed"]]
    assert all(row["button"] is None for group in seen["readerGroups"] for row in group["rows"])
    assert not any("Re-run" in (label or "") for label in seen["readerButtons"])
    assert seen["forged"] == [403, "AuthorizationFailed"]

    # The API error: the service's 404, said next to the history, naming the occurrence; the button works again.
    assert seen["deleted"] == 200
    assert seen["refusal"].startswith(f"Re-run of the occurrence due {shown_utc(occurrence)} failed: ")
    assert f"job '{JOB}' was not found" in seen["refusal"]
    assert seen["enabledAgain"] is True
    assert (dashboard.screenshots / "rerun.png").stat().st_size > 10_000
