// The dashboard's entry point: the layout, the router (views live in the address's fragment, so the
// function app serves one page), sign-in and sign-out, and live updates by polling.
//
//   #/signin                 sign in with an API key
//   #/collections            the subscription's job collections
//   #/jobs?q=&state=&collection=&failing=1   every job, filtered
//        &outcome=Failed&tag=name=value...   ... and by the service's $filter (last outcome, tags: all match)
//   #/failing                the jobs failing now, across collections
//   #/job/{group}/{collection}/{job}         one job
//   #/edit/{group}/{collection}/{job}        edit one job (form and JSON)
//   #/new?collection={group}/{collection}    create a job

import { Api, type CredentialKind, clearSession, loadSession, whenUnauthorized } from "./api";
import { Catalog } from "./catalog";
import { announce, h, replace, shown } from "./dom";
import { getTimeMode, setTimeMode, type TimeMode, browserZone, utc } from "./format";
import type { Context, View } from "./view";
import { collectionsView } from "./views/collections";
import { editorView } from "./views/editor";
import { jobView } from "./views/job";
import { jobsView } from "./views/jobs";
import { signIn } from "./views/signin";

const main = document.getElementById("main") as HTMLElement;
const nav = document.getElementById("nav") as HTMLElement;
const account = document.getElementById("account") as HTMLElement;
const updated = document.getElementById("updated") as HTMLElement;
const pauseButton = document.getElementById("pause") as HTMLButtonElement;

let current: View | null = null;
let timer: number | undefined;
let generation = 0;
let paused = false;
let catalog: Catalog | null = null;
let catalogKey = "";
let canWrite: Promise<boolean> = Promise.resolve(false);
let signInReason: string | null = null;
/** The kind of credential last used (the sign-in form offers it again after a sign-out). */
let lastKind: CredentialKind = "key";

function route(): { path: string[]; params: URLSearchParams } {
  const hash = window.location.hash.replace(/^#\/?/, "");
  const [path, query] = hash.split("?", 2);
  return { path: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query ?? "") };
}

function navigate(hash: string): void {
  if (window.location.hash === hash) void show();
  else window.location.hash = hash;
}

function renderChrome(signedIn: boolean, active: string): void {
  const session = loadSession();
  const links = [
    ["#/collections", "Collections", "collections"],
    ["#/jobs", "Jobs", "jobs"],
    ["#/failing", "Failing now", "failing"],
  ];
  replace(
    nav,
    signedIn
      ? h(
          "ul",
          {},
          links.map(([href, text, name]) =>
            h("li", {}, h("a", { href, "aria-current": active === name ? "page" : false }, text)),
          ),
        )
      : null,
  );
  replace(
    account,
    signedIn && session
      ? [
          h("span", { class: "subscription" }, "Subscription ", h("code", {}, session.subscription)),
          h("button", { type: "button", id: "sign-out", onclick: signOut }, "Sign out"),
        ]
      : null,
  );
  pauseButton.hidden = !signedIn;
  (document.getElementById("time-part") as HTMLElement).hidden = !signedIn;
}

function signOut(): void {
  lastKind = loadSession()?.kind ?? lastKind;
  clearSession();
  signInReason = null;
  announce("Signed out.");
  navigate("#/signin");
}

whenUnauthorized((error) => {
  lastKind = loadSession()?.kind ?? lastKind;
  clearSession();
  signInReason = `Signed out: ${error.message}`;
  navigate("#/signin");
});

function stop(): void {
  window.clearTimeout(timer);
  generation += 1;
  current?.dispose?.();
  current = null;
}

async function poll(view: View, mine: number): Promise<void> {
  if (mine !== generation) return;
  if (!paused && !document.hidden) {
    await view.refresh();
    if (mine !== generation) return;
    updated.textContent = `Updated ${utc(new Date().toISOString())}; refreshed every ${view.interval / 1000} s.`;
  }
  timer = window.setTimeout(() => void poll(view, mine), view.interval);
}

async function show(): Promise<void> {
  stop();
  const { path, params } = route();
  const session = loadSession();
  if (!session || path[0] === "signin") {
    renderChrome(false, "");
    document.title = "Sign in · Scheduler dashboard";
    const form = signIn(
      () => {
        signInReason = null;
        const next = params.get("next");
        navigate(next && next.startsWith("#/") ? next : "#/collections");
      },
      signInReason,
      params.get("subscription"),
      params.get("with") === "token" ? "token" : lastKind,
    );
    replace(main, form);
    updated.textContent = "";
    (form.querySelector("#token-part:not([hidden]) input, #api-key") as HTMLInputElement).focus();
    return;
  }
  const api = new Api(session);
  const key = `${session.key.length}:${session.subscription}`;
  if (!catalog || key !== catalogKey) {
    catalog = new Catalog(api);
    catalogKey = key;
    // The role decides which controls are shown; a scheduler without the access route: assume a writer
    // (the service answers 403 anyway). Asked again after a failure.
    canWrite = api.access().then(
      (access) => access?.canWrite ?? true,
      () => {
        catalogKey = "";
        return false;
      },
    );
  }
  const context: Context = { api, catalog, params, navigate, canWrite };
  let view: View;
  let active = path[0] ?? "collections";
  if (path[0] === "job" && path.length === 4) {
    view = jobView(context, { subscription: session.subscription, group: path[1], collection: path[2], job: path[3] });
    active = "jobs";
  } else if (path[0] === "edit" && path.length === 4) {
    view = editorView(context, { subscription: session.subscription, group: path[1], collection: path[2], job: path[3] });
    active = "jobs";
  } else if (path[0] === "new") {
    view = editorView(context, null);
    active = "jobs";
  } else if (path[0] === "jobs") {
    view = jobsView(context, false);
  } else if (path[0] === "failing") {
    view = jobsView(context, true);
  } else {
    view = collectionsView(context);
    active = "collections";
  }
  renderChrome(true, active);
  current = view;
  document.title = shown(`${view.title} · Scheduler dashboard`);
  replace(main, view.element);
  const deleted = params.get("deleted");
  const saved = params.get("saved");
  const notice = deleted ? `Job ${deleted} deleted.` : saved ? `Job ${saved} saved.` : null;
  if (notice) {
    view.element.insertBefore(h("p", { class: "notice", role: "status" }, notice), view.element.children[saved ? 2 : 1] ?? null);
  }
  (view.element.querySelector("h1") as HTMLElement | null)?.focus();
  await poll(view, generation);
}

const timeSelect = document.getElementById("time-mode") as HTMLSelectElement;
const localOption = timeSelect.querySelector('option[value="local"]');
if (localOption) localOption.textContent = `Local (${browserZone()})`;
timeSelect.value = getTimeMode();
timeSelect.addEventListener("change", () => {
  setTimeMode(timeSelect.value as TimeMode);
  announce(`Times shown in ${timeSelect.selectedOptions[0]?.textContent ?? timeSelect.value}.`);
});

pauseButton.addEventListener("click", () => {
  paused = !paused;
  pauseButton.textContent = paused ? "Resume live updates" : "Pause live updates";
  pauseButton.setAttribute("aria-pressed", String(paused));
  announce(paused ? "Live updates paused." : "Live updates resumed.");
});

document.getElementById("skip")?.addEventListener("click", (event) => {
  event.preventDefault();
  (main.querySelector("h1") as HTMLElement | null ?? main).focus();
});

window.addEventListener("hashchange", () => void show());
void show();
