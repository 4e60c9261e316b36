"""In a real browser, jobs whose recurrence holds ``cron`` (api-version 2026-12-01-preview: one cron string, or an
array of them whose union fires) instead of ``frequency``: the jobs list and the job's page describe the cron
(not "once") with its zone, count and end, and list the next instants the server computes; the editor writes
``recurrence.cron`` from its "Cron" recurrence (one string a line, no frequency, interval or schedule), keeps a
stored cron exactly while other fields are edited (a string stays a string, an array an array), and shows the
service's error for a malformed cron next to the field, naming the position, with nothing created.

The browser steps are a Node script (Playwright, ``playwright-core`` from npm, driving Chromium) given to
``node`` on its standard input, with the same whole-visit checks as ``scenarios.mjs``: no console error or
warning but the refusals provoked on purpose, no page error or CSP violation, no request outside the dashboard's
origin, no cookie.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from scheduler_core.recurrence import format_instant
from tests.browser.conftest import COLLECTION, GROUP, Dashboard, run_module
from tests.support.jobs import NO_RETRY, http_action

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
BERLIN = ZoneInfo("Europe/Berlin")
WEEKDAYS_AT_NINE = "0 9 * * MON-FRI"
LAST_DAY_AT_NOON = "0 12 L * *"
PREFIXED = "CRON_TZ=Europe/Berlin 0 0 L * *"
EVERY_15_MINUTES = "0 */15 * * * *"  # six fields: seconds first
TARGET = "http://127.0.0.1:9/never-called"  # every job starts tomorrow: nothing fires during the test

# The browser's part. ARGS: group, collection, jobs (the names of the jobs put through the API), created (a job
# the editor creates), createdUri, start, edited (a job with one cron string whose action the editor edits),
# bad (a job the editor must not create).
SCRIPT = r"""
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const BASE = process.env.DASHBOARD_URL;
const KEY = process.env.API_KEY;
const ARGS = JSON.parse(process.env.SCENARIO_ARGS);
const ORIGIN = new URL(BASE).origin;
const e = encodeURIComponent;
const step = (text) => process.stderr.write(`[${new Date().toISOString().slice(11, 23)}] ${text}\n`);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
});
const context = await browser.newContext({
  viewport: { width: 1360, height: 900 },
  locale: "en-GB",
  timezoneId: "Europe/Berlin",
});
await context.addInitScript(() => {
  document.addEventListener("securitypolicyviolation", (event) =>
    console.error(`CSP violation: ${event.violatedDirective} blocked ${event.blockedURI || "inline code"}`),
  );
});
const problems = [];
const foreign = [];
context.on("request", (request) => {
  const url = request.url();
  if (!url.startsWith(ORIGIN) && !url.startsWith("data:")) foreign.push(url);
});
const page = await context.newPage();
page.on("console", (message) => {
  if (message.type() === "error" || message.type() === "warning") problems.push(`${message.type()}: ${message.text()}`);
});
page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
const observed = { lists: {}, pages: {} };

/** The text of the error shown next to a field, whether the field is marked invalid, and the form's banner. */
async function fieldError(id, pattern) {
  const note = page.locator(`#${id}-error`).filter({ hasText: pattern });
  await note.waitFor();
  return {
    text: (await note.textContent()).trim(),
    invalid: await page.locator(`#${id}`).getAttribute("aria-invalid"),
    focus: await page.evaluate(() => document.activeElement?.id),
    banner: (await page.locator(".form-status").textContent()).trim(),
  };
}

/** A job as the management API returns it (api-version 2026-12-01-preview): its status and its body. */
async function stored(name) {
  const collection = `${e(ARGS.group)}/providers/Microsoft.Scheduler/jobCollections/${e(ARGS.collection)}`;
  const path = `/subscriptions/${e(process.env.SUBSCRIPTION)}/resourceGroups/${collection}/jobs/${e(name)}`;
  const url = `${ORIGIN}${path}?api-version=2026-12-01-preview`;
  const answer = await page.request.get(url, { headers: { Authorization: `Bearer ${KEY}` } });
  return { status: answer.status(), body: await answer.json() };
}

