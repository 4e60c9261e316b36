"""Storage queue (``queueMessage``) and Service Bus (``serviceBusQueueMessage``, ``serviceBusTopicMessage``)
actions at the wire: parse a client's, read a stored one, write the canonical one.

The app's identity: a Storage queue action without ``sasToken`` and a Service Bus action without
``sasKey`` are sent with the function app's identity, so their host must be one the
:class:`~scheduler_core.identity.IdentityScope` allows; otherwise ``storageAccount`` / ``namespace`` is
refused. A stored token or key is kept when a PUT or PATCH omits it only while the account and queue (the
namespace and key name) are unchanged."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, TypeVar

from scheduler_core.definitions._durations import format_duration, read_duration
from scheduler_core.definitions._json import Fields, enum_value, str_map
from scheduler_core.definitions._prior import Prior, same_text, sub
from scheduler_core.errors import ValidationError
from scheduler_core.identity import IdentityScope
from scheduler_core.model.actions import (
    BrokeredMessageProperties,
    Secret,
    ServiceBusAction,
    ServiceBusQueueAction,
    ServiceBusTopicAction,
    SharedAccessKeyAuthentication,
    StorageQueueAction,
    TransportType,
)
from scheduler_core.model.retry import Duration
from scheduler_core.recurrence import format_instant, parse_instant

__all__ = [
    "parse_service_bus",
    "parse_storage_queue",
    "read_service_bus",
    "read_storage_queue",
    "service_bus_json",
    "storage_queue_json",
]

#: A kind of Service Bus action.
S = TypeVar("S", ServiceBusQueueAction, ServiceBusTopicAction)

SERVICE_BUS_AUTH_TYPES = {"notspecified": "NotSpecified", "sharedaccesskey": "SharedAccessKey"}
TRANSPORT_TYPES = {
    "notspecified": TransportType.NOT_SPECIFIED,
    "netmessaging": TransportType.NET_MESSAGING,
    "amqp": TransportType.AMQP,
}

_STORAGE_ACCOUNT = re.compile(r"[A-Za-z0-9]{3,24}")
_QUEUE_NAME = re.compile(r"(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")


# ------------------------------------------------------------------------------------ Storage queue


def parse_storage_queue(
    data: object, path: str, prior: Prior | None, identity: IdentityScope | None
) -> StorageQueueAction:
    """Parse a client's ``queueMessage``; ``identity``, when given, is where the app's identity may go."""
    fields = Fields(data, path, ("storageAccount", "queueName", "sasToken", "message"))
    account = fields.text("storageAccount", required=True, rule="is required (the storage account name)")
    assert account is not None
    if not _STORAGE_ACCOUNT.fullmatch(account):
        raise ValidationError(
            fields.where("storageAccount"), "must be a storage account name (3 to 24 letters and digits)"
        )
    queue = fields.text("queueName", required=True, rule="is required (the queue name)")
    assert queue is not None
    if not _QUEUE_NAME.fullmatch(queue):
        raise ValidationError(
            fields.where("queueName"),
            "must be a queue name: 3 to 63 lower-case letters, digits and single hyphens, "
            "starting and ending with a letter or digit",
        )
    message = fields.text("message", required=True, rule="is required (the message text; it may be empty)")
    assert message is not None
    token = fields.text("sasToken")
    if (
        token is None
        and prior is not None
        and same_text(prior.output.get("storageAccount"), account)
        and prior.output.get("queueName") == queue
    ):
        token = prior.secrets.get("sasToken")
    if token is None and identity is not None:
        refusal = identity.storage_queue_refusal(identity.storage_queue_host(account))
        if refusal is not None:
            raise ValidationError(
                fields.where("storageAccount"),
                f"must be an account under the configured Storage endpoint when no sasToken is given: {refusal}",
            )
    return StorageQueueAction(account, queue, message, Secret(token) if token is not None else None)


def read_storage_queue(payload: Mapping[str, Any]) -> StorageQueueAction:
    """The action of a stored ``queueMessage`` with its secret in place, trusted."""
    token = payload.get("sasToken")
    return StorageQueueAction(
        str(payload.get("storageAccount", "")),
        str(payload.get("queueName", "")),
        str(payload.get("message", "")),
        Secret(str(token)) if token is not None else None,
    )


def storage_queue_json(action: StorageQueueAction) -> tuple[dict[str, Any], dict[str, str]]:
    """The canonical ``queueMessage`` and its secrets by dotted path inside it."""
    output = {"storageAccount": action.storage_account, "queueName": action.queue_name, "message": action.message}
    return output, {"sasToken": action.sas_token.reveal()} if action.sas_token is not None else {}


# -------------------------------------------------------------------------- brokered message properties

#: Each brokered property: wire name and attribute of :class:`BrokeredMessageProperties`, in output order.
_BROKERED = (
    ("contentType", "content_type"),
    ("correlationId", "correlation_id"),
    ("forcePersistence", "force_persistence"),
    ("label", "label"),
    ("messageId", "message_id"),
    ("partitionKey", "partition_key"),
    ("replyTo", "reply_to"),
    ("replyToSessionId", "reply_to_session_id"),
    ("scheduledEnqueueTimeUtc", "scheduled_enqueue_time_utc"),
    ("sessionId", "session_id"),
    ("timeToLive", "time_to_live"),
    ("to", "to"),
    ("viaPartitionKey", "via_partition_key"),
)
_BROKERED_SPECIAL = ("forcePersistence", "scheduledEnqueueTimeUtc", "timeToLive")
#: The names a client may write, as the error for an unknown one lists them: the text ones, then the others.
_BROKERED_KNOWN = (*(wire for wire, _ in _BROKERED if wire not in _BROKERED_SPECIAL), *_BROKERED_SPECIAL)


def _parse_brokered(data: object, path: str) -> BrokeredMessageProperties:
    fields = Fields(data, path, _BROKERED_KNOWN)
    values: dict[str, Any] = {}
    for wire, attribute in _BROKERED:
        if wire not in _BROKERED_SPECIAL:
            values[attribute] = fields.text(wire)
    values["force_persistence"] = fields.boolean("forcePersistence")
    if "scheduledEnqueueTimeUtc" in fields:
        where = fields.where("scheduledEnqueueTimeUtc")
        values["scheduled_enqueue_time_utc"] = parse_instant(fields.get("scheduledEnqueueTimeUtc"), where)
    if "timeToLive" in fields:
        where = fields.where("timeToLive")
        ttl, style = read_duration(fields.get("timeToLive"), where)
        if ttl <= timedelta(0):
            raise ValidationError(where, "must be longer than zero")
        values["time_to_live"] = Duration(ttl, style)
    return BrokeredMessageProperties(**values)


def _read_brokered(data: Mapping[str, Any]) -> BrokeredMessageProperties:
    values: dict[str, Any] = {attribute: data.get(wire) for wire, attribute in _BROKERED}
    if values["scheduled_enqueue_time_utc"] is not None:
        values["scheduled_enqueue_time_utc"] = parse_instant(data["scheduledEnqueueTimeUtc"], "scheduledEnqueueTimeUtc")
    if values["time_to_live"] is not None:
        values["time_to_live"] = Duration(*read_duration(data["timeToLive"], "timeToLive"))
    return BrokeredMessageProperties(**values)


def _brokered_json(properties: BrokeredMessageProperties) -> dict[str, Any]:
    output: dict[str, Any] = {}
    for wire, attribute in _BROKERED:
        value = getattr(properties, attribute)
        if value is None:
            continue
        if isinstance(value, Duration):
            value = format_duration(value.value, value.style)
        elif wire == "scheduledEnqueueTimeUtc":
            value = format_instant(value)
        output[wire] = value
    return output


# --------------------------------------------------------------------------------------- Service Bus


def _entity_field(kind: type[ServiceBusAction]) -> str:
    return "queueName" if kind.entity_kind == "queue" else "topicPath"


def parse_service_bus(data: object, path: str, prior: Prior | None, kind: type[S], identity: IdentityScope | None) -> S:
    """Parse a client's ``serviceBusQueueMessage`` or ``serviceBusTopicMessage`` into a ``kind``."""
    entity = _entity_field(kind)
    fields = Fields(
        data,
        path,
        (
            "namespace",
            entity,
            "message",
            "transportType",
            "authentication",
            "brokeredMessageProperties",
            "customMessageProperties",
        ),
    )
    namespace = fields.text("namespace", required=True, rule="is required (the Service Bus namespace)")
    assert namespace is not None
    if not _NAMESPACE.fullmatch(namespace):
        raise ValidationError(
            fields.where("namespace"), "must be a Service Bus namespace name (letters, digits, '-' and '.')"
        )
    what = f"{kind.entity_kind} {'name' if kind.entity_kind == 'queue' else 'path'}"
    name = fields.text(entity, required=True, rule=f"is required (the {what})")
    if not name or len(name) > 260 or _CONTROL.search(name):
        raise ValidationError(fields.where(entity), f"must be a {what}: 1 to 260 characters without spaces")
    message = fields.text("message")
    transport = None
    if "transportType" in fields:
        transport = enum_value(fields.get("transportType"), fields.where("transportType"), TRANSPORT_TYPES)
    authentication = None
    if "authentication" in fields:
        authentication = _parse_sas(fields, namespace, prior)
    if (authentication is None or authentication.sas_key is None) and identity is not None:
        refusal = identity.service_bus_refusal(identity.service_bus_host(namespace))
        if refusal is not None:
            raise ValidationError(
                fields.where("namespace"),
                "must be a namespace name, or a host under the configured Service Bus endpoint, when no sasKey "
                f"is given: {refusal}",
            )
    brokered = None
    if "brokeredMessageProperties" in fields:
        brokered = _parse_brokered(fields.get("brokeredMessageProperties"), fields.where("brokeredMessageProperties"))
    custom = None
    if "customMessageProperties" in fields:
        custom = str_map(fields.get("customMessageProperties"), fields.where("customMessageProperties"))
    return kind(
        namespace=namespace,
        entity=name,
        message=message,
        transport_type=transport,
        authentication=authentication,
        not_specified_written="authentication" in fields and authentication is None,
        brokered_properties=brokered,
        custom_properties=custom,
    )


