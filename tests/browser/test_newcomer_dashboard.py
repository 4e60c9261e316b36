"""In a real browser, a newcomer's first minutes with the dashboard, against the function app on the local host
(every trigger, Azurite) and a real HTTP target on 127.0.0.1:

* a Contributor signs in to an empty subscription: the collections page says how to make a collection, and the
  job form's empty Collection list says it too; "Check and preview" says "Not valid:", "Create job" says
  "Not saved:" for the same local problem;
* *New collection* on the collections page: name, resource group, location and plan (Standard by default), sent
  as a PUT of the management API; the service's ARM error is shown at the field it names (an empty location);
  the new collection is listed, and the notice leads to the job form; a second collection of the same name is
  refused at the name field and the first is not overwritten;
* a job made with the form without touching the start time (it is empty) runs at once: the target is called
  within seconds of *Create job*;
* a hostile collection name: one with ``</script>`` is refused by the service at the name field, shown as
  text; one with markup and a right-to-left override is created and listed as inert text (the override
  escaped); nothing runs, no element is added, no CSP violation;
* a Reader sees no *New collection* control (the empty page tells them who can make one), and a PUT of a
  collection forged with the Reader's key is the service's 403; the sign-in form says which subscription ID
  to enter.

The browser steps are a Node script (Playwright, ``playwright-core`` from npm, driving Chromium) given to
``node`` on its standard input, with the whole-visit checks of ``scenarios.mjs``: no console error or warning
but the refusals provoked on purpose, no page error or CSP violation, no request outside the dashboard's
origin, no cookie, nothing in local storage. The audit runs in a second context that bypasses the CSP.
"""

from __future__ import annotations

from datetime import datetime
from itertools import pairwise
from typing import Any
from urllib.parse import quote

import pytest

from tests.browser.conftest import SUBSCRIPTION, Dashboard, run_module
from tests.support.http_target import http_target

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
RTL = "\u202e"
#: A name the service refuses ("/" is never part of a name) and one it accepts, both markup.
REFUSED_NAME = "<script>window.__pwned=1</script>"
INERT_NAME = f"<img src=x onerror=window.__pwned=2>{RTL}cod.exe"

