// Browser scenarios of the dashboard: Playwright (playwright-core from npm) driving Debian's Chromium.
//
//   node tests/browser/scenarios.mjs <scenario>
//
// Run by tests/browser/test_*.py, which start the function app, prepare jobs through the API, and check what
// a scenario reports (the JSON it prints on its last line) against the API and the HTTP targets. The
// environment names the page (DASHBOARD_URL), the key (API_KEY), the subscription (SUBSCRIPTION), the
// browser (CHROMIUM), where screenshots go (SCREENSHOTS) and the scenario's own arguments (SCENARIO_ARGS,
// JSON). A failed step throws: the message goes to standard error and the exit status is 1.
//
// Every scenario also checks, for the whole visit: no console error or warning, no page error, no CSP
// violation, every request to the dashboard's own origin (nothing from a CDN), and no cookie set.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const BASE = process.env.DASHBOARD_URL;
const KEY = process.env.API_KEY;
const SUBSCRIPTION = process.env.SUBSCRIPTION;
const SHOTS = process.env.SCREENSHOTS;
const ARGS = JSON.parse(process.env.SCENARIO_ARGS || "{}");
const ORIGIN = new URL(BASE).origin;
const WAIT = 60_000;
let lastPage = null; // for a screenshot of the moment a step failed

function step(text) {
  process.stderr.write(`[${new Date().toISOString().slice(11, 23)}] ${text}\n`);
}

async function openBrowser(options = {}) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    headless: true,
    // Root in a container has no user namespace for Chromium's sandbox; the pages are our own, on loopback.
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
  const context = await browser.newContext({
    viewport: { width: 1360, height: 900 },
    deviceScaleFactor: 1,
    locale: "en-GB",
    timezoneId: "Europe/Berlin",
    colorScheme: "light",
    reducedMotion: "reduce",
    ...options,
  });
  const problems = [];
  const foreign = [];
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
  lastPage = page;
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") problems.push(`${message.type()}: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  return { browser, context, page, problems, foreign };
}

async function finish({ browser, context, page, problems, foreign }, observed) {
  const cookies = await context.cookies();
  const storage = await page.evaluate(() => ({ local: localStorage.length, session: Object.keys(sessionStorage) }));
  await browser.close();
  // 401s the scenario provoked on purpose show up as failed resource loads; nothing else may.
  // So do the refusals a scenario provokes on purpose (expectedStatuses: a 400 of a field, a 412, a 403).
  const expected = (text) => (observed.expected401 && /401/.test(text)) || (observed.expectedStatuses ?? []).some((code) => text.includes(`status of ${code}`));
  const unexpected = problems.filter((text) => !expected(text));
  assert.deepEqual(unexpected, [], `console errors, page errors or CSP violations: ${unexpected.join(" | ")}`);
  assert.deepEqual(foreign, [], `requests outside the dashboard's origin: ${foreign.join(", ")}`);
  assert.deepEqual(cookies, [], "the dashboard set a cookie");
  assert.equal(storage.local, 0, "the dashboard wrote to localStorage");
  observed.sessionStorageKeys = storage.session;
  process.stdout.write(`${JSON.stringify(observed)}\n`);
}

async function shot(page, name, fullPage = true) {
  await page.screenshot({ path: join(SHOTS, name), fullPage });
  step(`screenshot ${name}`);
}

async function signIn(page, key = KEY) {
  step("sign in");
  await page.goto(BASE);
  await page.getByLabel("API key").fill(key);
  await page.getByLabel("Subscription ID").fill(SUBSCRIPTION);
  await page.getByRole("button", { name: "Sign in" }).click();
}

async function signedIn(page) {
  await signIn(page);
  await page.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();
}

function jobUrl(name) {
  const e = encodeURIComponent;
  return `${BASE}#/job/${e(ARGS.group)}/${e(ARGS.collection)}/${e(name)}`;
}

/** The job page's summary as {term: text}. */
async function summary(page) {
  return page.locator("dl.summary").evaluate((list) => {
    const out = {};
    const terms = list.querySelectorAll("dt");
    for (const term of terms) out[term.textContent] = term.nextElementSibling.textContent;
    return out;
  });
}

/** The history table's rows as objects keyed by column header. */
async function historyRows(page) {
  const table = page.getByRole("table", { name: /executions, newest first|The last/ });
  return table.evaluate((element) => {
    const heads = [...element.querySelectorAll("thead th")].map((th) => th.textContent);
    return [...element.querySelectorAll("tbody tr[data-status]")].map((row) =>
      Object.fromEntries([...row.cells].map((cell, index) => [heads[index], cell.textContent.trim()])),
    );
  });
}

// ------------------------------------------------------------------------------------------------ scenarios

/** Sign in, find the job in the list, open it before it is due, and watch its execution appear without a
 * reload: the counters, the history row, and the charts follow by polling. */
async function watchJobFire() {
  const session = await openBrowser();
  const { page } = session;
  await signedIn(page);
  await shot(page, "collections.png");
  const observed = {};

  step("jobs list, search");
  await page.getByRole("link", { name: "Jobs", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
  await page.getByLabel("Search").fill(ARGS.job);
  const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: ARGS.job, exact: true }) });
  await row.waitFor();
  observed.listState = (await row.getByRole("cell").nth(1).textContent()).trim();
  observed.listNextRun = await row.locator("time").first().getAttribute("datetime");
  observed.listRows = await page.locator("tbody tr").count();

  step("job page, before its next execution");
  await row.getByRole("link", { name: ARGS.job, exact: true }).click();
  await page.getByRole("heading", { level: 1, name: ARGS.job }).waitFor();
  const history = page.getByRole("table", { name: /executions, newest first/i });
  await history.waitFor();
  // The job recurs every minute: when the browser was slow to get here and the first execution came before
  // it, the page waits for the second one. Either way an execution appears while the page is open.
  const before = await history.locator("tbody tr[data-status]").count();
  observed.before = before;
  observed.beforeExecutions = (await summary(page)).Executions;
  observed.occurrences = await page.getByRole("table", { name: /occurrences/ }).locator("tbody time").evaluateAll((times) => times.map((t) => t.getAttribute("datetime")));
  await page.evaluate(() => {
    window.__sameDocument = true;
  });

  step("waiting for the execution to appear");
  await history.locator("tbody tr[data-status]").nth(before).waitFor({ timeout: 90_000 });
  await page.waitForFunction((count) => document.querySelector('[data-counter="executionCount"]')?.textContent === String(count), before + 1, { timeout: WAIT });
  observed.sameDocument = await page.evaluate(() => window.__sameDocument === true);
  observed.history = await historyRows(page);
  observed.summary = await summary(page);
  observed.outcomeChart = await page.locator("#chart-outcomes").getAttribute("aria-label");
  observed.latenessChart = await page.locator("#chart-lateness").getAttribute("aria-label");
  observed.announced = await page.locator("#announcer").textContent();
  await shot(page, "job-fired.png");
  await finish(session, observed);
}

