// The subscription's job collections: plan, quota use, state, and how many of their jobs fail now; and, for a
// Contributor, "New collection": a small form (name, resource group, location, plan) whose PUT goes to the
// management API (Api.createCollection: never over an existing collection). The service's ARM error is shown
// at the field it names (jobCollectionName, resourceGroupName, location, properties.sku.name); once created,
// the collection is listed and the page offers the job form for it. A Reader sees no write control.

import { ApiError, type Ref } from "../api";
import { isFailing, type CollectionRow } from "../catalog";
import { announce, h, replace } from "../dom";
import { badge, errorBanner, jobsHash, table, type Context, type View } from "../view";
import { statusPanel } from "./status";

/** The plans the service knows (``properties.sku.name``), Standard first chosen. */
const PLANS = ["Free", "Standard", "P10Premium", "P20Premium"];
const DEFAULT_PLAN = "Standard";
/** What the form offers on a subscription without collections (any names do; the service checks them). */
const DEFAULT_GROUP = "default";
const DEFAULT_LOCATION = "westus";

/** The job form's address for a collection ("group/collection", as the form's list names it). */
function newJobHash(ref: Ref): string {
  return `#/new?collection=${encodeURIComponent(`${ref.group}/${ref.collection}`)}`;
}

export function collectionsView(context: Context): View {
  const status = h("div", { class: "status-area" });
  const content = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const service = statusPanel(context.api);
  let rows: CollectionRow[] = [];
  let writer = false;

  // ------------------------------------------------------------------ New collection (Contributors only)
  const nameInput = h("input", { id: "collection-name", type: "text", autocomplete: "off", spellcheck: "false" });
  const groupInput = h("input", { id: "collection-group", type: "text", autocomplete: "off", spellcheck: "false" });
  const locationInput = h("input", { id: "collection-location", type: "text", autocomplete: "off", spellcheck: "false" });
  const planSelect = h("select", { id: "collection-plan" }, PLANS.map((plan) => h("option", { value: plan }, plan)));
  planSelect.value = DEFAULT_PLAN;
  const field = (label: string, control: HTMLInputElement | HTMLSelectElement, help: string): HTMLElement => {
    const helpId = `${control.id}-help`;
    control.setAttribute("aria-describedby", helpId);
    return h("div", { class: "field" }, h("label", { for: control.id }, label), control, h("p", { class: "help", id: helpId }, help));
  };
  const formStatus = h("div", { class: "collection-status", role: "status" });
  const createButton = h("button", { type: "submit", class: "primary" }, "Create collection");
  const cancelButton = h("button", { type: "button" }, "Cancel");
  const form = h(
    "form",
    // "editor": the class of the page's own editing forms (the browser tests' markup traps know them by it).
    { id: "new-collection", class: "editor collection-form", novalidate: true, hidden: true, "aria-labelledby": "new-collection-title" },
    h("h2", { id: "new-collection-title" }, "New job collection"),
    field("Collection name", nameInput, "Letters, digits, - and _ are safest (docs/names.md has the rule); names are compared without regard to case."),
    field("Resource group", groupInput, "Any name: it groups collections in the address (…/resourceGroups/NAME/…); the job form lists a collection as group/collection."),
    field("Location", locationInput, "The region recorded with the collection, e.g. westus or westeurope."),
    field(
      "Plan",
      planSelect,
      "Standard and P10Premium: up to 50 jobs, every minute at most; P20Premium: 1,000 jobs; Free: 5 jobs, hourly at most, one Free collection per subscription.",
    ),
    h("div", { class: "actions" }, createButton, cancelButton),
    formStatus,
  );
  const toggle = h("button", { type: "button", id: "new-collection-toggle", "aria-expanded": "false", "aria-controls": "new-collection" }, "New collection");
  const newJobLink = h("a", { href: "#/new", class: "button-link", hidden: true }, "New job");
  const created = h("div", {});
  const writePart = h("div", { class: "new-collection", hidden: true }, created, h("p", { class: "collection-actions" }, toggle, newJobLink), form);

  const element = h(
    "section",
    { "aria-labelledby": "page-title" },
    h("h1", { id: "page-title", tabindex: -1 }, "Job collections"),
    h(
      "p",
      { class: "lead" },
      "Every job collection of subscription ",
      h("code", {}, context.api.session.subscription),
      ".",
    ),
    status,
    content,
    // After the table: the keyboard reaches the collections first, then the write controls.
    writePart,
    service.element,
  );
  let shown = "";

  /** Offers the form's defaults: the resource group and location of a listed collection, else the defaults. */
  function openForm(): void {
    const first = rows[0];
    if (!groupInput.value) groupInput.value = first?.ref.group ?? DEFAULT_GROUP;
    if (!locationInput.value) locationInput.value = first?.collection.location ?? DEFAULT_LOCATION;
    form.hidden = false;
    toggle.setAttribute("aria-expanded", "true");
    replace(created);
    nameInput.focus();
  }

  function closeForm(): void {
    clearErrors();
    form.hidden = true;
    toggle.setAttribute("aria-expanded", "false");
  }

  toggle.addEventListener("click", () => (form.hidden ? openForm() : closeForm()));
  cancelButton.addEventListener("click", () => {
    closeForm();
    toggle.focus();
  });

  const FIELDS: [string, HTMLElement][] = [
    ["jobCollectionName", nameInput],
    ["resourceGroupName", groupInput],
    ["location", locationInput],
    ["properties.sku", planSelect],
  ];

  function clearErrors(): void {
    for (const note of form.querySelectorAll(".field-error")) note.remove();
    for (const [, control] of FIELDS) {
      control.removeAttribute("aria-invalid");
      control.setAttribute("aria-describedby", `${control.id}-help`);
    }
    replace(formStatus);
  }

  /** ``message`` in the form's status and, when it names a field of the form, next to that field (focused). */
  function showError(message: string, path: string | null): void {
    const control = path ? FIELDS.find(([prefix]) => path === prefix || path.startsWith(`${prefix}.`))?.[1] : undefined;
    replace(formStatus, errorBanner(`Not created: ${message}`));
    if (!control) {
      formStatus.querySelector("p")?.setAttribute("tabindex", "-1");
      (formStatus.querySelector("p") as HTMLElement | null)?.focus();
      return;
    }
    const id = `${control.id}-error`;
    control.closest(".field")?.append(h("p", { class: "field-error", id }, message));
    control.setAttribute("aria-invalid", "true");
    control.setAttribute("aria-describedby", `${control.id}-help ${id}`);
    control.focus();
  }

  async function create(): Promise<void> {
    clearErrors();
    const ref: Ref = {
      subscription: context.api.session.subscription,
      group: groupInput.value.trim(),
      collection: nameInput.value.trim(),
    };
    // An empty name would make another address (the list of the group's collections): said here, not sent.
    if (!ref.collection) return showError("jobCollectionName: a collection needs a name", "jobCollectionName");
    if (!ref.group) return showError("resourceGroupName: a collection needs a resource group", "resourceGroupName");
    createButton.disabled = true;
    createButton.setAttribute("aria-busy", "true");
    try {
      // The location is sent as typed (an empty one too): the service says what it accepts.
      await context.api.createCollection(ref, { location: locationInput.value.trim(), properties: { sku: { name: planSelect.value } } });
    } catch (error) {
      const failure = error as ApiError;
      const message = failure.status === 403 ? `your role may not create collections here: ${failure.message}` : failure.message;
      showError(message, failure instanceof ApiError ? failure.field : null);
      return;
    } finally {
      createButton.disabled = false;
      createButton.removeAttribute("aria-busy");
    }
    closeForm();
    nameInput.value = "";
    const key = `${ref.group}/${ref.collection}`;
    const link = h("a", { href: newJobHash(ref) }, `New job in ${key}`);
    replace(created, h("p", { class: "notice", role: "status" }, `Job collection ${key} created. `, link));
    announce(`Job collection ${key} created.`);
    link.focus();
    await loadCollections();
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!createButton.disabled) void create();
  });

  // ------------------------------------------------------------------ the list
  async function loadCollections(): Promise<void> {
    try {
      const [snapshot, canWrite] = await Promise.all([context.catalog.load(), context.canWrite]);
      writer = canWrite;
      writePart.hidden = !writer;
      rows = snapshot.collections;
      newJobLink.hidden = rows.length === 0;
      replace(status);
      const tableRows = snapshot.collections.map(({ collection, ref, jobs, error }) => {
        const quota = collection.properties.quota ?? {};
        const max = quota.maxJobCount;
        const used = jobs.length;
        const failing = jobs.filter(isFailing).length;
        const recurrence = quota.maxRecurrence;
        const key = `${ref.group}/${ref.collection}`;
        return h(
          "tr",
          {},
          h("th", { scope: "row" }, h("a", { href: jobsHash({ collection: key }) }, collection.name)),
          h("td", {}, ref.group),
          h("td", {}, collection.location ?? "—"),
          h("td", {}, collection.properties.sku?.name ?? "—"),
          h(
            "td",
            { class: "quota" },
            max
              ? h("meter", { min: 0, max, value: used, high: max * 0.8, "aria-label": `Jobs of ${collection.name}` })
              : null,
            h("span", {}, error ? `— (${error})` : max ? ` ${used} of ${max} jobs` : ` ${used} jobs`),
          ),
          h("td", {}, recurrence?.frequency ? `every ${recurrence.interval ?? 1} ${recurrence.frequency}` : "—"),
          h("td", {}, badge(collection.properties.state ?? "Enabled")),
          h(
            "td",
            {},
            failing
              ? h("a", { href: jobsHash({ collection: key, failing: "1" }), class: "bad-text" }, `${failing} failing`)
              : h("span", { class: "muted" }, "none"),
          ),
        );
      });
      const columns = ["Collection", "Resource group", "Location", "Plan", "Quota use", "Max recurrence", "State", "Failing now"];
      const next = JSON.stringify([writer, snapshot.collections.map((c) => [c.collection, c.jobs.length, c.error, c.jobs.filter(isFailing).length])]);
      if (next !== shown) {
        shown = next;
        const empty = writer
          ? "No job collections in this subscription yet. Make one with New collection (below the table), then add jobs to it with New job."
          : "No job collections in this subscription yet. Your role (Reader) may not make one; a Contributor can, on this page.";
        replace(content, table("Job collections", columns, tableRows, empty));
      }
    } catch (error) {
      replace(status, errorBanner(`Could not list the collections: ${(error as Error).message}`));
    }
  }

  return {
    title: "Job collections",
    element,
    interval: 5000,
    async refresh() {
      await Promise.all([loadCollections(), service.refresh()]);
    },
  };
}