def _parse_sas(fields: Fields, namespace: str, prior: Prior | None) -> SharedAccessKeyAuthentication | None:
    """The ``authentication`` of a Service Bus action; None for NotSpecified."""
    auth = Fields(fields.get("authentication"), fields.where("authentication"), ("type", "sasKeyName", "sasKey"))
    key_name = auth.text("sasKeyName")
    key = auth.text("sasKey")
    if "type" in auth:
        auth_type = enum_value(auth.get("type"), auth.where("type"), SERVICE_BUS_AUTH_TYPES)
    else:
        auth_type = "SharedAccessKey" if key_name is not None or key is not None else "NotSpecified"
    if auth_type == "NotSpecified":
        for extra in ("sasKeyName", "sasKey"):
            if extra in auth:
                raise ValidationError(auth.where(extra), "is only used with type SharedAccessKey")
        return None
    if not key_name:
        raise ValidationError(auth.where("sasKeyName"), "is required for 'SharedAccessKey' type of Authentication")
    prior_auth = sub(prior, "authentication")
    if (
        key is None
        and prior is not None
        and prior_auth is not None
        and prior_auth.output.get("type") == "SharedAccessKey"
        and same_text(prior.output.get("namespace"), namespace)
        and prior_auth.output.get("sasKeyName") == key_name
    ):
        key = prior_auth.secrets.get("sasKey")
    return SharedAccessKeyAuthentication(key_name, Secret(key) if key is not None else None)


