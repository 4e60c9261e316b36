"""In a real browser, the job editor's form fields for HTTP authentication (``action.request.authentication``:
Basic, ClientCertificate, ActiveDirectoryOAuth and, with api-version 2026-12-01-preview, ManagedServiceIdentity)
and for Service Bus actions (``ServiceBusQueue``: ``serviceBusQueueMessage``; ``ServiceBusTopic``:
``serviceBusTopicMessage``), against the function app on the local host (every trigger, Azurite):

* jobs created through the form are stored as typed (read back through the management API with
  api-version 2026-12-01-preview, and their secrets from the job store itself);
* a secret is typed into a password input (a certificate is a chosen .pfx file), never filled in, never
  echoed: not in any answer the page received, not in the page after saving, not in the JSON view (a secret
  typed in the form is kept aside and sent with the body);
* an edit that does not retype a secret keeps it: the dry run says ``kept`` and the job still authenticates
  against an HTTPS target on 127.0.0.1 that checks the Basic credentials (a Service Bus key is still in the
  store); a user name changed without a new password is refused by the service at the password input, and a
  SAS key name changed without a new key would drop the stored key: the page does not save without consent;
* the service's error on a new field (an empty namespace, a SAS key without its key name, a missing OAuth
  secret, a certificate password that does not open the .pfx, a managed identity over plain http) is shown
  next to that field, marked invalid and focused;
* what the form does not show (``transportType``, ``brokeredMessageProperties``, ``customMessageProperties``)
  is kept by a form edit;
* axe-core's WCAG 2.1 A and AA rules find nothing on the editor with these fields and with an error shown.

The browser steps are a Node script (Playwright, ``playwright-core`` from npm, driving Chromium) given to
``node`` on its standard input, with the whole-visit checks of ``scenarios.mjs``: no console error or warning
but the refusals provoked on purpose (400 of a dry run, 404 of a name looked up before a create), no page error
or CSP violation, no request outside the dashboard's origin, no cookie, nothing in local storage. The audits
run in a second context of the same browser that bypasses the CSP (axe is injected as a script).
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes

from scheduler_core import definitions, wiring
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.browser.conftest import COLLECTION, GROUP, SUBSCRIPTION, Dashboard, run_module
from tests.support.tls import Seen, TestCa, https_peer

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
PASSWORD = "basic-pa55word-never-shown"
NEW_PASSWORD = "second-pa55word-never-shown"
OAUTH_SECRET = "oauth-client-secret-never-shown"
PFX_PASSWORD = "pfx-pa55-never-shown"
SAS_KEY = "queue-sas-key-never-shown="
TOPIC_KEY = "topic-sas-key-never-shown="
RICH_KEY = "rich-sas-key-never-shown="

# The browser's part. ARGS.scenario: "http" or "bus"; the rest are the names and values each one uses.
SCRIPT = r"""
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const BASE = process.env.DASHBOARD_URL;
const KEY = process.env.API_KEY;
const SUBSCRIPTION = process.env.SUBSCRIPTION;
const ARGS = JSON.parse(process.env.SCENARIO_ARGS);
const ORIGIN = new URL(BASE).origin;
const SECRETS = ARGS.secrets;
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
const answers = []; // the text of every answer the page received, and of the API reads made here
const reading = [];
context.on("request", (request) => {
  const url = request.url();
  if (!url.startsWith(ORIGIN) && !url.startsWith("data:")) foreign.push(url);
});
const page = await context.newPage();
page.on("console", (message) => {
  if (message.type() === "error" || message.type() === "warning") problems.push(`${message.type()}: ${message.text()}`);
});
page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
page.on("response", (response) => {
  reading.push(response.text().then((text) => answers.push(`${response.url()}\n${text}`), () => {}));
});
const observed = { audits: {} };

const jobPath = (name) =>
  `/subscriptions/${e(SUBSCRIPTION)}/resourceGroups/${e(ARGS.group)}/providers/Microsoft.Scheduler/jobCollections/${e(ARGS.collection)}/jobs/${e(name)}`;
const auth = { Authorization: `Bearer ${KEY}` };
const armUrl = (name, tail = "") => `${ORIGIN}${jobPath(name)}${tail}?api-version=2026-12-01-preview`;

/** A job as the management API returns it (api-version 2026-12-01-preview): its status and its properties. */
async function stored(name) {
  const answer = await page.request.get(armUrl(name), { headers: auth });
  const text = await answer.text();
  answers.push(text);
  return { status: answer.status(), properties: answer.ok() ? JSON.parse(text).properties : null };
}

