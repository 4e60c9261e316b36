// One job: its state and counters, actions (run now, enable or disable, delete with confirmation, each a
// call of the management API), the next occurrences (computed by the server's recurrence engine, in UTC and
// in the job's time zone), the definition with its write-only fields shown as set or not set (never their
// values: the API does not return them), charts of outcomes and lateness, and the history, its attempts,
// retries and error action grouped under the occurrence they belong to. A job that does not exist shows
// "not found" and no action. A Reader is shown no write control. Its description and tags (api-version
// 2026-12-01-preview) are shown under its name, as text; a tag the list's filter can find links to the jobs
// that have it. Each failed history row of a writer has a Re-run button: the management API's replay of the
// row's occurrence (POST .../history/{historyId}/rerun), confirmed next to the history, whose replay rows
// then appear under an occurrence heading of their own ("replay").

import type { Action, HistoryRow, Job, JobInsight, Ref } from "../api";
import { ApiError } from "../api";
import { lastOutcome } from "../catalog";
import { attemptLateness, flowWait, HistoryCharts } from "../charts";
import { announce, h, replace, shown, type Child } from "../dom";
import { absolute, cronStrings, duration, excerpt, lateness, onTimeMode, recurrenceZone, relative, scheduleWords, secondsBetween, span, utc, zoneFor, zoneLabel } from "../format";
import { badge, editHash, errorBanner, filterableTag, jobsHash, rerender, table, tagList, type Context, type View } from "../view";

const HISTORY_ROWS = 200;

function item(term: string, ...value: Child[]): HTMLElement[] {
  return [h("dt", {}, term), h("dd", {}, ...value)];
}

function when(iso: string | undefined, none: string, zone: string | null): Child {
  if (!iso) return h("span", { class: "muted" }, none);
  return h("span", {}, h("time", { datetime: iso }, absolute(iso, zone)), h("span", { class: "muted" }, ` (${relative(iso)})`));
}

function actionDetails(action: Action, prefix: string, insight: JobInsight | null): HTMLElement {
  const list = h("dl", { class: "pairs" });
  list.append(...item("Type", action.type));
  const request = action.request;
  if (request) {
    list.append(...item("Request", h("code", {}, `${request.method ?? "GET"} ${request.uri ?? ""}`)));
    const headers = Object.entries(request.headers ?? {});
    if (headers.length) {
      list.append(...item("Headers", h("ul", { class: "plain" }, headers.map(([name, value]) => h("li", {}, h("code", {}, `${name}: ${value}`))))));
    }
    if (request.body) list.append(...item("Body", h("pre", {}, request.body)));
    const auth = request.authentication;
    if (auth) {
      const shown = Object.entries(auth).filter(([name]) => name !== "type");
      list.append(
        ...item(
          "Authentication",
          String(auth.type ?? ""),
          shown.length ? h("ul", { class: "plain" }, shown.map(([name, value]) => h("li", {}, `${name}: `, h("code", {}, String(value))))) : null,
        ),
      );
    }
  }
  const queue = action.queueMessage;
  if (queue) {
    list.append(...item("Queue", h("code", {}, `${queue.storageAccount ?? ""}/${queue.queueName ?? ""}`)));
    if (queue.message) list.append(...item("Message", h("pre", {}, queue.message)));
  }
  const bus = action.serviceBusQueueMessage ?? action.serviceBusTopicMessage;
  if (bus) {
    const entity = String(bus.queueName ?? bus.topicPath ?? "");
    list.append(...item(action.serviceBusQueueMessage ? "Service Bus queue" : "Service Bus topic", h("code", {}, `${String(bus.namespace ?? "")}/${entity}`)));
    if (typeof bus.message === "string") list.append(...item("Message", h("pre", {}, bus.message)));
    const auth = bus.authentication as { type?: string; sasKeyName?: string } | undefined;
    if (auth) list.append(...item("Authentication", `${auth.type ?? ""}${auth.sasKeyName ? ` (key name ${auth.sasKeyName})` : ""}`));
  }
  const retry = action.retryPolicy;
  if (retry) {
    const text =
      retry.retryType === "None"
        ? "none"
        : `${retry.retryType ?? "Fixed"}: up to ${retry.retryCount ?? 4} retries, every ${duration(retry.retryInterval)}` +
          (retry.maxRetryInterval ? `, at most ${duration(retry.maxRetryInterval)}` : "");
    list.append(...item("Retry policy", text));
  }
  const secrets = (insight?.writeOnly ?? []).filter((field) => field.path.startsWith(`${prefix}.`) && !field.path.slice(prefix.length + 1).startsWith("errorAction."));
  if (secrets.length) {
    list.append(
      ...item(
        "Write-only fields",
        h(
          "ul",
          { class: "plain secrets" },
          secrets.map((field) =>
            h("li", {}, h("code", {}, field.path.slice(prefix.length + 1)), ": ", h("span", { class: field.set ? "badge ok" : "badge muted" }, field.set ? "set" : "not set"), field.set ? null : h("span", { class: "muted" }, ` ${field.meaning.replace(/^not set:?\s*/, "")}`)),
          ),
        ),
        h("p", { class: "help" }, "The API never returns these values; the dashboard only shows whether each one is set."),
      ),
    );
  }
  return list;
}