/** The instants a table of occurrences lists (its <time> elements' datetime). */
const datetimes = (table) =>
  table.locator("tbody time").evaluateAll((times) => times.map((t) => t.getAttribute("datetime")));

/** The job page's summary, its definition's pairs and its next occurrences (UTC and local). */
async function jobPage(name) {
  await page.goto(`${BASE}#/job/${e(ARGS.group)}/${e(ARGS.collection)}/${e(name)}`);
  await page.getByRole("heading", { level: 1, name }).waitFor();
  const occurrences = page.getByRole("table", { name: /^The next \d+ occurrences/ });
  await occurrences.waitFor();
  await page.locator("section dl.pairs").first().waitFor();
  const pairs = (list) =>
    list.evaluate((element) =>
      Object.fromEntries(
        [...element.querySelectorAll("dt")].map((dt) => [dt.textContent, dt.nextElementSibling.textContent]),
      ),
    );
  return {
    summary: await pairs(page.locator("dl.summary")),
    definition: await pairs(page.locator("section dl.pairs").first()),
    cron: await page.locator("ul.cron code").allTextContents(),
    utc: await datetimes(occurrences),
    local: await occurrences.locator("tbody tr").evaluateAll((rows) => rows.map((row) => row.cells[2]?.textContent)),
  };
}

async function newJob(name, cron) {
  await page.goto(`${BASE}#/new?collection=${e(`${ARGS.group}/${ARGS.collection}`)}`);
  await page.getByRole("heading", { level: 1, name: "New job" }).waitFor();
  await page.getByLabel("Name", { exact: true }).fill(name);
  await page.getByLabel("Type", { exact: true }).selectOption("Http");
  await page.getByLabel("URI", { exact: true }).fill(ARGS.createdUri);
  await page.getByLabel("Start time (UTC)").fill(ARGS.start);
  await page.getByLabel("Recurrence").selectOption("Cron");
  await page.getByLabel("Cron", { exact: true }).fill(cron);
  await page.getByLabel("Retry type").selectOption("None");
}

async function editAndSave(name, newBody) {
  await page.goto(`${BASE}#/edit/${e(ARGS.group)}/${e(ARGS.collection)}/${e(name)}`);
  await page.getByRole("heading", { level: 1, name: `Edit ${name}` }).waitFor();
  await page.waitForFunction(() => document.getElementById("request-uri")?.value);
  const seen = {
    recurrence: await page.getByLabel("Recurrence").inputValue(),
    cron: await page.getByLabel("Cron", { exact: true }).inputValue(),
    intervalShown: await page.getByLabel("Interval", { exact: true }).isVisible(),
    hoursShown: await page.getByLabel("Hours", { exact: true }).isVisible(),
    zone: await page.getByLabel("Time zone").inputValue(),
    count: await page.getByLabel("Count", { exact: true }).inputValue(),
  };
  await page.getByLabel("Body", { exact: true }).fill(newBody);
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByRole("heading", { level: 1, name }).waitFor();
  await page.locator("main p.notice", { hasText: `Job ${name} saved.` }).waitFor();
  return seen;
}