/** Runs the job now and waits for its history to have ``count`` rows; the newest row's status and message. */
async function runAndWait(name, count) {
  const run = await page.request.post(armUrl(name, "/run"), { headers: auth });
  assert.equal(run.status(), 200, await run.text());
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const answer = await page.request.get(armUrl(name, "/history"), { headers: auth });
    const text = await answer.text();
    answers.push(text);
    const rows = JSON.parse(text).value;
    if (rows.length >= count) return { status: rows[0].properties.status, message: rows[0].properties.message };
    await page.waitForTimeout(500);
  }
  throw new Error(`${name}: fewer than ${count} history rows after 60 s`);
}

/** The error shown next to the field of id ``id`` (its text, aria-invalid, the focus, the form's banner). */
async function fieldError(id, pattern) {
  const note = page.locator(`#${id}-error`).filter({ hasText: pattern });
  await note.waitFor();
  return {
    text: (await note.textContent()).trim(),
    invalid: await page.locator(`#${id}`).getAttribute("aria-invalid"),
    describedBy: await page.locator(`#${id}`).getAttribute("aria-describedby"),
    focus: await page.evaluate(() => document.activeElement?.id),
    banner: (await page.locator(".form-status").textContent()).trim(),
  };
}

/** Which secrets the page holds anywhere: its markup and every input's value. */
async function secretsInPage() {
  const text = await page.evaluate(() => {
    const values = [...document.querySelectorAll("input, textarea, select")].map((input) => input.value);
    return [document.documentElement.outerHTML, ...values].join("\n");
  });
  return SECRETS.filter((secret) => text.includes(secret));
}

/** The label text of the control of id ``id``. */
const labelOf = (id) => page.locator(`label[for="${id}"]`).textContent().then((text) => text.trim());

const visible = (locator) => locator.filter({ visible: true });
const field = (label) => visible(page.getByLabel(label, { exact: true }));

async function fates() {
  await page.locator("ul.secrets-fate li").first().waitFor();
  return (await page.locator("ul.secrets-fate li").allTextContents()).map((text) => text.trim());
}

async function newJob(name, type) {
  await page.goto(`${BASE}#/new?collection=${e(`${ARGS.group}/${ARGS.collection}`)}`);
  await page.getByRole("heading", { level: 1, name: "New job" }).waitFor();
  await page.getByLabel("Name", { exact: true }).fill(name);
  await page.getByLabel("Type", { exact: true }).selectOption(type);
  await page.getByLabel("Start time (UTC)").fill(ARGS.start);
  await page.getByLabel("Recurrence").selectOption("Day");
  await page.getByLabel("Retry type").selectOption("None");
}

async function openEditor(name, ready) {
  await page.goto(`${BASE}#/edit/${e(ARGS.group)}/${e(ARGS.collection)}/${e(name)}`);
  await page.getByRole("heading", { level: 1, name: `Edit ${name}` }).waitFor();
  await page.waitForFunction((id) => document.getElementById(id)?.value, ready);
}

async function saved(name, button = "Save") {
  await page.getByRole("button", { name: button }).click();
  await page.getByRole("heading", { level: 1, name }).waitFor();
  await page.locator("main p.notice", { hasText: `Job ${name} saved.` }).waitFor();
  await page.locator("dl.summary").waitFor();
}

async function audit(target, name) {
  const axe = readFileSync(join(process.cwd(), "node_modules", "axe-core", "axe.min.js"), "utf8");
  await target.evaluate(axe);
  const result = await target.evaluate(async () =>
    await axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } }),
  );
  observed.audits[name] = {
    passes: result.passes.length,
    violations: result.violations.map(
      (v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
    ),
  };
}

/** A second context of the browser that bypasses the CSP (axe is injected as a script), signed in. */
async function auditContext() {
  const auditing = await browser.newContext({
    viewport: { width: 1360, height: 900 },
    locale: "en-GB",
    bypassCSP: true,
  });
  const other = await auditing.newPage();
  await other.goto(BASE);
  await other.getByLabel("API key").fill(KEY);
  await other.getByLabel("Subscription ID").fill(SUBSCRIPTION);
  await other.getByRole("button", { name: "Sign in" }).click();
  await other.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();
  return { auditing, other };
}

