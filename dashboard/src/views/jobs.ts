// The jobs of every collection of the subscription: state, schedule (in words), target, next and last run,
// counters and last outcome, with a search box, filters and sorting (kept in the address, so a filtered,
// sorted list can be bookmarked), bulk enable, disable, run now and delete of the selected jobs (after a
// confirmation naming the count), and the "failing now" view: the jobs whose last run failed, or that the
// service faulted, across collections.
//
// TAGS AND LAST OUTCOME are filtered by the service (api-version 2026-12-01-preview's ``$filter``: ``tags/<name>
// eq '<value>'`` for each tag, ``lastOutcome eq 'Failed'``, joined by ``and``), not here: the list shows the
// jobs the API answers for that filter (each collection's list asked with it), and a filter the service
// refuses shows its 400 message and no job. The address keeps them as ``tag=name=value`` (once per tag: every
// tag must match) and ``outcome=Failed``. Each job's tags are shown as text under its name.

import type { Ref } from "../api";
import { ApiError, jobFilter } from "../api";
import type { JobRow, Snapshot } from "../catalog";
import { isFailing } from "../catalog";
import { h, replace, shown } from "../dom";
import { absolute, excerpt, onTimeMode, recurrenceZone, relative, scheduleWords, zoneFor } from "../format";
import { badge, errorBanner, jobHash, parseTag, rerender, tagList, type Context, type View } from "../view";

const STATES = ["Enabled", "Disabled", "Faulted", "Completed"];
/** The last outcomes the service filters by (``lastOutcome``: the history status of the job's last run). */
const OUTCOMES = ["Failed", "Completed"];
/** How many tags a row shows (then "+N more"), and how many characters of each value. */
const ROW_TAGS = 3;
const ROW_TAG_VALUE = 40;
/** How many name=value suggestions the tag input offers (from the tags of the jobs listed). */
const TAG_SUGGESTIONS = 200;

/** The tags of the address (``tag=name=value``, once per tag), in order, without repeats; ones that are not
 * name=value are left out. */
function tagsOf(params: URLSearchParams): [string, string][] {
  const seen = new Set<string>();
  const out: [string, string][] = [];
  for (const text of params.getAll("tag")) {
    const tag = parseTag(text);
    if (!tag || seen.has(JSON.stringify(tag))) continue;
    seen.add(JSON.stringify(tag));
    out.push(tag);
  }
  return out;
}

/** The ``$filter`` the service is asked for (empty: none): the address's tags and last outcome. */
function serverFilter(params: URLSearchParams): string {
  const outcome = params.get("outcome") ?? "";
  return jobFilter(tagsOf(params), OUTCOMES.includes(outcome) ? outcome : "");
}

export function target(row: JobRow): string {
  const action = row.job.properties.action;
  if (action.request?.uri) return `${action.request.method ?? "GET"} ${action.request.uri}`;
  if (action.queueMessage) return `queue ${action.queueMessage.storageAccount}/${action.queueMessage.queueName}`;
  const bus = action.serviceBusQueueMessage ?? action.serviceBusTopicMessage;
  if (bus) return `Service Bus ${String(bus.namespace ?? "")}/${String(bus.queueName ?? bus.topicPath ?? "")}`;
  return action.type;
}

function schedule(row: JobRow): string {
  return scheduleWords(row.job.properties.recurrence, row.job.properties.startTime);
}

function matches(row: JobRow, params: URLSearchParams): boolean {
  const state = params.get("state");
  if (state && row.job.properties.state !== state) return false;
  const collection = params.get("collection");
  if (collection && `${row.ref.group}/${row.ref.collection}` !== collection) return false;
  if (params.get("failing") === "1" && !isFailing(row)) return false;
  const words = (params.get("q") ?? "").toLowerCase().split(/\s+/).filter(Boolean);
  const text = `${row.ref.job} ${row.ref.collection} ${row.ref.group} ${target(row)}`.toLowerCase();
  return words.every((word) => text.includes(word));
}

