// Building DOM nodes without HTML strings: text is always set as text (the page's CSP also enforces
// Trusted Types, so an HTML string sink would throw).

export type Child = Node | string | number | null | undefined | false;

/** The bidirectional controls: marks (ALM, LRM, RLM), embeddings and overrides (LRE, RLE, PDF, LRO, RLO) and
 * isolates (LRI, RLI, FSI, PDI). */
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/** ``text`` as the page shows it: each bidirectional control written as a visible escape (``\u202e``), as the
 * CLI, the log lines and the history messages write it, so that an override in a name, a URI or a message
 * cannot draw what follows it in another order than it is written (``report<RLO>txt.exe`` would read
 * "reportexe.txt"). Every other character is kept; form fields keep the value as it is. */
export function shown(text: string): string {
  return text.replace(BIDI_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

type AttrValue = string | number | boolean | null | undefined;
export type Attrs = { [name: string]: AttrValue | ((event: Event) => void) };

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === "function") {
      element.addEventListener(name.replace(/^on/, "").toLowerCase(), value);
    } else if (value === true) {
      element.setAttribute(name, "");
    } else if (value !== false && value !== null && value !== undefined) {
      element.setAttribute(name, String(value));
    }
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(child instanceof Node ? child : document.createTextNode(shown(String(child))));
  }
}

/** Replaces the children of ``parent``. */
export function replace(parent: Element, ...children: (Child | Child[])[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

/** Says ``message`` to screen readers through the page's polite live region. */
export function announce(message: string): void {
  const region = document.getElementById("announcer");
  if (region) region.textContent = shown(message);
}

/** A `<time>` element: the text shown, the machine-readable instant, and the exact UTC instant as a tooltip. */
export function time(iso: string | undefined | null, text: string): Child {
  if (!iso) return h("span", { class: "muted" }, text);
  return h("time", { datetime: iso, title: iso }, text);
}