async function httpScenario() {
  step("a new HTTPS job with Basic authentication: the password kept out of the JSON view");
  await newJob(ARGS.basic, "Https");
  await page.getByLabel("Method").selectOption("POST");
  await page.getByLabel("URI", { exact: true }).fill(`${ARGS.peer}/basic`);
  await page.getByLabel("Body", { exact: true }).fill("first body");
  await page.getByLabel("Authentication type", { exact: true }).selectOption("Basic");
  await field("Username").fill("reporter");
  await page.locator("#auth-password").fill(ARGS.password);
  observed.newPasswordInput = {
    type: await page.locator("#auth-password").getAttribute("type"),
    label: await labelOf("auth-password"),
  };
  await page.getByLabel("JSON", { exact: true }).check();
  const json = page.getByLabel("Job definition (JSON)");
  await json.waitFor();
  const text = await json.inputValue();
  observed.jsonView = {
    holdsSecret: SECRETS.some((secret) => text.includes(secret)),
    authentication: JSON.parse(text).properties.action.request.authentication,
    aside: (await page.locator("#json-secrets-aside").textContent()).trim(),
  };
  await page.getByLabel("Form", { exact: true }).check();
  observed.passwordBackInItsInput = (await page.locator("#auth-password").inputValue()) === ARGS.password;
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.newBasicFates = await fates();
  await saved(ARGS.basic, "Create job");
  observed.basicCreated = (await stored(ARGS.basic)).properties.action.request;
  observed.secretsInPageAfterCreate = await secretsInPage();

  step("edit it without retyping the password: kept, and it still authenticates");
  await openEditor(ARGS.basic, "auth-username");
  observed.basicEditor = {
    type: await page.getByLabel("Authentication type", { exact: true }).inputValue(),
    username: await field("Username").inputValue(),
    password: await page.locator("#auth-password").inputValue(),
    passwordType: await page.locator("#auth-password").getAttribute("type"),
    passwordLabel: await labelOf("auth-password"),
    passwordInputs: await page.locator('input[type="password"]').filter({ visible: true }).count(),
    certificateShown: await page.locator("#auth-pfx").isVisible(),
  };
  await page.getByLabel("Body", { exact: true }).fill("edited body");
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.keptFates = await fates();
  await saved(ARGS.basic);
  observed.basicAfterEdit = (await stored(ARGS.basic)).properties.action.request;
  observed.firstRun = await runAndWait(ARGS.basic, 1);

  step("another user name without a new password: refused at the password, not saved");
  await openEditor(ARGS.basic, "auth-username");
  await field("Username").fill("someone-else");
  await page.getByRole("button", { name: "Check and preview" }).click();
  const passwordRefused = /^properties\.action\.request\.authentication\.password: /;
  observed.userChanged = await fieldError("auth-password", passwordRefused);
  await page.getByRole("button", { name: "Save" }).click();
  observed.userChangedOnSave = await fieldError("auth-password", passwordRefused);
  observed.headingAfterRefusal = (await page.locator("h1").textContent()).trim();
  observed.usernameAfterRefusal = (await stored(ARGS.basic)).properties.action.request.authentication.username;
  await page.locator("#auth-password").fill(ARGS.newPassword);
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.newPasswordFates = await fates();
  observed.errorGone = await page.locator("#auth-password-error").count();
  await saved(ARGS.basic);
  observed.secondRun = await runAndWait(ARGS.basic, 2);
  observed.secretsInPageAfterEdit = await secretsInPage();

  step("ActiveDirectoryOAuth: the missing secret named at its field, then created");
  await newJob(ARGS.oauth, "Http");
  await page.getByLabel("URI", { exact: true }).fill(ARGS.oauthUri);
  await page.getByLabel("Authentication type", { exact: true }).selectOption("ActiveDirectoryOAuth");
  await field("Tenant").fill("contoso.onmicrosoft.com");
  await field("Client ID").fill("dashboard-client");
  await field("Audience").fill("https://management.core.windows.net/");
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.oauthError = await fieldError("auth-secret", /^properties\.action\.request\.authentication\.secret: /);
  await page.locator("#auth-secret").fill(ARGS.oauthSecret);
  await saved(ARGS.oauth, "Create job");
  observed.oauthCreated = (await stored(ARGS.oauth)).properties.action.request.authentication;

  step("ClientCertificate: a .pfx file; a wrong password named at the certificate, then created");
  await newJob(ARGS.cert, "Https");
  await page.getByLabel("URI", { exact: true }).fill(ARGS.certUri);
  await page.getByLabel("Authentication type", { exact: true }).selectOption("ClientCertificate");
  await page.locator("#auth-pfx").setInputFiles(ARGS.pfxFile);
  await page.locator("#auth-pfx-password").fill("not-the-password");
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.pfxError = await fieldError("auth-pfx", /^properties\.action\.request\.authentication\.pfx: /);
  observed.pfxLabels = { file: await labelOf("auth-pfx"), password: await labelOf("auth-pfx-password") };
  await page.locator("#auth-pfx-password").fill(ARGS.pfxPassword);
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.certFates = await fates();
  await saved(ARGS.cert, "Create job");
  observed.certCreated = (await stored(ARGS.cert)).properties.action.request.authentication;
  await openEditor(ARGS.cert, "request-uri");
  observed.certEditor = {
    type: await page.getByLabel("Authentication type", { exact: true }).inputValue(),
    stored: (await page.locator("#auth-certificate").textContent()).trim(),
    pfxLabel: await labelOf("auth-pfx"),
  };
  await page.getByLabel("Body", { exact: true }).fill("certificate kept");
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.certKeptFates = await fates();
  await saved(ARGS.cert);

  step("ManagedServiceIdentity: plain http refused at the type, then https");
  await newJob(ARGS.msi, "Http");
  await page.getByLabel("URI", { exact: true }).fill("http://example.invalid/msi");
  await page.getByLabel("Authentication type", { exact: true }).selectOption("ManagedServiceIdentity");
  observed.msiFields = {
    tenant: await page.locator("#auth-tenant").isVisible(),
    audience: await field("Audience").isVisible(),
  };
  await field("Audience").fill("api://scheduler-target");
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.msiError = await fieldError("auth-type", /^properties\.action\.request\.authentication\.type: /);
  await page.getByLabel("Type", { exact: true }).selectOption("Https");
  await page.getByLabel("URI", { exact: true }).fill("https://example.invalid/msi");
  await saved(ARGS.msi, "Create job");
  observed.msiCreated = (await stored(ARGS.msi)).properties.action.request.authentication;

  step("audits: the editor with Basic authentication, and with an error at the password");
  const { auditing, other } = await auditContext();
  await other.goto(`${BASE}#/edit/${e(ARGS.group)}/${e(ARGS.collection)}/${e(ARGS.basic)}`);
  await other.waitForFunction(() => document.getElementById("auth-username")?.value);
  await audit(other, "editor with Basic authentication");
  await other.getByLabel("Username", { exact: true }).fill("a-third-user");
  await other.getByRole("button", { name: "Check and preview" }).click();
  await other.locator("#auth-password-error").waitFor();
  await audit(other, "editor with an error at the password");
  await other.getByLabel("Authentication type", { exact: true }).selectOption("ActiveDirectoryOAuth");
  await audit(other, "editor with ActiveDirectoryOAuth");
  await auditing.close();
}