function scheduleDetails(job: Job, insight: JobInsight | null, zone: string | null): HTMLElement {
  const props = job.properties;
  const recurrence = props.recurrence;
  const list = h("dl", { class: "pairs" });
  list.append(...item("Start", props.startTime ? h("time", { datetime: props.startTime }, absolute(props.startTime, zone)) : "when written"));
  list.append(...item("In words", scheduleWords(recurrence, props.startTime)));
  const crons = cronStrings(recurrence);
  if (recurrence && crons) {
    list.append(...item("Recurrence", crons.length === 1 ? "cron" : `cron: the union of ${crons.length} strings`));
    list.append(...item("Cron", h("ul", { class: "plain cron" }, crons.map((text) => h("li", {}, h("code", {}, text))))));
  } else if (recurrence) {
    list.append(...item("Recurrence", `every ${recurrence.interval ?? 1} ${recurrence.frequency ?? ""}`));
  }
  if (recurrence) {
    if (recurrence.schedule && Object.keys(recurrence.schedule).length) list.append(...item("Schedule", h("code", {}, JSON.stringify(recurrence.schedule))));
    if (recurrence.count !== undefined) list.append(...item("Count", String(recurrence.count)));
    if (recurrence.endTime) list.append(...item("End", h("time", { datetime: recurrence.endTime }, absolute(recurrence.endTime, zone))));
    list.append(...item("Time zone", insight?.timeZone ? `${insight.timeZone.name}${insight.timeZone.iana !== insight.timeZone.name ? ` (${insight.timeZone.iana})` : ""}` : recurrenceZone(recurrence) ?? "UTC"));
  } else {
    list.append(...item("Recurrence", "none: runs once"));
  }
  return list;
}

function occurrencesTable(insight: JobInsight): HTMLElement {
  const zone = insight.timeZone;
  const columns = zone ? ["#", "UTC", `Local time (${zone.iana})`] : ["#", "UTC"];
  const count = insight.occurrences.length;
  const caption =
    insight.state === "Enabled"
      ? `The next ${count} occurrences, from the recurrence engine`
      : `The next ${count} occurrences of the schedule (the job is ${insight.state}: it runs at these times only once enabled)`;
  const rows = insight.occurrences.map((occurrence, index) =>
    h(
      "tr",
      {},
      h("td", { class: "num" }, String(index + 1)),
      h("td", {}, h("time", { datetime: occurrence.utc }, utc(occurrence.utc)), h("span", { class: "muted" }, ` (${relative(occurrence.utc)})`)),
      zone ? h("td", {}, occurrence.local?.replace("T", " ") ?? "—") : null,
    ),
  );
  return table(caption, columns, rows, "No further occurrences: the schedule is over.");
}

/** The occurrence a history row belongs to, as the page names it: when it was due (its expected execution time). */
function occurrenceName(iso: string, zone: string | null): string {
  return `the occurrence due ${absolute(iso, zone)}`;
}

/** A history row; ``rerun``: the content of its last cell (the Re-run column of a writer), or null when the
 * table has no such column. */
