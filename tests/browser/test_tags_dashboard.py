"""In a real browser, job tags and descriptions (api-version 2026-12-01-preview): the jobs list shows each job's
tags as text and filters by tags and by last outcome through the API's ``$filter`` (the jobs shown are exactly
those the API lists for that filter, across collections; several tags must all match, names without regard to
case, values exactly, a quote in a value written as OData's ``''``), keeps the filter in the address across a
reload, and shows the service's 400 when it refuses a filter; the job page shows the description and the tags,
each tag linking to the jobs that have it; the editor edits both (one ``name=value`` a line), keeps every other
field, and an untouched tag, exactly, shows the service's 400 for ``properties.tags...`` and
``properties.description`` at their fields, and an unchanged save keeps the job as stored.

Hostile tags and descriptions (markup that would run, ``alert(1)``, bidirectional overrides and isolates) are
shown as text: the page runs with its CSP bypassed, so the page's own text handling is what is tested, with a
trap on ``window.__pwned``, a record of every dialog (``alert``), and a MutationObserver recording every
element that could run or load something, ``on*`` attribute and non-fragment link the page adds; a probe at the
end shows the trap catches a payload that does get in.

The browser steps are a Node script (Playwright, ``playwright-core`` from npm, driving Chromium) given to
``node`` on its standard input, with the whole-visit checks of ``scenarios.mjs``: no console error or warning
but the refusals provoked on purpose (400s), no page error, no request outside the dashboard's origin, no
cookie.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import pytest

from scheduler_core.recurrence import format_instant
from tests.browser.conftest import GROUP, Dashboard, run_module
from tests.support.http_target import http_target
from tests.support.jobs import NO_RETRY, every, http_action
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
NIGHTLY, WEEKLY = "nightly", "weekly"
RLO, LRI, PDI = "\u202e", "\u2066", "\u2069"
NEVER = "http://127.0.0.1:9/never-called"  # every job starts tomorrow: only the jobs run on purpose run
ALERT = "<img src=x onerror=alert(1)>"
HOSTILE_TAGS = {
    "note": ALERT,
    "bidi": f"report{RLO}txt.exe",
    "trap": "<img src=x onerror=window.__pwned=1>",
    f"x{RLO}Name": f"{LRI}isolate{PDI}",
    "team": "payments",
    "quote": "it's",
}
HOSTILE_DESCRIPTION = f'<script>window.__pwned=2</script>"><img src=x onerror=window.__pwned=3>{RLO}evil'
PAY_DESCRIPTION = "Charges the cards nightly.\nThen reports to finance."
#: Each job: its collection, tags and description (the ones run on purpose are pay-ok and pay-fail).
JOBS: dict[str, tuple[str, dict[str, str], str | None]] = {
    "pay-api": (NIGHTLY, {"team": "payments", "env": "prod"}, PAY_DESCRIPTION),
    "pay-batch": (NIGHTLY, {"team": "payments", "env": "staging", "owner": "O'Brien", "pad": "  padded  "}, None),
    "search-api": (NIGHTLY, {"team": "search", "env": "prod"}, "Indexes the catalog."),
    "untagged": (NIGHTLY, {}, None),
    "pay-ok": (NIGHTLY, {"team": "payments", "env": "prod"}, None),
    "pay-fail": (NIGHTLY, {"Team": "payments"}, None),  # the name in another case
    "hostile-tags": (NIGHTLY, HOSTILE_TAGS, HOSTILE_DESCRIPTION),
    "weekly-pay": (WEEKLY, {"TEAM": "payments", "ENV": "prod"}, None),
}
#: The filters the list is given (each a list of name=value tags and a last outcome), and what each must show.
FILTERS: dict[str, tuple[list[str], str, set[str]]] = {
    "oneTag": (["team=payments"], "", {"pay-api", "pay-batch", "pay-ok", "pay-fail", "hostile-tags", "weekly-pay"}),
    "twoTags": (["team=payments", "env=prod"], "", {"pay-api", "pay-ok", "weekly-pay"}),
    "tagAndFailed": (["team=payments"], "Failed", {"pay-fail"}),
    "tagAndCompleted": (["team=payments"], "Completed", {"pay-ok"}),
    "failedOnly": ([], "Failed", {"pay-fail"}),
    "quoted": (["owner=O'Brien"], "", {"pay-batch"}),
    "hostileValue": ([f"note={ALERT}"], "", {"hostile-tags"}),
}
#: A tag filter the service refuses: a name with a space ($filter reads a name up to white space).
BAD_TAG = "cost center=42"
#: What the editor writes into pay-batch: a changed value, a new tag with spaces to drop, an untouched line.
EDITED_TAGS = "team=payments\nenv=prod\nowner=O'Brien\npad=  padded  \n new tag = spaced value \n"
EDITED_DESCRIPTION = 'Edited in the dashboard.\nLine two <b>bold</b> & "quoted"'

# The browser's part. ARGS: group, jobs ({name: collection}), total, filters ({key: [tags, outcome]}), badTag,
# page (a job whose page is read and whose first tag is followed), hostile, edited, editedTags,
# editedDescription.
SCRIPT = r"""
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const BASE = process.env.DASHBOARD_URL;
const KEY = process.env.API_KEY;
const ARGS = JSON.parse(process.env.SCENARIO_ARGS);
const ORIGIN = new URL(BASE).origin;
const WAIT = 60_000;
const e = encodeURIComponent;
const step = (text) => process.stderr.write(`[${new Date().toISOString().slice(11, 23)}] ${text}\n`);