async function busScenario() {
  step("a new Service Bus queue job: an empty namespace, then a key without its name, named at their fields");
  await newJob(ARGS.queue, "ServiceBusQueue");
  await field("Queue name").fill("orders");
  await field("Message").fill("hello from the form");
  await field("SAS key name").fill("sender");
  await page.locator("#bus-key").fill(ARGS.sasKey);
  observed.newKeyInput = {
    type: await page.locator("#bus-key").getAttribute("type"),
    label: await labelOf("bus-key"),
  };
  await page.getByRole("button", { name: "Check and preview" }).click();
  const bus = "properties\\.action\\.serviceBusQueueMessage";
  observed.namespaceError = await fieldError("bus-namespace", new RegExp(`^${bus}\\.namespace: `));
  await field("Namespace").fill("contoso-bus");
  await field("SAS key name").fill("");
  await page.getByRole("button", { name: "Create job" }).click();
  observed.keyNameError = await fieldError("bus-key-name", new RegExp(`^${bus}\\.authentication\\.sasKeyName: `));
  observed.queueBeforeCreate = (await stored(ARGS.queue)).status;
  await field("SAS key name").fill("sender");
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.newKeyFates = await fates();
  await saved(ARGS.queue, "Create job");
  observed.queueCreated = (await stored(ARGS.queue)).properties.action;
  const term = page.locator("dl.pairs dt", { hasText: /^Service Bus queue$/ });
  const target = term.locator("xpath=following-sibling::dd[1]");
  observed.queueTarget = (await target.textContent()).trim();
  observed.secretsInPageAfterCreate = await secretsInPage();

  step("a new Service Bus topic job");
  await newJob(ARGS.topic, "ServiceBusTopic");
  observed.topicFields = {
    queue: await page.locator("#bus-queue").isVisible(),
    topic: await field("Topic path").isVisible(),
  };
  await field("Namespace").fill("contoso-bus");
  await field("Topic path").fill("events");
  await field("Message").fill("to the topic");
  await field("SAS key name").fill("publisher");
  await page.locator("#bus-key").fill(ARGS.topicKey);
  await saved(ARGS.topic, "Create job");
  observed.topicCreated = (await stored(ARGS.topic)).properties.action;

  step("edit the topic job's message without retyping the key");
  await openEditor(ARGS.topic, "bus-namespace");
  await field("Message").fill("to the topic, edited");
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.topicKeptFates = await fates();
  await saved(ARGS.topic);

  step("edit a job with brokered and custom properties: only its message");
  await openEditor(ARGS.rich, "bus-namespace");
  observed.richEditor = {
    type: await page.getByLabel("Type", { exact: true }).inputValue(),
    namespace: await field("Namespace").inputValue(),
    queue: await field("Queue name").inputValue(),
    message: await field("Message").inputValue(),
    keyName: await field("SAS key name").inputValue(),
    key: await page.locator("#bus-key").inputValue(),
    keyType: await page.locator("#bus-key").getAttribute("type"),
    keyLabel: await labelOf("bus-key"),
    otherPart: await visible(page.locator(".editor p.help", { hasText: "is edited in the JSON view" })).count(),
  };
  await field("Message").fill("edited by the form");
  await page.getByRole("button", { name: "Check and preview" }).click();
  observed.richKeptFates = await fates();
  await saved(ARGS.rich);
  observed.richAfterEdit = (await stored(ARGS.rich)).properties.action;

  step("another SAS key name without a key: the dry run says the key would be dropped; saved only with consent");
  await openEditor(ARGS.rich, "bus-namespace");
  await field("SAS key name").fill("listener");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText(/This edit drops 1 stored secret/).waitFor();
  observed.dropWarning = (await page.locator(".warning-box p").textContent()).trim();
  observed.dropStatus = (await page.locator(".form-status").textContent()).trim();
  observed.dropFocus = await page.evaluate(() => document.activeElement?.id);
  const refused = (await stored(ARGS.rich)).properties.action.serviceBusQueueMessage;
  observed.keyNameAfterRefusal = refused.authentication.sasKeyName;
  await page.getByLabel("Save without them").check();
  await saved(ARGS.rich);
  observed.richAfterDrop = (await stored(ARGS.rich)).properties.action;
  observed.secretsInPageAfterEdit = await secretsInPage();

  step("audits: the editor of a Service Bus job, and with an error at the namespace");
  const { auditing, other } = await auditContext();
  await other.goto(`${BASE}#/edit/${e(ARGS.group)}/${e(ARGS.collection)}/${e(ARGS.queue)}`);
  await other.waitForFunction(() => document.getElementById("bus-namespace")?.value);
  await audit(other, "editor with a Service Bus queue");
  await other.getByLabel("Namespace", { exact: true }).fill("");
  await other.getByRole("button", { name: "Check and preview" }).click();
  await other.locator("#bus-namespace-error").waitFor();
  await audit(other, "editor with an error at the namespace");
  await auditing.close();
}