SCRIPT = r"""
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const BASE = process.env.DASHBOARD_URL;
const SUBSCRIPTION = process.env.SUBSCRIPTION;
const ARGS = JSON.parse(process.env.SCENARIO_ARGS);
const KEY = ARGS.key;
const ORIGIN = new URL(BASE).origin;
const e = encodeURIComponent;
const step = (text) => process.stderr.write(`[${new Date().toISOString().slice(11, 23)}] ${text}\n`);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
});
const VIEWPORT = { width: 1360, height: 900 };
const context = await browser.newContext({ viewport: VIEWPORT, locale: "en-GB", timezoneId: "UTC" });
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
page.setDefaultTimeout(20_000);
page.on("console", (message) => {
  if (message.type() === "error" || message.type() === "warning") problems.push(`${message.type()}: ${message.text()}`);
});
page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
const observed = { audits: {} };

const shot = (name) => page.screenshot({ path: join(ARGS.screenshots, name), fullPage: true });
const text = async (locator) => ((await locator.textContent()) ?? "").trim();

async function signIn(key) {
  await page.goto(BASE);
  await page.getByLabel("API key").fill(key);
  await page.getByLabel("Subscription ID").fill(SUBSCRIPTION);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();
}

/** The error shown next to the field of id ``id`` (its text, aria-invalid, the focus, the form's status). */
async function fieldError(id, pattern, status = ".collection-status") {
  const note = page.locator(`#${id}-error`).filter({ hasText: pattern });
  await note.waitFor();
  return {
    text: await text(note),
    invalid: await page.locator(`#${id}`).getAttribute("aria-invalid"),
    describedBy: await page.locator(`#${id}`).getAttribute("aria-describedby"),
    focus: await page.evaluate(() => document.activeElement?.id),
    status: await text(page.locator(status)),
  };
}

/** Markup the page would hold if a name had got in as HTML: elements that run or load something. */
const injected = () =>
  page.evaluate(() => ({
    pwned: window.__pwned ?? null,
    elements: document.querySelectorAll("main script, main img, main svg, main iframe, main object").length,
    handlers: [...document.querySelectorAll("main *")].filter((el) =>
      [...el.attributes].some((a) => a.name.startsWith("on")),
    ).length,
  }));

async function openNewCollection() {
  await page.getByRole("button", { name: "New collection" }).click();
  await page.getByLabel("Collection name").waitFor();
}

async function audit(name, prepare) {
  const auditing = await browser.newContext({ viewport: VIEWPORT, locale: "en-GB", bypassCSP: true });
  const other = await auditing.newPage();
  await other.goto(BASE);
  await other.getByLabel("API key").fill(KEY);
  await other.getByLabel("Subscription ID").fill(SUBSCRIPTION);
  await other.getByRole("button", { name: "Sign in" }).click();
  await other.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();
  await prepare(other);
  await other.evaluate(readFileSync(join(process.cwd(), "node_modules", "axe-core", "axe.min.js"), "utf8"));
  const result = await other.evaluate(async () =>
    await axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } }),
  );
  observed.audits[name] = {
    passes: result.passes.length,
    violations: result.violations.map(
      (v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
    ),
  };
  await auditing.close();
}

async function contributor() {
  step("sign in to an empty subscription");
  await signIn(KEY);
  await page.locator("td.empty").filter({ hasText: "New collection" }).waitFor();
  observed.emptyText = await text(page.locator("td.empty"));
  await shot("empty-subscription.png");

  step("the job form while there is no collection");
  await page.goto(`${BASE}#/new`);
  await page.getByRole("heading", { level: 1, name: "New job" }).waitFor();
  await page.locator("#job-collection-input-help").filter({ hasText: "New collection" }).waitFor();
  observed.emptyCollectionHelp = await text(page.locator("#job-collection-input-help"));
  observed.collectionOptions = await page
    .locator("#job-collection-input option")
    .evaluateAll((options) => options.map((o) => [o.value, o.textContent]));
  await page.getByRole("button", { name: "Check and preview" }).click();
  await page.locator("#job-collection-input-error").waitFor();
  observed.checkStatus = await text(page.locator(".form-status"));
  await page.getByRole("button", { name: "Create job" }).click();
  await page.locator(".form-status").filter({ hasText: "Not saved" }).waitFor();
  observed.saveStatus = await text(page.locator(".form-status"));
  await shot("job-form-without-collection.png");

  step("New collection: its form and defaults");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Collections" }).click();
  await page.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();
  await openNewCollection();
  observed.defaults = {
    name: await page.getByLabel("Collection name").inputValue(),
    group: await page.getByLabel("Resource group").inputValue(),
    location: await page.getByLabel("Location").inputValue(),
    plan: await page.getByLabel("Plan").inputValue(),
    plans: await page.locator("#collection-plan option").evaluateAll((options) => options.map((o) => o.value)),
    expanded: await page.getByRole("button", { name: "New collection" }).getAttribute("aria-expanded"),
  };

  step("an empty location: the service's error at the location field");
  await page.getByLabel("Collection name").fill(ARGS.collection);
  await page.getByLabel("Location").fill("");
  await page.getByRole("button", { name: "Create collection" }).click();
  observed.locationError = await fieldError("collection-location", /^location: /);
  await shot("new-collection-error.png");
  const lookup = await page.request.get(ARGS.collectionUrl, { headers: { Authorization: `Bearer ${KEY}` } });
  observed.afterLocationError = lookup.status();

  step("create it");
  await page.getByLabel("Location").fill(ARGS.location);
  await page.getByRole("button", { name: "Create collection" }).click();
  const notice = page.locator("p.notice").filter({ hasText: "created" });
  await notice.waitFor();
  observed.notice = await text(notice);
  observed.noticeLinks = await notice
    .getByRole("link")
    .evaluateAll((links) => links.map((a) => [a.textContent, a.getAttribute("href")]));
  observed.focusAfterCreate = await page.evaluate(() => document.activeElement?.textContent);
  const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: ARGS.collection, exact: true }) });
  await row.waitFor();
  observed.row = (await row.getByRole("cell").allTextContents()).map((cell) => cell.trim());
  observed.formHidden = await page.getByLabel("Collection name").isHidden();
  await shot("collection-created.png");

  step("a job in it with the form, the start time untouched");
  await notice.getByRole("link").first().click();
  await page.getByRole("heading", { level: 1, name: "New job" }).waitFor();
  await page.waitForFunction(() => document.getElementById("job-collection-input")?.options.length > 0);
  observed.editor = {
    collection: await text(page.locator("#job-collection-input option:checked")),
    start: await page.getByLabel("Start time (UTC)").inputValue(),
    startHelp: await text(page.locator("#start-time-help")),
  };
  await page.getByLabel("Name", { exact: true }).fill(ARGS.job);
  await page.getByLabel("Type", { exact: true }).selectOption("Http");
  await page.getByLabel("Method").selectOption("GET");
  await page.getByLabel("URI", { exact: true }).fill(ARGS.target);
  await page.getByLabel("Recurrence").selectOption("Minute");
  await page.getByLabel("Interval", { exact: true }).fill("1");
  await page.getByLabel("Retry type").selectOption("None");
  await page.getByRole("button", { name: "Check and preview" }).click();
  const preview = page.getByRole("table", { name: /occurrences if saved/ });
  await preview.waitFor();
  observed.previewTimes = await preview
    .locator("tbody time")
    .evaluateAll((times) => times.map((t) => t.getAttribute("datetime")));
  observed.savedAt = Date.now() / 1000;
  await page.getByRole("button", { name: "Create job" }).click();
  await page.getByRole("heading", { level: 1, name: ARGS.job }).waitFor();
  await page.locator("main p.notice", { hasText: `Job ${ARGS.job} saved.` }).waitFor();

  step("the same collection name again: refused at the name field, nothing overwritten");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Collections" }).click();
  await page.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();
  await page.getByRole("link", { name: ARGS.collection, exact: true }).waitFor();
  observed.listedLinks = await page.locator("main a").evaluateAll((links) => links.map((a) => a.textContent));
  await openNewCollection();
  await page.getByLabel("Collection name").fill(ARGS.collection.toUpperCase());
  await page.getByLabel("Plan").selectOption("P10Premium");
  await page.getByRole("button", { name: "Create collection" }).click();
  observed.duplicate = await fieldError("collection-name", /already exists/);

  step("audit: the collections page with the form open and an error shown");
  await audit("new collection with an error", async (other) => {
    await other.getByRole("button", { name: "New collection" }).click();
    await other.getByLabel("Location").fill("");
    await other.getByLabel("Collection name").fill("audited");
    await other.getByRole("button", { name: "Create collection" }).click();
    await other.locator("#collection-location-error").waitFor();
  });
  observed.expectedStatuses = [400, 404, 409];
}

async function hostile() {
  step("sign in; a collection name with </script>: the service's refusal at the name field, as text");
  await signIn(KEY);
  await openNewCollection();
  await page.getByLabel("Collection name").fill(ARGS.refused);
  await page.getByRole("button", { name: "Create collection" }).click();
  observed.refused = await fieldError("collection-name", /^jobCollectionName: /);
  observed.afterRefused = await injected();

  step("a name with markup and a right-to-left override: created, listed as inert text");
  await page.getByLabel("Collection name").fill(ARGS.inert);
  await page.getByRole("button", { name: "Create collection" }).click();
  const notice = page.locator("p.notice").filter({ hasText: "created" });
  await notice.waitFor();
  observed.notice = await text(notice);
  await page.locator("tbody th a").first().waitFor();
  observed.listed = await page.locator("tbody th a").allTextContents();
  observed.afterInert = await injected();
  await page.waitForTimeout(300);
  observed.expectedStatuses = [400, 404];
}

async function reader() {
  step("the sign-in form: which subscription ID to enter");
  await page.goto(BASE);
  await page.getByLabel("Subscription ID").waitFor();
  observed.subscriptionHelp = await text(page.locator("#subscription-help"));
  observed.describedBy = await page.getByLabel("Subscription ID").getAttribute("aria-describedby");

  step("a Reader on an empty subscription: no New collection control");
  await signIn(KEY);
  await page.locator("td.empty").filter({ hasText: "Contributor" }).waitFor();
  observed.emptyText = await text(page.locator("td.empty"));
  await page.waitForTimeout(500);
  observed.controls = {
    newCollection: await page.getByRole("button", { name: "New collection" }).count(),
    inputs: await page.locator("main input:visible, main select:visible").count(),
    newJob: await page.getByRole("link", { name: "New job" }).count(),
  };

  step("a PUT of a collection forged with the Reader's key");
  observed.forged = await page.evaluate(async ({ url, key }) => {
    const answer = await fetch(url, {
      method: "PUT",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ location: "westus", properties: { sku: { name: "Standard" } } }),
    });
    const body = await answer.json();
    return { status: answer.status, code: body.error?.code, message: body.error?.message };
  }, { url: ARGS.forgedUrl, key: KEY });
  observed.expectedStatuses = [403];
}

try {
  if (ARGS.scenario === "contributor") await contributor();
  else if (ARGS.scenario === "hostile") await hostile();
  else await reader();
} catch (error) {
  const failed = join(ARGS.screenshots, `failed-${ARGS.scenario}.png`);
  await page.screenshot({ path: failed, fullPage: true }).catch(() => {});
  await browser.close();
  throw error;
}
const cookies = await context.cookies();
const storage = await page.evaluate(() => localStorage.length);
await browser.close();
const expected = observed.expectedStatuses ?? [];
const unexpected = problems.filter((line) => !expected.some((code) => line.includes(`status of ${code}`)));
assert.deepEqual(unexpected, [], `console errors, page errors or CSP violations: ${unexpected.join(" | ")}`);
assert.deepEqual(foreign, [], `requests outside the dashboard's origin: ${foreign.join(", ")}`);
assert.deepEqual(cookies, [], "the dashboard set a cookie");
assert.equal(storage, 0, "the dashboard wrote to localStorage");
// A name may hold U+2028, which Python's splitlines() takes for a line break: escaped.
const line = JSON.stringify(observed).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
process.stdout.write(`${line}\n`);
"""