// The trap (as scenarios.mjs's hostileNames): any assignment of window.__pwned, and every element that could
// run or load something, on* attribute and non-fragment link the page adds.
const TRAP = () => {
  const hits = [];
  const foreign = [];
  Object.defineProperty(window, "__pwned", {
    configurable: false,
    get: () => undefined,
    set: (value) => {
      hits.push(String(value));
      console.error(`PWNED: window.__pwned = ${value}`);
    },
  });
  Object.defineProperty(window, "__pwnedHits", { get: () => hits.slice() });
  Object.defineProperty(window, "__foreign", { get: () => foreign.slice() });
  const RISKY = new Set([
    "SCRIPT", "IMG", "SVG", "IFRAME", "FRAME", "OBJECT", "EMBED", "STYLE", "LINK", "META", "BASE", "FORM", "MATH",
    "TEMPLATE", "VIDEO", "AUDIO", "SOURCE",
  ]);
  const OWN_FORMS = ["editor", "buttons", "filters", "signin"];
  const icon = (node) =>
    node.parentElement?.matches("a.brand") && node.getAttribute("src") === "/dashboard/assets/icon.svg";
  const inspect = (element) => {
    if (element.nodeType !== 1) return;
    for (const node of [element, ...element.querySelectorAll("*")]) {
      const tag = node.tagName.toUpperCase();
      if (node.closest("head") || (tag === "IMG" && icon(node))) continue;
      const own = tag === "FORM" && OWN_FORMS.some((name) => node.classList.contains(name));
      if (RISKY.has(tag) && !own) foreign.push(`<${tag.toLowerCase()}> added`);
      for (const attribute of node.attributes) {
        if (attribute.name.toLowerCase().startsWith("on")) foreign.push(`${attribute.name} on <${tag.toLowerCase()}>`);
      }
      const href = node.getAttribute("href");
      if (tag === "A" && href !== null && !href.startsWith("#")) foreign.push(`a href=${href}`);
    }
  };
  new MutationObserver((records) => {
    for (const record of records) {
      if (record.type === "attributes") inspect(record.target);
      for (const node of record.addedNodes) inspect(node);
    }
  }).observe(document, { childList: true, subtree: true, attributes: true });
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
});
const context = await browser.newContext({
  viewport: { width: 1360, height: 900 },
  locale: "en-GB",
  timezoneId: "Europe/Berlin",
  bypassCSP: true,
});
await context.addInitScript(TRAP);
const problems = [];
const foreign = [];
const dialogs = [];
context.on("request", (request) => {
  const url = request.url();
  if (!url.startsWith(ORIGIN) && !url.startsWith("data:")) foreign.push(url);
});
const page = await context.newPage();
page.on("console", (message) => {
  if (message.type() === "error" || message.type() === "warning") problems.push(`${message.type()}: ${message.text()}`);
});
page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
page.on("dialog", (dialog) => {
  dialogs.push(`${dialog.type()}: ${dialog.message()}`);
  void dialog.dismiss();
});
const observed = { filters: {}, hits: [], foreign: [] };
let probeFrom = null; // where the probe's own console lines start (its payload, its image's 404)