try {
  step("sign in");
  await page.goto(BASE);
  await page.getByLabel("API key").fill(KEY);
  await page.getByLabel("Subscription ID").fill(process.env.SUBSCRIPTION);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();

  step("the jobs list: each cron job's schedule");
  await page.goto(`${BASE}#/jobs?collection=${e(`${ARGS.group}/${ARGS.collection}`)}`);
  for (const name of ARGS.jobs) await page.locator("tbody th a", { hasText: name }).first().waitFor();
  observed.lists = await page.locator("tbody tr").evaluateAll((rows) =>
    Object.fromEntries(
      rows.map((row) => [row.querySelector("th a")?.textContent, row.querySelector("td.schedule")?.textContent]),
    ),
  );

  for (const name of ARGS.jobs) {
    step(`the page of ${name}`);
    observed.pages[name] = await jobPage(name);
  }

  step("a new job with two cron strings: preview, create");
  await newJob(ARGS.created, `${ARGS.crons.join("\n")}\n`);
  observed.createIntervalShown = await page.getByLabel("Interval", { exact: true }).isVisible();
  await page.getByLabel("Time zone").fill("Europe/Berlin");
  await page.getByLabel("Count", { exact: true }).fill("10");
  await page.getByRole("button", { name: "Check and preview" }).click();
  const preview = page.getByRole("table", { name: /occurrences if saved/ });
  await preview.waitFor();
  observed.previewTimes = await datetimes(preview);
  await page.getByRole("button", { name: "Create job" }).click();
  await page.getByRole("heading", { level: 1, name: ARGS.created }).waitFor();
  await page.locator("main p.notice", { hasText: `Job ${ARGS.created} saved.` }).waitFor();
  observed.createdStored = (await stored(ARGS.created)).body.properties;
  observed.createdPage = await jobPage(ARGS.created);

  step("edit the action of cron jobs: the cron is kept");
  observed.editCreated = await editAndSave(ARGS.created, "edited by the form");
  observed.editOne = await editAndSave(ARGS.edited, "edited by the form too");

  step("a malformed cron: the service's error, nothing created");
  await newJob(ARGS.bad, `${ARGS.crons[0]}\n* * * * 8`);
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.badInArray = await fieldError("recurrence-cron", /^properties\.recurrence\.cron\[1\]: /);
  observed.previewAfterError = (await page.locator("section[aria-labelledby=preview-title]").textContent()).trim();
  await page.getByLabel("Cron", { exact: true }).fill("* * * * 8");
  await page.getByRole("button", { name: "Create job" }).click();
  observed.badAlone = await fieldError("recurrence-cron", /^properties\.recurrence\.cron: /);
  observed.headingAfterError = (await page.locator("h1").textContent()).trim();
  observed.badStatus = (await stored(ARGS.bad)).status;
} catch (error) {
  await browser.close();
  throw error;
}
const cookies = await context.cookies();
await browser.close();
// The refusals provoked on purpose (a 400 of a malformed cron, the 404 of a name looked up before a create)
// show up as failed resource loads; nothing else may.
const unexpected = problems.filter((text) => ![400, 404].some((code) => text.includes(`status of ${code}`)));
assert.deepEqual(unexpected, [], `console errors, page errors or CSP violations: ${unexpected.join(" | ")}`);
assert.deepEqual(foreign, [], `requests outside the dashboard's origin: ${foreign.join(", ")}`);
assert.deepEqual(cookies, [], "the dashboard set a cookie");
process.stdout.write(`${JSON.stringify(observed)}\n`);
"""


def run_browser(dashboard: Dashboard, timeout: float = 180, **arguments: Any) -> dict[str, Any]:
    """Run :data:`SCRIPT` in a fresh browser; what it observed (the JSON it prints last)."""
    return run_module(dashboard, SCRIPT, arguments, timeout)


def job_url(dashboard: Dashboard, job: str) -> str:
    return dashboard.api.url(dashboard.job_path(job), **{"api-version": PREVIEW})


def put_job(dashboard: Dashboard, job: str, properties: dict[str, Any]) -> None:
    response = dashboard.api.call("PUT", job_url(dashboard, job), {"properties": properties})
    assert response.status_code in (200, 201), response.text


def get_job(dashboard: Dashboard, job: str) -> tuple[int, dict[str, Any]]:
    response = dashboard.api.call("GET", job_url(dashboard, job))
    return response.status_code, response.json()


def next_instants(dashboard: Dashboard, job: str) -> list[str]:
    """The next 10 instants of ``job`` as the server lists them (the dashboard's job route)."""
    url = f"{dashboard.api.base_url}/dashboard/api/job/{dashboard.job_path(job)}?count=10"
    response = dashboard.api.call("GET", url)
    assert response.status_code == 200, response.text
    return [occurrence["utc"] for occurrence in response.json()["occurrences"]]


def wall_clock(start: datetime, zone: ZoneInfo, times_on: Callable[[date], list[time]], count: int = 10) -> list[str]:
    """The first ``count`` instants from ``start`` at the wall-clock times ``times_on`` gives for each day in
    ``zone`` (none of them here falls in a skipped or repeated hour)."""
    found: list[datetime] = []
    day = start.astimezone(zone).date()
    while len(found) < count:
        for at in times_on(day):
            instant = datetime.combine(day, at, zone).astimezone(UTC)
            if instant >= start:
                found.append(instant)
        day += timedelta(days=1)
    return [format_instant(instant) for instant in sorted(found)[:count]]


def last_day(day: date) -> bool:
    return (day + timedelta(days=1)).month != day.month


def weekdays_at_nine(day: date) -> list[time]:
    return [time(9)] if day.weekday() < 5 else []


def union(day: date) -> list[time]:
    return weekdays_at_nine(day) + ([time(12)] if last_day(day) else [])


def utc_text(instant: datetime) -> str:
    """An instant as the page writes it in UTC (``format.ts``'s ``utc``)."""
    return instant.strftime("%Y-%m-%d %H:%M:%S UTC")


def test_cron_jobs_are_described_listed_created_edited_and_refused_in_the_dashboard(dashboard: Dashboard) -> None:
    dashboard.put_collection()
    start = (datetime.now(UTC) + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    end = start + timedelta(hours=3)
    action = http_action(TARGET, body="original", retryPolicy=NO_RETRY)
    recurrences: dict[str, dict[str, Any]] = {
        "cron-weekdays": {"cron": WEEKDAYS_AT_NINE, "timeZone": "Europe/Berlin", "count": 10},
        "cron-union": {"cron": [WEEKDAYS_AT_NINE, LAST_DAY_AT_NOON], "timeZone": "Europe/Berlin"},
        "cron-prefixed": {"cron": PREFIXED},
        "cron-quarter-hours": {"cron": EVERY_15_MINUTES, "endTime": format_instant(end)},
    }
    for name, recurrence in recurrences.items():
        put_job(dashboard, name, {"startTime": format_instant(start), "action": action, "recurrence": recurrence})
    served = {name: next_instants(dashboard, name) for name in recurrences}

    seen = run_browser(
        dashboard,
        group=GROUP,
        collection=COLLECTION,
        jobs=list(recurrences),
        crons=[WEEKDAYS_AT_NINE, LAST_DAY_AT_NOON],
        created="cron-made-here",
        createdUri=f"{TARGET}/made",
        start=format_instant(start),
        edited="cron-weekdays",
        bad="cron-refused",
    )

    # (a) Described as cron (one string, or the union " | "), with the zone, count and end; never "once".
    words = {
        "cron-weekdays": f"cron {WEEKDAYS_AT_NINE} (Europe/Berlin), 10 times",
        "cron-union": f"cron {WEEKDAYS_AT_NINE} | {LAST_DAY_AT_NOON} (Europe/Berlin)",
        "cron-prefixed": f"cron {PREFIXED}",
        "cron-quarter-hours": f"cron {EVERY_15_MINUTES}, until {utc_text(end)}",
    }
    assert {name: seen["lists"].get(name) for name in recurrences} == words
    for name, recurrence in recurrences.items():
        shown = seen["pages"][name]
        assert shown["summary"]["Schedule"] == words[name], name
        assert shown["definition"]["In words"] == words[name], name
        crons = recurrence["cron"] if isinstance(recurrence["cron"], list) else [recurrence["cron"]]
        assert shown["cron"] == crons, name
        assert shown["definition"]["Recurrence"] == (
            "cron" if len(crons) == 1 else f"cron: the union of {len(crons)} strings"
        )
    assert seen["pages"]["cron-prefixed"]["definition"]["Time zone"].startswith("Europe/Berlin")
    assert seen["pages"]["cron-weekdays"]["definition"]["Count"] == "10"

    # ... with the next instants the server lists, which are the cron's own.
    expected = {
        "cron-weekdays": wall_clock(start, BERLIN, weekdays_at_nine),
        "cron-union": wall_clock(start, BERLIN, union),
        "cron-prefixed": wall_clock(start, BERLIN, lambda day: [time(0)] if last_day(day) else []),
        "cron-quarter-hours": [format_instant(start + timedelta(minutes=15 * n)) for n in range(10)],
    }
    for name in recurrences:
        assert seen["pages"][name]["utc"] == served[name] == expected[name], name
    berlin = [
        datetime.fromisoformat(instant).astimezone(BERLIN).strftime("%Y-%m-%d %H:%M:%S")
        for instant in expected["cron-union"]
    ]
    assert [local[:19] for local in seen["pages"]["cron-union"]["local"]] == berlin

    # (b) The editor's "Cron" recurrence: two lines are an array, with no frequency, interval or schedule.
    assert seen["createIntervalShown"] is False
    assert seen["previewTimes"] == expected["cron-union"]
    created = seen["createdStored"]
    assert created["recurrence"] == {
        "cron": [WEEKDAYS_AT_NINE, LAST_DAY_AT_NOON],
        "timeZone": "Europe/Berlin",
        "count": 10,
    }
    assert created["action"]["request"] == {"uri": f"{TARGET}/made", "method": "POST"}
    assert seen["createdPage"]["summary"]["Schedule"] == (
        f"cron {WEEKDAYS_AT_NINE} | {LAST_DAY_AT_NOON} (Europe/Berlin), 10 times"
    )
    assert seen["createdPage"]["utc"] == expected["cron-union"]
    # Editing the action keeps the cron exactly: the form showed it, one string a line.
    assert seen["editCreated"] == {
        "recurrence": "Cron",
        "cron": f"{WEEKDAYS_AT_NINE}\n{LAST_DAY_AT_NOON}",
        "intervalShown": False,
        "hoursShown": False,
        "zone": "Europe/Berlin",
        "count": "10",
    }
    _, made = get_job(dashboard, "cron-made-here")
    assert made["properties"]["action"]["request"]["body"] == "edited by the form"
    assert made["properties"]["recurrence"] == {
        "cron": [WEEKDAYS_AT_NINE, LAST_DAY_AT_NOON],
        "timeZone": "Europe/Berlin",
        "count": 10,
    }
    assert seen["editOne"]["cron"] == WEEKDAYS_AT_NINE
    _, one = get_job(dashboard, "cron-weekdays")
    assert one["properties"]["action"]["request"]["body"] == "edited by the form too"
    assert one["properties"]["recurrence"] == recurrences["cron-weekdays"]  # still one string, not an array

    # (c) A malformed cron: the service's error, naming the position, next to the field; nothing created.
    bad = "at position 9 (day-of-week): 8 is outside 0-7, in '* * * * 8'"
    assert seen["badInArray"]["text"] == f"properties.recurrence.cron[1]: {bad}"
    assert seen["badAlone"]["text"] == f"properties.recurrence.cron: {bad}"
    for refused in (seen["badInArray"], seen["badAlone"]):
        assert refused["invalid"] == "true"
        assert refused["focus"] == "recurrence-cron"
        assert refused["banner"] == f"The service refused it: {refused['text']}"
    assert "the service refused the definition" in seen["previewAfterError"]
    assert seen["headingAfterError"] == "New job"
    assert seen["badStatus"] == 404
    assert get_job(dashboard, "cron-refused")[0] == 404