try {
  step("sign in");
  await page.goto(BASE);
  await page.getByLabel("API key").fill(KEY);
  await page.getByLabel("Subscription ID").fill(SUBSCRIPTION);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Job collections" }).waitFor();
  if (ARGS.scenario === "http") await httpScenario();
  else await busScenario();
} catch (error) {
  const failed = join(ARGS.screenshots, `failed-${ARGS.scenario}.png`);
  await page.screenshot({ path: failed, fullPage: true }).catch(() => {});
  await browser.close();
  throw error;
}
await Promise.all(reading);
observed.secretsInAnswers = SECRETS.filter((secret) => answers.some((text) => text.includes(secret)));
observed.answersRead = answers.length;
const cookies = await context.cookies();
const storage = await page.evaluate(() => localStorage.length);
await browser.close();
// The refusals provoked on purpose (400s of the dry run, the 404 of a name looked up before a create) show up
// as failed resource loads; nothing else may.
const unexpected = problems.filter((text) => ![400, 404].some((code) => text.includes(`status of ${code}`)));
assert.deepEqual(unexpected, [], `console errors, page errors or CSP violations: ${unexpected.join(" | ")}`);
assert.deepEqual(foreign, [], `requests outside the dashboard's origin: ${foreign.join(", ")}`);
assert.deepEqual(cookies, [], "the dashboard set a cookie");
assert.equal(storage, 0, "the dashboard wrote to localStorage");
process.stdout.write(`${JSON.stringify(observed)}\n`);
"""


def run_browser(dashboard: Dashboard, timeout: float = 240, **arguments: Any) -> dict[str, Any]:
    """Run :data:`SCRIPT` in a fresh browser; what it observed (the JSON it prints last)."""
    return run_module(
        dashboard,
        SCRIPT,
        {"group": GROUP, "collection": COLLECTION, "screenshots": str(dashboard.screenshots), **arguments},
        timeout,
    )


def job_url(dashboard: Dashboard, job: str, version: str = PREVIEW) -> str:
    return dashboard.api.url(dashboard.job_path(job), **{"api-version": version})


def stored_secrets(job: str) -> dict[str, str]:
    """The job's secrets as the job store holds them (by dotted path inside its properties)."""
    ref = JobRef(CollectionRef(SUBSCRIPTION, GROUP, COLLECTION), job)
    found = wiring.services().stores.jobs.get(ref)
    assert found is not None, job
    secrets: dict[str, str] = definitions.job_json(found.definition, found.state)[1]
    return secrets


