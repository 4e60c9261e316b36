// The service's status, shown above the collections: this instance's /health answer (storage reachable, the
// age of the last dispatch heartbeat, queue depths, warnings) and live counts of the subscription, both from
// the dashboard's read-only status API (GET /dashboard/api/status/...), polled with the view.

import type { Api, ServiceStatus } from "../api";
import { type Child, h, replace, time } from "../dom";
import { relative, span, utc } from "../format";
import { badge, errorBanner } from "../view";

export interface StatusPanel {
  element: HTMLElement;
  refresh(): Promise<void>;
}

const HEALTH_WORDS: Record<string, string> = { healthy: "Healthy", degraded: "Degraded", unhealthy: "Unhealthy" };

/** One term and its value, grouped (a div in a dl) so the grid keeps them together. */
function pair(term: string, ...value: Child[]): HTMLElement {
  return h("div", {}, h("dt", {}, term), h("dd", {}, ...value));
}

function number(value: number | null | undefined, unit: string): string {
  if (value === null || value === undefined) return "not read";
  return `${value} ${unit}${value === 1 ? "" : "s"}`;
}

function healthPart(health: ServiceStatus["health"]): HTMLElement[] {
  const tick = health.last_tick
    ? [
        time(health.last_tick, `${span(health.tick_age_seconds ?? 0)} ago`),
        h("span", { class: "muted" }, ` (${utc(health.last_tick)})`),
      ]
    : [h("span", { class: "bad-text" }, "never recorded")];
  const list = h(
    "dl",
    { class: "summary", "aria-label": "Health" },
    pair("Health", badge(HEALTH_WORDS[health.status] ?? health.status), h("span", { class: "muted" }, ` HTTP ${health.httpStatus}`)),
    pair(
      "Storage",
      health.storage === "unreachable" || health.storage === "unresponsive"
        ? h("span", { class: "bad-text" }, health.storage)
        : (health.storage ?? "—"),
    ),
    pair("Last dispatch heartbeat", ...tick),
    pair("Execution queue", number(health.execution_queue_depth, "message")),
    pair("Due now", number(health.execution_queue_due, "message")),
    pair("Sent ahead of their time", number(health.execution_queue_staged, "message")),
    pair("Poison queue", number(health.poison_queue_length, "message")),
    pair("Version", health.version),
  );
  const notes = [...health.warnings, ...(health.reason ? [health.reason] : [])];
  return [
    list,
    notes.length
      ? h("ul", { class: "warnings", "aria-label": "Warnings" }, notes.map((note) => h("li", {}, note)))
      : h("p", { class: "muted" }, "No warnings."),
  ];
}

function countsPart(counts: ServiceStatus["counts"]): HTMLElement {
  if (!counts) return h("p", { class: "muted" }, "No counts: the storage cannot be reached.");
  const state = (name: string): string => String(counts.jobsByState[name] ?? 0);
  return h(
    "dl",
    { class: "summary", "aria-label": "Live counts" },
    pair("Collections", String(counts.collections)),
    pair("Jobs", String(counts.jobs)),
    pair("Enabled", state("Enabled")),
    pair("Disabled", state("Disabled")),
    pair("Completed", state("Completed")),
    pair("Faulted", state("Faulted")),
    pair("Executions", String(counts.executions)),
    pair("Failures", String(counts.failures)),
    pair(`Due within ${counts.dueSoonSeconds} s`, String(counts.dueSoon)),
  );
}

export function statusPanel(api: Api): StatusPanel {
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const stamp = h("p", { class: "muted stamp" });
  const element = h(
    "section",
    { class: "status-panel", "aria-labelledby": "status-title" },
    h("h2", { id: "status-title" }, "Service status"),
    body,
    stamp,
  );
  return {
    element,
    async refresh() {
      let status: ServiceStatus | null;
      try {
        status = await api.status();
      } catch (error) {
        replace(body, errorBanner(`Could not read the service status: ${(error as Error).message}`));
        return;
      }
      if (!status) {
        replace(body, h("p", { class: "muted" }, "This version of the scheduler has no status API."));
        return;
      }
      replace(
        body,
        ...healthPart(status.health),
        h("h3", {}, "Live counts"),
        countsPart(status.counts),
      );
      const at = status.counts?.countedAt ?? status.health.checked_at;
      replace(stamp, at ? `Checked ${utc(at)} (${relative(at)}).` : "");
    },
  };
}
