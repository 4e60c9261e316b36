// Sign-in with an API key: checked by listing the subscription's collections, then kept in session storage
// (gone when the tab closes) and sent as "Authorization: Bearer <key>". No cookie is ever set.

import { Api, ApiError, lastSubscription, saveSession } from "../api";
import { h, replace } from "../dom";

export function signIn(onSignedIn: () => void, reason: string | null, subscription: string | null): HTMLElement {
  const message = h("div", { id: "signin-message" });
  if (reason) replace(message, h("p", { class: "error", role: "alert" }, reason));
  const key = h("input", {
    id: "api-key",
    name: "api-key",
    type: "password",
    required: true,
    autocomplete: "off",
    spellcheck: "false",
    "aria-describedby": "api-key-help",
  });
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
  const submit = h("button", { type: "submit", class: "primary" }, "Sign in");
  const form = h(
    "form",
    { class: "signin", novalidate: true, "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title", tabindex: -1 }, "Sign in"),
    message,
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
    h("label", { for: "subscription" }, "Subscription ID"),
    sub,
    h("p", { id: "subscription-help", class: "help" }, "The subscription whose job collections to show."),
    submit,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const session = { key: key.value.trim(), subscription: sub.value.trim() };
    if (!session.key || !session.subscription) {
      replace(message, h("p", { class: "error", role: "alert" }, "Enter an API key and a subscription ID."));
      (session.key ? sub : key).focus();
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
          ? "This API key is not valid for this scheduler."
          : failure.status === 403
            ? `This API key may not use subscription '${session.subscription}'.`
            : `Could not sign in: ${failure.message}`;
      replace(message, h("p", { class: "error", role: "alert" }, text));
      key.focus();
    } finally {
      submit.disabled = false;
      submit.removeAttribute("aria-busy");
    }
  });
  return form;
}