def write_only(dashboard: Dashboard, job: str) -> list[tuple[str, bool]]:
    response = dashboard.api.call("GET", f"{dashboard.api.base_url}/dashboard/api/job/{dashboard.job_path(job)}")
    assert response.status_code == 200, response.text
    return [(field["path"], field["set"]) for field in response.json()["writeOnly"]]


def no_secret_answered(dashboard: Dashboard, jobs: list[str], secrets: list[str]) -> None:
    """No answer of the management API (both api-versions, a job, the list, the history) holds a secret."""
    answers = [
        dashboard.api.call("GET", job_url(dashboard, job, version)).text
        for job in jobs
        for version in (PREVIEW, "2016-03-01")
    ]
    listing = dashboard.api.url(dashboard.collection_path() + "/jobs", **{"api-version": PREVIEW})
    answers.append(dashboard.api.call("GET", listing).text)
    answers += [dashboard.api.call("GET", dashboard.job_path(job) + "/history").text for job in jobs]
    for secret in secrets:
        assert not any(secret in text for text in answers), secret


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def test_http_authentication_is_created_and_edited_with_the_form(
    dashboard: Dashboard, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dashboard.put_collection()
    start = (datetime.now(UTC) + timedelta(days=1)).replace(hour=6, minute=0, second=0, microsecond=0)
    ca = TestCa()
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca.write_pem(tmp_path)))  # the app trusts the target's CA
    client = ca.issue("dashboard-client", server=False)
    pfx = client.pfx_base64(PFX_PASSWORD)
    pfx_file = tmp_path / "client.pfx"
    pfx_file.write_bytes(base64.b64decode(pfx))
    thumbprint = client.cert.fingerprint(hashes.SHA1()).hex().upper()
    accepted = {basic("reporter", PASSWORD), basic("someone-else", NEW_PASSWORD)}

    def checks_basic(seen: Seen) -> tuple[int, str, bytes]:
        if seen.headers.get("Authorization") in accepted:
            return 200, "text/plain", b"welcome"
        return 401, "text/plain", b"wrong credentials"

    secrets = [PASSWORD, NEW_PASSWORD, OAUTH_SECRET, PFX_PASSWORD, pfx]
    with https_peer(ca, checks_basic, require_client_cert=False) as peer:
        seen = run_browser(
            dashboard,
            scenario="http",
            start=format_instant(start),
            peer=peer.base_url,
            basic="basic-made",
            password=PASSWORD,
            newPassword=NEW_PASSWORD,
            oauth="oauth-made",
            oauthUri="http://127.0.0.1:9/oauth",
            oauthSecret=OAUTH_SECRET,
            cert="cert-made",
            certUri="https://127.0.0.1:9/cert",
            pfxFile=str(pfx_file),
            pfxPassword=PFX_PASSWORD,
            msi="msi-made",
            secrets=secrets,
        )
        calls = [(call.path, call.headers.get("Authorization")) for call in peer.requests_to("/basic")]

    # Basic, typed in the form: a password input; kept out of the JSON view, sent with the body all the same.
    assert seen["newPasswordInput"] == {"type": "password", "label": "Password"}
    assert seen["jsonView"]["holdsSecret"] is False
    assert seen["jsonView"]["authentication"] == {"type": "Basic", "username": "reporter"}
    assert "action.request.authentication.password" in seen["jsonView"]["aside"]
    assert seen["passwordBackInItsInput"] is True  # the form shows it again in its (password) input
    assert seen["newBasicFates"] == ["action.request.authentication.password: new value"]
    assert seen["basicCreated"] == {
        "uri": f"{peer.base_url}/basic",
        "method": "POST",
        "body": "first body",
        "authentication": {"type": "Basic", "username": "reporter"},
    }
    # The editor shows the user name, and an empty password input that says a password is stored.
    assert seen["basicEditor"] == {
        "type": "Basic",
        "username": "reporter",
        "password": "",
        "passwordType": "password",
        "passwordLabel": "Password: action.request.authentication.password (set)",
        "passwordInputs": 1,
        "certificateShown": False,
    }
    # An edit without the password keeps it: the dry run says so, and the target let the run in.
    assert seen["keptFates"] == ["action.request.authentication.password: kept"]
    assert seen["basicAfterEdit"]["body"] == "edited body"
    assert seen["firstRun"]["status"] == "Completed", seen["firstRun"]
    # Another user name without a new password: the service refuses it at the password input; nothing saved.
    for refusal in (seen["userChanged"], seen["userChangedOnSave"]):
        assert refusal["text"].startswith("properties.action.request.authentication.password: 'Username' and "), refusal
        assert refusal["invalid"] == "true"
        assert "auth-password-error" in refusal["describedBy"]
        assert refusal["focus"] == "auth-password"
        assert refusal["banner"] == f"The service refused it: {refusal['text']}"
    assert seen["headingAfterRefusal"] == "Edit basic-made"
    assert seen["usernameAfterRefusal"] == "reporter"
    assert seen["newPasswordFates"] == ["action.request.authentication.password: new value"]
    assert seen["errorGone"] == 0
    assert seen["secondRun"]["status"] == "Completed", seen["secondRun"]
    assert calls == [("/basic", basic("reporter", PASSWORD)), ("/basic", basic("someone-else", NEW_PASSWORD))]
    assert stored_secrets("basic-made") == {"action.request.authentication.password": NEW_PASSWORD}
    # ActiveDirectoryOAuth: the service's error at the secret input; stored as typed.
    assert seen["oauthError"]["invalid"] == "true" and seen["oauthError"]["focus"] == "auth-secret"
    assert seen["oauthCreated"] == {
        "type": "ActiveDirectoryOAuth",
        "tenant": "contoso.onmicrosoft.com",
        "audience": "https://management.core.windows.net/",
        "clientId": "dashboard-client",
    }
    assert stored_secrets("oauth-made") == {"action.request.authentication.secret": OAUTH_SECRET}
    # ClientCertificate from a .pfx file: a password that does not open it is named at the file input.
    assert seen["pfxError"]["invalid"] == "true" and seen["pfxError"]["focus"] == "auth-pfx"
    assert seen["pfxLabels"] == {"file": "Certificate (.pfx file)", "password": "Certificate password"}
    assert sorted(seen["certFates"]) == [
        "action.request.authentication.password: new value",
        "action.request.authentication.pfx: new value",
    ]
    assert seen["certCreated"]["type"] == "ClientCertificate"
    assert seen["certCreated"]["certificateThumbprint"] == thumbprint
    assert "dashboard-client" in seen["certCreated"]["certificateSubjectName"]
    assert seen["certEditor"]["type"] == "ClientCertificate"
    assert thumbprint in seen["certEditor"]["stored"] and "dashboard-client" in seen["certEditor"]["stored"]
    assert seen["certEditor"]["pfxLabel"] == "Certificate (.pfx file): action.request.authentication.pfx (set)"
    assert sorted(seen["certKeptFates"]) == [
        "action.request.authentication.password: kept",
        "action.request.authentication.pfx: kept",
    ]
    assert stored_secrets("cert-made") == {
        "action.request.authentication.pfx": pfx,
        "action.request.authentication.password": PFX_PASSWORD,
    }
    # ManagedServiceIdentity (api-version 2026-12-01-preview): an audience only; plain http refused at the type.
    assert seen["msiFields"] == {"tenant": False, "audience": True}
    assert seen["msiError"]["text"].startswith(
        "properties.action.request.authentication.type: ManagedServiceIdentity needs an https URI"
    )
    assert seen["msiCreated"] == {"type": "ManagedServiceIdentity", "audience": "api://scheduler-target"}
    # No secret in any answer the page got, in the page after saving, or in the API's answers.
    assert seen["answersRead"] > 20
    assert seen["secretsInAnswers"] == []
    assert seen["secretsInPageAfterCreate"] == [] and seen["secretsInPageAfterEdit"] == []
    no_secret_answered(dashboard, ["basic-made", "oauth-made", "cert-made", "msi-made"], secrets)
    for name, audit in seen["audits"].items():
        assert audit["violations"] == [], name
        assert audit["passes"] >= 10, name