function historyRow(row: HistoryRow, fresh: boolean, zone: string | null, rerun: Child | null): HTMLTableRowElement {
  const p = row.properties;
  const took = secondsBetween(p.startTime, p.endTime);
  const late = attemptLateness(row);
  const waited = flowWait(row);
  const message = p.message ?? "";
  return h(
    "tr",
    { class: fresh ? "fresh attempt" : "attempt", "data-status": p.status },
    h("td", {}, h("time", { datetime: p.startTime }, absolute(p.startTime, zone))),
    h("td", {}, ACTION_WORDS[p.actionName] ?? "main"),
    h("td", {}, badge(p.status)),
    h("td", { class: "num" }, took === null ? "—" : span(took)),
    h(
      "td",
      { class: "num" },
      lateness(late),
      waited > 0 ? h("span", { class: "flow-wait", title: "Not part of the lateness" }, `waited ${span(waited)} for flow control`) : null,
    ),
    h("td", { class: "num" }, String(p.retryCount)),
    h(
      "td",
      { class: "message" },
      message.length > 100 ? h("details", {}, h("summary", {}, excerpt(message, 100)), h("pre", {}, message)) : h("span", {}, message || "—"),
    ),
    rerun === null ? null : h("td", { class: "rerun" }, rerun),
  );
}

/** What an attempt belongs to: its occurrence (the expected execution time) and what started it. */
function occurrenceKey(row: HistoryRow): string {
  const p = row.properties;
  return p.expectedExecutionTime ? `${p.expectedExecutionTime}|${p.trigger ?? ""}` : row.id;
}

/** The history's rows in runs of one occurrence each (newest first, as the API lists them): an occurrence's
 * attempts, retries and error action stay together under it. */
export function occurrenceGroups(history: HistoryRow[]): HistoryRow[][] {
  const groups: HistoryRow[][] = [];
  for (const row of history) {
    const last = groups[groups.length - 1];
    if (last && occurrenceKey(last[0]) === occurrenceKey(row)) last.push(row);
    else groups.push([row]);
  }
  return groups;
}

/** How a history row names the action it ran (a notification's rows are the job's notifications, not attempts). */
const ACTION_WORDS: Record<string, string> = { MainAction: "main", ErrorAction: "error action", NotificationAction: "notification" };

/** The heading of one occurrence's rows: when it was due, what started it, its attempts, its outcome and the
 *  notifications it sent. */
function occurrenceHeading(group: HistoryRow[], zone: string | null): string {
  const main = group.filter((row) => row.properties.actionName === "MainAction");
  const errors = group.filter((row) => row.properties.actionName === "ErrorAction").length;
  const notices = group.filter((row) => row.properties.actionName === "NotificationAction");
  const first = group[group.length - 1].properties;
  const due = first.expectedExecutionTime ?? first.startTime;
  const trigger = (first.trigger ?? "").toLowerCase();
  const retries = Math.max(0, ...main.map((row) => row.properties.retryCount));
  const outcome = main[0]?.properties.status ?? group[0].properties.status;
  const parts = [`${main.length} attempt${main.length === 1 ? "" : "s"}`];
  if (retries) parts.push(`${retries} retr${retries === 1 ? "y" : "ies"}`);
  if (errors) parts.push(`error action ${group.find((row) => row.properties.actionName === "ErrorAction")?.properties.status ?? "ran"}`);
  if (notices.length) parts.push(`${notices.length} notification${notices.length === 1 ? "" : "s"} sent`);
  return `Occurrence ${absolute(due, zone)}${trigger ? ` (${trigger})` : ""}: ${parts.join(", ")}; ${outcome}`;
}