/** After each step (and before a reload, which starts the trap afresh): fail at once, naming the step. */
async function collect(where) {
  const { hits, foreign: added } = await page.evaluate(() => ({ hits: window.__pwnedHits, foreign: window.__foreign }));
  observed.hits.push(...hits);
  observed.foreign.push(...added);
  const caught = [...observed.hits, ...observed.foreign, ...dialogs];
  assert.deepEqual(caught, [], `a payload ran or was added as markup by ${where}`);
}

/** The list once the service has answered its filter: the names shown, the count, the address, the filter's
 * tags as shown and its error (if any). */
async function settled() {
  const done = () => /^\d+ of \d+ jobs shown$/.test(document.querySelector("p.count")?.textContent ?? "");
  await page.waitForFunction(done, null, { timeout: WAIT });
  return page.evaluate(() => ({
    jobs: [...document.querySelectorAll("main table tbody th a")].map((a) => a.textContent),
    count: document.querySelector("p.count").textContent,
    hash: location.hash,
    chosen: [...document.querySelectorAll("ul.tag-filters li.tag")].map((li) => ({
      name: li.querySelector(".tag-name").textContent,
      value: li.querySelector(".tag-value").textContent,
      remove: li.querySelector("button").getAttribute("aria-label"),
    })),
    chosenHidden: document.querySelector("ul.tag-filters").hidden,
    error: document.querySelector("#job-filter-error")?.textContent ?? null,
    empty: document.querySelector("main table td.empty")?.textContent ?? null,
    outcome: document.getElementById("job-outcome").value,
  }));
}

/** Sets the list's filter: removes every tag, adds ``tags`` (the first with the button, the others with Enter)
 * and chooses ``outcome``. */
async function filterBy(tags, outcome) {
  for (;;) {
    const remove = page.locator("ul.tag-filters li.tag button").first();
    if (!(await remove.count())) break;
    await remove.click();
  }
  const input = page.getByLabel("Tag", { exact: true });
  for (const [index, tag] of tags.entries()) {
    await input.fill(tag);
    if (index === 0) await page.getByRole("button", { name: "Add tag" }).click();
    else await input.press("Enter");
  }
  await page.getByLabel("Last outcome").selectOption(outcome);
  return settled();
}

/** The text of the error shown next to a field, whether the field is marked invalid and focused, the banner. */
async function fieldError(id, pattern) {
  const note = page.locator(`#${id}-error`).filter({ hasText: pattern });
  await note.waitFor({ timeout: WAIT });
  return {
    text: (await note.textContent()).trim(),
    invalid: await page.locator(`#${id}`).getAttribute("aria-invalid"),
    focus: await page.evaluate(() => document.activeElement?.id),
    banner: (await page.locator(".form-status").textContent()).trim(),
  };
}

/** A job page's description and tags (name, value, link, the elements inside each tag). */
async function jobPage(name) {
  await page.goto(`${BASE}#/job/${e(ARGS.group)}/${e(ARGS.jobs[name])}/${e(name)}`);
  await page.getByRole("heading", { level: 1, name, exact: true }).waitFor({ timeout: WAIT });
  await page.locator("dl.summary dt").first().waitFor({ timeout: WAIT });
  return page.evaluate(() => ({
    description: document.querySelector(".about .description")?.textContent ?? null,
    descriptionElements: [...document.querySelectorAll(".about .description *")].map((node) => node.tagName),
    tags: [...document.querySelectorAll(".about li.tag")].map((li) => ({
      name: li.querySelector(".tag-name").textContent,
      value: li.querySelector(".tag-value").textContent,
      href: li.querySelector("a")?.getAttribute("href") ?? null,
      elements: [...li.querySelectorAll("*")].map((node) => node.tagName),
    })),
  }));
}

async function openEditor(name) {
  await page.goto(`${BASE}#/edit/${e(ARGS.group)}/${e(ARGS.jobs[name])}/${e(name)}`);
  await page.getByRole("heading", { level: 1, name: `Edit ${name}`, exact: true }).waitFor({ timeout: WAIT });
  await page.waitForFunction(() => document.getElementById("request-uri")?.value, null, { timeout: WAIT });
  return {
    description: await page.getByLabel("Description", { exact: true }).inputValue(),
    tags: await page.getByLabel("Tags", { exact: true }).inputValue(),
    readOnly: await page.getByLabel("Tags", { exact: true }).evaluate((area) => area.readOnly),
  };
}