def read_service_bus(payload: Mapping[str, Any], kind: type[S]) -> S:
    """The ``kind`` of a stored Service Bus message object with its secret in place, trusted."""
    auth = payload.get("authentication")
    authentication = None
    if auth is not None and auth.get("type") == "SharedAccessKey":
        key = auth.get("sasKey")
        authentication = SharedAccessKeyAuthentication(
            str(auth.get("sasKeyName") or ""), Secret(str(key)) if key is not None else None
        )
    transport = payload.get("transportType")
    brokered = payload.get("brokeredMessageProperties")
    custom = payload.get("customMessageProperties")
    return kind(
        namespace=str(payload.get("namespace") or ""),
        entity=str(payload.get(_entity_field(kind)) or ""),
        message=payload.get("message"),
        transport_type=TransportType(transport) if transport is not None else None,
        authentication=authentication,
        not_specified_written=auth is not None and authentication is None,
        brokered_properties=_read_brokered(brokered) if brokered is not None else None,
        custom_properties=dict(custom) if custom is not None else None,
    )


def service_bus_json(action: ServiceBusAction) -> tuple[dict[str, Any], dict[str, str]]:
    """The canonical Service Bus message object and its secrets by dotted path inside it."""
    output: dict[str, Any] = {"namespace": action.namespace, _entity_field(type(action)): action.entity}
    secrets: dict[str, str] = {}
    if action.message is not None:
        output["message"] = action.message
    if action.transport_type is not None:
        output["transportType"] = action.transport_type.value
    auth = action.authentication
    if auth is not None:
        output["authentication"] = {"type": "SharedAccessKey", "sasKeyName": auth.sas_key_name}
        if auth.sas_key is not None:
            secrets["authentication.sasKey"] = auth.sas_key.reveal()
    elif action.not_specified_written:
        output["authentication"] = {"type": "NotSpecified"}
    if action.brokered_properties is not None:
        output["brokeredMessageProperties"] = _brokered_json(action.brokered_properties)
    if action.custom_properties is not None:
        output["customMessageProperties"] = dict(action.custom_properties)
    return output, secrets