interface Column {
  key: string;
  title: string;
  /** The value rows are sorted by (none: the column does not sort). */
  value?: (row: JobRow) => string | number;
}

const FAR = Number.MAX_SAFE_INTEGER;
const instant = (iso: string | undefined, missing: number) => (iso ? new Date(iso).getTime() : missing);
const COLUMNS: Column[] = [
  { key: "job", title: "Job", value: (row) => (row.ref.job ?? "").toLowerCase() },
  { key: "collection", title: "Collection", value: (row) => `${row.ref.group}/${row.ref.collection}`.toLowerCase() },
  { key: "state", title: "State", value: (row) => row.job.properties.state },
  { key: "schedule", title: "Schedule", value: (row) => schedule(row).toLowerCase() },
  { key: "target", title: "Target", value: (row) => target(row).toLowerCase() },
  { key: "next", title: "Next run", value: (row) => instant(row.job.properties.status?.nextExecutionTime, FAR) },
  { key: "last", title: "Last run", value: (row) => instant(row.job.properties.status?.lastExecutionTime, 0) },
  { key: "runs", title: "Runs", value: (row) => row.job.properties.status?.executionCount ?? 0 },
  { key: "failures", title: "Failures", value: (row) => row.job.properties.status?.failureCount ?? 0 },
  { key: "faulted", title: "Faulted", value: (row) => row.job.properties.status?.faultedCount ?? 0 },
  { key: "outcome", title: "Last outcome", value: (row) => row.last?.properties.status ?? "" },
];

function timeCell(iso: string | undefined, now: number, zone: string | null, none: string): HTMLElement {
  if (!iso) return h("td", {}, h("span", { class: "muted" }, none));
  return h(
    "td",
    {},
    h("time", { datetime: iso, title: absolute(iso, null) }, relative(iso, now)),
    h("span", { class: "abs" }, absolute(iso, zone)),
  );
}

function jobRow(row: JobRow, now: number, select: HTMLInputElement | null): HTMLTableRowElement {
  const props = row.job.properties;
  const status = props.status ?? {};
  const last = row.last?.properties;
  const zone = zoneFor(recurrenceZone(props.recurrence));
  return h(
    "tr",
    { class: isFailing(row) ? "failing" : "" },
    h(
      "th",
      { scope: "row" },
      select,
      h("a", { href: jobHash(row.ref) }, row.ref.job ?? row.job.name),
      tagList(props.tags, { limit: ROW_TAGS, cut: ROW_TAG_VALUE }),
    ),
    h("td", {}, `${row.ref.group}/${row.ref.collection}`),
    h("td", {}, badge(props.state)),
    h("td", { class: "schedule" }, schedule(row)),
    h("td", { class: "target" }, h("code", {}, target(row))),
    timeCell(status.nextExecutionTime, now, zone, "—"),
    timeCell(status.lastExecutionTime, now, zone, "never"),
    h("td", { class: "num" }, String(status.executionCount ?? 0)),
    h("td", { class: "num" }, String(status.failureCount ?? 0)),
    h("td", { class: "num" }, String(status.faultedCount ?? 0)),
    h("td", { class: "outcome" }, last ? badge(last.status) : h("span", { class: "muted" }, "—"), last?.message ? h("span", { class: "excerpt", title: last.message }, ` ${excerpt(last.message, 60)}`) : null),
  );
}

type Bulk = "enable" | "disable" | "run" | "delete";
const BULK: Record<Bulk, { button: string; verb: string; done: string }> = {
  enable: { button: "Enable", verb: "Enable", done: "enabled" },
  disable: { button: "Disable", verb: "Disable", done: "disabled" },
  run: { button: "Run now", verb: "Run", done: "run" },
  delete: { button: "Delete…", verb: "Delete", done: "deleted" },
};