async function save(name) {
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByRole("heading", { level: 1, name, exact: true }).waitFor({ timeout: WAIT });
  const notice = page.locator("main p.notice", { hasText: "saved." });
  await notice.waitFor({ timeout: WAIT });
  return (await notice.textContent()).trim();
}

try {
  step("sign in");
  await page.goto(BASE);
  await page.getByLabel("API key").fill(KEY);
  await page.getByLabel("Subscription ID").fill(process.env.SUBSCRIPTION);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Job collections" }).waitFor({ timeout: WAIT });

  step("the jobs list: each job's tags, as text");
  await page.goto(`${BASE}#/jobs`);
  const all = `${ARGS.total} of ${ARGS.total} jobs shown`;
  await page.locator("p.count").filter({ hasText: all }).waitFor({ timeout: WAIT });
  observed.unfiltered = await settled();
  observed.rows = await page.locator("main table tbody tr").evaluateAll((rows) =>
    Object.fromEntries(
      rows.map((row) => [
        row.querySelector("th a").textContent,
        [...row.querySelectorAll("th li.tag")].map((li) => ({
          name: li.querySelector(".tag-name")?.textContent ?? null,
          value: li.querySelector(".tag-value")?.textContent ?? null,
          text: li.textContent,
          title: li.getAttribute("title"),
          elements: [...li.querySelectorAll("*")].map((node) => node.tagName),
        })),
      ]),
    ),
  );
  observed.suggestions = await page
    .locator("#job-tag-options option")
    .evaluateAll((options) => options.map((option) => option.value));
  await collect("the jobs list");

  for (const [key, [tags, outcome]] of Object.entries(ARGS.filters)) {
    step(`filter ${key}: ${JSON.stringify(tags)} ${outcome}`);
    observed.filters[key] = await filterBy(tags, outcome);
    await collect(`the filter ${key}`);
  }

  step("a filter kept in the address across a reload");
  await filterBy(ARGS.filters.twoTags[0], "Completed");
  await collect("the filter before the reload");
  await page.reload();
  observed.reloaded = await settled();
  observed.reloadedTagInput = await page.getByLabel("Tag", { exact: true }).inputValue();
  await collect("the reloaded filter");
  step("remove a tag of the filter");
  await page.getByRole("button", { name: "Remove the tag filter env=prod" }).click();
  observed.removed = await settled();
  observed.removedFocus = await page.evaluate(() => document.activeElement?.id);

  step("a text that is not name=value");
  await filterBy([], "");
  await page.getByLabel("Tag", { exact: true }).fill("no equals sign");
  await page.getByRole("button", { name: "Add tag" }).click();
  observed.notATag = {
    error: await page.locator("#job-filter-error").textContent(),
    invalid: await page.getByLabel("Tag", { exact: true }).getAttribute("aria-invalid"),
    hash: await page.evaluate(() => location.hash),
  };
  await page.getByLabel("Tag", { exact: true }).fill("");

  step("a filter the service refuses");
  await page.getByLabel("Tag", { exact: true }).fill(ARGS.badTag);
  await page.getByRole("button", { name: "Add tag" }).click();
  await page.locator("#job-filter-error").waitFor({ timeout: WAIT });
  observed.refused = await settled();
  observed.refusedRole = await page.locator("#job-filter-error").getAttribute("role");
  observed.refusedDescribedBy = await page.getByLabel("Tag", { exact: true }).getAttribute("aria-describedby");
  await collect("the refused filter");

  step("job pages: description and tags");
  observed.page = await jobPage(ARGS.page);
  observed.hostilePage = await jobPage(ARGS.hostile);
  observed.hostileRaw = JSON.parse(await page.locator("pre.raw").textContent());
  await collect("the job pages");
  step("a tag of a job page leads to the jobs that have it");
  await jobPage(ARGS.page);
  await page.locator(".about li.tag a").first().click();
  await page.getByRole("heading", { level: 1, name: "Jobs", exact: true }).waitFor({ timeout: WAIT });
  observed.followed = await settled();

  step("the editor: an unchanged save of the hostile job");
  observed.hostileEditor = await openEditor(ARGS.hostile);
  observed.hostileSaved = await save(ARGS.hostile);
  await collect("the hostile job's editor");

  step("the editor: refusals at their fields");
  observed.editor = await openEditor(ARGS.edited);
  await page.getByLabel("Tags", { exact: true }).fill("team=payments\nnonsense");
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.notNameValue = await fieldError("job-tags", /nonsense/);
  await page.getByLabel("Tags", { exact: true }).fill("team=payments\nazure-thing=1");
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.reservedTag = await fieldError("job-tags", /^properties\.tags\.azure-thing: /);
  await page.getByLabel("Tags", { exact: true }).fill(ARGS.editedTags);
  await page.getByLabel("Description", { exact: true }).fill("d".repeat(1025));
  await page.getByRole("button", { name: "Save" }).click();
  observed.longDescription = await fieldError("job-description", /^properties\.description: /);
  observed.headingAfterRefusal = (await page.locator("h1").textContent()).trim();

  step("the editor: tags and description saved");
  await page.getByLabel("Description", { exact: true }).fill(ARGS.editedDescription);
  observed.saved = await save(ARGS.edited);
  observed.editedPage = await jobPage(ARGS.edited);
  observed.editedAgain = await openEditor(ARGS.edited);
  await collect("the editor");

  step("the trap catches a payload that gets in (a probe)");
  probeFrom = problems.length;
  await page.evaluate(() => {
    const probe = document.createElement("div");
    probe.innerHTML = '<img src=x onerror="window.__pwned=99">';
    document.body.append(probe);
  });
  await page.waitForFunction(() => window.__pwnedHits.length > 0, null, { timeout: WAIT });
  observed.probe = await page.evaluate(() => ({ hits: window.__pwnedHits, foreign: window.__foreign }));
} catch (error) {
  await browser.close();
  throw error;
}
const cookies = await context.cookies();
await browser.close();
observed.probeProblems = problems.splice(probeFrom);
// The refusals provoked on purpose (the filter's and the editor's 400s) show up as failed resource loads;
// nothing else may.
const unexpected = problems.filter((text) => !text.includes("status of 400"));
assert.deepEqual(unexpected, [], `console errors, page errors or CSP violations: ${unexpected.join(" | ")}`);
assert.deepEqual(foreign, [], `requests outside the dashboard's origin: ${foreign.join(", ")}`);
assert.deepEqual(cookies, [], "the dashboard set a cookie");
observed.dialogs = dialogs;
process.stdout.write(`${JSON.stringify(observed)}\n`);
"""


def run_browser(dashboard: Dashboard, timeout: float = 240, **arguments: Any) -> dict[str, Any]:
    """Run :data:`SCRIPT` in a fresh browser; what it observed (the JSON it prints last)."""
    return run_module(dashboard, SCRIPT, arguments, timeout)


def shown(text: str) -> str:
    """``text`` as the page shows it: each bidirectional control as a visible escape (``\\u202e``)."""
    return re.sub("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", lambda m: f"\\u{ord(m.group()):04x}", text)


def job_url(dashboard: Dashboard, job: str) -> str:
    return dashboard.api.url(dashboard.job_path(job, collection=JOBS[job][0]), **{"api-version": PREVIEW})


def get_job(dashboard: Dashboard, job: str) -> dict[str, Any]:
    response = dashboard.api.call("GET", job_url(dashboard, job))
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def definition(dashboard: Dashboard, job: str) -> dict[str, Any]:
    """The job's properties as the API returns them, without its status (counters move on their own)."""
    properties: dict[str, Any] = get_job(dashboard, job)["properties"]
    properties.pop("status", None)
    return properties