def test_service_bus_actions_are_created_and_edited_with_the_form(dashboard: Dashboard) -> None:
    dashboard.put_collection()
    start = (datetime.now(UTC) + timedelta(days=1)).replace(hour=6, minute=0, second=0, microsecond=0)
    brokered = {"contentType": "application/json", "label": "nightly", "timeToLive": "PT1H", "sessionId": "s-1"}
    custom = {"origin": "api", "priority": "high"}
    rich = {
        "namespace": "contoso-bus",
        "queueName": "reports",
        "message": "from the API",
        "transportType": "AMQP",
        "authentication": {"type": "SharedAccessKey", "sasKeyName": "sender", "sasKey": RICH_KEY},
        "brokeredMessageProperties": brokered,
        "customMessageProperties": custom,
    }
    properties = {
        "startTime": format_instant(start),
        "action": {"type": "ServiceBusQueue", "serviceBusQueueMessage": rich, "retryPolicy": {"retryType": "None"}},
        "recurrence": {"frequency": "Day", "interval": 1},
    }
    response = dashboard.api.call("PUT", job_url(dashboard, "bus-rich"), {"properties": properties})
    assert response.status_code in (200, 201), response.text

    secrets = [SAS_KEY, TOPIC_KEY, RICH_KEY]
    seen = run_browser(
        dashboard,
        scenario="bus",
        start=format_instant(start),
        queue="bus-made",
        topic="topic-made",
        rich="bus-rich",
        sasKey=SAS_KEY,
        topicKey=TOPIC_KEY,
        secrets=secrets,
    )

    # A new queue job: a password input for the key; the service's errors at the namespace and the key name.
    assert seen["newKeyInput"] == {"type": "password", "label": "SAS key"}
    namespace, key_name = seen["namespaceError"], seen["keyNameError"]
    assert namespace["text"].startswith("properties.action.serviceBusQueueMessage.namespace: must be a Service Bus")
    assert key_name["text"] == (
        "properties.action.serviceBusQueueMessage.authentication.sasKeyName: "
        "is required for 'SharedAccessKey' type of Authentication"
    )
    for refusal, control in ((namespace, "bus-namespace"), (key_name, "bus-key-name")):
        assert refusal["invalid"] == "true" and refusal["focus"] == control, refusal
        assert f"{control}-error" in refusal["describedBy"]
        assert refusal["banner"] == f"The service refused it: {refusal['text']}"
    assert seen["queueBeforeCreate"] == 404
    assert seen["newKeyFates"] == ["action.serviceBusQueueMessage.authentication.sasKey: new value"]
    assert seen["queueCreated"] == {
        "type": "ServiceBusQueue",
        "serviceBusQueueMessage": {
            "namespace": "contoso-bus",
            "queueName": "orders",
            "message": "hello from the form",
            "authentication": {"type": "SharedAccessKey", "sasKeyName": "sender"},
        },
        "retryPolicy": {"retryType": "None"},
    }
    assert seen["queueTarget"] == "contoso-bus/orders"
    assert stored_secrets("bus-made") == {"action.serviceBusQueueMessage.authentication.sasKey": SAS_KEY}
    # A topic job: the topic path instead of the queue name; an edit without the key keeps it (in the store).
    assert seen["topicFields"] == {"queue": False, "topic": True}
    assert seen["topicCreated"]["serviceBusTopicMessage"] == {
        "namespace": "contoso-bus",
        "topicPath": "events",
        "message": "to the topic",
        "authentication": {"type": "SharedAccessKey", "sasKeyName": "publisher"},
    }
    assert seen["topicKeptFates"] == ["action.serviceBusTopicMessage.authentication.sasKey: kept"]
    topic = dashboard.api.call("GET", job_url(dashboard, "topic-made")).json()["properties"]["action"]
    assert topic["serviceBusTopicMessage"]["message"] == "to the topic, edited"
    assert stored_secrets("topic-made") == {"action.serviceBusTopicMessage.authentication.sasKey": TOPIC_KEY}
    # The form shows the stored job's fields (the key never) and keeps what it does not show.
    assert seen["richEditor"] == {
        "type": "ServiceBusQueue",
        "namespace": "contoso-bus",
        "queue": "reports",
        "message": "from the API",
        "keyName": "sender",
        "key": "",
        "keyType": "password",
        "keyLabel": "SAS key: action.serviceBusQueueMessage.authentication.sasKey (set)",
        "otherPart": 0,
    }
    assert seen["richKeptFates"] == ["action.serviceBusQueueMessage.authentication.sasKey: kept"]
    edited = seen["richAfterEdit"]["serviceBusQueueMessage"]
    assert edited == {
        **{k: v for k, v in rich.items() if k != "authentication"},
        "message": "edited by the form",
        "authentication": {"type": "SharedAccessKey", "sasKeyName": "sender"},
    }
    # Another key name without a key: the page names the key the edit would drop and saves only with consent.
    assert "action.serviceBusQueueMessage.authentication.sasKey" in seen["dropWarning"]
    assert seen["dropStatus"].startswith("Not saved: this edit would drop stored secrets")
    assert seen["dropFocus"] == "drop-secrets"
    assert seen["keyNameAfterRefusal"] == "sender"
    dropped = seen["richAfterDrop"]["serviceBusQueueMessage"]
    assert dropped["authentication"] == {"type": "SharedAccessKey", "sasKeyName": "listener"}
    assert dropped["brokeredMessageProperties"] == brokered
    assert dropped["customMessageProperties"] == custom
    assert dropped["transportType"] == "AMQP"
    assert stored_secrets("bus-rich") == {}
    assert write_only(dashboard, "bus-rich") == [("action.serviceBusQueueMessage.authentication.sasKey", False)]
    # No key in any answer the page got, in the page after saving, or in the API's answers.
    assert seen["secretsInAnswers"] == []
    assert seen["secretsInPageAfterCreate"] == [] and seen["secretsInPageAfterEdit"] == []
    no_secret_answered(dashboard, ["bus-made", "topic-made", "bus-rich"], secrets)
    for name, audit in seen["audits"].items():
        assert audit["violations"] == [], name
        assert audit["passes"] >= 10, name
