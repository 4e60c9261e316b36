"""``action.expandPlaceholders``: the placeholders of :data:`~scheduler_core.model.actions.PLACEHOLDERS`
(``@{scheduledTime}``, ``@{actualTime}``, ``@{executionId}``, ``@{attempt}``, ``@{jobName}``,
``@{collectionName}``; names in any casing, as Logic Apps reads them) replaced at send time by what the sender
knows of the call (:class:`~scheduler_core.actions.base.ActionContext`). An error action also knows how the
main action failed: ``@{failure.status}``, ``@{failure.reason}``, ``@{failure.body}`` (an excerpt on one line:
every character a terminal or a header acts on, line ends included, is written as a visible escape, so it
cannot end a header or start another), ``@{failure.executionId}``, ``@{failure.attempts}``.

Where and how each value is written, so that the text stays what it was meant to be:

* the URI: in its query only (between ``?`` and ``#``; the job was refused otherwise when written), each
  value percent-encoded (RFC 3986: every byte but the unreserved ``A-Z a-z 0-9 - . _ ~``), so a name with
  ``&``, ``=``, ``+`` or a space stays one query value;
* an HTTP body: JSON-escaped (without quotes) when the request's ``Content-Type`` is JSON
  (``application/json`` or ``...+json``), as Logic Apps' interpolation into a JSON string value is;
  ``application/x-www-form-urlencoded``: form-encoded; any other body: the text as is;
* header values, and Storage queue and Service Bus messages: the text as is (the Storage queue envelope
  escapes its whole message as XML anyway).

Off (the default) the texts are sent as written, ``@{`` included. A ``@{`` that names no placeholder (the
job was refused when written, so only an older stored job can have one) is left as it is.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from typing import Final
from urllib.parse import quote, quote_plus

from scheduler_core.actions.base import ActionContext
from scheduler_core.endpoints import host_name
from scheduler_core.model.actions import (
    FAILURE_PLACEHOLDERS,
    PLACEHOLDER_REFERENCE,
    HttpAction,
    ServiceBusAction,
    StorageQueueAction,
    placeholder_name,
)
from scheduler_core.model.retry import FailureFacts
from scheduler_core.recurrence import format_instant

__all__ = [
    "expand",
    "expand_body",
    "expand_http",
    "expand_message",
    "expand_uri",
    "is_form",
    "is_json",
    "placeholder_values",
]

Encode = Callable[[str], str]
_RAW: Final[Encode] = str


def placeholder_values(context: ActionContext) -> dict[str, str]:
    """The value of each placeholder for the call ``context`` describes (canonical name -> text)."""
    return {
        "scheduledTime": format_instant(context.expected_time),
        "actualTime": format_instant(context.actual_time()),
        "executionId": context.execution_id,
        "attempt": str(context.retry_count),
        "jobName": context.job_name,
        "collectionName": context.collection_name,
        "historyUrl": history_url(context.app_host, context.job_id),
        **failure_values(context.failure),
    }


def history_url(app_host: str, job_id: str) -> str:
    """The dashboard's page of the job ``job_id`` (its history) on the app at ``app_host``: http for a local
    host (``localhost``, a loopback address), https otherwise; "" when the host is not known."""
    parts = job_id.strip("/").split("/")
    if not app_host or len(parts) != 10:
        return ""
    group, collection, job = parts[3], parts[7], parts[9]
    local = host_name(app_host) in ("localhost", "127.0.0.1", "::1")
    names = "/".join(quote(name, safe="") for name in (group, collection, job))
    return f"{'http' if local else 'https'}://{app_host}/dashboard/#/job/{names}"


def failure_values(failure: FailureFacts | None) -> dict[str, str]:
    """The values of the ``@{failure.*}`` placeholders (each empty when the failure is not known)."""
    if failure is None:
        return dict.fromkeys(FAILURE_PLACEHOLDERS, "")
    return {
        "failure.status": str(failure.status) if failure.status is not None else "",
        "failure.reason": failure.reason,
        "failure.body": failure.body,
        "failure.executionId": failure.execution_id,
        "failure.attempts": str(failure.attempts),
    }


def expand(text: str, values: Mapping[str, str], encode: Encode = _RAW) -> str:
    """``text`` with every ``@{name}`` of a known placeholder replaced by ``encode(value)``."""
    if "@{" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        name = placeholder_name(match[1])
        return match[0] if name is None else encode(values[name])

    return PLACEHOLDER_REFERENCE.sub(replace, text)


def _query_value(value: str) -> str:
    return quote(value, safe="")


def expand_uri(uri: str, values: Mapping[str, str]) -> str:
    """``uri`` with the placeholders of its query expanded, each value percent-encoded; the scheme,
    authority, path and fragment are never touched."""
    start = uri.find("?")
    if start < 0 or "@{" not in uri[start:]:
        return uri
    end = uri.find("#", start)
    end = len(uri) if end < 0 else end
    return uri[: start + 1] + expand(uri[start + 1 : end], values, _query_value) + uri[end:]


def _media_type(headers: Mapping[str, str] | None) -> str:
    for name, value in (headers or {}).items():
        if name.lower() == "content-type":
            return value.split(";", 1)[0].strip().lower()
    return ""


def is_json(headers: Mapping[str, str] | None) -> bool:
    """Whether the ``Content-Type`` among ``headers`` is JSON (``application/json``, ``...+json``)."""
    media = _media_type(headers)
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def is_form(headers: Mapping[str, str] | None) -> bool:
    """Whether the ``Content-Type`` among ``headers`` is ``application/x-www-form-urlencoded``."""
    return _media_type(headers) == "application/x-www-form-urlencoded"


def _json_escaped(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)[1:-1]


def expand_body(body: str, values: Mapping[str, str], headers: Mapping[str, str] | None) -> str:
    """An HTTP body with its placeholders expanded as its ``Content-Type`` needs (see the module)."""
    if is_json(headers):
        return expand(body, values, _json_escaped)
    if is_form(headers):
        return expand(body, values, quote_plus)
    return expand(body, values)


def expand_http(action: HttpAction, context: ActionContext) -> HttpAction:
    """The HTTP action as sent: with ``context.expand_placeholders`` on, its URI query, header values and
    body expanded; otherwise ``action`` itself."""
    if not context.expand_placeholders:
        return action
    values = placeholder_values(context)
    headers = action.headers
    return dataclasses.replace(
        action,
        uri=expand_uri(action.uri, values),
        headers={name: expand(value, values) for name, value in headers.items()} if headers is not None else None,
        body=expand_body(action.body, values, headers) if action.body is not None else None,
    )


def expand_message(action: StorageQueueAction | ServiceBusAction, context: ActionContext) -> str | None:
    """The message a queue or Service Bus action sends: expanded when ``context.expand_placeholders`` is on."""
    if action.message is None or not context.expand_placeholders:
        return action.message
    return expand(action.message, placeholder_values(context))
