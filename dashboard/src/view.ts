// What the router needs of a view, and the pieces the views share.

import type { Api, Ref } from "./api";
import type { Catalog } from "./catalog";
import { h, shown } from "./dom";
import { excerpt } from "./format";

export interface View {
  /** The page's title and main heading. */
  title: string;
  /** The view's content, placed into <main>. */
  element: HTMLElement;
  /** Reads what the view shows again; called once at first and then by polling. */
  refresh(): Promise<void>;
  /** Milliseconds between two refreshes. */
  interval: number;
  dispose?(): void;
}

export interface Context {
  api: Api;
  catalog: Catalog;
  params: URLSearchParams;
  navigate(hash: string): void;
  /** Whether the caller may write (its role in the subscription, from the dashboard's access API): a
   * Reader is shown no write control. The service decides anyway (403). */
  canWrite: Promise<boolean>;
}

export function editHash(ref: Ref): string {
  const e = encodeURIComponent;
  return `#/edit/${e(ref.group)}/${e(ref.collection)}/${e(ref.job ?? "")}`;
}

export function jobHash(ref: Ref): string {
  const e = encodeURIComponent;
  return `#/job/${e(ref.group)}/${e(ref.collection)}/${e(ref.job ?? "")}`;
}

export function jobsHash(params: Record<string, string>): string {
  const query = new URLSearchParams(Object.entries(params).filter(([, value]) => value !== "")).toString();
  return `#/jobs${query ? `?${query}` : ""}`;
}

/** A tag filter as the list's address and its input write it, ``name=value`` (split at the first ``=``; white
 * space around the name and the value is dropped); null when it is not one. */
export function parseTag(text: string): [string, string] | null {
  const at = text.indexOf("=");
  if (at < 0) return null;
  const name = text.slice(0, at).trim();
  return name ? [name, text.slice(at + 1).trim()] : null;
}

/** Whether the list's tag filter can find a tag of this name: the API's ``$filter`` reads a name up to white
 * space or a quote, and the filter's text splits at the first ``=``. */
export function filterableTag(name: string): boolean {
  return name !== "" && !/[\s'=]/.test(name);
}

/** A job's tags as text, never HTML (a name or value may hold markup or bidirectional controls): one item
 * ``name=value`` each, name and value in spans of their own. ``limit``: at most this many, then "+N more"
 * (every tag in its tooltip), each value cut to ``cut`` characters (the whole in its tooltip); ``link``: where
 * a tag leads (null: nowhere). Null when the job has no tag. */
export function tagList(
  tags: Record<string, string> | undefined,
  options: { limit?: number; cut?: number; link?: (name: string, value: string) => string | null } = {},
): HTMLElement | null {
  const entries = Object.entries(tags ?? {});
  if (!entries.length) return null;
  const limit = options.limit ?? entries.length;
  const items = entries.slice(0, limit).map(([name, value]) => {
    const cut = options.cut !== undefined && value.length > options.cut;
    const parts = [
      h("span", { class: "tag-name" }, name),
      "=",
      h("span", { class: "tag-value", title: cut ? shown(value) : false }, cut ? excerpt(value, options.cut) : value),
    ];
    const href = options.link?.(name, value) ?? null;
    return h("li", { class: "tag" }, href ? h("a", { href, title: shown(`The jobs tagged ${name}=${value}`) }, parts) : parts);
  });
  if (entries.length > limit) {
    const all = entries.map(([name, value]) => `${name}=${value}`).join("\n");
    items.push(h("li", { class: "tag more", title: shown(all) }, `+${entries.length - limit} more`));
  }
  return h("ul", { class: "tags", "aria-label": "Tags" }, items);
}

const STATE_CLASSES: Record<string, string> = {
  Enabled: "ok",
  Completed: "ok",
  Disabled: "muted",
  Suspended: "muted",
  Faulted: "bad",
  Failed: "bad",
  Postponed: "warn",
  Healthy: "ok",
  Degraded: "warn",
  Unhealthy: "bad",
};

/** A state or outcome as a badge: always its word, the color only repeats it. */
export function badge(text: string | undefined | null): HTMLElement {
  if (!text) return h("span", { class: "muted" }, "—");
  return h("span", { class: `badge ${STATE_CLASSES[text] ?? ""}` }, text);
}

/** An error banner (an alert for screen readers). */
export function errorBanner(message: string): HTMLElement {
  return h("p", { class: "error", role: "alert" }, message);
}

/** A table with a caption and column headers; ``rows`` are the body's rows. */
export function table(caption: string, columns: string[], rows: HTMLTableRowElement[], empty: string): HTMLElement {
  const body = h("tbody", {}, rows);
  if (rows.length === 0) {
    body.append(h("tr", {}, h("td", { colspan: columns.length, class: "empty" }, empty)));
  }
  return h(
    "div",
    // Scrolls sideways on narrow screens: a focusable region, so it scrolls with the keyboard too.
    { class: "table-wrap", role: "region", "aria-label": caption, tabindex: 0 },
    h(
      "table",
      {},
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, columns.map((column) => h("th", { scope: "col" }, column)))),
      body,
    ),
  );
}

/** Replaces the content of ``container`` and keeps the keyboard focus on the same link or button (found by
 * its href or data-key) when it was inside: live updates must not throw a keyboard user back to the top. */
export function rerender(container: Element, ...content: HTMLElement[]): void {
  const active = document.activeElement;
  const key = active && container.contains(active) ? (active.getAttribute("href") ?? active.getAttribute("data-key")) : null;
  container.replaceChildren(...content);
  if (key) {
    const again = [...container.querySelectorAll<HTMLElement>("[href], [data-key]")].find(
      (element) => (element.getAttribute("href") ?? element.getAttribute("data-key")) === key,
    );
    again?.focus();
  }
}