def odata(filter_tags: list[str], outcome: str) -> str:
    """The ``$filter`` of name=value tags and a last outcome, as the API's documentation writes it."""
    clauses = []
    for tag in filter_tags:
        name, value = tag.split("=", 1)
        clauses.append(f"tags/{name.strip()} eq '{value.strip().replace(chr(39), chr(39) * 2)}'")
    if outcome:
        clauses.append(f"lastOutcome eq '{outcome}'")
    return " and ".join(clauses)


def address(hash_: str) -> tuple[list[str], str]:
    """The tags (in order) and the last outcome the list's address holds; it holds nothing else."""
    path, _, query = hash_.partition("?")
    assert path == "#/jobs", hash_
    pairs = parse_qsl(query, keep_blank_values=True)
    assert {name for name, _ in pairs} <= {"tag", "outcome"}, pairs
    return [value for name, value in pairs if name == "tag"], dict(pairs).get("outcome", "")


def listed(dashboard: Dashboard, filter_text: str) -> tuple[int, Any]:
    """The API's own answer for ``$filter``: the names of the jobs of every collection it lists (sorted), or
    the status and error of its refusal."""
    names: list[str] = []
    for collection in (NIGHTLY, WEEKLY):
        url = (
            f"{dashboard.api.base_url}/{dashboard.collection_path(collection=collection)}/jobs"
            f"?api-version={PREVIEW}&%24filter={quote(filter_text, safe='')}"
        )
        response = dashboard.api.call("GET", url)
        if response.status_code != 200:
            return response.status_code, response.json()
        names.extend(job["id"].rsplit("/", 1)[1] for job in response.json()["value"])
    return 200, sorted(names)


