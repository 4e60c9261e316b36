// Building DOM nodes without HTML strings: text is always set as text (the page's CSP also enforces
// Trusted Types, so an HTML string sink would throw).

export type Child = Node | string | number | null | undefined | false;
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
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
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
  if (region) region.textContent = message;
}

/** A `<time>` element: the text shown, the machine-readable instant, and the exact UTC instant as a tooltip. */
export function time(iso: string | undefined | null, text: string): Child {
  if (!iso) return h("span", { class: "muted" }, text);
  return h("time", { datetime: iso, title: iso }, text);
}
