// The jobs of every collection of the subscription: state, next and last run, counters and last outcome,
// with a search box and filters (kept in the address, so a filtered list can be bookmarked), and the
// "failing now" view: the jobs whose last run failed, or that the service faulted, across collections.

import type { JobRow } from "../catalog";
import { isFailing } from "../catalog";
import { h, replace } from "../dom";
import { excerpt, relative, utc } from "../format";
import { badge, errorBanner, jobHash, rerender, table, type Context, type View } from "../view";

const STATES = ["Enabled", "Disabled", "Faulted", "Completed"];

function target(row: JobRow): string {
  const action = row.job.properties.action;
  if (action.request?.uri) return `${action.request.method ?? "GET"} ${action.request.uri}`;
  if (action.queueMessage) return `queue ${action.queueMessage.storageAccount}/${action.queueMessage.queueName}`;
  const bus = action.serviceBusQueueMessage ?? action.serviceBusTopicMessage;
  if (bus) return `Service Bus ${String(bus.namespace ?? "")}/${String(bus.queueName ?? bus.topicPath ?? "")}`;
  return action.type;
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

function jobRow(row: JobRow, now: number): HTMLTableRowElement {
  const props = row.job.properties;
  const status = props.status ?? {};
  const last = row.last?.properties;
  return h(
    "tr",
    { class: isFailing(row) ? "failing" : "" },
    h("th", { scope: "row" }, h("a", { href: jobHash(row.ref) }, row.ref.job ?? row.job.name)),
    h("td", {}, `${row.ref.group}/${row.ref.collection}`),
    h("td", {}, badge(props.state)),
    h(
      "td",
      {},
      status.nextExecutionTime
        ? h("time", { datetime: status.nextExecutionTime, title: utc(status.nextExecutionTime) }, relative(status.nextExecutionTime, now))
        : h("span", { class: "muted" }, "—"),
    ),
    h(
      "td",
      {},
      status.lastExecutionTime
        ? h("time", { datetime: status.lastExecutionTime, title: utc(status.lastExecutionTime) }, relative(status.lastExecutionTime, now))
        : h("span", { class: "muted" }, "never"),
    ),
    h("td", { class: "num" }, String(status.executionCount ?? 0)),
    h("td", { class: "num" }, String(status.failureCount ?? 0)),
    h("td", { class: "num" }, String(status.faultedCount ?? 0)),
    h("td", { class: "outcome" }, last ? badge(last.status) : h("span", { class: "muted" }, "—"), last?.message ? h("span", { class: "excerpt", title: last.message }, ` ${excerpt(last.message, 60)}`) : null),
  );
}

export function jobsView(context: Context, failingOnly: boolean): View {
  const params = new URLSearchParams(context.params);
  if (failingOnly) params.set("failing", "1");
  const title = failingOnly ? "Failing now" : "Jobs";
  const status = h("div", { class: "status-area" });
  const count = h("p", { class: "count", role: "status" });
  const content = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  let rows: JobRow[] = [];
  let loaded = false;

  const search = h("input", { id: "job-search", type: "search", value: params.get("q") ?? "", autocomplete: "off" });
  const state = h(
    "select",
    { id: "job-state" },
    h("option", { value: "" }, "Any state"),
    STATES.map((name) => h("option", { value: name, selected: params.get("state") === name }, name)),
  );
  const collection = h("select", { id: "job-collection" }, h("option", { value: "" }, "Every collection"));
  const failing = h("input", { id: "job-failing", type: "checkbox", checked: params.get("failing") === "1" });

  function show(): void {
    if (!loaded) return;
    const now = Date.now();
    const visible = rows.filter((row) => matches(row, params));
    const columns = ["Job", "Collection", "State", "Next run", "Last run", "Runs", "Failures", "Faulted", "Last outcome"];
    const empty = failingOnly ? "No job is failing now." : rows.length ? "No job matches the filters." : "No jobs yet.";
    rerender(content, table(title, columns, visible.map((row) => jobRow(row, now)), empty));
    count.textContent = `${visible.length} of ${rows.length} jobs shown`;
  }

  function update(): void {
    const next = new URLSearchParams();
    for (const [name, value] of [["q", search.value.trim()], ["state", state.value], ["collection", collection.value], ["failing", failing.checked ? "1" : ""]]) {
      if (value) next.set(name, value);
    }
    for (const name of ["q", "state", "collection", "failing"]) params.delete(name);
    next.forEach((value, name) => params.set(name, value));
    const base = failingOnly ? "#/failing" : "#/jobs";
    const query = new URLSearchParams([...params].filter(([name]) => !(failingOnly && name === "failing"))).toString();
    history.replaceState(null, "", `${base}${query ? `?${query}` : ""}`);
    show();
  }
  search.addEventListener("input", update);
  state.addEventListener("change", update);
  collection.addEventListener("change", update);
  failing.addEventListener("change", update);

  const filters = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter jobs" },
    h("div", {}, h("label", { for: "job-search" }, "Search"), search),
    h("div", {}, h("label", { for: "job-state" }, "State"), state),
    h("div", {}, h("label", { for: "job-collection" }, "Collection"), collection),
    failingOnly ? null : h("div", { class: "check" }, failing, h("label", { for: "job-failing" }, "Failing now only")),
  );
  filters.addEventListener("submit", (event) => event.preventDefault());

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
    status,
    count,
    content,
  );

  return {
    title,
    element,
    interval: 3000,
    async refresh() {
      try {
        const snapshot = await context.catalog.load();
        replace(status);
        rows = snapshot.jobs;
        loaded = true;
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
        show();
      } catch (error) {
        replace(status, errorBanner(`Could not list the jobs: ${(error as Error).message}`));
      }
    },
  };
}
