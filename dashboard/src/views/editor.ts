// Create or edit a job: a form for the common cases (an HTTP or HTTPS request and its authentication, a Storage
// queue message, a Service Bus queue or topic message; the start, the recurrence and a simple schedule, or cron
// strings instead; the retry policy; the state) and a JSON view of the whole PUT body as api-version
// 2026-12-01-preview has it (every property: jitter, overlapPolicy, exclusions, signing, brokered message
// properties, ...), editable. Both edit one body: what the form does not show is kept as it is.
//
// HTTP authentication (``request.authentication``): Basic (username, password), ClientCertificate (a .pfx file,
// read in the page and sent as base64, and its password), ActiveDirectoryOAuth (tenant, client ID, audience,
// secret) and, with api-version 2026-12-01-preview, ManagedServiceIdentity (an audience: the app's own identity).
// Another type (NotSpecified) is kept as it is. A type left as it was keeps the stored object (a certificate's
// thumbprint, which the service checks against the stored certificate); another type starts a new one. Service
// Bus (``serviceBusQueueMessage``, ``serviceBusTopicMessage``): namespace, queue name or topic path, message,
// and the shared access key's name and key; transportType and the brokered and custom message properties are
// edited in the JSON view and kept by the form (also when a queue action becomes a topic action).
//
// A recurrence of api-version 2026-12-01-preview may hold ``cron`` (one cron string, or an array whose union
// fires) instead of frequency, interval and schedule: the form's "Cron" recurrence writes it from one string
// a line (one line: a string; several: an array) and leaves those three out. A cron left as it was loaded is
// kept exactly (a string stays a string, a one-string array an array); the service checks each string and
// names the position of what is wrong.
//
// A job's description and tags (api-version 2026-12-01-preview) are edited as text: the description as it is,
// the tags one "name=value" a line (split at the first "="; white space around the name and the value
// dropped). Left as they were loaded, both are kept exactly (a line left as it was keeps its tag as stored);
// tags the form's lines cannot hold (a name with "=", a value with a line break) are edited in the JSON view.
// The service checks them (ARM's tag rules) and its error is shown at the field.
//
// Everything goes through the service with the user's credential:
// - "Check and preview" sends the body to the dashboard's dry run (POST /dashboard/api/preview/...): the
//   service validates it as the PUT would (its ARM error is shown next to the field it names) and answers
//   the next occurrences and what the write does to each write-only field;
// - "Save" runs the same check, then PUTs the body with If-Match: the ETag the edit started from. A job
//   changed meanwhile is a 412: the form says so and offers to reload (a new job is created only when no job
//   has the name).
// Secrets are write-only: the API never returns them, and a PUT that omits one keeps the stored value while
// what it belongs to is unchanged (user name, tenant and client, certificate, storage account and queue,
// namespace and key name, target origin). The form leaves them out unless a new value is typed (password
// inputs, never filled in; a label says whether the stored job has one: "Password: <path> (set)"); when the
// edit would drop one (it changed what the secret belongs to), the dry run says so and saving needs an
// explicit "drop them". The JSON view never shows a secret either: one typed in the form is kept aside, listed
// by its path under the text, and put back into the body the JSON view gives (and into its input when the form
// is shown again).

import type { Collection, Job, JobInsight, JobPreview, Ref } from "../api";
import { ApiError, parseId } from "../api";
import { announce, h, replace } from "../dom";
import { absolute, cronStrings, relative, utc } from "../format";
import { errorBanner, jobHash, jobsHash, table, type Context, type View } from "../view";

type Json = Record<string, unknown>;

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"];
const FREQUENCIES = ["Minute", "Hour", "Day", "Week", "Month"];
/** The recurrence choice of cron strings (``recurrence.cron``) instead of a frequency. */
const CRON = "Cron";
const WEEK_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const FORM_TYPES = ["Http", "Https", "StorageQueue", "ServiceBusQueue", "ServiceBusTopic"];
/** The object of each Service Bus action type. */
const BUS_PAYLOADS: Record<string, "serviceBusQueueMessage" | "serviceBusTopicMessage"> = {
  ServiceBusQueue: "serviceBusQueueMessage",
  ServiceBusTopic: "serviceBusTopicMessage",
};
/** The HTTP authentication types the form has fields for (ManagedServiceIdentity: api-version 2026-12-01-preview). */
const AUTH_TYPES: [string, string][] = [
  ["Basic", "Basic: user name and password"],
  ["ClientCertificate", "ClientCertificate: a client certificate (.pfx)"],
  ["ActiveDirectoryOAuth", "ActiveDirectoryOAuth: Entra ID client credentials"],
  ["ManagedServiceIdentity", "ManagedServiceIdentity: the app's own identity"],
];
/** A certificate's facts the service derives from its .pfx (read-only: dropped when a new .pfx is sent). */
const CERT_FACTS = ["certificateThumbprint", "certificateSubjectName", "certificateExpirationDate", "certificateExpiration"];
const PASSWORD = "action.request.authentication.password";
const PFX = "action.request.authentication.pfx";
const OAUTH_SECRET = "action.request.authentication.secret";
const SAS_TOKEN = "action.queueMessage.sasToken";
const sasKeyPath = (payload: string): string => `action.${payload}.authentication.sasKey`;
/** The Service Bus object of an action type; undefined for another type. */
function busPayload(type: string): "serviceBusQueueMessage" | "serviceBusTopicMessage" | undefined {
  return Object.prototype.hasOwnProperty.call(BUS_PAYLOADS, type) ? BUS_PAYLOADS[type] : undefined;
}
/** A write-only field the form has an input of its own for. */
const FORM_SECRETS = new Set([SAS_TOKEN, PASSWORD, PFX, OAUTH_SECRET, ...Object.values(BUS_PAYLOADS).map(sasKeyPath)]);
/** Every write-only field a body may hold (a dotted path inside ``properties``): kept out of the JSON view. */
const SECRET_PATHS = ["action", "action.errorAction"].flatMap((prefix) =>
  [
    "request.authentication.password",
    "request.authentication.pfx",
    "request.authentication.secret",
    "request.signing.secret",
    "queueMessage.sasToken",
    "serviceBusQueueMessage.authentication.sasKey",
    "serviceBusTopicMessage.authentication.sasKey",
  ].map((leaf) => `${prefix}.${leaf}`),
);

function obj(value: unknown): Json {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : {};
}

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** A number when the text is an integer, else the text as typed (the service names what is wrong). */
function integer(text: string): number | string | undefined {
  const trimmed = text.trim();
  if (!trimmed) return undefined;
  return /^-?\d+$/.test(trimmed) ? Number(trimmed) : trimmed;
}

function integers(text: string): (number | string)[] | undefined {
  const items = text.split(/[\s,]+/).filter(Boolean);
  return items.length ? items.map((item) => integer(item) as number | string) : undefined;
}

function setOrDelete(target: Json, key: string, value: unknown): void {
  if (value === undefined || value === "") delete target[key];
  else target[key] = value;
}

function setPath(target: Json, path: string, value: unknown): void {
  const keys = path.split(".");
  let node = target;
  for (const key of keys.slice(0, -1)) {
    if (typeof node[key] !== "object" || node[key] === null) node[key] = {};
    node = node[key] as Json;
  }
  node[keys[keys.length - 1]] = value;
}