/** Run now, disable, and delete (cancelled once, then confirmed), each by its button. */
async function runDisableDelete() {
  const session = await openBrowser();
  const { page } = session;
  await signedIn(page);
  const observed = {};

  step("run now");
  await page.goto(jobUrl(ARGS.run));
  await page.getByRole("heading", { level: 1, name: ARGS.run }).waitFor();
  await page.getByText("No executions yet.").waitFor();
  await page.getByRole("button", { name: "Run now" }).click();
  await page.getByRole("status").filter({ hasText: "Run requested" }).waitFor();
  await page.locator("tbody tr[data-status]").first().waitFor({ timeout: WAIT });
  observed.runHistory = await historyRows(page);

  step("disable");
  const toggle = page.getByRole("button", { name: "Disable" });
  await toggle.click();
  await page.getByRole("status").filter({ hasText: "The job is Disabled." }).waitFor();
  await page.getByRole("button", { name: "Enable" }).waitFor();
  observed.afterDisable = await summary(page);
  await shot(page, "job-disabled.png");

  step("delete: cancel, then confirm");
  await page.goto(jobUrl(ARGS.remove));
  await page.getByRole("heading", { level: 1, name: ARGS.remove }).waitFor();
  const remove = page.getByRole("button", { name: "Delete…" });
  await remove.click();
  const dialog = page.getByRole("dialog", { name: `Delete job ${ARGS.remove}?` });
  await dialog.waitFor();
  observed.dialogFocus = await page.evaluate(() => document.activeElement?.textContent);
  await page.keyboard.press("Escape");
  await dialog.waitFor({ state: "hidden" });
  observed.focusAfterCancel = await page.evaluate(() => document.activeElement?.textContent);
  observed.stillThere = (await page.request.get(`${ORIGIN}/subscriptions/${SUBSCRIPTION}/resourceGroups/${ARGS.group}/providers/Microsoft.Scheduler/jobCollections/${ARGS.collection}/jobs/${ARGS.remove}?api-version=2016-03-01`, { headers: { Authorization: `Bearer ${KEY}` } })).status();
  await remove.click();
  await dialog.waitFor();
  await shot(page, "delete-dialog.png");
  await dialog.getByRole("button", { name: "Delete job" }).click();
  await page.getByText(`Job ${ARGS.remove} deleted.`).first().waitFor();
  await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
  await page.locator("p.count").filter({ hasText: "jobs shown" }).waitFor();
  observed.listedAfterDelete = await page.locator("tbody th a").allTextContents();
  observed.hashAfterDelete = await page.evaluate(() => window.location.hash);
  await finish(session, observed);
}

/** A wrong key is refused; the failing-now view, search and filters; the collections' quota use; a job's
 * write-only fields; the keyboard path; the screenshot for the README. */