def run_browser(dashboard: Dashboard, timeout: float = 180, **arguments: Any) -> dict[str, Any]:
    """Run :data:`SCRIPT` in a fresh browser; what it observed (the JSON it prints last)."""
    return run_module(
        dashboard, SCRIPT, {"key": dashboard.api.key, "screenshots": str(dashboard.screenshots), **arguments}, timeout
    )


def collection_path(group: str, name: str) -> str:
    return (
        f"subscriptions/{SUBSCRIPTION}/resourceGroups/{quote(group, safe='')}"
        f"/providers/Microsoft.Scheduler/jobCollections/{quote(name, safe='')}"
    )


def preview_get(dashboard: Dashboard, path: str) -> tuple[int, Any]:
    response = dashboard.api.call("GET", dashboard.api.url(path, **{"api-version": PREVIEW}))
    return response.status_code, response.json()


def collections(dashboard: Dashboard) -> list[dict[str, Any]]:
    path = f"subscriptions/{SUBSCRIPTION}/providers/Microsoft.Scheduler/jobCollections"
    status, data = preview_get(dashboard, path)
    assert status == 200, data
    found: list[dict[str, Any]] = data["value"]
    return found


def test_a_contributor_makes_a_collection_then_a_job_that_runs_at_once(dashboard: Dashboard) -> None:
    assert collections(dashboard) == []  # a fresh install: nothing in the subscription
    with http_target() as target:
        seen = run_browser(
            dashboard,
            scenario="contributor",
            collection="first",
            location="westus",
            job="ping",
            target=f"{target.base_url}/ping",
            collectionUrl=dashboard.api.url(collection_path("default", "first"), **{"api-version": PREVIEW}),
        )
        [first, *_] = target.wait_for(1, timeout=30)

    # The empty subscription says what to do, on the collections page and in the job form.
    assert "New collection" in seen["emptyText"], seen["emptyText"]
    assert "New collection" in seen["emptyCollectionHelp"] and "Collections" in seen["emptyCollectionHelp"]
    assert seen["collectionOptions"] == [["", "none yet"]]
    # One local problem, worded for each button: the check never saves.
    assert seen["checkStatus"].startswith("Not valid: collection: "), seen["checkStatus"]
    assert seen["saveStatus"].startswith("Not saved: collection: "), seen["saveStatus"]
    # The form: Standard by default, the four plans, a resource group and a location filled in.
    assert seen["defaults"] == {
        "name": "",
        "group": "default",
        "location": "westus",
        "plan": "Standard",
        "plans": ["Free", "Standard", "P10Premium", "P20Premium"],
        "expanded": "true",
    }
    # The service's ARM error at the field it names; nothing created.
    location = seen["locationError"]
    assert location["text"] == "location: must not be empty", location
    assert location["invalid"] == "true" and location["focus"] == "collection-location"
    assert "collection-location-error" in location["describedBy"]
    assert location["status"] == f"Not created: {location['text']}"
    assert seen["afterLocationError"] == 404
    # Created: listed, and the notice leads to the job form of that collection.
    assert seen["notice"].startswith("Job collection default/first created."), seen["notice"]
    assert seen["noticeLinks"] == [["New job in default/first", "#/new?collection=default%2Ffirst"]]
    assert seen["focusAfterCreate"] == "New job in default/first"
    assert seen["row"][:3] == ["default", "westus", "Standard"], seen["row"]
    assert seen["formHidden"] is True
    assert "New job" in seen["listedLinks"]  # beside New collection, once a collection exists
    [made] = collections(dashboard)
    assert made["name"] == "first" and made["location"] == "westus"
    assert made["properties"]["sku"] == {"name": "Standard"}
    # The job form: the collection chosen, the start time empty, its help saying what empty means.
    assert seen["editor"]["collection"] == "default/first"
    assert seen["editor"]["start"] == ""
    assert "saved" in seen["editor"]["startHelp"] and "at once" in seen["editor"]["startHelp"], seen["editor"]
    # The dry run: from when it would be saved, every minute.
    times = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in seen["previewTimes"]]
    assert len(times) == 10 and all((b - a).total_seconds() == 60 for a, b in pairwise(times))
    assert abs(times[0].timestamp() - seen["savedAt"]) < 60, (times[0], seen["savedAt"])
    # Saved without a start time: the first run is at once, not at the next full hour.
    assert first.path == "/ping" and first.method == "GET"
    assert 0 <= first.at - seen["savedAt"] < 10, (first.at, seen["savedAt"])
    status, job = preview_get(dashboard, collection_path("default", "first") + "/jobs/ping")
    assert status == 200, job
    assert job["properties"]["recurrence"] == {"frequency": "Minute", "interval": 1}
    # The same name again (any casing): refused at the name field; the collection keeps its plan.
    duplicate = seen["duplicate"]
    assert duplicate["text"].startswith("jobCollectionName: a job collection named FIRST already exists"), duplicate
    assert duplicate["invalid"] == "true" and duplicate["focus"] == "collection-name"
    assert [c["properties"]["sku"]["name"] for c in collections(dashboard)] == ["Standard"]
    for name, audit in seen["audits"].items():
        assert audit["violations"] == [], (name, audit)
        assert audit["passes"] >= 10, name