/** The object holding the leaf of ``path`` in ``target`` and the leaf's key; null when a parent is missing. */
function parentOf(target: Json, path: string): [Json, string] | null {
  const keys = path.split(".");
  let node: unknown = target;
  for (const key of keys.slice(0, -1)) {
    node = (node as Json)[key];
    if (node === null || typeof node !== "object" || Array.isArray(node)) return null;
  }
  return [node as Json, keys[keys.length - 1]];
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** The base64 of a file's bytes (a .pfx is sent as base64). */
function base64(buffer: ArrayBuffer): string {
  const bytes = new Uint8Array(buffer);
  let binary = "";
  for (let at = 0; at < bytes.length; at += 0x8000) binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  return btoa(binary);
}

let fieldCounter = 0;

/** A labelled input; ``help`` describes it (aria-describedby). */
function field(label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, help?: string): HTMLElement {
  fieldCounter += 1;
  const id = control.id || `f${fieldCounter}`;
  control.id = id;
  const helpId = `${id}-help`;
  if (help) control.setAttribute("aria-describedby", helpId);
  return h("div", { class: "field" }, h("label", { for: id }, label), control, help ? h("p", { class: "help", id: helpId }, help) : null);
}

export function editorView(context: Context, ref: Ref | null): View {
  const creating = ref === null;
  const name = ref?.job ?? "";
  const title = creating ? "New job" : `Edit ${name}`;
  const status = h("div", { class: "status-area" });
  const formStatus = h("div", { class: "form-status", role: "status" });
  const previewArea = h("div", {});
  let body: Json = { properties: {} };
  let etag: string | null = null;
  let insight: JobInsight | null = null;
  let loaded = false;
  let mode: "form" | "json" = "form";

  // ------------------------------------------------------------------ controls
  const collectionSelect = h("select", { id: "job-collection-input", "aria-describedby": "job-collection-input-help" });
  /** Says where a collection comes from (and, while the subscription has none, how to make one). */
  const collectionHelp = h("p", { class: "help", id: "job-collection-input-help" });
  let noCollection = false;
  const nameInput = h("input", { id: "job-name", type: "text", autocomplete: "off", spellcheck: "false" });
  const typeSelect = h("select", { id: "action-type" }, FORM_TYPES.map((type) => h("option", { value: type }, type)));
  const methodSelect = h("select", { id: "request-method" }, METHODS.map((method) => h("option", { value: method }, method)));
  const uriInput = h("input", { id: "request-uri", type: "text", autocomplete: "off", spellcheck: "false" });
  const headersInput = h("textarea", { id: "request-headers", rows: 3, spellcheck: "false" });
  const bodyInput = h("textarea", { id: "request-body", rows: 4, spellcheck: "false" });
  const accountInput = h("input", { id: "queue-account", type: "text", autocomplete: "off", spellcheck: "false" });
  const queueInput = h("input", { id: "queue-name", type: "text", autocomplete: "off", spellcheck: "false" });
  const messageInput = h("textarea", { id: "queue-message", rows: 3, spellcheck: "false" });
  const sasInput = h("input", { id: "queue-sas", type: "password", autocomplete: "new-password", spellcheck: "false" });
  const authSelect = h(
    "select",
    { id: "auth-type" },
    h("option", { value: "" }, "none"),
    AUTH_TYPES.map(([type, label]) => h("option", { value: type }, label)),
  );
  const usernameInput = h("input", { id: "auth-username", type: "text", autocomplete: "off", spellcheck: "false" });
  const passwordInput = h("input", { id: "auth-password", type: "password", autocomplete: "new-password", spellcheck: "false" });
  const pfxInput = h("input", { id: "auth-pfx", type: "file", accept: ".pfx,.p12,application/x-pkcs12" });
  const pfxPasswordInput = h("input", { id: "auth-pfx-password", type: "password", autocomplete: "new-password", spellcheck: "false" });
  const certificateInfo = h("p", { id: "auth-certificate", class: "help" });
  const tenantInput = h("input", { id: "auth-tenant", type: "text", autocomplete: "off", spellcheck: "false" });
  const clientIdInput = h("input", { id: "auth-client-id", type: "text", autocomplete: "off", spellcheck: "false" });
  const oauthSecretInput = h("input", { id: "auth-secret", type: "password", autocomplete: "new-password", spellcheck: "false" });
  const audienceInput = h("input", { id: "auth-audience", type: "text", autocomplete: "off", spellcheck: "false" });
  const namespaceInput = h("input", { id: "bus-namespace", type: "text", autocomplete: "off", spellcheck: "false" });
  const busQueueInput = h("input", { id: "bus-queue", type: "text", autocomplete: "off", spellcheck: "false" });
  const busTopicInput = h("input", { id: "bus-topic", type: "text", autocomplete: "off", spellcheck: "false" });
  const busMessageInput = h("textarea", { id: "bus-message", rows: 3, spellcheck: "false" });
  const keyNameInput = h("input", { id: "bus-key-name", type: "text", autocomplete: "off", spellcheck: "false" });
  const busKeyInput = h("input", { id: "bus-key", type: "password", autocomplete: "new-password", spellcheck: "false" });
  const startInput = h("input", { id: "start-time", type: "text", autocomplete: "off", placeholder: "2030-01-31T08:00:00Z" });
  const frequencySelect = h(
    "select",
    { id: "recurrence-frequency" },
    h("option", { value: "" }, "none: runs once"),
    FREQUENCIES.map((frequency) => h("option", { value: frequency }, frequency)),
    h("option", { value: CRON }, "Cron: one or more cron strings"),
  );
  const cronInput = h("textarea", { id: "recurrence-cron", rows: 3, spellcheck: "false", autocomplete: "off" });
  const intervalInput = h("input", { id: "recurrence-interval", type: "text", inputmode: "numeric", autocomplete: "off" });
  const countInput = h("input", { id: "recurrence-count", type: "text", inputmode: "numeric", autocomplete: "off" });
  const endInput = h("input", { id: "recurrence-end", type: "text", autocomplete: "off" });
  const zoneInput = h("input", { id: "recurrence-zone", type: "text", autocomplete: "off" });
  const hoursInput = h("input", { id: "schedule-hours", type: "text", autocomplete: "off" });
  const minutesInput = h("input", { id: "schedule-minutes", type: "text", autocomplete: "off" });
  const dayBoxes = WEEK_DAYS.map((day) => h("input", { type: "checkbox", id: `day-${day}`, value: day }));
  const retryType = h(
    "select",
    { id: "retry-type" },
    h("option", { value: "" }, "the service's default"),
    ["None", "Fixed", "Exponential"].map((type) => h("option", { value: type }, type)),
  );
  const retryInterval = h("input", { id: "retry-interval", type: "text", autocomplete: "off", placeholder: "PT30S" });
  const retryCount = h("input", { id: "retry-count", type: "text", inputmode: "numeric", autocomplete: "off" });
  const stateSelect = h("select", { id: "job-state-input" }, ["Enabled", "Disabled"].map((state) => h("option", { value: state }, state)));
  const descriptionInput = h("textarea", { id: "job-description", rows: 3, spellcheck: "true" });
  const tagsInput = h("textarea", { id: "job-tags", rows: 4, spellcheck: "false", autocomplete: "off" });
  const tagsHelp = "One tag a line: name=value, e.g. team=payments (at most 50; names unique without regard to case).";
  const secretsPart = h("div", {});
  const secretInputs = new Map<string, HTMLInputElement>();
  /** Secrets typed in the form and kept out of the JSON view's text, by dotted path inside ``properties``, with
   * the ``type`` of the object holding each (a password goes back only into an authentication of its type). */
  const aside = new Map<string, { value: string; owner: string }>();
  const asideNote = h("p", { id: "json-secrets-aside", class: "help", hidden: true });
  /** The .pfx file chosen (its base64 once read, and its name). */
  let pfxData = "";
  let pfxName = "";
  let pfxReading: Promise<void> = Promise.resolve();
  const jsonInput = h("textarea", { id: "job-json", rows: 24, spellcheck: "false", class: "json" });
  const dropSecrets = h("input", { type: "checkbox", id: "drop-secrets" });
  const dropPart = h("div", { class: "warning-box", hidden: true });

  const basicPart = h(
    "div",
    { class: "part" },
    field("Username", usernameInput),
    field("Password", passwordInput, "Write-only: never shown. Leave empty to keep the stored password, while the user name and the URI's scheme, host and port stay the same."),
  );
  const pfxField = field(
    "Certificate (.pfx file)",
    pfxInput,
    "Write-only: the client certificate and its private key as a PKCS #12 (.pfx) file, sent as base64. Leave empty to keep the stored certificate, while the URI's scheme, host and port stay the same.",
  );
  pfxInput.setAttribute("aria-describedby", `${pfxInput.getAttribute("aria-describedby") ?? ""} auth-certificate`.trim());
  pfxField.append(certificateInfo);
  const certPart = h(
    "div",
    { class: "part", hidden: true },
    pfxField,
    field("Certificate password", pfxPasswordInput, "Write-only: the .pfx file's password, if it has one. Leave empty to keep the stored one."),
  );
  const oauthPart = h(
    "div",
    { class: "part", hidden: true },
    field("Tenant", tenantInput, "The Entra ID tenant: its domain (contoso.onmicrosoft.com) or its ID."),
    field("Client ID", clientIdInput, "The application (client) ID the token is requested for."),
    field("Client secret", oauthSecretInput, "Write-only: never shown. Leave empty to keep the stored secret, while the tenant, the client ID and the URI's scheme, host and port stay the same."),
  );
  const audienceHelp = h("p", { class: "help", id: "auth-audience-help" });
  audienceInput.setAttribute("aria-describedby", "auth-audience-help");
  const audienceField = h("div", { class: "field", hidden: true }, h("label", { for: "auth-audience" }, "Audience"), audienceInput, audienceHelp);
  const authOther = h("p", { class: "help", hidden: true });
  const authPart = h(
    "fieldset",
    {},
    h("legend", {}, "Authentication"),
    field("Authentication type", authSelect, "How the scheduler proves who it is to the target. Request signing (request.signing) is edited in the JSON view."),
    basicPart,
    certPart,
    oauthPart,
    audienceField,
    authOther,
  );
  const httpPart = h(
    "div",
    { class: "part" },
    field("Method", methodSelect),
    field("URI", uriInput, "http:// or https:// and a host; credentials in its query are write-only."),
    field("Headers", headersInput, "One per line: Name: value"),
    field("Body", bodyInput),
    authPart,
  );
  const queuePart = h(
    "div",
    { class: "part", hidden: true },
    field("Storage account", accountInput),
    field("Queue", queueInput),
    field("Message", messageInput),
    field("SAS token", sasInput, "Write-only. Leave empty to keep the stored token (or, with none, to use the app's own identity)."),
  );
  const busQueueField = field("Queue name", busQueueInput);
  const busTopicField = field("Topic path", busTopicInput);
  const busPart = h(
    "div",
    { class: "part", hidden: true },
    field("Namespace", namespaceInput, "The Service Bus namespace's name, e.g. contoso (its host: contoso.servicebus.windows.net)."),
    busQueueField,
    busTopicField,
    field("Message", busMessageInput, "The message's body (empty: none)."),
    h(
      "fieldset",
      {},
      h("legend", {}, "Shared access key"),
      field("SAS key name", keyNameInput, "The shared access policy, e.g. RootManageSharedAccessKey. Empty (and no key): the app's own identity is used."),
      field("SAS key", busKeyInput, "Write-only: never shown. Leave empty to keep the stored key, while the namespace and the key name stay the same."),
    ),
    h("p", { class: "help" }, "The transport type (transportType) and the brokered and custom message properties (brokeredMessageProperties, customMessageProperties) are edited in the JSON view; the form keeps them as they are."),
  );
  const otherPart = h("p", { class: "help", hidden: true });
  const days = h(
    "fieldset",
    { class: "days" },
    h("legend", {}, "Week days"),
    dayBoxes.map((box) => h("span", { class: "check" }, box, h("label", { for: box.id }, box.value.slice(0, 3)))),
  );

  const cronField = field(
    "Cron",
    cronInput,
    "One cron string a line: 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, e.g. 0 9 * * MON-FRI, */15 * * * * *, @hourly, CRON_TZ=Europe/Berlin 0 0 L * *. Several lines: the job runs at the times of each.",
  );
  const intervalField = field("Interval", intervalInput, "Every this many of the frequency (1 when empty).");
  const hoursField = field("Hours", hoursInput, "Simple schedule: hours of the day, e.g. 8, 17.");
  const minutesField = field("Minutes", minutesInput, "Minutes of the hour, e.g. 0, 30.");
  const form = h(
    "form",
    { class: "editor", "aria-label": "Job definition", novalidate: true },
    creating
      ? h(
          "fieldset",
          {},
          h("legend", {}, "Job"),
          h("div", { class: "field" }, h("label", { for: collectionSelect.id }, "Collection"), collectionSelect, collectionHelp),
          field("Name", nameInput, "Letters, digits, - and _ (see the name rule)."),
        )
      : null,
    h("fieldset", {}, h("legend", {}, "Action"), field("Type", typeSelect), httpPart, queuePart, busPart, otherPart, secretsPart),
    h(
      "fieldset",
      {},
      h("legend", {}, "Schedule"),
      field(
        "Start time (UTC)",
        startInput,
        creating
          ? "ISO 8601, e.g. 2030-01-31T08:00:00Z. Empty: the job starts when it is saved: its first run is at once (with cron strings, at their first match after it), and later runs keep that second."
          : "ISO 8601, e.g. 2030-01-31T08:00:00Z. Empty: when saved.",
      ),
      field("Recurrence", frequencySelect),
      cronField,
      intervalField,
      field("Count", countInput, "How many times in all (empty: no limit)."),
      field("End time (UTC)", endInput, "ISO 8601 (empty: no end)."),
      field("Time zone", zoneInput, "The schedule's zone, e.g. W. Europe Standard Time (empty: UTC)."),
      hoursField,
      minutesField,
      days,
    ),
    h("fieldset", {}, h("legend", {}, "Retry policy"), field("Retry type", retryType), field("Retry interval", retryInterval, "ISO 8601 duration, e.g. PT30S."), field("Retry count", retryCount)),
    h("fieldset", {}, h("legend", {}, "State"), field("State", stateSelect)),
    h(
      "fieldset",
      {},
      h("legend", {}, "Description and tags"),
      field("Description", descriptionInput, "Up to 1,024 characters (empty: none)."),
      field("Tags", tagsInput, tagsHelp),
    ),
  );
  form.addEventListener("submit", (event) => event.preventDefault());
  const jsonPart = h(
    "div",
    { class: "json-part", hidden: true },
    field("Job definition (JSON)", jsonInput, "The PUT body as api-version 2026-12-01-preview has it: every property. Write-only fields are never shown; leave them out to keep the stored values."),
    asideNote,
  );
  jsonInput.setAttribute("aria-describedby", `${jsonInput.getAttribute("aria-describedby") ?? ""} json-secrets-aside`.trim());

  const formChoice = h("input", { type: "radio", name: "editor-mode", id: "mode-form", value: "form", checked: true });
  const jsonChoice = h("input", { type: "radio", name: "editor-mode", id: "mode-json", value: "json" });
  const modes = h(
    "fieldset",
    { class: "modes" },
    h("legend", {}, "Edit with"),
    h("span", { class: "check" }, formChoice, h("label", { for: "mode-form" }, "Form")),
    h("span", { class: "check" }, jsonChoice, h("label", { for: "mode-json" }, "JSON")),
  );
  const previewButton = h("button", { type: "button" }, "Check and preview");
  const saveButton = h("button", { type: "button", class: "primary" }, creating ? "Create job" : "Save");
  const cancelLink = h("a", { href: ref ? jobHash(ref) : "#/jobs" }, "Cancel");
  const editorPart = h(
    "div",
    { hidden: true },
    modes,
    form,
    jsonPart,
    dropPart,
    h("div", { class: "actions" }, previewButton, saveButton, cancelLink),
    formStatus,
    h("section", { "aria-labelledby": "preview-title" }, h("h2", { id: "preview-title" }, "Preview"), previewArea),
  );

  const crumbs = [h("li", {}, h("a", { href: "#/collections" }, "Collections"))];
  if (ref) {
    const key = `${ref.group}/${ref.collection}`;
    crumbs.push(h("li", {}, h("a", { href: jobsHash({ collection: key }) }, key)), h("li", {}, h("a", { href: jobHash(ref) }, name)));
  }
  crumbs.push(h("li", { "aria-current": "page" }, creating ? "New job" : "Edit"));
  const element = h(
    "article",
    { "aria-labelledby": "page-title" },
    h("nav", { "aria-label": "Breadcrumb", class: "breadcrumb" }, h("ol", {}, crumbs)),
    h("h1", { id: "page-title", tabindex: -1 }, title),
    status,
    editorPart,
  );

  // ------------------------------------------------------------------ form <-> body
  function showParts(): void {
    const type = typeSelect.value;
    httpPart.hidden = !(type === "Http" || type === "Https");
    queuePart.hidden = type !== "StorageQueue";
    busPart.hidden = busPayload(type) === undefined;
    busQueueField.hidden = type !== "ServiceBusQueue";
    busTopicField.hidden = type !== "ServiceBusTopic";
    otherPart.hidden = FORM_TYPES.includes(type);
    showAuthentication();
  }
  typeSelect.addEventListener("change", showParts);

  /** The fields of the chosen authentication type. */
  function showAuthentication(): void {
    const type = authSelect.value;
    basicPart.hidden = type !== "Basic";
    certPart.hidden = type !== "ClientCertificate";
    oauthPart.hidden = type !== "ActiveDirectoryOAuth";
    audienceField.hidden = type !== "ActiveDirectoryOAuth" && type !== "ManagedServiceIdentity";
    audienceHelp.textContent =
      type === "ManagedServiceIdentity"
        ? "The resource the app's token is for (its resource or app ID URI), e.g. api://scheduler-target. Only over https (or to a loopback address)."
        : "The resource the token is for, e.g. https://management.core.windows.net/.";
    const known = type === "" || AUTH_TYPES.some(([name]) => name === type);
    authOther.hidden = known;
    authOther.textContent = known ? "" : `A ${type} authentication is edited in the JSON view; the form keeps it as it is.`;
  }
  authSelect.addEventListener("change", showAuthentication);

  pfxInput.addEventListener("change", () => {
    const file = pfxInput.files?.[0];
    pfxData = "";
    pfxName = file?.name ?? "";
    pfxReading = file
      ? file.arrayBuffer().then(
          (buffer) => {
            pfxData = base64(buffer);
          },
          () => {
            pfxName = "";
          },
        )
      : Promise.resolve();
    void pfxReading.then(showCertificate);
  });

  /** What the certificate input holds: the stored certificate's facts, or the file chosen to replace it. */
  function showCertificate(): void {
    const stored = obj(obj(obj(obj(body.properties).action).request).authentication);
    const facts = String(stored.type ?? "").toLowerCase() === "clientcertificate" && typeof stored.certificateThumbprint === "string";
    const expires = text(stored.certificateExpirationDate) || text(stored.certificateExpiration);
    const storedText = facts
      ? `Stored certificate: ${text(stored.certificateSubjectName) || "(no subject)"}, thumbprint ${text(stored.certificateThumbprint)}${expires ? `, expires ${expires}` : ""}.`
      : "No certificate stored yet.";
    certificateInfo.textContent = pfxData
      ? `${storedText} A new certificate${pfxName ? ` (${pfxName})` : ""} is sent when saved.`
      : storedText;
  }

  /** A cron recurrence shows its cron strings; a frequency its interval and simple schedule. */
  function showRecurrence(): void {
    const cron = frequencySelect.value === CRON;
    cronField.hidden = !cron;
    for (const part of [intervalField, hoursField, minutesField, days]) part.hidden = cron;
  }
  frequencySelect.addEventListener("change", showRecurrence);

  let filled = { headers: "", body: "", message: "", busMessage: "", cron: "", description: "", tags: "" };
  /** What each text input of the authentication was filled in with (a value left as it was is kept exactly). */
  const filledText = new Map<HTMLInputElement, string>();
  /** The text of ``input``: the stored value exactly when left as it was, else what was typed, trimmed. */
  function typed(input: HTMLInputElement): string {
    const before = filledText.get(input);
    return before !== undefined && input.value === before ? before : input.value.trim();
  }
  /** Each tag line as filled in, and the tag it stands for exactly (a line left as it was keeps its tag). */
  let tagLines = new Map<string, [string, string]>();

  function fill(): void {
    const props = obj(body.properties);
    const action = obj(props.action);
    const type = String(action.type ?? "Https");
    if (!FORM_TYPES.includes(type) && ![...typeSelect.options].some((option) => option.value === type)) {
      typeSelect.append(h("option", { value: type }, `${type} (edit in JSON)`));
    }
    typeSelect.value = type;
    otherPart.textContent = `A ${type} action is edited in the JSON view; the form keeps it as it is.`;
    const request = obj(action.request);
    methodSelect.value = String(request.method ?? "POST").toUpperCase();
    uriInput.value = String(request.uri ?? "");
    headersInput.value = Object.entries(obj(request.headers))
      .map(([key, value]) => `${key}: ${String(value)}`)
      .join("\n");
    bodyInput.value = typeof request.body === "string" ? request.body : "";
    const authentication = obj(request.authentication);
    let authType = "";
    if (request.authentication !== undefined && request.authentication !== null) {
      const written = typeof authentication.type === "string" ? authentication.type : "(no type)";
      authType = AUTH_TYPES.find(([name]) => name.toLowerCase() === written.toLowerCase())?.[0] ?? written;
      if (![...authSelect.options].some((option) => option.value === authType)) {
        authSelect.append(h("option", { value: authType }, `${authType} (edit in JSON)`));
      }
    }
    authSelect.value = authType;
    usernameInput.value = text(authentication.username);
    tenantInput.value = text(authentication.tenant);
    clientIdInput.value = text(authentication.clientId);
    audienceInput.value = text(authentication.audience);
    filledText.clear();
    for (const input of [usernameInput, tenantInput, clientIdInput, audienceInput]) filledText.set(input, input.value);
    const queue = obj(action.queueMessage);
    accountInput.value = String(queue.storageAccount ?? "");
    queueInput.value = String(queue.queueName ?? "");
    messageInput.value = String(queue.message ?? "");
    const payload = busPayload(type);
    const bus = obj(payload ? action[payload] : undefined);
    namespaceInput.value = text(bus.namespace);
    busQueueInput.value = text(bus.queueName);
    busTopicInput.value = text(bus.topicPath);
    busMessageInput.value = text(bus.message);
    keyNameInput.value = text(obj(bus.authentication).sasKeyName);
    // A text area holds its text with LF line ends and the form's lines are trimmed: what was filled in is
    // remembered, and a field left as it was keeps the stored value exactly (CR LF, spaces, any header name).
    const recurrence = obj(props.recurrence);
    const crons = cronStrings(recurrence);
    cronInput.value = crons ? crons.join("\n") : "";
    descriptionInput.value = typeof props.description === "string" ? props.description : "";
    const tags = Object.entries(obj(props.tags)).map(([key, value]): [string, string] => [key, String(value)]);
    tagLines = new Map(tags.map(([key, value]) => [`${key}=${value}`, [key, value]]));
    tagsInput.value = [...tagLines.keys()].join("\n");
    // A tag the lines cannot hold as it is (a name with "=", a value with a line break): edited in JSON only.
    const awkward = tags.some(([key, value]) => key.includes("=") || /[\r\n]/.test(value) || /[\r\n]/.test(key));
    tagsInput.readOnly = awkward;
    const tagsHelpText = tagsInput.parentElement?.querySelector(".help");
    if (tagsHelpText) tagsHelpText.textContent = awkward ? "A tag's name holds = or its value a line break: edit the tags in the JSON view (they are kept as they are)." : tagsHelp;
    filled = {
      headers: headersInput.value,
      body: bodyInput.value,
      message: messageInput.value,
      busMessage: busMessageInput.value,
      cron: cronInput.value,
      description: descriptionInput.value,
      tags: tagsInput.value,
    };
    // Secret inputs are never filled in from the job (the API never returns a secret); a value typed in the form
    // before the JSON view was shown comes back to its input (it was kept aside, not shown there).
    const take = (path: string): string => {
      const value = aside.get(path)?.value ?? "";
      aside.delete(path);
      return value;
    };
    sasInput.value = type === "StorageQueue" ? take(SAS_TOKEN) : "";
    passwordInput.value = authType === "Basic" ? take(PASSWORD) : "";
    pfxPasswordInput.value = authType === "ClientCertificate" ? take(PASSWORD) : "";
    oauthSecretInput.value = authType === "ActiveDirectoryOAuth" ? take(OAUTH_SECRET) : "";
    pfxInput.value = "";
    if (authType === "ClientCertificate" && aside.has(PFX)) {
      pfxData = take(PFX);
    } else {
      pfxData = "";
      pfxName = "";
    }
    busKeyInput.value = payload ? take(sasKeyPath(payload)) : "";
    showCertificate();
    startInput.value = String(props.startTime ?? "");
    frequencySelect.value = crons ? CRON : String(recurrence.frequency ?? "");
    intervalInput.value = recurrence.interval === undefined ? "" : String(recurrence.interval);
    countInput.value = recurrence.count === undefined ? "" : String(recurrence.count);
    endInput.value = String(recurrence.endTime ?? "");
    zoneInput.value = String(recurrence.timeZone ?? "");
    const schedule = obj(recurrence.schedule);
    hoursInput.value = Array.isArray(schedule.hours) ? schedule.hours.join(", ") : "";
    minutesInput.value = Array.isArray(schedule.minutes) ? schedule.minutes.join(", ") : "";
    const weekDays = Array.isArray(schedule.weekDays) ? schedule.weekDays.map((day) => String(day).toLowerCase()) : [];
    for (const box of dayBoxes) box.checked = weekDays.includes(box.value.toLowerCase());
    const retry = obj(action.retryPolicy);
    retryType.value = action.retryPolicy === undefined ? "" : String(retry.retryType ?? "Fixed");
    retryInterval.value = String(retry.retryInterval ?? "");
    retryCount.value = retry.retryCount === undefined ? "" : String(retry.retryCount);
    stateSelect.value = props.state === "Disabled" ? "Disabled" : "Enabled";
    for (const [path, input] of secretInputs) input.value = take(path);
    showParts();
    showRecurrence();
  }

  /** The count, end and zone of the form, written into ``recurrence`` (a frequency's or a cron's alike). */
  function limits(recurrence: Json): void {
    setOrDelete(recurrence, "count", integer(countInput.value));
    setOrDelete(recurrence, "endTime", endInput.value.trim() || undefined);
    setOrDelete(recurrence, "timeZone", zoneInput.value.trim() || undefined);
  }

  /** The body with the form's values written into it (what the form does not show is kept). */
  function fromForm(): Json {
    const next = clone(body);
    const props = obj(next.properties);
    next.properties = props;
    const action = obj(props.action);
    props.action = action;
    const type = typeSelect.value;
    action.type = type;
    if (type === "Http" || type === "Https") {
      delete action.queueMessage;
      for (const payload of Object.values(BUS_PAYLOADS)) delete action[payload];
      const request = obj(action.request);
      action.request = request;
      request.method = methodSelect.value;
      request.uri = uriInput.value.trim();
      if (headersInput.value !== filled.headers) {
        const headers: Json = Object.create(null) as Json; // a header may be named __proto__
        for (const line of headersInput.value.split("\n")) {
          if (!line.trim()) continue;
          const at = line.indexOf(":");
          if (at <= 0) throw new FieldProblem("properties.action.request.headers", `"${line.trim()}" is not "Name: value"`);
          headers[line.slice(0, at).trim()] = line.slice(at + 1).replace(/^[ \t]+|[ \t]+$/g, "");
        }
        setOrDelete(request, "headers", Object.keys(headers).length ? headers : undefined);
      }
      if (bodyInput.value !== filled.body) setOrDelete(request, "body", bodyInput.value || undefined);
      authenticationInto(request);
    } else if (type === "StorageQueue") {
      delete action.request;
      for (const payload of Object.values(BUS_PAYLOADS)) delete action[payload];
      const queue = obj(action.queueMessage);
      action.queueMessage = queue;
      queue.storageAccount = accountInput.value.trim();
      queue.queueName = queueInput.value.trim();
      if (messageInput.value !== filled.message) queue.message = messageInput.value;
      if (sasInput.value) queue.sasToken = sasInput.value;
    } else {
      const payload = busPayload(type);
      if (payload) serviceBusInto(action, payload);
    }
    for (const [path, input] of secretInputs) if (input.value) setPath(props, path, input.value);
    setOrDelete(props, "startTime", startInput.value.trim() || undefined);
    if (!frequencySelect.value) {
      delete props.recurrence;
    } else if (frequencySelect.value === CRON) {
      const recurrence = obj(props.recurrence);
      props.recurrence = recurrence;
      delete recurrence.frequency;
      delete recurrence.interval;
      delete recurrence.schedule;
      // The stored cron is kept exactly unless its text was changed (or there is none yet): one line is a
      // string (an array stays an array), several an array; no line at all is sent as typed, an empty string,
      // for the service to name.
      if (cronInput.value !== filled.cron || recurrence.cron === undefined) {
        const lines = cronInput.value.split("\n").map((line) => line.trim()).filter(Boolean);
        recurrence.cron = lines.length === 1 && !Array.isArray(recurrence.cron) ? lines[0] : lines.length ? lines : "";
      }
      limits(recurrence);
    } else {
      const recurrence = obj(props.recurrence);
      props.recurrence = recurrence;
      delete recurrence.cron;
      recurrence.frequency = frequencySelect.value;
      setOrDelete(recurrence, "interval", integer(intervalInput.value));
      limits(recurrence);
      const schedule = obj(recurrence.schedule);
      setOrDelete(schedule, "hours", integers(hoursInput.value));
      setOrDelete(schedule, "minutes", integers(minutesInput.value));
      const checked = dayBoxes.filter((box) => box.checked).map((box) => box.value);
      setOrDelete(schedule, "weekDays", checked.length ? checked : undefined);
      setOrDelete(recurrence, "schedule", Object.keys(schedule).length ? schedule : undefined);
    }
    if (!retryType.value) {
      delete action.retryPolicy;
    } else if (retryType.value === "None") {
      action.retryPolicy = { retryType: "None" };
    } else {
      const retry = obj(action.retryPolicy);
      action.retryPolicy = retry;
      retry.retryType = retryType.value;
      setOrDelete(retry, "retryInterval", retryInterval.value.trim() || undefined);
      setOrDelete(retry, "retryCount", integer(retryCount.value));
    }
    props.state = stateSelect.value;
    if (descriptionInput.value !== filled.description) setOrDelete(props, "description", descriptionInput.value || undefined);
    if (tagsInput.value !== filled.tags) {
      const tags: Json = Object.create(null) as Json; // a tag may be named __proto__
      for (const line of tagsInput.value.split("\n")) {
        if (!line.trim()) continue;
        const kept = tagLines.get(line);
        const at = line.indexOf("=");
        if (!kept && at < 0) throw new FieldProblem("properties.tags", `"${line.trim()}" is not "name=value"`);
        const [key, value] = kept ?? [line.slice(0, at).trim(), line.slice(at + 1).replace(/^[ \t]+|[ \t]+$/g, "")];
        if (Object.prototype.hasOwnProperty.call(tags, key)) throw new FieldProblem("properties.tags", `the tag "${key}" is written twice`);
        tags[key] = value;
      }
      setOrDelete(props, "tags", Object.keys(tags).length ? tags : undefined);
    }
    restoreAside(next);
    return next;
  }

  /** ``request.authentication`` as the form has it: none, a type of the form's (the stored object when the type
   * is the same, so what the form does not show, such as a certificate's thumbprint, is kept; a new one for
   * another type), or another type kept as it is. A secret is written only when a new value was typed. */
  function authenticationInto(request: Json): void {
    const type = authSelect.value;
    if (!type) {
      delete request.authentication;
      return;
    }
    if (!AUTH_TYPES.some(([name]) => name === type)) return; // NotSpecified, ...: kept as it is
    const stored = obj(request.authentication);
    const auth: Json = typeof stored.type === "string" && stored.type.toLowerCase() === type.toLowerCase() ? stored : {};
    auth.type = type;
    if (type === "Basic") {
      auth.username = typed(usernameInput);
      if (passwordInput.value) auth.password = passwordInput.value;
    } else if (type === "ClientCertificate") {
      if (pfxData) {
        auth.pfx = pfxData;
        for (const name of CERT_FACTS) delete auth[name]; // the service derives them from the new .pfx
      }
      if (pfxPasswordInput.value) auth.password = pfxPasswordInput.value;
    } else if (type === "ActiveDirectoryOAuth") {
      auth.tenant = typed(tenantInput);
      auth.clientId = typed(clientIdInput);
      auth.audience = typed(audienceInput);
      if (oauthSecretInput.value) auth.secret = oauthSecretInput.value;
    } else {
      auth.audience = typed(audienceInput);
    }
    request.authentication = auth;
  }

  /** The Service Bus object of ``payload`` as the form has it. The stored object is kept (a queue's object
   * becomes the topic's when the type changes) with its transportType and message properties; a key name
   * (or a key) makes a SharedAccessKey authentication, none removes a stored one (the app's own identity). */
  function serviceBusInto(action: Json, payload: "serviceBusQueueMessage" | "serviceBusTopicMessage"): void {
    const other = payload === "serviceBusQueueMessage" ? "serviceBusTopicMessage" : "serviceBusQueueMessage";
    delete action.request;
    delete action.queueMessage;
    const bus = obj(action[payload] ?? action[other]);
    delete action[other];
    action[payload] = bus;
    bus.namespace = namespaceInput.value.trim();
    if (payload === "serviceBusQueueMessage") {
      delete bus.topicPath;
      bus.queueName = busQueueInput.value.trim();
    } else {
      delete bus.queueName;
      bus.topicPath = busTopicInput.value.trim();
    }
    if (busMessageInput.value !== filled.busMessage) setOrDelete(bus, "message", busMessageInput.value || undefined);
    const stored = obj(bus.authentication);
    const sharedKey = typeof stored.type === "string" ? stored.type.toLowerCase() === "sharedaccesskey" : "sasKeyName" in stored;
    const keyName = keyNameInput.value.trim();
    if (keyName || busKeyInput.value) {
      const auth: Json = sharedKey ? stored : {};
      auth.type = "SharedAccessKey";
      auth.sasKeyName = keyName;
      if (busKeyInput.value) auth.sasKey = busKeyInput.value;
      bus.authentication = auth;
    } else if (bus.authentication !== undefined && sharedKey) {
      delete bus.authentication;
    }
  }

  /** The ``type`` of an object holding a secret (an authentication's), for comparing. */
  const ownerType = (holder: Json): string => text(holder.type).toLowerCase();

  /** Moves every secret of ``next`` aside (the JSON view never shows one; the form puts each back in its input). */
  function setAside(next: Json): void {
    aside.clear();
    const props = obj(next.properties);
    for (const path of SECRET_PATHS) {
      const at = parentOf(props, path);
      const value = at ? at[0][at[1]] : undefined;
      if (at && typeof value === "string" && value) {
        aside.set(path, { value, owner: ownerType(at[0]) });
        delete at[0][at[1]];
      }
    }
    asideNote.hidden = aside.size === 0;
    asideNote.textContent = aside.size
      ? `Typed in the form, not shown here, and sent with this definition while what each belongs to is in it: ${[...aside.keys()].join(", ")}. Clear them in the form to leave them out.`
      : "";
  }

  /** Puts the secrets kept aside back into ``next`` where their object still is, of the same type, and holds
   * no value of its own. */
  function restoreAside(next: Json): void {
    const props = obj(next.properties);
    for (const [path, { value, owner }] of aside) {
      const at = parentOf(props, path);
      if (at && at[0][at[1]] === undefined && ownerType(at[0]) === owner) at[0][at[1]] = value;
    }
  }

  /** The body as the active view has it. */
  function current(): Json {
    if (mode === "form") return fromForm();
    let parsed: unknown;
    try {
      parsed = JSON.parse(jsonInput.value);
    } catch (error) {
      throw new FieldProblem("json", `not JSON: ${(error as Error).message}`);
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new FieldProblem("json", "the body must be a JSON object");
    restoreAside(parsed as Json);
    return parsed as Json;
  }

  function switchTo(next: "form" | "json"): void {
    if (next === mode) return;
    clearErrors();
    try {
      body = current();
    } catch (error) {
      (mode === "form" ? formChoice : jsonChoice).checked = true;
      showProblem(error, `Not switched to ${next === "json" ? "JSON" : "the form"}`);
      return;
    }
    mode = next;
    setAside(body);
    if (mode === "json") {
      jsonInput.value = JSON.stringify(body, null, 2);
    } else {
      fill();
    }
    form.hidden = mode !== "form";
    jsonPart.hidden = mode !== "json";
  }
  // A .pfx file being read is in the body the view is switched with.
  formChoice.addEventListener("change", () => void pfxReading.then(() => switchTo("form")));
  jsonChoice.addEventListener("change", () => void pfxReading.then(() => switchTo("json")));

  // ------------------------------------------------------------------ errors next to their field
  const FIELDS: [string, HTMLElement][] = [
    ["properties.action.request.uri", uriInput],
    ["properties.action.request.method", methodSelect],
    ["properties.action.request.headers", headersInput],
    ["properties.action.request.body", bodyInput],
    ["properties.action.queueMessage.storageAccount", accountInput],
    ["properties.action.queueMessage.queueName", queueInput],
    ["properties.action.queueMessage.message", messageInput],
    ["properties.action.queueMessage.sasToken", sasInput],
    ["properties.action.request.authentication.type", authSelect],
    ["properties.action.request.authentication", authSelect],
    ["properties.action.request.authentication.username", usernameInput],
    // a password is Basic's or the certificate's: the one shown takes the error
    ["properties.action.request.authentication.password", passwordInput],
    ["properties.action.request.authentication.password", pfxPasswordInput],
    ["properties.action.request.authentication.pfx", pfxInput],
    ["properties.action.request.authentication.certificateThumbprint", pfxInput],
    ["properties.action.request.authentication.tenant", tenantInput],
    ["properties.action.request.authentication.clientId", clientIdInput],
    ["properties.action.request.authentication.audience", audienceInput],
    ["properties.action.request.authentication.secret", oauthSecretInput],
    ...Object.values(BUS_PAYLOADS).flatMap((payload): [string, HTMLElement][] => [
      [`properties.action.${payload}.namespace`, namespaceInput],
      [`properties.action.${payload}.queueName`, busQueueInput],
      [`properties.action.${payload}.topicPath`, busTopicInput],
      [`properties.action.${payload}.message`, busMessageInput],
      [`properties.action.${payload}.authentication`, keyNameInput],
      [`properties.action.${payload}.authentication.type`, keyNameInput],
      [`properties.action.${payload}.authentication.sasKeyName`, keyNameInput],
      [`properties.action.${payload}.authentication.sasKey`, busKeyInput],
    ]),
    ["properties.action.retryPolicy.retryInterval", retryInterval],
    ["properties.action.retryPolicy.retryCount", retryCount],
    ["properties.action.retryPolicy", retryType],
    ["properties.action.type", typeSelect],
    ["properties.action", typeSelect],
    ["properties.startTime", startInput],
    ["properties.recurrence.frequency", frequencySelect],
    ["properties.recurrence.cron", cronInput],
    ["properties.recurrence.interval", intervalInput],
    ["properties.recurrence.count", countInput],
    ["properties.recurrence.endTime", endInput],
    ["properties.recurrence.timeZone", zoneInput],
    ["properties.recurrence.schedule.hours", hoursInput],
    ["properties.recurrence.schedule.minutes", minutesInput],
    ["properties.recurrence.schedule.weekDays", dayBoxes[0]],
    ["properties.recurrence", frequencySelect],
    ["properties.state", stateSelect],
    ["properties.description", descriptionInput],
    ["properties.tags", tagsInput],
    ["name", nameInput],
    ["collection", collectionSelect],
  ];

  function clearErrors(): void {
    for (const note of element.querySelectorAll(".field-error")) note.remove();
    for (const input of element.querySelectorAll("[aria-invalid]")) {
      input.removeAttribute("aria-invalid");
      const described = (input.getAttribute("aria-describedby") ?? "").split(" ").filter((id) => !id.endsWith("-error")).join(" ");
      if (described) input.setAttribute("aria-describedby", described);
      else input.removeAttribute("aria-describedby");
    }
    replace(formStatus);
  }

  function controlFor(path: string): HTMLElement | null {
    if (mode === "json" || path === "json") return jsonInput;
    for (const [path2, input] of secretInputs) if (path === `properties.${path2}`) return input;
    const matches = FIELDS.filter(([prefix]) => path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`));
    const longest = Math.max(0, ...matches.map(([prefix]) => prefix.length));
    // The control of the longest prefix that is shown (two controls may share one, such as the passwords).
    return matches.find(([prefix, control]) => prefix.length === longest && !control.closest("[hidden]"))?.[1] ?? null;
  }

  /** Shows ``message`` next to the control of ``path`` (the form's, or the JSON text); false when none. */
  function fieldError(path: string, message: string): boolean {
    const control = controlFor(path);
    if (!control) return false;
    const id = `${control.id}-error`;
    const note = h("p", { class: "field-error", id }, message);
    (control.closest(".field") ?? control.closest("fieldset") ?? control.parentElement)?.append(note);
    control.setAttribute("aria-invalid", "true");
    control.setAttribute("aria-describedby", `${control.getAttribute("aria-describedby") ?? ""} ${id}`.trim());
    control.focus();
    return true;
  }

  /** Shows ``error`` at its field and in the form's status. ``refusal``: what the page's own finding means
   * for the button pressed ("Not valid" for the check, which never saves; "Not saved" for Save). */
  function showProblem(error: unknown, refusal: string): void {
    if (error instanceof FieldProblem) {
      const message = `${error.path === "json" ? "" : `${error.path}: `}${error.message}`;
      fieldError(error.path, message);
      replace(formStatus, errorBanner(`${refusal}: ${message}`));
      return;
    }
    const failure = error as ApiError;
    if (failure.status === 412) {
      conflict(failure.message);
      return;
    }
    const path = failure instanceof ApiError ? failure.field : null;
    const shown = path !== null && fieldError(path, failure.message);
    replace(formStatus, errorBanner(`${failure.status === 403 ? "Refused" : "The service refused it"}: ${failure.message}`));
    if (!shown) formStatus.querySelector("p")?.setAttribute("tabindex", "-1");
  }

  function conflict(message: string): void {
    const reload = h("button", { type: "button", "data-key": "reload" }, "Reload the job");
    reload.addEventListener("click", () => {
      void load().then(() => announce("The job was reloaded; your changes were discarded."));
    });
    replace(
      formStatus,
      h(
        "div",
        { class: "error", role: "alert" },
        h("p", {}, `Not saved: the job was changed by someone else since you opened it (${message}). Saving now would overwrite that change.`),
        h("p", {}, "Reload it to edit the current definition (your changes here are discarded).", " "),
        reload,
      ),
    );
    reload.focus();
  }

  // ------------------------------------------------------------------ preview and save
  function target(): Ref | null {
    if (ref) return ref;
    const collectionRef = collectionSelect.value ? parseId(collectionSelect.value) : null;
    const job = nameInput.value.trim();
    if (!collectionRef) {
      throw new FieldProblem(
        "collection",
        noCollection ? "this subscription has no job collection yet: make one with New collection on the Collections page" : "choose a collection",
      );
    }
    if (!job) throw new FieldProblem("name", "a job needs a name");
    return { ...collectionRef, job };
  }

  function renderPreview(preview: JobPreview): void {
    const zone = preview.timeZone;
    const columns = zone ? ["#", "UTC", `Local time (${zone.iana})`] : ["#", "UTC"];
    const rows = preview.occurrences.map((occurrence, index) =>
      h(
        "tr",
        {},
        h("td", { class: "num" }, String(index + 1)),
        h("td", {}, h("time", { datetime: occurrence.utc }, utc(occurrence.utc)), h("span", { class: "muted" }, ` (${relative(occurrence.utc)})`)),
        zone ? h("td", {}, occurrence.local?.replace("T", " ") ?? "—") : null,
      ),
    );
    const notes = [];
    if (preview.completesAtOnce) notes.push("The schedule has no occurrence left: the job would be Completed at once.");
    if (preview.exists && preview.keepsSeries) notes.push("The edit keeps the job's series: runs so far still count towards its count.");
    if (preview.state === "Disabled") notes.push("The job would be Disabled: it runs at these times only once enabled.");
    const secrets = preview.writeOnly.map((item) =>
      h("li", {}, h("code", {}, item.path), `: ${item.fate}`),
    );
    const dropped = preview.droppedSecrets.map((path) => h("li", {}, h("code", {}, path), ": dropped"));
    replace(
      previewArea,
      h("p", { class: "notice" }, `The service accepts this definition (checked ${absolute(preview.now, null)}; nothing was saved).`),
      notes.map((note) => h("p", { class: "help" }, note)),
      table(`The next ${preview.occurrences.length} occurrences if saved`, columns, rows, "No occurrence: the schedule is over."),
      secrets.length || dropped.length ? h("div", {}, h("h3", {}, "Write-only fields"), h("ul", { class: "plain secrets-fate" }, secrets, dropped)) : null,
    );
    dropPart.hidden = preview.droppedSecrets.length === 0;
    if (preview.droppedSecrets.length) {
      replace(
        dropPart,
        h("p", { id: "drop-text" }, `This edit drops ${preview.droppedSecrets.length} stored secret${preview.droppedSecrets.length === 1 ? "" : "s"}: `, preview.droppedSecrets.flatMap((path, i) => [i ? ", " : "", h("code", {}, path)]), ". What it belonged to changed; enter it again above, or confirm:"),
        h("span", { class: "check" }, dropSecrets, h("label", { for: "drop-secrets" }, "Save without them")),
      );
    }
  }

  /** The dry run of the body; ``refusal`` words what a refusal means for the button pressed. */
  async function check(refusal: string): Promise<{ where: Ref; next: Json; preview: JobPreview } | null> {
    clearErrors();
    await pfxReading; // a .pfx file being read is part of the body
    let where: Ref;
    let next: Json;
    try {
      where = target() as Ref;
      next = current();
    } catch (error) {
      showProblem(error, refusal);
      return null;
    }
    try {
      const preview = await context.api.previewJob(where, next, 10);
      renderPreview(preview);
      return { where, next, preview };
    } catch (error) {
      replace(previewArea, h("p", { class: "muted" }, "No preview: the service refused the definition (above)."));
      showProblem(error, refusal);
      return null;
    }
  }

  async function busy(button: HTMLButtonElement, work: () => Promise<void>): Promise<void> {
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    try {
      await work();
    } finally {
      button.disabled = false;
      button.removeAttribute("aria-busy");
    }
  }

  previewButton.addEventListener("click", () =>
    busy(previewButton, async () => {
      const checked = await check("Not valid");
      if (checked) {
        replace(formStatus, h("p", {}, "Checked: the service accepts it. See the preview below."));
        announce("Checked: the service accepts it.");
      }
    }),
  );

  saveButton.addEventListener("click", () =>
    busy(saveButton, async () => {
      const checked = await check("Not saved");
      if (!checked) return;
      const { where, next, preview } = checked;
      if (preview.droppedSecrets.length && !dropSecrets.checked) {
        replace(formStatus, errorBanner("Not saved: this edit would drop stored secrets (see above). Enter them again, or confirm dropping them."));
        dropSecrets.focus();
        return;
      }
      if (creating) {
        // A PUT replaces a job of the same name: a new job is created only when none has it.
        try {
          await context.api.job(where);
          fieldError("name", `name: a job named ${where.job} already exists in ${where.group}/${where.collection}`);
          replace(formStatus, errorBanner(`Not created: a job named ${where.job} already exists.`));
          return;
        } catch (error) {
          if (!(error instanceof ApiError) || error.status !== 404) {
            showProblem(error, "Not saved");
            return;
          }
        }
      }
      try {
        await context.api.putJob(where, next, creating ? null : etag);
      } catch (error) {
        showProblem(error, "Not saved");
        return;
      }
      announce(creating ? `Job ${where.job} created.` : `Job ${where.job} saved.`);
      context.navigate(`${jobHash(where)}?saved=${encodeURIComponent(where.job ?? "")}`);
    }),
  );

  // ------------------------------------------------------------------ loading
  /** The labels of the form's own secret inputs: whether the stored job has each ("Password: <path> (set)"). */
  function labelSecrets(): void {
    const stored = new Map((insight?.writeOnly ?? []).map((item) => [item.path, item.set]));
    const action = obj(obj(body.properties).action);
    const type = String(action.type ?? "");
    const authType = String(obj(obj(action.request).authentication).type ?? "").toLowerCase();
    const payload = busPayload(type);
    const secrets: [HTMLInputElement, string, string, boolean][] = [
      [sasInput, "SAS token", SAS_TOKEN, type === "StorageQueue"],
      [passwordInput, "Password", PASSWORD, authType === "basic"],
      [pfxInput, "Certificate (.pfx file)", PFX, authType === "clientcertificate"],
      [pfxPasswordInput, "Certificate password", PASSWORD, authType === "clientcertificate"],
      [oauthSecretInput, "Client secret", OAUTH_SECRET, authType === "activedirectoryoauth"],
      [busKeyInput, "SAS key", sasKeyPath(payload ?? ""), payload !== undefined],
    ];
    for (const [input, name, path, applies] of secrets) {
      const label = form.querySelector(`label[for="${input.id}"]`);
      const state = applies ? stored.get(path) : undefined;
      if (label) replace(label, name, state === undefined ? null : h("span", { class: "secret-state" }, `: ${path} (${state ? "set" : "not set"})`));
    }
  }

  function secretFields(): void {
    labelSecrets();
    secretInputs.clear();
    const fields = (insight?.writeOnly ?? []).filter((item) => !FORM_SECRETS.has(item.path) && !item.path.endsWith(".request.uri"));
    if (!fields.length) {
      replace(secretsPart);
      return;
    }
    replace(
      secretsPart,
      h(
        "fieldset",
        {},
        h("legend", {}, "Write-only fields"),
        h("p", { class: "help" }, "The API never returns these. Leave a field empty to keep the stored value; type a value to replace it."),
        fields.map((item) => {
          const input = h("input", { type: "password", autocomplete: "new-password", id: `secret-${item.path.replace(/[^A-Za-z0-9]/g, "-")}` });
          secretInputs.set(item.path, input);
          return field(`${item.path} (${item.set ? "set" : "not set"})`, input);
        }),
      ),
    );
  }

  async function load(): Promise<void> {
    clearErrors();
    aside.clear();
    asideNote.hidden = true;
    replace(previewArea, h("p", { class: "muted" }, "Check the definition to see its next occurrences."));
    if (!(await context.canWrite)) {
      replace(status, errorBanner("Your role in this subscription (Reader) may view jobs but not change them."));
      editorPart.hidden = true;
      return;
    }
    try {
      if (ref) {
        const [version, facts] = await Promise.all([context.api.jobVersion(ref), context.api.insight(ref, 1).catch(() => null)]);
        const job: Job = version.job;
        etag = version.etag;
        insight = facts;
        const properties = clone(job.properties) as Json;
        delete properties.status;
        body = { properties };
      } else {
        const snapshot = await context.catalog.load();
        const wanted = context.params.get("collection") ?? "";
        const options = snapshot.collections.map(({ collection }: { collection: Collection }) => {
          const key = parseId(collection.id);
          const label = `${key.group}/${key.collection}`;
          return h("option", { value: collection.id, selected: label === wanted }, label);
        });
        noCollection = options.length === 0;
        replace(collectionSelect, noCollection ? h("option", { value: "" }, "none yet") : options);
        replace(
          collectionHelp,
          ...(noCollection
            ? [
                "This subscription has no job collection yet: make one with New collection on the ",
                h("a", { href: "#/collections" }, "Collections"),
                " page, then come back here.",
              ]
            : ["A collection of this subscription, as resource group/collection. Another one: New collection on the Collections page."]),
        );
        // No start time: the job starts when it is saved, and its first run is at once (a start at the next
        // full hour kept an every-minute job waiting for up to an hour).
        body = {
          properties: {
            action: { type: "Https", request: { method: "POST", uri: "https://" } },
            recurrence: { frequency: "Hour", interval: 1 },
            state: "Enabled",
          },
        };
      }
    } catch (error) {
      const failure = error as ApiError;
      editorPart.hidden = true;
      replace(status, errorBanner(failure.status === 404 ? `Job ${name} was not found: ${failure.message}` : `Could not read the job: ${failure.message}`));
      return;
    }
    secretFields();
    replace(status);
    mode = "form";
    formChoice.checked = true;
    form.hidden = false;
    jsonPart.hidden = true;
    dropPart.hidden = true;
    dropSecrets.checked = false;
    fill();
    editorPart.hidden = false;
    loaded = true;
  }

  return {
    title,
    element,
    interval: 3_600_000, // an editor does not poll: what it edits stays as it was read (the ETag guards it)
    async refresh() {
      if (!loaded) await load();
    },
  };
}

/** A problem the page finds itself (not JSON, a header line without a colon), shown next to its field. */
class FieldProblem extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}