export function jobView(context: Context, ref: Ref): View {
  const name = ref.job ?? "";
  const status = h("div", { class: "status-area" });
  const actionStatus = h("p", { class: "action-status", role: "status" });
  const summary = h("dl", { class: "summary" });
  const about = h("div", { class: "about" });
  let shownAbout = "";
  const occurrences = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const definition = h("div", {});
  const raw = h("pre", { class: "raw" });
  const historyArea = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  // Where a re-run's confirmation or refusal is said: next to the history whose button was pressed.
  const historyStatus = h("p", { class: "action-status", role: "status" });
  /** The history rows whose re-run is being requested: their buttons stay disabled while the page redraws. */
  const rerunning = new Set<string>();
  let lastHistory: HistoryRow[] | null = null;
  const charts = new HistoryCharts();
  const runButton = h("button", { type: "button", "data-key": "run" }, "Run now");
  const toggleButton = h("button", { type: "button", "data-key": "toggle" }, "Disable");
  const deleteButton = h("button", { type: "button", class: "danger", "data-key": "delete" }, "Delete…");
  const editLink = h("a", { href: editHash(ref), class: "button-link", "data-key": "edit" }, "Edit…");
  const actions = h("div", { class: "actions", role: "group", "aria-label": "Job actions", hidden: true }, editLink, runButton, toggleButton, deleteButton);
  let writer = false;
  let jobZone: string | null = null;
  const dialog = h(
    "dialog",
    { "aria-labelledby": "delete-title", "aria-describedby": "delete-text" },
    h("h2", { id: "delete-title" }, `Delete job ${name}?`),
    h("p", { id: "delete-text" }, "The job, its schedule and its history are removed. This cannot be undone."),
    h(
      "form",
      { method: "dialog", class: "buttons" },
      h("button", { value: "cancel", autofocus: true }, "Cancel"),
      h("button", { value: "delete", class: "danger" }, "Delete job"),
    ),
  );
  let job: Job | null = null;
  let known: Set<string> | null = null;
  let shownDefinition = "";
  let shownHistory = "";
  let gone = false;
  let reading: Promise<void> | null = null;

  const collectionKey = `${ref.group}/${ref.collection}`;
  const element = h(
    "article",
    { "aria-labelledby": "page-title" },
    h(
      "nav",
      { "aria-label": "Breadcrumb", class: "breadcrumb" },
      h("ol", {}, h("li", {}, h("a", { href: "#/collections" }, "Collections")), h("li", {}, h("a", { href: jobsHash({ collection: collectionKey }) }, collectionKey)), h("li", { "aria-current": "page" }, name)),
    ),
    h("h1", { id: "page-title", tabindex: -1 }, name),
    status,
    about,
    actions,
    actionStatus,
    summary,
    h("section", { "aria-labelledby": "charts-title" }, h("h2", { id: "charts-title" }, "Executions"), charts.element),
    h("section", { "aria-labelledby": "history-title" }, h("h2", { id: "history-title" }, "History"), historyStatus, historyArea),
    h("section", { "aria-labelledby": "occurrences-title", class: "narrow" }, h("h2", { id: "occurrences-title" }, "Next occurrences"), occurrences),
    h(
      "section",
      { "aria-labelledby": "definition-title" },
      h("h2", { id: "definition-title" }, "Definition"),
      definition,
      h("details", {}, h("summary", {}, "The job as the API returns it (JSON, without secrets)"), raw),
    ),
    dialog,
  );

  /** Runs ``work`` for ``button``, busy meanwhile: what it returns is said in ``options.where`` (the job's action
   * status unless given) and the page is read again; an error is said there as "``options.failed``: <the API's
   * message>" ("Failed" unless given). The button is disabled meanwhile, or with ``options.keepFocus`` marked
   * aria-disabled instead, so that it keeps the keyboard focus (a disabled button loses it), a click on it
   * meanwhile doing nothing. */
  async function act(
    button: HTMLButtonElement,
    work: () => Promise<string>,
    options: { where?: HTMLElement; failed?: string; keepFocus?: boolean } = {},
  ): Promise<void> {
    const where = options.where ?? actionStatus;
    if (button.getAttribute("aria-disabled") === "true") return;
    if (options.keepFocus) button.setAttribute("aria-disabled", "true");
    else button.disabled = true;
    button.setAttribute("aria-busy", "true");
    where.className = "action-status";
    try {
      where.textContent = shown(await work());
      await view.refresh();
    } catch (error) {
      where.className = "action-status error";
      where.textContent = shown(`${options.failed ?? "Failed"}: ${(error as Error).message}`);
    } finally {
      button.disabled = false;
      button.removeAttribute("aria-disabled");
      button.removeAttribute("aria-busy");
    }
  }

  runButton.addEventListener("click", () =>
    act(runButton, async () => {
      await context.api.run(ref);
      return `Run requested at ${utc(new Date().toISOString())}: the execution appears in the history within seconds.`;
    }),
  );
  toggleButton.addEventListener("click", () =>
    act(toggleButton, async () => {
      const next = job?.properties.state === "Enabled" ? "Disabled" : "Enabled";
      const updated = await context.api.setState(ref, next);
      return `The job is ${updated.properties.state}.`;
    }),
  );
  deleteButton.addEventListener("click", () => {
    dialog.returnValue = "";
    dialog.showModal();
  });
  dialog.addEventListener("close", () => {
    if (dialog.returnValue !== "delete") {
      deleteButton.focus();
      return;
    }
    void act(deleteButton, async () => {
      // No refresh starts from here on, and one in flight ends before the job goes: a read answered after
      // the delete would be a 404 on a page that is leaving.
      gone = true;
      await reading;
      try {
        await context.api.remove(ref);
      } catch (error) {
        gone = false;
        throw error;
      }
      announce(`Job ${name} deleted.`);
      context.navigate(jobsHash({ collection: collectionKey, deleted: name }));
      return `Job ${name} deleted.`;
    });
  });

  /** The Re-run button of a failed history row (a writer's; the row names its occurrence), else nothing. */
  function rerunButton(row: HistoryRow, zone: string | null): HTMLButtonElement | null {
    const due = row.properties.expectedExecutionTime;
    if (row.properties.status !== "Failed" || !due) return null;
    const busy = rerunning.has(row.name);
    const button = h(
      "button",
      {
        type: "button",
        class: "rerun",
        "data-key": `rerun:${row.name}`,
        "aria-label": `Re-run ${occurrenceName(due, zone)}`,
        "aria-disabled": busy ? "true" : false,
        "aria-busy": busy ? "true" : false,
      },
      "Re-run",
    );
    button.addEventListener("click", () => {
      if (rerunning.has(row.name)) return; // asked already: one replay a click
      rerunning.add(row.name);
      void act(
        button,
        async () => {
          try {
            const replay = await context.api.rerun(ref, row.name);
            return `Re-run of ${occurrenceName(replay.scheduledTime, zone)} requested: it runs again now as execution ${replay.executionId}, shown in the history as a replay within seconds.`;
          } finally {
            rerunning.delete(row.name);
            shownHistory = ""; // drawn again: a button drawn meanwhile as busy is enabled again
          }
        },
        { where: historyStatus, failed: `Re-run of ${occurrenceName(due, zone)} failed`, keepFocus: true },
      );
    });
    return button;
  }

  function renderSummary(current: Job, history: HistoryRow[]): void {
    const props = current.properties;
    const counters = props.status ?? {};
    const last = lastOutcome(history);
    toggleButton.textContent = props.state === "Enabled" ? "Disable" : "Enable";
    const pair = (term: string, value: Child) => h("div", {}, ...item(term, value));
    const zone = zoneFor(jobZone ?? recurrenceZone(props.recurrence));
    replace(
      summary,
      pair("State", badge(props.state)),
      pair("Schedule", scheduleWords(props.recurrence, props.startTime)),
      pair("Next run", when(counters.nextExecutionTime, props.state === "Enabled" ? "none: the schedule is over" : "none: not enabled", zone)),
      pair("Last run", when(counters.lastExecutionTime, "never", zone)),
      pair("Last outcome", last ? badge(last.properties.status) : h("span", { class: "muted" }, "—")),
      pair("Executions", h("span", { "data-counter": "executionCount" }, String(counters.executionCount ?? 0))),
      pair("Failures", h("span", { "data-counter": "failureCount" }, String(counters.failureCount ?? 0))),
      pair("Faulted", h("span", { "data-counter": "faultedCount" }, String(counters.faultedCount ?? 0))),
    );
  }

  /** The description (its line breaks kept) and the tags, as text; drawn again only when they changed. */
  function renderAbout(current: Job): void {
    const { description, tags } = current.properties;
    const signature = JSON.stringify([description ?? null, Object.entries(tags ?? {})]);
    if (signature === shownAbout) return;
    shownAbout = signature;
    const list = tagList(tags, { link: (tag, value) => (filterableTag(tag) ? jobsHash({ tag: `${tag}=${value}` }) : null) });
    replace(
      about,
      description ? h("p", { class: "description", "data-key": "description" }, description) : null,
      list ? h("div", { class: "job-tags" }, h("span", { class: "muted" }, "Tags: "), list) : null,
    );
  }

  function renderHistory(history: HistoryRow[]): void {
    // Drawn again only when it changed, so an opened response stays open and the focus stays put.
    const zone = zoneFor(jobZone ?? recurrenceZone(job?.properties.recurrence));
    const signature = JSON.stringify([zone, writer, history.map((row) => [row.id, row.properties.status, row.properties.endTime])]);
    lastHistory = history;
    if (signature === shownHistory) return;
    shownHistory = signature;
    const fresh = new Set<string>();
    if (known !== null) for (const row of history) if (!known.has(row.id)) fresh.add(row.id);
    if (fresh.size) {
      const newest = history.find((row) => fresh.has(row.id));
      announce(`${fresh.size} new execution${fresh.size > 1 ? "s" : ""}${newest ? `: ${newest.properties.status}` : ""}.`);
    }
    known = new Set(history.map((row) => row.id));
    // A Reader is shown no write control: the Re-run column is a writer's only.
    const columns = [`Started (${zoneLabel(zone)})`, "Action", "Status", "Duration", "Lateness", "Retry", "Response", ...(writer ? ["Re-run"] : [])];
    const caption = history.length
      ? `The last ${history.length} executions, newest first, grouped by occurrence`
      : "Executions, newest first";
    const groups = occurrenceGroups(history);
    const bodies = groups.map((group) =>
      h(
        "tbody",
        { class: "occurrence" },
        h("tr", { class: "occurrence-head" }, h("th", { scope: "rowgroup", colspan: columns.length }, occurrenceHeading(group, zone))),
        group.map((row) => historyRow(row, fresh.has(row.id), zone, writer ? (rerunButton(row, zone) ?? "") : null)),
      ),
    );
    const wrapped = table(caption, columns, [], "No executions yet.");
    if (bodies.length) wrapped.querySelector("tbody")?.replaceWith(...bodies);
    rerender(historyArea, wrapped);
    charts.update(history);
  }

  const view: View = {
    title: name,
    element,
    interval: 2000,
    async refresh() {
      if (gone) return;
      const mine = load();
      reading = mine;
      try {
        await mine;
      } finally {
        if (reading === mine) reading = null;
      }
    },
    dispose() {
      charts.dispose();
    },
  };

  async function load(): Promise<void> {
    try {
      const [current, history, insight] = await Promise.all([
        context.api.job(ref),
        context.api.history(ref, 100, HISTORY_ROWS),
        context.api.insight(ref, 10).catch(() => null),
      ]);
      job = current;
      jobZone = insight?.timeZone?.iana ?? null;
      replace(status);
      actions.hidden = !writer;
      renderSummary(current, history);
      renderAbout(current);
      renderHistory(history);
      if (insight) replace(occurrences, occurrencesTable(insight));
      const zone = zoneFor(jobZone ?? recurrenceZone(current.properties.recurrence));
      const signature = JSON.stringify([zone, current.properties.action, current.properties.recurrence, current.properties.startTime, insight?.writeOnly, insight?.timeZone]);
      if (signature !== shownDefinition) {
        shownDefinition = signature;
        replace(
          definition,
          h("h3", {}, "Schedule"),
          scheduleDetails(current, insight, zone),
          h("h3", {}, "Action"),
          actionDetails(current.properties.action, "action", insight),
          current.properties.action.errorAction ? [h("h3", {}, "Error action"), actionDetails(current.properties.action.errorAction, "action.errorAction", insight)] : null,
        );
        raw.textContent = shown(JSON.stringify(current, null, 2)); // a JSON escape: still the same JSON
      }
    } catch (error) {
      const failure = error as ApiError;
      if (failure.status === 404) {
        // Not found: nothing to act on and nothing more to load (the page stops polling it).
        gone = true;
        job = null;
        element.replaceChildren(element.children[0], element.children[1], status);
        replace(status, h("p", { class: "error", role: "alert" }, `Job ${name} was not found: `, failure.message));
        status.append(h("p", {}, h("a", { href: jobsHash({ collection: collectionKey }) }, `The jobs of ${collectionKey}`)));
        return;
      }
      replace(status, errorBanner(`Could not read the job: ${failure.message}`));
    }
  }
  void context.canWrite.then((can) => {
    writer = can;
    if (job) actions.hidden = !can;
    if (lastHistory && !gone) renderHistory(lastHistory); // with or without the Re-run column now
  });
  onTimeMode(() => {
    if (!gone && document.body.contains(element)) void view.refresh();
  });
  return view;
}