def test_a_hostile_collection_name_is_refused_or_shown_as_text(dashboard: Dashboard) -> None:
    seen = run_browser(dashboard, scenario="hostile", refused=REFUSED_NAME, inert=INERT_NAME)

    # The service names the segment as it arrived (percent-encoded by the page: the "/" is %2F).
    refused = seen["refused"]
    assert refused["text"] == (
        f"jobCollectionName: '{quote(REFUSED_NAME, safe='')}' is not a valid name: it must not contain any of "
        "/ \\ ? # % (found an encoded '/', %2F) (see docs/names.md)"
    ), refused
    assert refused["invalid"] == "true" and refused["focus"] == "collection-name"
    assert refused["status"] == f"Not created: {refused['text']}"
    nothing = {"pwned": None, "elements": 0, "handlers": 0}
    assert seen["afterRefused"] == nothing
    # Accepted by the name rule: created, and shown with the override as a visible escape, never as markup.
    shown = INERT_NAME.replace(RTL, "\\u202e")
    assert seen["notice"].startswith(f"Job collection default/{shown} created."), seen["notice"]
    assert seen["listed"] == [shown]
    assert seen["afterInert"] == nothing
    assert [c["name"] for c in collections(dashboard)] == [INERT_NAME]


def test_a_reader_gets_no_new_collection_control_and_the_sign_in_says_what_to_enter(dashboard: Dashboard) -> None:
    forged = dashboard.api.url(collection_path("default", "forged"), **{"api-version": PREVIEW})
    seen = run_browser(dashboard, scenario="reader", key=dashboard.reader_key, forgedUrl=forged)

    help_text = seen["subscriptionHelp"]
    assert "make run" in help_text and "demo" in help_text and "any name" in help_text, help_text
    assert "Azure" in help_text and "created under" in help_text, help_text
    assert seen["describedBy"] == "subscription-help"
    assert "Contributor" in seen["emptyText"], seen["emptyText"]
    assert seen["controls"] == {"newCollection": 0, "inputs": 0, "newJob": 0}
    assert seen["forged"]["status"] == 403 and seen["forged"]["code"] == "AuthorizationFailed", seen["forged"]
    assert preview_get(dashboard, collection_path("default", "forged"))[0] == 404
    assert collections(dashboard) == []
