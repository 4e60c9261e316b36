"""Actions (``action`` and ``action.errorAction``) at the wire, converted to and from the typed model
(:mod:`scheduler_core.model.actions`) in one place per direction:

* :func:`parse_action` validates a client's ``action`` into a :class:`~scheduler_core.model.actions.JobAction`
  and renders its canonical output through :func:`job_action_json`;
* :func:`read_job_action` reads a stored job's action (canonical JSON and secrets by dotted path), trusted:
  nothing is validated again and no certificate is opened;
* :func:`job_action_json` writes a ``JobAction`` as the canonical output JSON (PascalCase enum values,
  durations in the style they were written in, no secrets) and the secrets split out of it.

The kinds of action are one table, :data:`ACTION_KINDS` (wire type, payload field, parser, reader); the
writer matches on the model's classes, so ``mypy`` finds a kind it does not write. The payloads are in
:mod:`._http` and :mod:`._queues`, the retry policy in :mod:`._retry`.

Durations: each one the client wrote is answered in its own style (ISO 8601 or .NET TimeSpan, see
:mod:`._durations`); one the service fills in (the default ``retryInterval``) takes the job's ``style``.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, assert_never

from scheduler_core.definitions._durations import ISO, DurationStyle
from scheduler_core.definitions._flow import flow_control_json, parse_flow_control, read_flow_control
from scheduler_core.definitions._http import http_json, parse_http, read_http
from scheduler_core.definitions._json import Fields, enum_value
from scheduler_core.definitions._prior import Prior, sub
from scheduler_core.definitions._queues import (
    S,
    parse_service_bus,
    parse_storage_queue,
    read_service_bus,
    read_storage_queue,
    service_bus_json,
    storage_queue_json,
)
from scheduler_core.definitions._retry import (
    default_retry_policy,
    parse_retry_policy,
    read_retry_policy,
    retry_policy_json,
)
from scheduler_core.errors import ValidationError
from scheduler_core.identity import IdentityScope
from scheduler_core.model.actions import (
    Action,
    HttpAction,
    JobAction,
    ServiceBusQueueAction,
    ServiceBusTopicAction,
    StorageQueueAction,
)
from scheduler_core.model.retry import DEFAULT_RETRY_INTERVAL, RetryPolicy

__all__ = [
    "ACTION_KINDS",
    "ActionKind",
    "ParsedAction",
    "Prior",
    "action_json",
    "job_action_json",
    "parse_action",
    "parse_single_action",
    "read_action",
    "read_job_action",
    "restore_secrets",
]


# ------------------------------------------------------------------------------------ kinds of action


@dataclass(frozen=True)
class ParseOptions:
    """How a client's action is read: ``limits`` (the size limits, off for a stored job read back),
    ``identity`` (where the app's identity may go; None: not checked), and what the service fills in: the
    ``style`` of its durations and the ``default_retry_interval``; ``preview``: the preview wire's fields."""

    limits: bool
    identity: IdentityScope | None
    style: DurationStyle = ISO
    default_retry_interval: timedelta = DEFAULT_RETRY_INTERVAL
    #: The preview wire (api-version 2026-12-01-preview): its fields are known.
    preview: bool = False


@dataclass(frozen=True)
class ActionKind:
    """One kind of action at the wire: its ``type``, the field holding its object (``payload``), the kinds
    a stored one's secrets may carry over to when a PUT changes the type (``family``), the parser of a
    client's object and the reader of a stored one (secrets in place)."""

    type_name: str
    payload: str
    family: tuple[str, ...]
    parse: Callable[[object, str, Prior | None, ParseOptions], Action]
    read: Callable[[Mapping[str, Any]], Action]


def _service_bus_kind(kind: type[S], payload: str) -> ActionKind:
    def parse(data: object, path: str, prior: Prior | None, options: ParseOptions) -> Action:
        return parse_service_bus(data, path, prior, kind, options.identity)

    return ActionKind(kind.type_name, payload, (kind.type_name,), parse, functools.partial(read_service_bus, kind=kind))


def _http_kind(type_name: str, https: bool) -> ActionKind:
    def parse(data: object, path: str, prior: Prior | None, options: ParseOptions) -> Action:
        return parse_http(data, path, prior, https=https, limits=options.limits, preview=options.preview)

    return ActionKind(type_name, "request", ("Http", "Https"), parse, functools.partial(read_http, https=https))


#: Every kind of action, by its ``type`` in lower case.
ACTION_KINDS: dict[str, ActionKind] = {
    kind.type_name.lower(): kind
    for kind in (
        _http_kind("Http", https=False),
        _http_kind("Https", https=True),
        ActionKind(
            StorageQueueAction.type_name,
            "queueMessage",
            (StorageQueueAction.type_name,),
            lambda data, path, prior, options: parse_storage_queue(data, path, prior, options.identity),
            read_storage_queue,
        ),
        _service_bus_kind(ServiceBusQueueAction, "serviceBusQueueMessage"),
        _service_bus_kind(ServiceBusTopicAction, "serviceBusTopicMessage"),
    )
}
_TYPE_NAMES = {key: kind.type_name for key, kind in ACTION_KINDS.items()}
_PAYLOADS = tuple(dict.fromkeys(kind.payload for kind in ACTION_KINDS.values()))


# ------------------------------------------------------------------------------------------- parse


@dataclass(frozen=True)
class ParsedAction:
    """A client's ``action`` parsed: the typed value; its canonical ``output`` and the ``secrets`` split out
    of it (dotted paths inside the job's ``properties``: ``action.request.authentication.password``) are
    written from it when asked for (:func:`job_action_json`)."""

    action: JobAction

    @functools.cached_property
    def _json(self) -> tuple[dict[str, Any], dict[str, str]]:
        return job_action_json(self.action)

    @property
    def output(self) -> dict[str, Any]:
        return self._json[0]

    @property
    def secrets(self) -> dict[str, str]:
        return self._json[1]

    @property
    def types(self) -> tuple[str, ...]:
        return self.action.action_types

    @property
    def uses_authentication(self) -> bool:
        return self.action.uses_authentication


def parse_action(
    data: object,
    path: str,
    prior: Prior | None,
    *,
    limits: bool,
    style: DurationStyle = ISO,
    identity: IdentityScope | None = None,
    default_retry_interval: timedelta = DEFAULT_RETRY_INTERVAL,
    preview: bool = False,
) -> ParsedAction:
    """Parse a job's ``action`` (and its ``errorAction``). ``prior`` is the stored ``action`` (a secret the
    body omits is kept from it while its identity is unchanged); ``style`` is the style of the durations
    the service fills in; ``identity``, when given, is where the app's identity may go;
    ``default_retry_interval`` is the ``retryInterval`` of a policy that gives none (a plan's default);
    ``preview``: the preview wire (``expandPlaceholders``, request signing, ManagedServiceIdentity)."""
    options = ParseOptions(limits, identity, style, default_retry_interval, preview)
    main, retry, fields = _parse_one(data, path, prior, options, error_action=False)
    error = error_retry = None
    if "errorAction" in fields:
        error, error_retry, _ = _parse_one(
            fields.get("errorAction"), fields.where("errorAction"), sub(prior, "errorAction"), options, True
        )
    expand = bool(fields.boolean("expandPlaceholders")) if "expandPlaceholders" in fields else False
    flow = parse_flow_control(fields.get("flowControl"), fields.where("flowControl"))
    retry = retry or default_retry_policy(style, default_retry_interval)
    return ParsedAction(JobAction(main, retry, error, error_retry, expand, flow))


#: The fields of a job's ``action`` (not of its error action) on api-version 2026-12-01-preview only.
_PREVIEW_JOB_ACTION = ("expandPlaceholders", "flowControl")


def _parse_one(
    data: object, path: str, prior: Prior | None, options: ParseOptions, error_action: bool, hint: str = ""
) -> tuple[Action, RetryPolicy | None, Fields]:
    """One action object: the action, its retry policy when written, and its fields. ``error_action``: one
    without an ``errorAction`` or ``expandPlaceholders`` of its own (``hint`` says why, in its errors)."""
    known = ("type", *_PAYLOADS, "retryPolicy") + (() if error_action else ("errorAction",))
    if options.preview and not error_action:
        known += _PREVIEW_JOB_ACTION
    hint = hint or ("; an error action cannot have an errorAction of its own" if error_action else "")
    preview = _PREVIEW_JOB_ACTION if not options.preview and not error_action else ()
    fields = Fields(data, path, known, hint=hint, preview=preview)
    if "type" not in fields:
        raise ValidationError(fields.where("type"), f"is required (one of {', '.join(_TYPE_NAMES.values())})")
    kind = ACTION_KINDS[enum_value(fields.get("type"), fields.where("type"), _TYPE_NAMES).lower()]
    for other in _PAYLOADS:
        if other != kind.payload and other in fields:
            raise ValidationError(
                fields.where(other),
                f"does not belong to an action of type {kind.type_name}, which uses '{kind.payload}' "
                "(remove it; in a PATCH, set it to null)",
            )
    if kind.payload not in fields:
        raise ValidationError(fields.where(kind.payload), f"is required for an action of type {kind.type_name}")
    # Another kind of action: nothing of the old one's secrets may carry over (Http <-> Https may).
    if prior is not None and str(prior.output.get("type")) not in kind.family:
        prior = None
    action = kind.parse(fields.get(kind.payload), fields.where(kind.payload), sub(prior, kind.payload), options)
    retry = None
    if "retryPolicy" in fields:
        retry = parse_retry_policy(
            fields.get("retryPolicy"),
            fields.where("retryPolicy"),
            options.style,
            options.default_retry_interval,
            options.preview,
        )
    return action, retry, fields


def parse_single_action(
    data: object, path: str, prior: Prior | None, options: ParseOptions, hint: str
) -> tuple[Action, RetryPolicy | None]:
    """One action object without ``errorAction`` or ``expandPlaceholders`` of its own (a notification's; ``hint``
    says why, in its errors): the action and its retry policy when written."""
    action, retry, _ = _parse_one(data, path, prior, options, True, hint)
    return action, retry


# -------------------------------------------------------------------------------------------- read


def restore_secrets(properties: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
    """The full definition (a deep copy of ``properties``) with each secret put back at its dotted path.
    A secret whose parent object is no longer in the definition is left out."""
    out: dict[str, Any] = copy.deepcopy(dict(properties))
    for path, value in secrets.items():
        *parents, leaf = path.split(".")
        node: Any = out
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node[leaf] = value
    return out


def read_action(data: Mapping[str, Any]) -> Action:
    """One stored action object (canonical, its secrets in place; ``errorAction`` and ``retryPolicy``
    are not looked at), trusted. Raises ``KeyError`` for an unknown ``type``."""
    kind = ACTION_KINDS[str(data.get("type", "")).lower()]
    return kind.read(data.get(kind.payload) or {})


def read_job_action(properties: Mapping[str, Any], secrets: Mapping[str, str]) -> JobAction:
    """The action of a stored job: ``properties`` is its canonical ``JobProperties`` (with ``action``),
    ``secrets`` its secrets by dotted path inside them (as :class:`JobSpec` and the job store hold them).
    Trusted: nothing is validated again and no certificate is opened. A missing ``retryPolicy`` is the
    default one."""
    action = restore_secrets(properties, secrets)["action"]
    error = action.get("errorAction")
    return JobAction(
        main=read_action(action),
        retry_policy=read_retry_policy(action.get("retryPolicy")),
        error=read_action(error) if error else None,
        error_retry_policy=read_retry_policy(error["retryPolicy"]) if error and error.get("retryPolicy") else None,
        expand_placeholders=bool(action.get("expandPlaceholders")),
        flow_control=read_flow_control(action.get("flowControl")),
    )


# ------------------------------------------------------------------------------------------- write


def action_json(action: Action, *, preview: bool = True) -> tuple[dict[str, Any], dict[str, str]]:
    """One action object (``type`` and its payload) and its secrets by dotted path inside it.
    ``preview=False``: as the classic wire answers it (without the preview parts)."""
    payload: tuple[dict[str, Any], dict[str, str]]
    match action:
        case HttpAction():
            payload = http_json(action, preview=preview)
        case StorageQueueAction():
            payload = storage_queue_json(action)
        case ServiceBusQueueAction() | ServiceBusTopicAction():
            payload = service_bus_json(action)
        case _:
            assert_never(action)
    field = ACTION_KINDS[action.type_name.lower()].payload
    output, secrets = payload
    return {"type": action.type_name, field: output}, {f"{field}.{key}": value for key, value in secrets.items()}


def job_action_json(action: JobAction, *, preview: bool = True) -> tuple[dict[str, Any], dict[str, str]]:
    """The canonical ``action`` of a job and its secrets by dotted path inside the job's ``properties``
    (``action.request.authentication.password``). The main action always has its ``retryPolicy``; the
    error action has one only when it was written. ``preview=False``: as the classic wire answers it
    (``expandPlaceholders``, request signing and ManagedServiceIdentity authentication left out)."""
    output, secrets = action_json(action.main, preview=preview)
    output["retryPolicy"] = retry_policy_json(action.retry_policy, preview=preview)
    if action.expand_placeholders and preview:
        output["expandPlaceholders"] = True
    if action.flow_control is not None and preview:
        output["flowControl"] = flow_control_json(action.flow_control)
    if action.error is not None:
        error, error_secrets = action_json(action.error, preview=preview)
        if action.error_retry_policy is not None:
            error["retryPolicy"] = retry_policy_json(action.error_retry_policy, preview=preview)
        output["errorAction"] = error
        secrets.update({f"errorAction.{key}": value for key, value in error_secrets.items()})
    return output, {f"action.{key}": value for key, value in secrets.items()}