def test_tags_and_descriptions_are_shown_filtered_by_the_service_and_edited_in_the_dashboard(
    dashboard: Dashboard,
) -> None:
    dashboard.put_collection()
    dashboard.put_collection(collection=WEEKLY)
    start = format_instant((datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0))
    with http_target([200]) as ok, http_target([500]) as bad:
        targets = {"pay-ok": ok.base_url, "pay-fail": bad.base_url}
        for name, (_, tags, description) in JOBS.items():
            properties: dict[str, Any] = {
                "startTime": start,
                "action": http_action(targets.get(name, NEVER), body="tagged", retryPolicy=NO_RETRY),
                "recurrence": every("Day"),
            }
            if tags:
                properties["tags"] = tags
            if description is not None:
                properties["description"] = description
            response = dashboard.api.call("PUT", job_url(dashboard, name), {"properties": properties})
            assert response.status_code in (200, 201), response.text
        # Two jobs run now: one whose target answers 200 (Completed), one whose target answers 500 (Failed).
        for name in targets:
            ran = dashboard.api.call("POST", job_url(dashboard, name).replace("?", "/run?", 1))
            assert ran.status_code == 200, ran.text
        wait_until(
            lambda: (
                listed(dashboard, "lastOutcome eq 'Failed'") == (200, ["pay-fail"])
                and listed(dashboard, "lastOutcome eq 'Completed'") == (200, ["pay-ok"])
            ),
            timeout=60,
            what="the last outcomes of the two jobs run",
        )
    stored = {name: get_job(dashboard, name) for name in JOBS}
    for name, (_, tags, description) in JOBS.items():
        assert stored[name]["properties"].get("tags", {}) == tags, name
        assert stored[name]["properties"].get("description") == description, name
    hostile_before, edited_before = definition(dashboard, "hostile-tags"), definition(dashboard, "pay-batch")

    # The API's own answer for each filter is what the list must show (and what the filter means).
    answers: dict[str, list[str]] = {}
    for key, (filter_tags, outcome, expected) in FILTERS.items():
        status, names = listed(dashboard, odata(filter_tags, outcome))
        assert status == 200, (key, names)
        assert names == sorted(expected), (key, names)
        answers[key] = names
    bad_status, bad_answer = listed(dashboard, odata([BAD_TAG], ""))
    assert bad_status == 400, bad_answer
    refusal = bad_answer["error"]["message"]
    assert refusal.startswith("$filter:"), refusal

    seen = run_browser(
        dashboard,
        group=GROUP,
        jobs={name: collection for name, (collection, _, _) in JOBS.items()},
        total=len(JOBS),
        filters={key: [filter_tags, outcome] for key, (filter_tags, outcome, _) in FILTERS.items()},
        badTag=BAD_TAG,
        page="pay-api",
        hostile="hostile-tags",
        edited="pay-batch",
        editedTags=EDITED_TAGS,
        editedDescription=EDITED_DESCRIPTION,
    )

    # Nothing ran: no assignment reached the trap, no alert, the page added no element, handler or link of
    # its own making; the probe shows the trap does catch a payload that gets in.
    assert seen["hits"] == [] and seen["foreign"] == [] and seen["dialogs"] == [], seen
    assert seen["probe"]["hits"] == ["99"], seen["probe"]
    assert "<img> added" in seen["probe"]["foreign"], seen["probe"]
    assert any("PWNED: window.__pwned = 99" in line for line in seen["probeProblems"]), seen["probeProblems"]
    assert all("PWNED" in line or "status of 404" in line for line in seen["probeProblems"]), seen["probeProblems"]

    # (a) The list: every job, each with its (first three) tags as text, the rest counted, in the API's order.
    assert sorted(seen["unfiltered"]["jobs"]) == sorted(JOBS)
    assert seen["unfiltered"]["chosenHidden"] is True and seen["unfiltered"]["error"] is None
    for name in JOBS:
        tags = list(stored[name]["properties"].get("tags", {}).items())
        row = seen["rows"][name]
        assert [(tag["name"], tag["value"]) for tag in row[:3]] == [(shown(k), shown(v)) for k, v in tags[:3]], name
        assert all(tag["elements"] in (["SPAN", "SPAN"], []) for tag in row), row
        if len(tags) > 3:
            assert row[3]["text"] == f"+{len(tags) - 3} more", row
            assert row[3]["title"] == shown("\n".join(f"{k}={v}" for k, v in tags)), row
        assert len(row) == min(len(tags), 4), row
    hostile_row = seen["rows"]["hostile-tags"]
    assert hostile_row[0]["text"] == f"note={ALERT}"  # the markup as text
    assert hostile_row[1]["text"] == "bidi=report\\u202etxt.exe"  # the override shown, not obeyed
    # The tag input offers the tags of the jobs listed (name=value, exactly as stored).
    assert "team=payments" in seen["suggestions"] and f"note={ALERT}" in seen["suggestions"]
    assert f"bidi=report{RLO}txt.exe" in seen["suggestions"]

    # (b) Each filter shows exactly the jobs the API lists for it (both collections), and is kept in the address.
    for key, (filter_tags, outcome, _) in FILTERS.items():
        shown_filter = seen["filters"][key]
        assert sorted(shown_filter["jobs"]) == answers[key], (key, shown_filter)
        assert shown_filter["count"] == f"{len(answers[key])} of {len(JOBS)} jobs shown", shown_filter
        assert shown_filter["error"] is None, shown_filter
        assert shown_filter["outcome"] == outcome
        assert address(shown_filter["hash"]) == (filter_tags, outcome), (key, shown_filter["hash"])
        assert "<" not in shown_filter["hash"] and "'" not in shown_filter["hash"], shown_filter["hash"]
        assert [(tag["name"], tag["value"]) for tag in shown_filter["chosen"]] == [
            tuple(shown(part) for part in tag.split("=", 1)) for tag in filter_tags
        ], shown_filter["chosen"]
    assert seen["filters"]["hostileValue"]["chosen"][0]["remove"] == f"Remove the tag filter note={ALERT}"
    # Across a reload, the address's filter is the list's: the tags, the outcome and the jobs.
    reloaded = seen["reloaded"]
    status, both_completed = listed(dashboard, odata(FILTERS["twoTags"][0], "Completed"))
    assert status == 200 and both_completed == ["pay-ok"]
    assert reloaded["jobs"] == both_completed and reloaded["outcome"] == "Completed"
    assert [(tag["name"], tag["value"]) for tag in reloaded["chosen"]] == [("team", "payments"), ("env", "prod")]
    assert seen["reloadedTagInput"] == ""
    # Removing a tag asks the service again (team=payments and Completed), and the focus goes to the input.
    status, completed = listed(dashboard, odata(["team=payments"], "Completed"))
    assert status == 200 and sorted(seen["removed"]["jobs"]) == completed
    assert seen["removedFocus"] == "job-tag"
    # A text that is not name=value is said at the input and not added.
    assert seen["notATag"]["error"].startswith('Not a tag filter: "no equals sign" is not name=value')
    assert seen["notATag"]["invalid"] == "true" and "tag=" not in seen["notATag"]["hash"]

    # (c) A filter the service refuses: its 400 message, shown as an alert at the filter, and no job.
    refused = seen["refused"]
    assert refused["error"] == f"The service refused the filter: {refusal}", refused
    assert refused["jobs"] == [] and refused["count"] == f"0 of {len(JOBS)} jobs shown"
    assert refused["empty"] == "No jobs shown: the filter was not applied (see above)."
    assert seen["refusedRole"] == "alert" and "job-filter-error" in seen["refusedDescribedBy"]
    assert address(refused["hash"]) == ([BAD_TAG], "")

    # (d) The job page: the description (line breaks kept) and every tag as text, each linking to its jobs.
    page = seen["page"]
    assert page["description"] == PAY_DESCRIPTION
    assert [(tag["name"], tag["value"]) for tag in page["tags"]] == list(JOBS["pay-api"][1].items())
    assert [tag["href"] for tag in page["tags"]] == [
        f"#/jobs?{urlencode({'tag': f'{k}={v}'})}" for k, v in JOBS["pay-api"][1].items()
    ]
    assert sorted(seen["followed"]["jobs"]) == answers["oneTag"]  # its first tag: team=payments
    hostile_page = seen["hostilePage"]
    assert hostile_page["description"] == shown(HOSTILE_DESCRIPTION) and hostile_page["descriptionElements"] == []
    assert [(tag["name"], tag["value"]) for tag in hostile_page["tags"]] == [
        (shown(k), shown(v)) for k, v in HOSTILE_TAGS.items()
    ]
    assert all(set(tag["elements"]) <= {"A", "SPAN"} for tag in hostile_page["tags"]), hostile_page["tags"]
    # The raw JSON writes each control as a JSON escape (\u202e): parsed, it is the stored JSON.
    assert seen["hostileRaw"]["properties"]["tags"] == HOSTILE_TAGS
    assert seen["hostileRaw"]["properties"]["description"] == HOSTILE_DESCRIPTION

    # (e) The editor showed the hostile tags and description as stored; an unchanged save kept the job exactly.
    assert seen["hostileEditor"] == {
        "description": HOSTILE_DESCRIPTION,
        "tags": "\n".join(f"{k}={v}" for k, v in HOSTILE_TAGS.items()),
        "readOnly": False,
    }
    assert seen["hostileSaved"] == "Job hostile-tags saved."
    assert definition(dashboard, "hostile-tags") == hostile_before

    # (f) Refusals at their fields: a line that is not name=value (the page's), a reserved tag name and a long
    # description (the service's, naming the path); nothing was saved meanwhile.
    assert seen["editor"] == {
        "description": "",
        "tags": "team=payments\nenv=staging\nowner=O'Brien\npad=  padded  ",
        "readOnly": False,
    }
    assert seen["notNameValue"]["text"] == 'properties.tags: "nonsense" is not "name=value"'
    reserved = seen["reservedTag"]
    assert reserved["text"].startswith(
        "properties.tags.azure-thing: tag names starting with microsoft, azure or windows"
    )
    assert reserved["banner"] == f"The service refused it: {reserved['text']}"
    long_description = seen["longDescription"]
    assert long_description["text"] == "properties.description: must be a string of at most 1,024 characters"
    for refusal_seen, field in (
        (seen["notNameValue"], "job-tags"),
        (reserved, "job-tags"),
        (long_description, "job-description"),
    ):
        assert refusal_seen["invalid"] == "true" and refusal_seen["focus"] == field, refusal_seen
    assert seen["headingAfterRefusal"] == "Edit pay-batch"

    # (g) The edit stored the tags and the description, an untouched line's tag exactly (its padded value),
    # and kept every other property as it was.
    assert seen["saved"] == "Job pay-batch saved."
    after = definition(dashboard, "pay-batch")
    assert after["tags"] == {
        "team": "payments",
        "env": "prod",
        "owner": "O'Brien",
        "pad": "  padded  ",
        "new tag": "spaced value",
    }
    assert after["description"] == EDITED_DESCRIPTION
    rest_before = {key: value for key, value in edited_before.items() if key not in ("tags", "description")}
    assert {key: value for key, value in after.items() if key not in ("tags", "description")} == rest_before
    assert seen["editedPage"]["description"] == EDITED_DESCRIPTION
    assert [(tag["name"], tag["value"]) for tag in seen["editedPage"]["tags"]] == list(after["tags"].items())
    # A tag name with a space cannot be found by the list's filter: it has no link.
    assert [tag["href"] is None for tag in seen["editedPage"]["tags"]] == [False, False, False, False, True]
    assert seen["editedAgain"]["tags"] == "\n".join(f"{k}={v}" for k, v in after["tags"].items())