export function jobsView(context: Context, failingOnly: boolean): View {
  const params = new URLSearchParams(context.params);
  if (failingOnly) params.set("failing", "1");
  const title = failingOnly ? "Failing now" : "Jobs";
  const status = h("div", { class: "status-area" });
  const count = h("p", { class: "count", role: "status" });
  const content = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  let rows: JobRow[] = [];
  let visible: JobRow[] = [];
  let loaded = false;
  let writer = false;
  const selected = new Set<string>();

  const search = h("input", { id: "job-search", type: "search", value: params.get("q") ?? "", autocomplete: "off" });
  const state = h(
    "select",
    { id: "job-state" },
    h("option", { value: "" }, "Any state"),
    STATES.map((name) => h("option", { value: name, selected: params.get("state") === name }, name)),
  );
  const collection = h("select", { id: "job-collection" }, h("option", { value: "" }, "Every collection"));
  const failing = h("input", { id: "job-failing", type: "checkbox", checked: params.get("failing") === "1" });
  const outcome = h(
    "select",
    { id: "job-outcome" },
    h("option", { value: "" }, "Any last outcome"),
    OUTCOMES.map((name) => h("option", { value: name, selected: params.get("outcome") === name }, name)),
  );
  // Tags: typed as name=value (or chosen among the tags of the jobs listed), each added to the filter.
  const tagOptions = h("datalist", { id: "job-tag-options" });
  const tagInput = h("input", {
    id: "job-tag",
    type: "text",
    autocomplete: "off",
    spellcheck: "false",
    list: "job-tag-options",
    placeholder: "team=payments",
    "aria-describedby": "job-tag-help",
  });
  const addTag = h("button", { type: "button", "data-key": "add-tag" }, "Add tag");
  const chosenTags = h("ul", { class: "tag-filters", "aria-label": "Tag filters", hidden: true });
  const filterStatus = h("div", { class: "filter-status" });
  /** The service's answer for a filter: the ids of the jobs it lists (null while asked), or its refusal. */
  let answer: { key: string; ids: Set<string> | null; refused: string | null; failed: string | null } = {
    key: "",
    ids: null,
    refused: null,
    failed: null,
  };
  let shownRefusal = "";
  let shownTags = "";

  // Bulk actions (Contributors only): on the selected jobs among those shown.
  const bulkCount = h("span", { class: "bulk-count" });
  const bulkStatus = h("p", { class: "action-status", role: "status" });
  const bulkButtons = (Object.keys(BULK) as Bulk[]).map((kind) =>
    h("button", { type: "button", class: kind === "delete" ? "danger" : "", "data-bulk": kind, disabled: true }, BULK[kind].button),
  );
  const bulkBar = h("div", { class: "bulk", role: "group", "aria-label": "Bulk actions", hidden: true }, bulkCount, bulkButtons);
  const dialogTitle = h("h2", { id: "bulk-title" });
  const dialogList = h("ul", { id: "bulk-text", class: "bulk-list" });
  const confirmButton = h("button", { value: "confirm" });
  const dialog = h(
    "dialog",
    { "aria-labelledby": "bulk-title", "aria-describedby": "bulk-text" },
    dialogTitle,
    dialogList,
    h("form", { method: "dialog", class: "buttons" }, h("button", { value: "cancel", autofocus: true }, "Cancel"), confirmButton),
  );
  let pending: { kind: Bulk; rows: JobRow[]; opener: HTMLButtonElement } | null = null;

  function chosen(): JobRow[] {
    return visible.filter((row) => selected.has(row.job.id));
  }

  function updateBulk(): void {
    const n = chosen().length;
    bulkCount.textContent = `${n} of ${visible.length} shown selected`;
    for (const button of bulkButtons) button.disabled = n === 0;
  }

  for (const button of bulkButtons) {
    button.addEventListener("click", () => {
      const kind = button.getAttribute("data-bulk") as Bulk;
      const target = chosen();
      if (!target.length) return;
      pending = { kind, rows: target, opener: button };
      const noun = `${target.length} job${target.length === 1 ? "" : "s"}`;
      dialogTitle.textContent = `${BULK[kind].verb} ${noun}?`;
      replace(dialogList, target.map((row) => h("li", {}, h("code", {}, `${row.ref.group}/${row.ref.collection}/${row.ref.job}`))));
      confirmButton.textContent = `${BULK[kind].verb} ${noun}`;
      confirmButton.className = kind === "delete" ? "danger" : "primary";
      dialog.returnValue = "";
      dialog.showModal();
    });
  }

  dialog.addEventListener("close", () => {
    const job = pending;
    pending = null;
    if (!job) return;
    if (dialog.returnValue !== "confirm") {
      job.opener.focus();
      return;
    }
    void runBulk(job.kind, job.rows, job.opener);
  });

  async function runBulk(kind: Bulk, target: JobRow[], opener: HTMLButtonElement): Promise<void> {
    for (const button of bulkButtons) button.disabled = true;
    bulkStatus.className = "action-status";
    bulkStatus.textContent = `${BULK[kind].verb}: ${target.length} job${target.length === 1 ? "" : "s"}…`;
    const failures: string[] = [];
    let done = 0;
    // Four at a time: each is one call of the management API with the user's credential.
    for (let start = 0; start < target.length; start += 4) {
      await Promise.all(
        target.slice(start, start + 4).map(async (row) => {
          try {
            if (kind === "enable") await context.api.setState(row.ref, "Enabled");
            else if (kind === "disable") await context.api.setState(row.ref, "Disabled");
            else if (kind === "run") await context.api.run(row.ref);
            else await context.api.remove(row.ref);
            done += 1;
            if (kind === "delete") selected.delete(row.job.id);
          } catch (error) {
            failures.push(`${row.ref.job}: ${(error as Error).message}`);
          }
        }),
      );
    }
    const text = `${done} of ${target.length} job${target.length === 1 ? "" : "s"} ${BULK[kind].done}.`;
    bulkStatus.className = failures.length ? "action-status error" : "action-status";
    bulkStatus.textContent = shown(failures.length ? `${text} ${failures.length} failed: ${failures.join("; ")}` : text);
    await view.refresh();
    updateBulk();
    opener.focus();
  }

  function sortKey(): { column: Column; descending: boolean } | null {
    const column = COLUMNS.find((c) => c.key === params.get("sort"));
    return column ? { column, descending: params.get("dir") === "desc" } : null;
  }

  function header(column: Column): HTMLElement {
    const sort = sortKey();
    const active = sort?.column.key === column.key;
    const direction = active ? (sort?.descending ? "descending" : "ascending") : null;
    const button = h(
      "button",
      { type: "button", class: "sort", "data-key": `sort-${column.key}` },
      column.title,
      h("span", { "aria-hidden": "true" }, active ? (sort?.descending ? " ▼" : " ▲") : ""),
    );
    button.addEventListener("click", () => {
      const descending = active && !sort?.descending;
      params.set("sort", column.key);
      if (descending) params.set("dir", "desc");
      else params.delete("dir");
      update();
    });
    return h("th", { scope: "col", "aria-sort": direction ?? false }, column.key === "job" ? [selectAll(), button] : button);
  }

  function selectAll(): HTMLInputElement | null {
    if (!writer) return null;
    const all = h("input", { type: "checkbox", class: "select", "aria-label": "Select every job shown", "data-key": "select-all" });
    const n = chosen().length;
    all.checked = visible.length > 0 && n === visible.length;
    all.indeterminate = n > 0 && n < visible.length;
    all.addEventListener("change", () => {
      for (const row of visible) {
        if (all.checked) selected.add(row.job.id);
        else selected.delete(row.job.id);
      }
      show();
    });
    return all;
  }

  function checkbox(row: JobRow): HTMLInputElement | null {
    if (!writer) return null;
    const box = h("input", {
      type: "checkbox",
      class: "select",
      "aria-label": `Select ${row.ref.job}`,
      "data-key": `select:${row.job.id}`,
      checked: selected.has(row.job.id),
    });
    box.addEventListener("change", () => {
      if (box.checked) selected.add(row.job.id);
      else selected.delete(row.job.id);
      show();
    });
    return box;
  }

  /** What the service's answer is for: the filter and the collection it was asked of (every one: ""). */
  function answerKey(): string {
    const filter = serverFilter(params);
    return filter ? `${params.get("collection") ?? ""}\n${filter}` : "";
  }

  /** The tag filters as removable items (each removed by its button, the focus then on the tag input). */
  function drawTags(tags: [string, string][]): void {
    replace(
      chosenTags,
      tags.map(([name, value]) => {
        const text = `${name}=${value}`;
        const remove = h("button", { type: "button", class: "remove", "data-key": `remove-tag:${text}`, "aria-label": shown(`Remove the tag filter ${text}`) }, "×");
        remove.addEventListener("click", () => {
          const rest = tagsOf(params).filter(([n, v]) => !(n === name && v === value));
          params.delete("tag");
          for (const [n, v] of rest) params.append("tag", `${n}=${v}`);
          update();
          tagInput.focus();
        });
        return h("li", { class: "tag" }, h("span", { class: "tag-name" }, name), "=", h("span", { class: "tag-value" }, value), " ", remove);
      }),
    );
    chosenTags.hidden = tags.length === 0;
  }

  /** The tag filters, and the service's refusal of the filter (or a failure to ask it). */
  function showFilter(): void {
    const tags = tagsOf(params);
    // Drawn again only when they changed, so the focus stays on a remove button across refreshes.
    const signature = JSON.stringify(tags);
    if (signature !== shownTags) {
      shownTags = signature;
      drawTags(tags);
    }
    const key = answerKey();
    const problem = key && answer.key === key ? (answer.refused !== null ? `The service refused the filter: ${answer.refused}` : answer.failed !== null ? `Could not filter the jobs: ${answer.failed}` : "") : "";
    if (problem !== shownRefusal) {
      shownRefusal = problem;
      replace(filterStatus, problem ? h("p", { class: "error", role: "alert", id: "job-filter-error" }, problem) : null);
    }
    if (problem) tagInput.setAttribute("aria-describedby", "job-tag-help job-filter-error");
    else tagInput.setAttribute("aria-describedby", "job-tag-help");
  }

  function show(): void {
    showFilter();
    if (!loaded) return;
    const now = Date.now();
    const key = answerKey();
    if (key && (answer.key !== key || answer.ids === null)) {
      // The service is being asked for this filter: nothing is shown that it did not answer.
      visible = [];
      replace(content, h("p", { class: "muted" }, "Filtering…"));
      count.textContent = `Filtering ${rows.length} jobs…`;
      updateBulk();
      return;
    }
    const ids = key ? answer.ids : null;
    visible = rows.filter((row) => (ids === null || ids.has(row.job.id)) && matches(row, params));
    const sort = sortKey();
    if (sort) {
      const value = sort.column.value ?? (() => 0);
      visible.sort((a, b) => {
        const x = value(a);
        const y = value(b);
        const order = x < y ? -1 : x > y ? 1 : 0;
        return sort.descending ? -order : order;
      });
    }
    const shown = new Set(visible.map((row) => row.job.id));
    for (const id of [...selected]) if (!shown.has(id)) selected.delete(id);
    const refused = key && (answer.refused !== null || answer.failed !== null);
    const empty = refused
      ? "No jobs shown: the filter was not applied (see above)."
      : failingOnly && !key
        ? "No job is failing now."
        : rows.length
          ? "No job matches the filters."
          : "No jobs yet.";
    const body = h("tbody", {}, visible.map((row) => jobRow(row, now, checkbox(row))));
    if (!visible.length) body.append(h("tr", {}, h("td", { colspan: COLUMNS.length, class: "empty" }, empty)));
    const caption = sort ? `${title}, sorted by ${sort.column.title.toLowerCase()}${sort.descending ? ", descending" : ""}` : title;
    rerender(
      content,
      h(
        "div",
        { class: "table-wrap", role: "region", "aria-label": title, tabindex: 0 },
        h("table", {}, h("caption", {}, caption), h("thead", {}, h("tr", {}, COLUMNS.map(header))), body),
      ),
    );
    count.textContent = `${visible.length} of ${rows.length} jobs shown`;
    updateBulk();
  }

  function update(): void {
    const before = answerKey();
    const next = new URLSearchParams();
    for (const [name, value] of [["q", search.value.trim()], ["state", state.value], ["collection", collection.value], ["failing", failing.checked ? "1" : ""], ["outcome", outcome.value]]) {
      if (value) next.set(name, value);
    }
    for (const name of ["q", "state", "collection", "failing", "outcome"]) params.delete(name);
    next.forEach((value, name) => params.set(name, value));
    // The tags are kept in the address as they are added and removed (once each, in order).
    const tags = tagsOf(params);
    params.delete("tag");
    for (const [name, value] of tags) params.append("tag", `${name}=${value}`);
    const base = failingOnly ? "#/failing" : "#/jobs";
    const query = new URLSearchParams([...params].filter(([name]) => !(failingOnly && name === "failing") && name !== "deleted")).toString();
    history.replaceState(null, "", `${base}${query ? `?${query}` : ""}`);
    show();
    // A new filter (or the same in another collection) is the service's to answer: ask it now.
    if (answerKey() !== before && answerKey() !== "") void view.refresh();
  }

  /** Adds the tag typed (name=value) to the filter; a text that is not one is said next to the input. */
  function addTyped(): void {
    const text = tagInput.value;
    if (!text.trim()) return;
    const tag = parseTag(text);
    tagInput.removeAttribute("aria-invalid");
    if (!tag) {
      tagInput.setAttribute("aria-invalid", "true");
      shownRefusal = "";
      replace(filterStatus, h("p", { class: "error", role: "alert", id: "job-filter-error" }, `Not a tag filter: "${text.trim()}" is not name=value (e.g. team=payments).`));
      tagInput.setAttribute("aria-describedby", "job-tag-help job-filter-error");
      tagInput.focus();
      return;
    }
    params.append("tag", `${tag[0]}=${tag[1]}`);
    tagInput.value = "";
    update();
    tagInput.focus();
  }
  addTag.addEventListener("click", addTyped);
  tagInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      addTyped();
    }
  });
  tagInput.addEventListener("input", () => {
    if (!tagInput.hasAttribute("aria-invalid")) return;
    tagInput.removeAttribute("aria-invalid");
    shownRefusal = "-"; // the next showFilter draws the service's state again
    showFilter();
  });
  search.addEventListener("input", update);
  state.addEventListener("change", update);
  collection.addEventListener("change", update);
  failing.addEventListener("change", update);
  outcome.addEventListener("change", update);
  onTimeMode(() => {
    if (document.body.contains(element)) show();
  });

  const filters = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter jobs" },
    h("div", {}, h("label", { for: "job-search" }, "Search"), search),
    h("div", {}, h("label", { for: "job-state" }, "State"), state),
    h("div", {}, h("label", { for: "job-collection" }, "Collection"), collection),
    h("div", {}, h("label", { for: "job-outcome" }, "Last outcome"), outcome),
    h("div", { class: "tag-part" }, h("label", { for: "job-tag" }, "Tag"), h("span", { class: "tag-entry" }, tagInput, addTag), tagOptions),
    failingOnly ? null : h("div", { class: "check" }, failing, h("label", { for: "job-failing" }, "Failing now only")),
    h(
      "p",
      { class: "help tag-help", id: "job-tag-help" },
      "Tag: name=value, then Add tag; every tag added must match (names without regard to case, values exactly). Tags and last outcome are filtered by the service.",
    ),
  );
  filters.addEventListener("submit", (event) => event.preventDefault());
  const newJob = h("p", { class: "new-job", hidden: true }, h("a", { href: "#/new", class: "button-link" }, "New job"));

  const element = h(
    "section",
    { "aria-labelledby": "page-title" },
    h("h1", { id: "page-title", tabindex: -1 }, title),
    h(
      "p",
      { class: "lead" },
      failingOnly
        ? "Jobs whose last run failed, or that the service faulted, in every collection of subscription "
        : "Every job of every collection in subscription ",
      h("code", {}, context.api.session.subscription),
      ".",
    ),
    filters,
    chosenTags,
    filterStatus,
    status,
    newJob,
    count,
    bulkBar,
    bulkStatus,
    content,
    dialog,
  );
  void context.canWrite.then((can) => {
    writer = can;
    bulkBar.hidden = !can;
    newJob.hidden = !can;
    show();
  });

  /** The service's answer for the filter ``key``: each collection's jobs listed with the ``$filter`` (the one
   * chosen, or every one). A refusal (400) is kept with its message; a collection gone meanwhile lists none. */
  async function ask(snapshot: Snapshot, key: string): Promise<typeof answer> {
    const [scope, filter] = [key.slice(0, key.indexOf("\n")), key.slice(key.indexOf("\n") + 1)];
    const refs: Ref[] = snapshot.collections
      .filter((row) => !row.error && (!scope || `${row.ref.group}/${row.ref.collection}` === scope))
      .map((row) => row.ref);
    const ids = new Set<string>();
    try {
      for (let start = 0; start < refs.length; start += 6) {
        await Promise.all(
          refs.slice(start, start + 6).map(async (ref) => {
            try {
              for (const job of await context.api.jobs(ref, filter)) ids.add(job.id);
            } catch (error) {
              if (!(error instanceof ApiError) || error.status !== 404) throw error;
            }
          }),
        );
      }
    } catch (error) {
      const failure = error as ApiError;
      if (failure instanceof ApiError && failure.status === 400) return { key, ids: new Set(), refused: failure.message, failed: null };
      return { key, ids: new Set(), refused: null, failed: failure.message };
    }
    return { key, ids, refused: null, failed: null };
  }

  /** The tags of the jobs listed, offered as name=value in the tag input (the filter's own tags left out). */
  function suggest(snapshot: Snapshot): void {
    const chosen = new Set(tagsOf(params).map(([name, value]) => `${name}=${value}`));
    const texts = new Set<string>();
    for (const row of snapshot.jobs) {
      for (const [name, value] of Object.entries(row.job.properties.tags ?? {})) {
        const text = `${name}=${value}`;
        if (!chosen.has(text) && texts.size < TAG_SUGGESTIONS) texts.add(text);
      }
    }
    const sorted = [...texts].sort();
    const current = [...tagOptions.options].map((option) => option.value);
    if (JSON.stringify(current) !== JSON.stringify(sorted)) replace(tagOptions, sorted.map((text) => h("option", { value: text }, shown(text) === text ? null : text)));
  }

  const view: View = {
    title,
    element,
    interval: 3000,
    async refresh() {
      try {
        const snapshot = await context.catalog.load();
        replace(status);
        const key = answerKey();
        const asked = key ? await ask(snapshot, key) : null;
        rows = snapshot.jobs;
        loaded = true;
        suggest(snapshot);
        // An answer for a filter that has changed meanwhile is dropped: the new filter's own refresh shows it.
        if (asked && asked.key === answerKey()) answer = asked;
        const keys = snapshot.collections.map((c) => `${c.ref.group}/${c.ref.collection}`);
        const wanted = params.get("collection") ?? "";
        const current = [...collection.options].slice(1).map((option) => option.value);
        if (JSON.stringify(current) !== JSON.stringify(keys)) {
          replace(
            collection,
            h("option", { value: "" }, "Every collection"),
            keys.map((key) => h("option", { value: key, selected: key === wanted }, key)),
          );
        }
        if (!dialog.open) show();
      } catch (error) {
        replace(status, errorBanner(`Could not list the jobs: ${(error as Error).message}`));
      }
    },
  };
  return view;
}