async function browseAndFilter() {
  const session = await openBrowser();
  const { page } = session;
  const observed = { expected401: true };

  step("wrong key");
  await signIn(page, "sks_not-the-key");
  observed.wrongKeyAlert = (await page.getByRole("alert").textContent()).trim();
  observed.storedAfterWrongKey = await page.evaluate(() => Object.keys(sessionStorage).length);

  step("keyboard only: skip link, sign in, open a collection");
  const focused = () =>
    page.evaluate(() => {
      const element = document.activeElement;
      return element ? `${element.tagName.toLowerCase()}${element.id ? `#${element.id}` : ""}:${(element.getAttribute("aria-label") || element.textContent || "").trim().slice(0, 40)}` : "";
    });
  await page.reload();
  await page.getByLabel("API key").waitFor();
  const keyboard = [await focused()]; // the key field has the focus on arrival
  await page.keyboard.press("Shift+Tab");
  await page.keyboard.press("Shift+Tab");
  keyboard.push(await focused()); // the skip link, first in the page
  observed.skipLinkVisible = await page.locator("#skip").evaluate((link) => link.getBoundingClientRect().left >= 0);
  await page.keyboard.press("Enter");
  keyboard.push(await focused()); // the page's heading
  await page.keyboard.press("Tab");
  keyboard.push(await focused());
  await page.keyboard.type(KEY);
  await page.keyboard.press("Tab");
  keyboard.push(await focused());
  await page.keyboard.type(SUBSCRIPTION);
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();
  await page.locator("tbody th a").first().waitFor();
  keyboard.push(await focused()); // the new page's heading
  await page.keyboard.press("Tab");
  keyboard.push(await focused()); // the table's scrolling region
  await page.keyboard.press("Tab");
  keyboard.push(await focused()); // the first collection's link
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
  await page.locator("p.count").filter({ hasText: "jobs shown" }).waitFor();
  observed.keyboard = keyboard;
  observed.keyboardJobs = await page.locator("tbody th a").allTextContents();
  await page.getByRole("link", { name: "Collections", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();

  step("collections");
  const collection = page.getByRole("row").filter({ has: page.getByRole("link", { name: ARGS.collection, exact: true }) });
  await collection.getByText("failing").waitFor({ timeout: WAIT });
  observed.collectionRow = (await collection.getByRole("cell").allTextContents()).map((text) => text.trim());
  await shot(page, "collections.png");

  step("failing now");
  await page.getByRole("link", { name: "Failing now" }).click();
  await page.getByRole("heading", { level: 1, name: "Failing now" }).waitFor();
  await page.locator("p.count").filter({ hasText: "jobs shown" }).waitFor();
  observed.failing = await page.locator("tbody th a").allTextContents();
  await shot(page, "failing.png");

  step("search and filters");
  await page.getByRole("link", { name: "Jobs", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
  await page.locator("p.count").filter({ hasText: "jobs shown" }).waitFor();
  observed.all = await page.locator("tbody th a").allTextContents();
  await page.getByLabel("Search").fill(ARGS.search);
  observed.searched = await page.locator("tbody th a").allTextContents();
  observed.searchHash = await page.evaluate(() => window.location.hash);
  await page.getByLabel("Search").fill("");
  await page.getByLabel("State").selectOption("Disabled");
  observed.disabledOnly = await page.locator("tbody th a").allTextContents();
  await page.getByLabel("State").selectOption("");
  await page.getByLabel("Failing now only").check();
  observed.failingOnly = await page.locator("tbody th a").allTextContents();

  step("a job with a secret");
  await page.goto(jobUrl(ARGS.secured));
  await page.getByRole("heading", { level: 1, name: ARGS.secured }).waitFor();
  const secrets = page.locator("ul.secrets li");
  await secrets.first().waitFor();
  observed.writeOnly = (await secrets.allTextContents()).map((text) => text.trim());
  observed.pageText = await page.locator("main").textContent();
  observed.zone = await page.getByRole("table", { name: /occurrences/ }).locator("thead").textContent();
  observed.localTimes = await page.getByRole("table", { name: /occurrences/ }).locator("tbody tr td:nth-child(3)").allTextContents();
  observed.utcTimes = await page.getByRole("table", { name: /occurrences/ }).locator("tbody time").evaluateAll((times) => times.map((t) => t.getAttribute("datetime")));

  step("a job with history: charts");
  await page.goto(jobUrl(ARGS.flaky));
  await page.getByRole("heading", { level: 1, name: ARGS.flaky }).waitFor();
  await page.locator("tbody tr[data-status]").nth(ARGS.flakyRuns - 1).waitFor({ timeout: WAIT });
  observed.flakyHistory = await historyRows(page);
  observed.outcomeChart = await page.locator("#chart-outcomes").getAttribute("aria-label");
  observed.latenessChart = await page.locator("#chart-lateness").getAttribute("aria-label");
  observed.chartPixels = await page.locator("#chart-outcomes").evaluate((canvas) => [canvas.width, canvas.height]);
  step("an opened response stays open through a poll");
  await page.locator("td.message summary").first().click();
  const before = await page.locator("#updated").textContent();
  await page.waitForFunction((text) => document.getElementById("updated")?.textContent !== text, before, { timeout: 10_000 });
  observed.openAfterPoll = await page.locator("td.message details[open]").count();
  observed.openText = (await page.locator("td.message details[open] pre").textContent()).trim();
  await page.getByRole("button", { name: "Pause live updates" }).click();
  await page.getByRole("heading", { level: 1, name: ARGS.flaky }).focus();
  await shot(page, "dashboard.png", false); // the README's picture: one screen
  await shot(page, "job-history.png");

  step("sign out");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByLabel("API key").waitFor();
  observed.storedAfterSignOut = await page.evaluate(() => sessionStorage.getItem("scheduler.dashboard.apiKey"));
  await finish(session, observed);
}

/** axe-core's WCAG 2.1 A and AA rules (labels, names, contrast, structure, ARIA) on every view and on the
 * delete dialog. axe is injected into the page, which the dashboard's CSP forbids (rightly): this visit
 * alone bypasses the CSP; the CSP itself is checked by the other scenarios. */
async function accessibility() {
  const session = await openBrowser({ bypassCSP: true });
  const { page } = session;
  const axe = readFileSync(join(process.cwd(), "node_modules", "axe-core", "axe.min.js"), "utf8");
  const observed = { views: {} };
  async function audit(name) {
    await page.evaluate(axe);
    const result = await page.evaluate(async () =>
      (await axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } })),
    );
    observed.views[name] = {
      passes: result.passes.length,
      violations: result.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`),
    };
    step(`audited ${name}: ${result.passes.length} rules pass, ${result.violations.length} violated`);
  }
  await page.goto(BASE);
  await page.getByLabel("API key").waitFor();
  await audit("sign-in");
  await page.getByLabel("Entra ID token").check();
  await page.getByLabel("Access token").waitFor();
  await audit("sign-in with a token");
  await page.getByLabel("Deployment key").check();
  await signedIn(page);
  await page.locator("tbody th a").first().waitFor();
  await page.getByLabel("Live counts", { exact: true }).waitFor();
  await audit("collections");
  await page.goto(`${BASE}#/jobs`);
  await page.locator("p.count").filter({ hasText: "jobs shown" }).waitFor();
  await audit("jobs");
  await page.goto(`${BASE}#/failing`);
  await page.locator("p.count").filter({ hasText: "jobs shown" }).waitFor();
  await audit("failing");
  await page.goto(jobUrl(ARGS.job));
  await page.locator("tbody tr[data-status]").first().waitFor({ timeout: WAIT });
  await page.getByRole("table", { name: /occurrences/ }).waitFor();
  await audit("job");
  await page.getByRole("button", { name: "Delete…" }).click();
  await page.getByRole("dialog").waitFor();
  await audit("delete dialog");
  await page.keyboard.press("Escape");
  // Guards the audit: an input without a label, added to the page, must be found.
  await page.getByRole("button", { name: "Pause live updates" }).click();
  await page.evaluate(() => document.getElementById("main").append(document.createElement("input")));
  await audit("probe");
  await finish(session, observed);
}

/** The collections view's status panel: this instance's health (storage, the dispatch heartbeat's age, queue
 * depths) and the subscription's live counts, from the status API; the counts follow a job's execution
 * without a reload. */
async function serviceStatus() {
  const session = await openBrowser();
  const { page } = session;
  await signedIn(page);
  const observed = {};
  const panel = page.getByRole("region", { name: "Service status" });
  const pairs = (label) =>
    panel.getByLabel(label, { exact: true }).evaluate((list) => {
      const out = {};
      for (const term of list.querySelectorAll("dt")) out[term.textContent] = term.nextElementSibling.textContent;
      return out;
    });
  step("status panel");
  await panel.getByLabel("Live counts", { exact: true }).waitFor({ timeout: WAIT });
  observed.health = await pairs("Health");
  observed.countsBefore = await pairs("Live counts");
  observed.countsBeforeAt = Date.now() / 1000;
  observed.warnings = await panel.locator("ul.warnings li").allTextContents();
  await page.evaluate(() => { window.__sameDocument = true; });
  step("wait for the job's executions to show in the counts");
  await page.waitForFunction(
    (expected) => {
      const list = document.querySelector('[aria-label="Live counts"]');
      if (!list) return false;
      const terms = [...list.querySelectorAll("dt")];
      const executions = terms.find((term) => term.textContent === "Executions");
      return executions && Number(executions.nextElementSibling.textContent) >= expected;
    },
    ARGS.executions,
    { timeout: WAIT * 2 },
  );
  observed.countsAfter = await pairs("Live counts");
  observed.healthAfter = await pairs("Health");
  observed.sameDocument = await page.evaluate(() => window.__sameDocument === true);
  await panel.scrollIntoViewIfNeeded();
  await shot(page, "status.png");
  await finish(session, observed);
}

/** ENTRA ID SIGN-IN, client side: a pasted access token is sent as "Authorization: Bearer <token>", kept in
 * session storage under its own item, a refused one is reported, and a sign-out offers the token form again. */
async function tokenSignIn() {
  const session = await openBrowser();
  const { page } = session;
  const observed = { expected401: true, authorizations: [] };
  page.on("request", async (request) => {
    if (!request.url().includes("/jobCollections")) return;
    const headers = await request.allHeaders();
    observed.authorizations.push(headers.authorization ?? null);
  });
  await page.goto(BASE);
  step("a refused token");
  await page.getByLabel("Entra ID token").check();
  observed.keyFieldHidden = await page.locator("#key-part").isHidden();
  await page.getByLabel("Access token").fill(ARGS.refusedToken);
  await page.getByLabel("Subscription ID").fill(SUBSCRIPTION);
  await page.getByRole("button", { name: "Sign in" }).click();
  observed.refused = await page.getByRole("alert").textContent();
  observed.storedAfterRefusal = await page.evaluate(() => Object.keys(sessionStorage));
  step("an accepted token");
  await page.getByLabel("Access token").fill(ARGS.acceptedToken);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();
  await page.locator("tbody th a").first().waitFor();
  observed.collections = await page.locator("tbody th a").allTextContents();
  const health = page.getByLabel("Health", { exact: true });
  await health.waitFor({ timeout: WAIT });
  observed.health = await health.locator("dd").first().textContent();
  observed.stored = await page.evaluate(() => ({
    token: sessionStorage.getItem("scheduler.dashboard.accessToken"),
    key: sessionStorage.getItem("scheduler.dashboard.apiKey"),
  }));
  await shot(page, "token-signed-in.png");
  step("sign out: the token form again");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByLabel("Access token").waitFor();
  observed.tokenChosenAfterSignOut = await page.getByLabel("Entra ID token").isChecked();
  observed.storedAfterSignOut = await page.evaluate(() => sessionStorage.getItem("scheduler.dashboard.accessToken"));
  await finish(session, observed);
}


// ------------------------------------------------------------------------------- the operator's console

const PREVIEW_VERSION = "2026-12-01-preview";

function armUrl(name, version = PREVIEW_VERSION) {
  return `${ORIGIN}/subscriptions/${SUBSCRIPTION}/resourceGroups/${ARGS.group}/providers/Microsoft.Scheduler/jobCollections/${ARGS.collection}/jobs/${name}?api-version=${version}`;
}

/** The text of the error shown next to a field (by the field's id), and whether the field is marked invalid. */
async function fieldError(page, id) {
  const note = page.locator(`#${id}-error`);
  await note.waitFor();
  return { text: (await note.textContent()).trim(), invalid: await page.locator(`#${id}`).getAttribute("aria-invalid") };
}

async function auditPage(page, observed, name) {
  const axe = readFileSync(join(process.cwd(), "node_modules", "axe-core", "axe.min.js"), "utf8");
  await page.evaluate(axe);
  const result = await page.evaluate(async () =>
    (await axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } })),
  );
  observed.audits[name] = {
    passes: result.passes.length,
    violations: result.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`),
  };
  step(`audited ${name}: ${result.violations.length} violated`);
}

/** Create a job with the form (a field the service refuses first, then the preview of its occurrences); edit
 * a job with a stored password (kept) and a queue job whose edit would drop its SAS token (refused until it is
 * entered again); a concurrent change (412, reload); the JSON view for a preview property and its errors. */
async function editJobs() {
  const session = await openBrowser({ bypassCSP: ARGS.audit === true });
  const { page } = session;
  await signedIn(page);
  const observed = { audits: {}, expectedStatuses: [400, 404, 412] };

  step("new job: a URI the service refuses, then a valid one");
  await page.goto(`${BASE}#/jobs`);
  await page.getByRole("link", { name: "New job" }).click();
  await page.getByRole("heading", { level: 1, name: "New job" }).waitFor();
  await page.getByLabel("Collection").selectOption({ label: `${ARGS.group}/${ARGS.collection}` });
  await page.getByLabel("Name", { exact: true }).fill(ARGS.created);
  await page.getByLabel("Type", { exact: true }).selectOption("Http");
  await page.getByLabel("Method").selectOption("POST");
  await page.getByLabel("URI", { exact: true }).fill("ftp://example.invalid/x");
  await page.getByLabel("Headers").fill("X-Console: yes");
  await page.getByLabel("Body", { exact: true }).fill("from the form");
  await page.getByLabel("Start time (UTC)").fill(ARGS.start);
  await page.getByLabel("Recurrence").selectOption("Minute");
  await page.getByLabel("Interval", { exact: true }).fill("5");
  await page.getByLabel("Retry type").selectOption("None");
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.uriError = await fieldError(page, "request-uri");
  observed.focusOnError = await page.evaluate(() => document.activeElement?.id);
  if (ARGS.audit) await auditPage(page, observed, "editor with an error");
  await page.getByLabel("URI", { exact: true }).fill(ARGS.createdUri);
  await page.getByRole("button", { name: "Check and preview" }).click();
  const previewTable = page.getByRole("table", { name: /occurrences if saved/ });
  await previewTable.waitFor();
  observed.previewTimes = await previewTable.locator("tbody time").evaluateAll((times) => times.map((t) => t.getAttribute("datetime")));
  observed.uriErrorGone = await page.locator("#request-uri-error").count();
  observed.existsBeforeSave = (await page.request.get(armUrl(ARGS.created), { headers: { Authorization: `Bearer ${KEY}` } })).status();
  await shot(page, "editor-new.png");
  await page.getByRole("button", { name: "Create job" }).click();
  await page.getByRole("heading", { level: 1, name: ARGS.created }).waitFor();
  observed.savedNotice = (await page.locator("main p.notice", { hasText: `Job ${ARGS.created} saved.` }).textContent()).trim();
  await page.locator("dl.summary dt", { hasText: /^Schedule$/ }).first().waitFor(); // the job's details are in
  observed.createdSchedule = (await summary(page)).Schedule;

  step("edit a job with a stored password: change the body only");
  await page.goto(`${BASE}#/edit/${ARGS.group}/${ARGS.collection}/${ARGS.secured}`);
  await page.getByRole("heading", { level: 1, name: `Edit ${ARGS.secured}` }).waitFor();
  await page.getByLabel("URI", { exact: true }).waitFor();
  observed.securedSecretLabels = await page.locator(".editor fieldset legend").allTextContents();
  observed.securedPasswordField = await page.getByLabel(/authentication\.password \(set\)/).getAttribute("type");
  if (ARGS.audit) await auditPage(page, observed, "editor");
  await page.getByLabel("Body", { exact: true }).fill("edited body");
  await page.getByRole("button", { name: "Check and preview" }).click();
  await page.locator("ul.secrets-fate li").first().waitFor();
  observed.securedFates = (await page.locator("ul.secrets-fate li").allTextContents()).map((t) => t.trim());
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByRole("heading", { level: 1, name: ARGS.secured }).waitFor();
  await page.locator("main p.notice", { hasText: `Job ${ARGS.secured} saved.` }).waitFor();

  step("edit a queue job to another queue: the SAS token would be dropped");
  await page.goto(`${BASE}#/edit/${ARGS.group}/${ARGS.collection}/${ARGS.queued}`);
  await page.getByRole("heading", { level: 1, name: `Edit ${ARGS.queued}` }).waitFor();
  await page.getByLabel("Queue", { exact: true }).waitFor();
  await page.getByLabel("Queue", { exact: true }).fill("elsewhere");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText(/This edit drops 1 stored secret/).waitFor();
  observed.dropWarning = (await page.locator(".warning-box p").textContent()).trim();
  observed.dropStatus = (await page.locator(".form-status").textContent()).trim();
  observed.queueAfterRefusal = (await (await page.request.get(armUrl(ARGS.queued), { headers: { Authorization: `Bearer ${KEY}` } })).json()).properties.action.queueMessage.queueName;
  await page.getByLabel("SAS token").fill(ARGS.newSas);
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByRole("heading", { level: 1, name: ARGS.queued }).waitFor();
  await page.locator("main p.notice", { hasText: `Job ${ARGS.queued} saved.` }).waitFor();

  step("a concurrent change: 412, then reload");
  await page.goto(`${BASE}#/edit/${ARGS.group}/${ARGS.collection}/${ARGS.created}`);
  await page.getByRole("heading", { level: 1, name: `Edit ${ARGS.created}` }).waitFor();
  await page.getByLabel("URI", { exact: true }).waitFor();
  const patched = await page.request.patch(armUrl(ARGS.created), {
    headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
    data: { properties: { state: "Disabled" } },
  });
  observed.concurrentPatch = patched.status();
  await page.getByLabel("Interval", { exact: true }).fill("10");
  await page.getByRole("button", { name: "Save" }).click();
  const alert = page.getByRole("alert").filter({ hasText: "changed by someone else" });
  await alert.waitFor();
  observed.conflict = (await alert.locator("p").first().textContent()).trim();
  observed.conflictFocus = await page.evaluate(() => document.activeElement?.textContent);
  await shot(page, "editor-conflict.png");
  await page.getByRole("button", { name: "Reload the job" }).click();
  await page.waitForFunction(() => document.getElementById("recurrence-interval")?.value === "5");
  observed.stateAfterReload = await page.getByLabel("State", { exact: true }).inputValue();

  step("the JSON view: a preview property, and an error the service names");
  await page.getByLabel("JSON", { exact: true }).check();
  const json = page.getByLabel("Job definition (JSON)");
  await json.waitFor();
  const definition = JSON.parse(await json.inputValue());
  observed.jsonKeys = Object.keys(definition.properties).sort();
  definition.properties.recurrence.frequency = "Fortnight";
  await json.fill(JSON.stringify(definition, null, 2));
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.jsonError = await fieldError(page, "job-json");
  definition.properties.recurrence.frequency = "Minute";
  definition.properties.overlapPolicy = "Skip";
  definition.properties.pauseAfterFailures = 3;
  await json.fill(JSON.stringify(definition, null, 2));
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByRole("heading", { level: 1, name: ARGS.created }).waitFor();
  await page.locator("main p.notice", { hasText: `Job ${ARGS.created} saved.` }).waitFor();
  await page.waitForFunction(() => document.querySelector("pre.raw")?.textContent.includes("overlapPolicy"));
  observed.rawAfterJson = JSON.parse(await page.locator("pre.raw").textContent()).properties;
  await finish(session, observed);
}

/** The jobs list's schedule and target columns, sorting, bulk disable, run now and delete (a confirmation
 * naming the count), the UTC/local/job-zone toggle, the history grouped by occurrence, an unknown job. */
async function operateJobs() {
  const session = await openBrowser({ bypassCSP: ARGS.audit === true });
  const { page } = session;
  await signedIn(page);
  const observed = { audits: {}, expectedStatuses: [404] };
  const rowsOf = () =>
    page.locator("table").first().evaluate((table) => {
      const heads = [...table.querySelectorAll("thead th")].map((th) => th.textContent.replace(/[▲▼]/g, "").trim());
      return [...table.querySelectorAll("tbody tr")].map((row) =>
        Object.fromEntries([...row.cells].map((cell, index) => [heads[index], cell.textContent.trim()])),
      );
    });

  step("columns and sorting");
  await page.goto(`${BASE}#/jobs?q=bulk-`);
  await page.locator("p.count").filter({ hasText: "jobs shown" }).waitFor();
  observed.columns = await page.locator("thead th").allTextContents();
  observed.byName = (await rowsOf()).map((row) => [row.Job, row.Schedule, row.Target]);
  await page.getByRole("button", { name: "Next run" }).click();
  observed.sortedByNext = (await rowsOf()).map((row) => row.Job);
  observed.ariaSort = await page.locator('th[aria-sort]').evaluate((th) => [th.textContent.trim(), th.getAttribute("aria-sort")]);
  await page.getByRole("button", { name: "Job", exact: true }).click();
  await page.getByRole("button", { name: "Job", exact: true }).click();
  observed.sortedByNameDescending = (await rowsOf()).map((row) => row.Job);
  observed.sortHash = await page.evaluate(() => window.location.hash);

  step("bulk disable of the filtered list");
  await page.getByLabel("Select every job shown").check();
  observed.selectedText = (await page.locator(".bulk-count").textContent()).trim();
  await page.getByRole("group", { name: "Bulk actions" }).getByRole("button", { name: "Disable" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.waitFor();
  observed.disableDialog = (await dialog.locator("h2").textContent()).trim();
  observed.disableDialogFocus = await page.evaluate(() => document.activeElement?.textContent);
  if (ARGS.audit) await auditPage(page, observed, "bulk dialog");
  await shot(page, "bulk-dialog.png");
  await dialog.getByRole("button", { name: /^Disable \d+ jobs$/ }).click();
  await page.locator("main p.action-status").filter({ hasText: "disabled." }).waitFor({ timeout: WAIT });
  observed.disableResult = (await page.locator("main p.action-status").filter({ hasText: "disabled." }).textContent()).trim();
  await page.waitForFunction(() => [...document.querySelectorAll("tbody tr")].every((row) => row.cells[2]?.textContent.includes("Disabled")), null, { timeout: WAIT });

  step("bulk run now of two");
  await page.getByLabel("Select every job shown").uncheck();
  for (const name of ARGS.runThese) await page.getByLabel(`Select ${name}`, { exact: true }).check();
  await page.getByRole("group", { name: "Bulk actions" }).getByRole("button", { name: "Run now" }).click();
  await dialog.waitFor();
  observed.runDialog = (await dialog.locator("h2").textContent()).trim();
  observed.runDialogList = (await dialog.locator("li").allTextContents()).map((t) => t.trim());
  await dialog.getByRole("button", { name: "Run 2 jobs" }).click();
  await page.locator("main p.action-status").filter({ hasText: "2 of 2 jobs run." }).waitFor({ timeout: WAIT });

  step("bulk delete: cancelled, then confirmed");
  for (const name of ARGS.runThese) await page.getByLabel(`Select ${name}`, { exact: true }).uncheck();
  await page.getByLabel(`Select ${ARGS.deleteThis}`, { exact: true }).check();
  const remove = page.getByRole("group", { name: "Bulk actions" }).getByRole("button", { name: "Delete…" });
  await remove.click();
  await dialog.waitFor();
  observed.deleteDialog = (await dialog.locator("h2").textContent()).trim();
  await page.keyboard.press("Escape");
  await dialog.waitFor({ state: "hidden" });
  observed.stillThere = (await page.request.get(armUrl(ARGS.deleteThis), { headers: { Authorization: `Bearer ${KEY}` } })).status();
  await remove.click();
  await dialog.getByRole("button", { name: "Delete 1 job" }).click();
  await page.locator("main p.action-status").filter({ hasText: "1 of 1 job deleted." }).waitFor({ timeout: WAIT });
  await page.waitForFunction((name) => ![...document.querySelectorAll("tbody th a")].some((a) => a.textContent === name), ARGS.deleteThis);
  observed.afterDelete = (await rowsOf()).map((row) => row.Job);

  step("times: UTC, local, the job's zone");
  await page.goto(jobUrl(ARGS.zoned));
  await page.getByRole("heading", { level: 1, name: ARGS.zoned }).waitFor();
  await page.getByRole("table", { name: /occurrences/ }).waitFor();
  const nextRun = async () => (await summary(page))["Next run"];
  observed.times = { utc: await nextRun() };
  observed.nextRunIso = await page.locator("dl.summary time").first().getAttribute("datetime");
  await page.getByLabel("Times in").selectOption("local");
  await page.waitForFunction((text) => document.querySelector("dl.summary time")?.textContent !== text, observed.times.utc.split(" (")[0]);
  observed.times.local = await nextRun();
  await page.getByLabel("Times in").selectOption("job");
  await page.waitForFunction((text) => document.querySelector("dl.summary time")?.textContent !== text, observed.times.local.split(" (")[0]);
  observed.times.job = await nextRun();
  await page.getByLabel("Times in").selectOption("utc");

  step("history grouped by occurrence");
  await page.goto(jobUrl(ARGS.retried));
  await page.getByRole("heading", { level: 1, name: ARGS.retried }).waitFor();
  await page.locator("tbody tr[data-status]").nth(ARGS.retriedRows - 1).waitFor({ timeout: WAIT });
  observed.groups = await page.locator("tbody.occurrence").evaluateAll((bodies) =>
    bodies.map((body) => ({
      heading: body.querySelector("tr.occurrence-head th").textContent,
      rows: [...body.querySelectorAll("tr[data-status]")].map((row) => [row.cells[1].textContent, row.cells[2].textContent, row.cells[5].textContent]),
      lateness: [...body.querySelectorAll("tr[data-status]")].map((row) => row.cells[4].textContent),
    })),
  );
  observed.groupsChart = await page.locator("#chart-lateness").getAttribute("aria-label");
  if (ARGS.audit) await auditPage(page, observed, "job with grouped history");
  await shot(page, "history-grouped.png");

  step("an unknown job");
  await page.goto(jobUrl("no-such-job"));
  await page.getByRole("heading", { level: 1, name: "no-such-job" }).waitFor();
  await page.getByRole("alert").filter({ hasText: "was not found" }).waitFor();
  observed.unknown = {
    alert: (await page.getByRole("alert").filter({ hasText: "was not found" }).textContent()).trim(),
    buttons: await page.locator("main button").count(),
    loading: await page.getByText("Loading…").count(),
  };
  await finish(session, observed);
}

/** A Reader: every view, no write control; a write forged with the Reader's key is the service's 403. */
async function readerView() {
  const session = await openBrowser();
  const { page } = session;
  await signIn(page, process.env.READER_KEY);
  await page.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();
  const observed = {};
  await page.goto(`${BASE}#/jobs`);
  await page.locator("p.count").filter({ hasText: "jobs shown" }).waitFor();
  await page.waitForTimeout(500); // the role is known by now (one request at sign-in)
  observed.jobs = await page.locator("tbody th a").allTextContents();
  observed.listControls = {
    checkboxes: await page.locator("main input[type=checkbox].select").count(),
    bulkVisible: await page.getByRole("group", { name: "Bulk actions" }).count(),
    newJob: await page.getByRole("link", { name: "New job" }).count(),
  };
  await page.goto(jobUrl(ARGS.job));
  await page.getByRole("heading", { level: 1, name: ARGS.job }).waitFor();
  await page.locator("dl.summary dt").first().waitFor();
  await page.waitForTimeout(500);
  observed.jobControls = await page.locator("main button, main a.button-link").evaluateAll((els) => els.filter((e) => e.offsetParent !== null).map((e) => e.textContent));
  await page.goto(`${BASE}#/edit/${ARGS.group}/${ARGS.collection}/${ARGS.job}`);
  await page.getByRole("alert").filter({ hasText: "Reader" }).waitFor();
  observed.editor = (await page.getByRole("alert").filter({ hasText: "Reader" }).textContent()).trim();
  observed.editorInputs = await page.locator("main input:visible, main textarea:visible").count();
  step("forged writes with the Reader's key");
  observed.forged = await page.evaluate(async ({ run, put, key }) => {
    const headers = { Authorization: `Bearer ${key}`, "Content-Type": "application/json" };
    const one = await fetch(run, { method: "POST", headers });
    const two = await fetch(put, { method: "PATCH", headers, body: JSON.stringify({ properties: { state: "Disabled" } }) });
    return [[one.status, (await one.json()).error.code], [two.status, (await two.json()).error.message]];
  }, { run: armUrl(`${ARGS.job}/run`), put: armUrl(ARGS.job), key: process.env.READER_KEY });
  observed.expectedStatuses = [403];
  await finish(session, observed);
}

/** A job's history with every kind of attempt: the lateness column and the two time charts. */
async function latenessCharts() {
  const session = await openBrowser();
  const { page } = session;
  await signedIn(page);
  const observed = { audits: {} };
  step("job page with its history");
  await page.goto(jobUrl(ARGS.job));
  await page.getByRole("heading", { level: 1, name: ARGS.job }).waitFor();
  await page.locator("tbody tr[data-status]").nth(ARGS.rows - 1).waitFor({ timeout: WAIT });
  observed.lateness = await page.locator("tbody tr[data-status]").evaluateAll((rows) =>
    rows.map((row) => [row.cells[1].textContent, row.cells[5].textContent, row.cells[4].textContent, row.closest("tbody").querySelector("tr.occurrence-head th")?.textContent ?? ""]),
  );
  observed.latenessChart = await page.locator("#chart-lateness").getAttribute("aria-label");
  observed.delayChart = await page.locator("#chart-on-demand").getAttribute("aria-label");
  observed.captions = await page.locator(".charts figcaption").allTextContents();
  if (ARGS.audit) await auditPage(page, observed, "job with three charts");
  await finish(session, observed);
}

/** Hostile names and values (scripts, attribute breakers, right-to-left overrides, very long and awkward
 * names) in every new view: the jobs list (schedule and target columns, sorting, search), the bulk
 * confirmation and its result, job pages (the grouped history with a target's hostile answer), the editor
 * (an unchanged save, and a new job named hostile by the form). The page runs WITHOUT its CSP (bypassCSP),
 * so a payload that reached the DOM as markup would run: a trap on window.__pwned records (and logs) any
 * assignment, and a MutationObserver records every element the page adds that could run or load something
 * (script, img, svg, iframe, ...), every on* attribute and every link that is not a fragment. A probe in a
 * second browser shows the trap catches a payload that does get in. ARGS: names (every job as [group,
 * collection, job]), hostile (the job whose target answered with markup), historyRows, editorJob,
 * newJob: [group, collection, job, uri], runThese, deleteMeanwhile. */
async function hostileNames() {
  if (ARGS.part === "bidi") return hostileBidi();
  if (ARGS.part === "roundTrip") return hostileRoundTrip();
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
    const RISKY = new Set(["SCRIPT", "IMG", "SVG", "IFRAME", "FRAME", "OBJECT", "EMBED", "STYLE", "LINK", "META", "BASE", "FORM", "MATH", "TEMPLATE", "VIDEO", "AUDIO", "SOURCE"]);
    const inspect = (element) => {
      if (element.nodeType !== 1) return;
      for (const node of [element, ...element.querySelectorAll("*")]) {
        const tag = node.tagName.toUpperCase();
        // The static page as the parser builds it: its <head> and the brand's icon.
        if (node.closest("head") || (tag === "IMG" && node.parentElement?.matches("a.brand") && node.getAttribute("src") === "/dashboard/assets/icon.svg")) continue;
        // The editor's own form (a <form> for the dialog buttons and the editor itself) is the page's.
        const own = tag === "FORM" && (node.classList.contains("editor") || node.classList.contains("buttons") || node.classList.contains("filters") || node.classList.contains("signin"));
        if (RISKY.has(tag) && !own) foreign.push(`<${tag.toLowerCase()}> added`);
        for (const attribute of node.attributes) {
          if (attribute.name.toLowerCase().startsWith("on")) foreign.push(`${attribute.name} on <${tag.toLowerCase()}>`);
        }
        if (tag === "A" && node.hasAttribute("href") && !node.getAttribute("href").startsWith("#")) foreign.push(`a href=${node.getAttribute("href")}`);
      }
    };
    new MutationObserver((records) => {
      for (const record of records) {
        if (record.type === "attributes") inspect(record.target);
        for (const node of record.addedNodes) inspect(node);
      }
    }).observe(document, { childList: true, subtree: true, attributes: true });
  };
  const session = await openBrowser({ bypassCSP: true });
  const { page } = session;
  await page.addInitScript(TRAP);
  const observed = { expectedStatuses: [404], hits: [], foreign: [] };
  // After each step (and before a reload, which starts the trap afresh): fail at once, naming the step.
  const collect = async (where) => {
    const { hits, foreign } = await page.evaluate(() => ({ hits: window.__pwnedHits, foreign: window.__foreign }));
    observed.hits.push(...hits);
    observed.foreign.push(...foreign);
    assert.deepEqual([...observed.hits, ...observed.foreign], [], `a payload ran or was added as markup by ${where}`);
  };
  await signedIn(page);
  const e = encodeURIComponent;
  const pageOf = ([group, collection, job]) => `${BASE}#/job/${e(group)}/${e(collection)}/${e(job)}`;
  const titled = async (text) =>
    page.waitForFunction((wanted) => document.getElementById("page-title")?.textContent === wanted, text, { timeout: WAIT });
  const total = ARGS.names.length;

  step("collections");
  await page.locator("tbody th a").first().waitFor();
  await page.waitForFunction((n) => document.querySelectorAll("tbody th a").length >= n, ARGS.collections, { timeout: WAIT });
  observed.collections = await page.locator("tbody th a").allTextContents();

  step("jobs list: names, collections, targets, outcomes");
  await page.goto(`${BASE}#/jobs`);
  await page.locator("p.count").filter({ hasText: `${total} of ${total} jobs shown` }).waitFor({ timeout: WAIT });
  const rows = () =>
    page.locator("main table").first().evaluate((table) =>
      [...table.querySelectorAll("tbody tr")].map((row) => ({
        job: row.querySelector("th a").textContent,
        href: row.querySelector("th a").getAttribute("href"),
        select: row.querySelector("input.select")?.getAttribute("aria-label") ?? null,
        collection: row.cells[1].textContent,
        target: row.cells[4].textContent,
        outcomeTitle: row.querySelector("td.outcome .excerpt")?.getAttribute("title") ?? null,
      })),
    );
  await page.waitForFunction(() => document.querySelector("td.outcome .excerpt") !== null, null, { timeout: WAIT });
  observed.rows = await rows();
  observed.listFits = await page.evaluate(() => ({ table: document.querySelector("main table").scrollWidth, main: document.querySelector("main").clientWidth }));
  await collect("the jobs list");

  step("sorting by name, both ways");
  await page.getByRole("button", { name: "Job", exact: true }).click();
  observed.ascending = (await rows()).map((row) => row.job);
  await page.getByRole("button", { name: "Job", exact: true }).click();
  observed.descending = (await rows()).map((row) => row.job);
  observed.sortHash = await page.evaluate(() => window.location.hash);
  await collect("sorting");

  step("search for a hostile name, kept in the address across a reload");
  await page.getByLabel("Search").fill(ARGS.searchFor);
  await page.locator("p.count").filter({ hasText: `of ${total} jobs shown` }).waitFor();
  observed.searched = (await rows()).map((row) => row.job);
  observed.searchHash = await page.evaluate(() => window.location.hash);
  await collect("the search");
  await page.reload();
  await page.locator("p.count").filter({ hasText: `of ${total} jobs shown` }).waitFor({ timeout: WAIT });
  await page.waitForFunction(() => document.querySelectorAll("tbody th a").length > 0, null, { timeout: WAIT });
  observed.searchAfterReload = { value: await page.getByLabel("Search").inputValue(), jobs: (await rows()).map((row) => row.job) };

  step("bulk disable of one collection: the dialog names every job as text");
  await page.goto(`${BASE}#/jobs?${new URLSearchParams({ collection: ARGS.bulkCollection })}`);
  await page.locator("p.count").filter({ hasText: `${ARGS.bulkCount} of ${total} jobs shown` }).waitFor({ timeout: WAIT });
  await page.getByLabel("Select every job shown").check();
  const bar = page.getByRole("group", { name: "Bulk actions" });
  await bar.getByRole("button", { name: "Disable" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.waitFor();
  observed.disableDialog = {
    title: await dialog.locator("h2").textContent(),
    items: await dialog.locator("li").evaluateAll((items) => items.map((li) => ({ text: li.textContent, elements: [...li.querySelectorAll("*")].map((el) => el.tagName.toLowerCase()) }))),
    focus: await page.evaluate(() => document.activeElement?.textContent),
  };
  await shot(page, "hostile-bulk-dialog.png");
  await dialog.getByRole("button", { name: `Disable ${ARGS.bulkCount} jobs` }).click();
  const result = page.locator("main p.action-status").filter({ hasText: "disabled." });
  await result.waitFor({ timeout: WAIT });
  observed.disableResult = await result.textContent();

  step("bulk run now of two jobs, one deleted meanwhile: the failure names it as text");
  await page.getByLabel("Select every job shown").uncheck();
  for (const ref of ARGS.runThese) {
    // By the box's label, compared in the page (each click renders the rows again: find the box each time).
    await page.evaluate((label) => [...document.querySelectorAll("input.select")].find((box) => box.getAttribute("aria-label") === label).click(), `Select ${ref[2]}`);
  }
  await page.locator(".bulk-count").filter({ hasText: `2 of ${ARGS.bulkCount} shown selected` }).waitFor();
  await bar.getByRole("button", { name: "Run now" }).click();
  await dialog.waitFor();
  observed.runDialogItems = await dialog.locator("li").allTextContents();
  const gone = ARGS.deleteMeanwhile;
  const deleted = await page.request.delete(
    `${ORIGIN}/subscriptions/${SUBSCRIPTION}/resourceGroups/${e(gone[0])}/providers/Microsoft.Scheduler/jobCollections/${e(gone[1])}/jobs/${e(gone[2])}?api-version=${PREVIEW_VERSION}`,
    { headers: { Authorization: `Bearer ${KEY}` } },
  );
  observed.deletedMeanwhile = deleted.status();
  await dialog.getByRole("button", { name: "Run 2 jobs" }).click();
  const ran = page.locator("main p.action-status").filter({ hasText: "1 of 2 jobs run." });
  await ran.waitFor({ timeout: WAIT });
  observed.runResult = await ran.textContent();
  observed.runResultElements = await ran.evaluate((p) => p.querySelectorAll("*").length);
  await collect("the bulk actions");

  step("every job's page: heading, title, breadcrumb, target");
  observed.pages = [];
  for (const ref of ARGS.names) {
    if (ref[2] === gone[2] && ref[1] === gone[1]) continue;
    await page.goto(pageOf(ref));
    await titled(ref[2]);
    await page.locator("dl.pairs code").first().waitFor({ timeout: WAIT });
    observed.pages.push({
      ref,
      heading: await page.locator("#page-title").textContent(),
      title: await page.evaluate(() => document.title),
      crumb: await page.locator("nav.breadcrumb li").last().textContent(),
      request: await page.locator("dl.pairs code").first().textContent(),
      collectionCrumb: await page.locator("nav.breadcrumb li").nth(1).textContent(),
    });
    await collect(`the page of ${JSON.stringify(ref)}`);
  }

  step("the job a hostile target answered: history grouped under its occurrence");
  await page.goto(pageOf(ARGS.hostile));
  await titled(ARGS.hostile[2]);
  await page.locator("tbody tr[data-status]").nth(ARGS.historyRows - 1).waitFor({ timeout: WAIT });
  observed.history = await page.locator("tbody.occurrence").evaluateAll((bodies) =>
    bodies.map((body) => ({
      heading: body.querySelector("tr.occurrence-head th").textContent,
      messages: [...body.querySelectorAll("tr[data-status] td.message")].map((cell) => (cell.querySelector("pre") ?? cell).textContent),
      elements: [...body.querySelectorAll("td.message *")].map((el) => el.tagName.toLowerCase()),
    })),
  );
  observed.definition = await page.locator("dl.pairs").evaluateAll((lists) =>
    lists.map((list) => Object.fromEntries([...list.querySelectorAll(":scope > dt")].map((term) => [term.textContent, term.nextElementSibling.textContent]))),
  );
  observed.raw = JSON.parse(await page.locator("pre.raw").textContent());
  await shot(page, "hostile-job.png");
  await collect("the hostile job's page");

  step("the editor: the hostile job's values as typed, checked and saved unchanged");
  const edited = ARGS.editorJob;
  await page.goto(`${BASE}#/edit/${e(edited[0])}/${e(edited[1])}/${e(edited[2])}`);
  await titled(`Edit ${edited[2]}`);
  await page.getByLabel("URI", { exact: true }).waitFor();
  await page.waitForFunction(() => document.getElementById("request-uri")?.value !== "", null, { timeout: WAIT });
  observed.editor = {
    uri: await page.locator("#request-uri").inputValue(),
    headers: await page.locator("#request-headers").inputValue(),
    body: await page.locator("#request-body").inputValue(),
    crumbs: await page.locator("nav.breadcrumb li").allTextContents(),
  };
  await page.getByRole("button", { name: "Check and preview" }).click();
  await page.getByRole("table", { name: /occurrences if saved/ }).waitFor({ timeout: WAIT });
  await page.getByRole("button", { name: "Save" }).click();
  await titled(edited[2]);
  observed.editorSaved = await page.locator("main p.notice").first().textContent();
  await collect("the editor");

  step("a new job named by the form, in a collection with a right-to-left override");
  const [group, collection, job, uri] = ARGS.newJob;
  await page.goto(`${BASE}#/jobs`);
  await page.getByRole("link", { name: "New job" }).click();
  await titled("New job");
  await page.waitForFunction(() => document.getElementById("job-collection-input")?.options.length > 0, null, { timeout: WAIT });
  await page.getByLabel("Collection").selectOption({ value: `/subscriptions/${SUBSCRIPTION}/resourceGroups/${group}/providers/Microsoft.Scheduler/jobCollections/${collection}` });
  await page.getByLabel("Name", { exact: true }).fill(job);
  await page.getByLabel("Type", { exact: true }).selectOption("Http");
  await page.getByLabel("URI", { exact: true }).fill(uri);
  await page.getByRole("button", { name: "Check and preview" }).click();
  await page.getByRole("table", { name: /occurrences if saved/ }).waitFor({ timeout: WAIT });
  await page.getByRole("button", { name: "Create job" }).click();
  await titled(job);
  observed.created = await page.locator("main p.notice").first().textContent();
  await collect("the new job");
  await finish(session, observed);

  step("probe: a payload that does reach the DOM as markup is caught");
  const probe = await openBrowser({ bypassCSP: true });
  await probe.page.addInitScript(TRAP);
  await probe.page.goto(BASE);
  await probe.page.evaluate(() => document.body.insertAdjacentHTML("beforeend", '<img src="x" onerror="window.__pwned = 99">'));
  await probe.page.waitForFunction(() => window.__pwnedHits.length > 0, null, { timeout: WAIT });
  const caught = await probe.page.evaluate(() => ({ hits: window.__pwnedHits, foreign: window.__foreign }));
  await probe.browser.close();
  // The names hold U+2028, which Python's splitlines() (run_scenario) takes for a line break: escaped.
  const line = JSON.stringify({ ...observed, probe: caught, probeProblems: probe.problems }).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
  process.stdout.write(`${line}\n`);

  /** Where a right-to-left override in a name or a URI reorders what the page shows: the list's name, the
   * job page's request, and the bulk result that names a job (its text after the name). Each as {reordered,
   * visual}: whether two letters that follow each other in the text are drawn right to left, and the
   * letters in the order they are drawn. */
  async function hostileBidi() {
    const session = await openBrowser();
    const { page } = session;
    await signedIn(page);
    const observed = { expectedStatuses: [404] };
    const drawn = (locator) =>
      locator.evaluate((element) => {
        const chars = [];
        const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          for (let i = 0; i < node.data.length; i++) {
            if (!/[A-Za-z0-9]/.test(node.data[i])) continue;
            const range = document.createRange();
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            const rect = range.getBoundingClientRect();
            if (rect.width > 0) chars.push({ c: node.data[i], left: rect.left, top: Math.round(rect.top) });
          }
        }
        const reordered = chars.some((char, k) => k > 0 && chars[k - 1].top === char.top && char.left < chars[k - 1].left);
        const visual = [...chars].sort((a, b) => a.top - b.top || a.left - b.left).map((char) => char.c).join("");
        return { reordered, visual };
      });
    const [rtl, other, uriJob] = ARGS.jobs;
    await page.goto(`${BASE}#/jobs?${new URLSearchParams({ collection: `${ARGS.group}/${ARGS.collection}` })}`);
    await page.locator("p.count").filter({ hasText: "3 of 3 jobs shown" }).waitFor({ timeout: WAIT });
    const link = page.locator("tbody th a").filter({ hasText: "report" });
    observed.listName = await drawn(link);
    for (const name of [rtl, other]) {
      await page.evaluate((label) => [...document.querySelectorAll("input.select")].find((box) => box.getAttribute("aria-label") === label).click(), `Select ${name}`);
    }
    await page.getByRole("group", { name: "Bulk actions" }).getByRole("button", { name: "Run now" }).click();
    await page.getByRole("dialog").waitFor();
    const e = encodeURIComponent;
    const url = `${ORIGIN}/subscriptions/${SUBSCRIPTION}/resourceGroups/${e(ARGS.group)}/providers/Microsoft.Scheduler/jobCollections/${e(ARGS.collection)}/jobs/${e(rtl)}?api-version=${PREVIEW_VERSION}`;
    observed.deleted = (await page.request.delete(url, { headers: { Authorization: `Bearer ${KEY}` } })).status();
    await page.getByRole("dialog").getByRole("button", { name: "Run 2 jobs" }).click();
    const result = page.locator("main p.action-status").filter({ hasText: "1 of 2 jobs run." });
    await result.waitFor({ timeout: WAIT });
    observed.bulkResultText = await result.textContent();
    observed.bulkResult = await drawn(result);
    await page.goto(`${BASE}#/job/${e(ARGS.group)}/${e(ARGS.collection)}/${e(uriJob)}`);
    await page.locator("dl.pairs code").first().waitFor({ timeout: WAIT });
    observed.requestText = await page.locator("dl.pairs code").first().textContent();
    observed.request = await drawn(page.locator("dl.pairs code").first());
    await shot(page, "bidi-request.png");
    await finish(session, observed);
  }

  /** A job whose headers and body the form cannot show as they are (a header named __proto__, values with
   * leading or trailing white space or a byte order mark, a body with CR LF and CR line ends): the editor
   * is opened and saved without a change. ARGS: group, collection, job. */
  async function hostileRoundTrip() {
    const session = await openBrowser();
    const { page } = session;
    await signedIn(page);
    const observed = {};
    const e = encodeURIComponent;
    await page.goto(`${BASE}#/edit/${e(ARGS.group)}/${e(ARGS.collection)}/${e(ARGS.job)}`);
    await page.waitForFunction(() => document.getElementById("request-uri")?.value, null, { timeout: WAIT });
    observed.headers = await page.locator("#request-headers").inputValue();
    observed.body = await page.locator("#request-body").inputValue();
    await page.getByRole("button", { name: "Save" }).click();
    await page.locator("main p.notice").filter({ hasText: `Job ${ARGS.job} saved.` }).waitFor({ timeout: WAIT });
    observed.saved = true;
    await finish(session, observed);
  }
}

const SCENARIOS = { latenessCharts, watchJobFire, runDisableDelete, browseAndFilter, accessibility, serviceStatus, tokenSignIn, editJobs, operateJobs, readerView, hostileNames };
const name = process.argv[2];
if (!SCENARIOS[name]) {
  process.stderr.write(`unknown scenario '${name}'; one of ${Object.keys(SCENARIOS).join(", ")}\n`);
  process.exit(2);
}
try {
  await SCENARIOS[name]();
} catch (error) {
  process.stderr.write(`${error.stack || error}\n`);
  if (lastPage && !lastPage.isClosed()) {
    await lastPage.screenshot({ path: join(SHOTS, `failed-${name}.png`), fullPage: true }).catch(() => {});
    process.stderr.write(`screenshot of the failure: ${join(SHOTS, `failed-${name}.png`)}\n`);
  }
  process.exit(1);
}
