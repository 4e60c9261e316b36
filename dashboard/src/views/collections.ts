// The subscription's job collections: plan, quota use, state, and how many of their jobs fail now.

import { isFailing } from "../catalog";
import { h, replace } from "../dom";
import { badge, errorBanner, jobsHash, table, type Context, type View } from "../view";
import { statusPanel } from "./status";

export function collectionsView(context: Context): View {
  const status = h("div", { class: "status-area" });
  const content = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const service = statusPanel(context.api);
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
    service.element,
  );
  let shown = "";

  async function loadCollections(): Promise<void> {
    try {
      const snapshot = await context.catalog.load();
      replace(status);
      const rows = snapshot.collections.map(({ collection, ref, jobs, error }) => {
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
      const next = JSON.stringify(snapshot.collections.map((c) => [c.collection, c.jobs.length, c.error, c.jobs.filter(isFailing).length]));
      if (next !== shown) {
        shown = next;
        replace(content, table("Job collections", columns, rows, "No job collections in this subscription yet."));
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
