// Sign-in with an API key, or (ENTRA ID SIGN-IN) with a pasted Entra ID access token: checked by listing the
// subscription's collections, then kept in session storage (gone when the tab closes) and sent as
// "Authorization: Bearer <key or token>". No cookie is ever set.

import { Api, ApiError, type CredentialKind, lastSubscription, saveSession } from "../api";
import { h, replace } from "../dom";

export function signIn(
  onSignedIn: () => void,
  reason: string | null,
  subscription: string | null,
  kind: CredentialKind = "key",
): HTMLElement {
  const message = h("div", { id: "signin-message" });
  if (reason) replace(message, h("p", { class: "error", role: "alert" }, reason));
  const secretInput = (id: string, help: string): HTMLInputElement =>
    h("input", {
      id,
      name: id,
      type: "password",
      required: true,
      autocomplete: "off",
      spellcheck: "false",
      "aria-describedby": help,
    });
  const key = secretInput("api-key", "api-key-help");
  const token = secretInput("access-token", "access-token-help");
  const sub = h("input", {
    id: "subscription",
    name: "subscription",
    type: "text",
    required: true,
    autocomplete: "off",
    spellcheck: "false",
    value: subscription ?? lastSubscription(),
    "aria-describedby": "subscription-help",
  });
  const choice = (value: CredentialKind, text: string): HTMLElement => {
    const input = h("input", { type: "radio", name: "credential", id: `credential-${value}`, value });
    input.checked = value === kind;
    input.addEventListener("change", () => show(value));
    return h("div", { class: "check" }, input, h("label", { for: `credential-${value}` }, text));
  };
  const keyPart = h(
    "div",
    { id: "key-part" },
    h("label", { for: "api-key" }, "API key"),
    key,
    h(
      "p",
      { id: "api-key-help", class: "help" },
      "A key of this deployment (",
      h("code", {}, "make run"),
      " prints one and keeps it in ",
      h("code", {}, ".run/api-key"),
      "). It stays in this browser tab's session storage and is sent as a bearer token; no cookie is set.",
    ),
  );
  const tokenPart = h(
    "div",
    { id: "token-part" },
    h("label", { for: "access-token" }, "Access token"),
    token,
    h(
      "p",
      { id: "access-token-help", class: "help" },
      "An Entra ID access token for this scheduler's API, e.g. from ",
      h("code", {}, "az account get-access-token --scope <the API's scope> --query accessToken -o tsv"),
      " (docs/security.md names the scope). It stays in this tab's session storage and is sent as a bearer " +
        "token; when it expires (after about an hour) the page signs out and asks for a new one.",
    ),
  );
  const show = (value: CredentialKind): void => {
    kind = value;
    keyPart.hidden = value !== "key";
    tokenPart.hidden = value !== "token";
  };
  show(kind);
  const submit = h("button", { type: "submit", class: "primary" }, "Sign in");
  const form = h(
    "form",
    { class: "signin", novalidate: true, "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title", tabindex: -1 }, "Sign in"),
    message,
    keyPart,
    tokenPart,
    h("label", { for: "subscription" }, "Subscription ID"),
    sub,
    h(
      "p",
      { id: "subscription-help", class: "help" },
      "The subscription whose job collections to show. On the local host (",
      h("code", {}, "make run"),
      ") any name works, e.g. ",
      h("code", {}, "demo"),
      ": each name has collections of its own. On Azure: the subscription ID the collections were created under.",
    ),
    // The key comes first (the common case, and the keyboard path); the choice of credential after it.
    h(
      "fieldset",
      { class: "credential" },
      h("legend", {}, "Credential"),
      choice("key", "Deployment key"),
      choice("token", "Entra ID token"),
    ),
    submit,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const secret = kind === "token" ? token : key;
    const what = kind === "token" ? "an access token" : "an API key";
    const session = { key: secret.value.trim(), subscription: sub.value.trim(), kind };
    if (!session.key || !session.subscription) {
      replace(message, h("p", { class: "error", role: "alert" }, `Enter ${what} and a subscription ID.`));
      (session.key ? sub : secret).focus();
      return;
    }
    submit.disabled = true;
    submit.setAttribute("aria-busy", "true");
    try {
      await new Api(session, false).collections();
      saveSession(session);
      onSignedIn();
    } catch (error) {
      const failure = error as ApiError;
      const text =
        failure.status === 401
          ? kind === "token"
            ? `This access token was not accepted: ${failure.message}`
            : "This API key is not valid for this scheduler."
          : failure.status === 403
            ? `This ${kind === "token" ? "token" : "API key"} may not use subscription '${session.subscription}'.`
            : `Could not sign in: ${failure.message}`;
      replace(message, h("p", { class: "error", role: "alert" }, text));
      secret.focus();
    } finally {
      submit.disabled = false;
      submit.removeAttribute("aria-busy");
    }
  });
  return form;
}
