"""Actions (``action`` and ``action.errorAction``): HTTP(S), Storage queue, Service Bus queue and topic,
their authentication, and the retry policy. Each parser returns the canonical output JSON (PascalCase enum
values, durations in the style they were written in, no secrets) and the secrets it split out, keyed by
dotted path.

Durations: each one the client wrote is answered in its own style (ISO 8601 or .NET TimeSpan, see
:mod:`._durations`); one the service fills in (the default ``retryInterval``) takes the job's ``style``.

The app's identity: a Storage queue action without ``sasToken`` and a Service Bus action without
``sasKey`` are sent with the function app's identity, so their host must be one the
:class:`~scheduler_core.identity.IdentityScope` allows; otherwise ``storageAccount`` / ``namespace`` is
refused."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from scheduler_core.definitions._certificates import read_pfx
from scheduler_core.definitions._durations import ISO, DurationStyle, format_duration, read_duration
from scheduler_core.definitions._json import Fields, enum_value, join, str_map
from scheduler_core.errors import ValidationError
from scheduler_core.identity import IdentityScope
from scheduler_core.recurrence import format_instant, parse_instant

__all__ = [
    "DEFAULT_RETRY_COUNT",
    "DEFAULT_RETRY_INTERVAL",
    "ParsedAction",
    "Prior",
    "parse_action",
]

# ------------------------------------------------------------------------------------------- limits

#: HTTP action limits (includes/scheduler-limits-table.md).
MAX_URI = 2048
MAX_BODY = 8192
MAX_HEADERS = 50
MAX_HEADER_CHARS = 4096
#: Retry policy (scheduler-concepts-terms.md, 2018+): 4 retries every 30 s by default; 15 s to 18 months.
DEFAULT_RETRY_COUNT = 4
DEFAULT_RETRY_INTERVAL = timedelta(seconds=30)
MIN_RETRY_INTERVAL = timedelta(seconds=15)
MAX_RETRY_INTERVAL = timedelta(days=548)
MAX_RETRY_COUNT = 20

# -------------------------------------------------------------------------------------------- enums

ACTION_TYPES = {
    "http": "Http",
    "https": "Https",
    "storagequeue": "StorageQueue",
    "servicebusqueue": "ServiceBusQueue",
    "servicebustopic": "ServiceBusTopic",
}
_PAYLOAD = {
    "Http": "request",
    "Https": "request",
    "StorageQueue": "queueMessage",
    "ServiceBusQueue": "serviceBusQueueMessage",
    "ServiceBusTopic": "serviceBusTopicMessage",
}
_SAME_KIND = {name: (("Http", "Https") if name in ("Http", "Https") else (name,)) for name in _PAYLOAD}
_PAYLOADS = ("request", "queueMessage", "serviceBusQueueMessage", "serviceBusTopicMessage")
HTTP_AUTH_TYPES = {
    "notspecified": "NotSpecified",
    "clientcertificate": "ClientCertificate",
    "activedirectoryoauth": "ActiveDirectoryOAuth",
    "basic": "Basic",
}
SERVICE_BUS_AUTH_TYPES = {"notspecified": "NotSpecified", "sharedaccesskey": "SharedAccessKey"}
TRANSPORT_TYPES = {"notspecified": "NotSpecified", "netmessaging": "NetMessaging", "amqp": "AMQP"}
RETRY_TYPES = {"none": "None", "fixed": "Fixed", "exponential": "Exponential"}

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_STORAGE_ACCOUNT = re.compile(r"[A-Za-z0-9]{3,24}")
_QUEUE_NAME = re.compile(r"(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")


# ---------------------------------------------------------------------------------------- the prior


@dataclass(frozen=True)
class Prior:
    """A stored definition (canonical output) and its secrets (dotted paths relative to ``output``),
    used to keep a secret that a PUT or PATCH omitted while its identity is unchanged."""

    output: Mapping[str, Any]
    secrets: Mapping[str, str] = field(default_factory=dict)

    def sub(self, key: str) -> Prior | None:
        value = self.output.get(key)
        if not isinstance(value, Mapping):
            return None
        prefix = key + "."
        return Prior(value, {k[len(prefix) :]: v for k, v in self.secrets.items() if k.startswith(prefix)})


def _sub(prior: Prior | None, key: str) -> Prior | None:
    return prior.sub(key) if prior is not None else None


@dataclass
class ParsedAction:
    output: dict[str, Any]
    secrets: dict[str, str]
    types: list[str]
    uses_authentication: bool


def _prefixed(prefix: str, secrets: Mapping[str, str]) -> dict[str, str]:
    return {f"{prefix}.{key}": value for key, value in secrets.items()}


# ---------------------------------------------------------------------------------------- the action


def parse_action(
    data: object,
    path: str,
    prior: Prior | None,
    *,
    error_action: bool,
    limits: bool,
    style: DurationStyle = ISO,
    identity: IdentityScope | None = None,
) -> ParsedAction:
    """Parse ``action`` (``error_action=False``) or ``action.errorAction``. ``style`` is the style of the
    durations the service fills in; ``identity``, when given, is where the app's identity may go."""
    known = ("type", *_PAYLOADS, "retryPolicy") + (() if error_action else ("errorAction",))
    hint = "; an error action cannot have an errorAction of its own" if error_action else ""
    fields = Fields(data, path, known, hint=hint)
    if "type" not in fields:
        raise ValidationError(fields.where("type"), f"is required (one of {', '.join(_PAYLOAD)})")
    action_type = enum_value(fields.get("type"), fields.where("type"), ACTION_TYPES)
    payload = _PAYLOAD[action_type]
    for other in _PAYLOADS:
        if other != payload and other in fields:
            raise ValidationError(
                fields.where(other),
                f"does not belong to an action of type {action_type}, which uses '{payload}' "
                "(remove it; in a PATCH, set it to null)",
            )
    if payload not in fields:
        raise ValidationError(fields.where(payload), f"is required for an action of type {action_type}")
    # Another kind of action: nothing of the old one's secrets may carry over (Http <-> Https may).
    if prior is not None and str(prior.output.get("type")) not in _SAME_KIND[action_type]:
        prior = None

    output: dict[str, Any] = {"type": action_type}
    secrets: dict[str, str] = {}
    uses_authentication = False
    where = fields.where(payload)
    if payload == "request":
        request, request_secrets, uses_authentication = _parse_request(
            fields.get(payload), where, _sub(prior, "request"), https_only=action_type == "Https", limits=limits
        )
        output["request"] = request
        secrets.update(_prefixed("request", request_secrets))
    elif payload == "queueMessage":
        message, message_secrets = _parse_storage_queue(fields.get(payload), where, _sub(prior, payload), identity)
        output[payload] = message
        secrets.update(_prefixed(payload, message_secrets))
    else:
        message, message_secrets = _parse_service_bus(
            fields.get(payload),
            where,
            _sub(prior, payload),
            queue=payload == "serviceBusQueueMessage",
            identity=identity,
        )
        output[payload] = message
        secrets.update(_prefixed(payload, message_secrets))

    if "retryPolicy" in fields:
        output["retryPolicy"] = parse_retry_policy(fields.get("retryPolicy"), fields.where("retryPolicy"), style)
    elif not error_action:
        output["retryPolicy"] = default_retry_policy(style)
    types = [action_type]
    if "errorAction" in fields:
        error = parse_action(
            fields.get("errorAction"),
            fields.where("errorAction"),
            _sub(prior, "errorAction"),
            error_action=True,
            limits=limits,
            style=style,
            identity=identity,
        )
        output["errorAction"] = error.output
        secrets.update(_prefixed("errorAction", error.secrets))
        types.extend(error.types)
        uses_authentication = uses_authentication or error.uses_authentication
    return ParsedAction(output, secrets, types, uses_authentication)


# ------------------------------------------------------------------------------------------ retries


def default_retry_policy(style: DurationStyle = ISO) -> dict[str, Any]:
    """The policy of an action without one: retried 4 more times at 30-second intervals."""
    return {
        "retryType": "Fixed",
        "retryInterval": format_duration(DEFAULT_RETRY_INTERVAL, style),
        "retryCount": DEFAULT_RETRY_COUNT,
    }


def _interval(fields: Fields, name: str) -> tuple[timedelta, str] | None:
    """A retry interval and its text in the style it was written in."""
    if name not in fields:
        return None
    where = fields.where(name)
    value, style = read_duration(fields.get(name), where)
    if not MIN_RETRY_INTERVAL <= value <= MAX_RETRY_INTERVAL:
        raise ValidationError(
            where,
            f"must be between {format_duration(MIN_RETRY_INTERVAL, style)} (15 seconds) and "
            f"{format_duration(MAX_RETRY_INTERVAL, style)} (18 months), not {format_duration(value, style)}",
        )
    return value, format_duration(value, style)


def parse_retry_policy(data: object, path: str, style: DurationStyle = ISO) -> dict[str, Any]:
    """The effective policy. ``None`` drops the other fields (so that a PATCH to None works on a stored
    Fixed policy); ``maxRetryInterval`` only means something to ``Exponential`` and is dropped otherwise.
    A default ``retryInterval`` is written in ``style``."""
    fields = Fields(data, path, ("retryType", "retryInterval", "retryCount", "maxRetryInterval"))
    retry_type = "Fixed"
    if "retryType" in fields:
        retry_type = enum_value(fields.get("retryType"), fields.where("retryType"), RETRY_TYPES)
    interval = _interval(fields, "retryInterval")
    count = fields.integer("retryCount", 0, MAX_RETRY_COUNT)
    max_interval = _interval(fields, "maxRetryInterval")
    if retry_type == "None":
        return {"retryType": "None"}
    if interval is None:
        interval = DEFAULT_RETRY_INTERVAL, format_duration(DEFAULT_RETRY_INTERVAL, style)
    out: dict[str, Any] = {
        "retryType": retry_type,
        "retryInterval": interval[1],
        "retryCount": DEFAULT_RETRY_COUNT if count is None else count,
    }
    if retry_type == "Exponential" and max_interval is not None:
        if max_interval[0] < interval[0]:
            raise ValidationError(
                fields.where("maxRetryInterval"),
                f"must not be shorter than retryInterval ({interval[1]})",
            )
        out["maxRetryInterval"] = max_interval[1]
    return out


# --------------------------------------------------------------------------------------------- HTTP


def _origin(uri: object) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) of a URI, for deciding whether a stored secret may follow a changed URI."""
    if not isinstance(uri, str):
        return None
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


def _parse_uri(fields: Fields, https_only: bool, limits: bool) -> str:
    where = fields.where("uri")
    uri = fields.text("uri", required=True, rule="is required (an absolute http or https URI)")
    assert uri is not None
    if limits and len(uri) > MAX_URI:
        raise ValidationError(where, f"must be at most {MAX_URI} characters, not {len(uri)}")
    if _CONTROL.search(uri):
        raise ValidationError(where, "must not contain spaces or control characters (percent-encode them)")
    try:
        parts = urlsplit(uri)
        _ = parts.port
    except ValueError:
        raise ValidationError(where, "must be an absolute http or https URI (its host or port is invalid)") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(where, "must be an absolute http or https URI")
    if https_only and scheme != "https":
        raise ValidationError(where, "must be an https URI for an action of type Https")
    return uri


def _parse_headers(value: object, where: str, limits: bool) -> dict[str, str]:
    headers = str_map(value, where)
    if limits and len(headers) > MAX_HEADERS:
        raise ValidationError(where, f"must have at most {MAX_HEADERS} headers, not {len(headers)}")
    total = 0
    for name, item in headers.items():
        if not _TOKEN.fullmatch(name):
            raise ValidationError(where, "header names must be HTTP tokens (letters, digits and !#$%&'*+-.^_`|~)")
        if any(c in item for c in "\r\n\x00"):
            raise ValidationError(join(where, name), "must not contain line breaks or NUL characters")
        total += len(name) + len(item)
    if limits and total > MAX_HEADER_CHARS:
        raise ValidationError(
            where, f"must total at most {MAX_HEADER_CHARS} characters (names and values), not {total}"
        )
    return headers


def _parse_request(
    data: object, path: str, prior: Prior | None, *, https_only: bool, limits: bool
) -> tuple[dict[str, Any], dict[str, str], bool]:
    fields = Fields(data, path, ("uri", "method", "body", "headers", "authentication"))
    uri = _parse_uri(fields, https_only, limits)
    method = fields.text("method", required=True, rule="is required (GET, POST, PUT, DELETE, ...)")
    assert method is not None
    if not _TOKEN.fullmatch(method):
        raise ValidationError(fields.where("method"), "must be an HTTP method such as GET, POST, PUT or DELETE")
    output: dict[str, Any] = {"uri": uri, "method": method.upper()}
    body = fields.text("body")
    if body is not None:
        if limits and len(body) > MAX_BODY:
            raise ValidationError(fields.where("body"), f"must be at most {MAX_BODY} characters, not {len(body)}")
        output["body"] = body
    if "headers" in fields:
        output["headers"] = _parse_headers(fields.get("headers"), fields.where("headers"), limits)
    secrets: dict[str, str] = {}
    uses_authentication = False
    if "authentication" in fields:
        auth_prior = _sub(prior, "authentication")
        if prior is not None and _origin(prior.output.get("uri")) != _origin(uri):
            auth_prior = None  # a secret never follows the job to another host
        auth, secrets = _parse_http_auth(fields.get("authentication"), fields.where("authentication"), auth_prior)
        output["authentication"] = auth
        uses_authentication = auth["type"] != "NotSpecified"
    return output, _prefixed("authentication", secrets) if secrets else {}, uses_authentication


# ---------------------------------------------------------------------------------- authentication

_AUTH_FIELDS = {
    "NotSpecified": ("type",),
    "Basic": ("type", "username", "password"),
    "ActiveDirectoryOAuth": ("type", "tenant", "audience", "clientId", "secret"),
    "ClientCertificate": ("type", "pfx", "password", "certificateThumbprint"),
}
#: Derived, read-only: echoed back by clients that GET, modify and PUT; ignored on input.
_CERT_READ_ONLY = ("certificateSubjectName", "certificateExpirationDate", "certificateExpiration")


def _same(a: object, b: object) -> bool:
    return isinstance(a, str) and isinstance(b, str) and a.lower() == b.lower()


def _parse_http_auth(data: object, path: str, prior: Prior | None) -> tuple[dict[str, Any], dict[str, str]]:
    if not isinstance(data, Mapping):
        raise ValidationError(path, "must be a JSON object with a type")
    type_value = next((v for k, v in data.items() if isinstance(k, str) and k.lower() == "type"), None)
    if type_value is None:
        raise ValidationError(join(path, "type"), f"is required (one of {', '.join(_AUTH_FIELDS)})")
    auth_type = enum_value(type_value, join(path, "type"), HTTP_AUTH_TYPES)
    ignored = _CERT_READ_ONLY if auth_type == "ClientCertificate" else ()
    fields = Fields(data, path, _AUTH_FIELDS[auth_type], ignored=ignored, hint=f" for {auth_type} authentication")
    if prior is not None and prior.output.get("type") != auth_type:
        prior = None
    if auth_type == "Basic":
        return _basic(fields, prior)
    if auth_type == "ActiveDirectoryOAuth":
        return _oauth(fields, prior)
    if auth_type == "ClientCertificate":
        return _client_certificate(fields, prior)
    return {"type": "NotSpecified"}, {}


def _basic(fields: Fields, prior: Prior | None) -> tuple[dict[str, Any], dict[str, str]]:
    rule = "'Username' and 'Password' are required for 'Basic' type of Authentication."
    username = fields.text("username", required=True, rule=rule)
    assert username is not None
    if not username:
        raise ValidationError(fields.where("username"), rule)
    password = fields.text("password")
    if password is None and prior is not None and prior.output.get("username") == username:
        password = prior.secrets.get("password")
    if password is None:
        raise ValidationError(
            fields.where("password"),
            f"{rule} (a stored password is kept only while the type, the username and the URI's host stay the same)",
        )
    return {"type": "Basic", "username": username}, {"password": password}


def _oauth(fields: Fields, prior: Prior | None) -> tuple[dict[str, Any], dict[str, str]]:
    rule = (
        "'Tenant', 'Audience', 'ClientId' and 'Secret' are required for 'ActiveDirectoryOAuth' type of Authentication."
    )
    output: dict[str, Any] = {"type": "ActiveDirectoryOAuth"}
    for name in ("tenant", "audience", "clientId"):
        value = fields.text(name, required=True, rule=rule)
        if not value:
            raise ValidationError(fields.where(name), rule)
        output[name] = value
    secret = fields.text("secret")
    if (
        secret is None
        and prior is not None
        and _same(prior.output.get("tenant"), output["tenant"])
        and _same(prior.output.get("clientId"), output["clientId"])
    ):
        secret = prior.secrets.get("secret")
    if secret is None:
        raise ValidationError(
            fields.where("secret"),
            f"{rule} (a stored secret is kept only while the type, the tenant, the clientId and the URI's "
            "host stay the same)",
        )
    return output, {"secret": secret}


def _client_certificate(fields: Fields, prior: Prior | None) -> tuple[dict[str, Any], dict[str, str]]:
    rule = "'Pfx' is required for 'ClientCertificate' type of Authentication."
    pfx = fields.text("pfx")
    password = fields.text("password")
    if pfx is None:
        claimed = fields.text("certificateThumbprint")
        stored = prior.secrets.get("pfx") if prior is not None else None
        if (
            prior is None
            or stored is None
            or (claimed is not None and not _same(claimed, prior.output.get("certificateThumbprint")))
        ):
            raise ValidationError(
                fields.where("pfx"),
                f"{rule} (a stored certificate is kept only while the type, the certificateThumbprint and the "
                "URI's host stay the same)",
            )
        pfx = stored
        if password is None:
            password = prior.secrets.get("password")
    info = read_pfx(pfx, password, fields.where("pfx"))
    output = {
        "type": "ClientCertificate",
        "certificateThumbprint": info.thumbprint,
        "certificateSubjectName": info.subject,
        "certificateExpirationDate": format_instant(info.expires),
    }
    secrets = {"pfx": pfx}
    if password:
        secrets["password"] = password
    return output, secrets


# ------------------------------------------------------------------------------------ Storage queue


def _parse_storage_queue(
    data: object, path: str, prior: Prior | None, identity: IdentityScope | None
) -> tuple[dict[str, Any], dict[str, str]]:
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
    output = {"storageAccount": account, "queueName": queue, "message": message}
    token = fields.text("sasToken")
    if (
        token is None
        and prior is not None
        and _same(prior.output.get("storageAccount"), account)
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
    return output, {"sasToken": token} if token is not None else {}


# --------------------------------------------------------------------------------------- Service Bus

_BROKERED_STRINGS = (
    "contentType",
    "correlationId",
    "label",
    "messageId",
    "partitionKey",
    "replyTo",
    "replyToSessionId",
    "sessionId",
    "to",
    "viaPartitionKey",
)
_BROKERED = (*_BROKERED_STRINGS, "forcePersistence", "scheduledEnqueueTimeUtc", "timeToLive")
_BROKERED_ORDER = (
    "contentType",
    "correlationId",
    "forcePersistence",
    "label",
    "messageId",
    "partitionKey",
    "replyTo",
    "replyToSessionId",
    "scheduledEnqueueTimeUtc",
    "sessionId",
    "timeToLive",
    "to",
    "viaPartitionKey",
)


def _parse_brokered(data: object, path: str) -> dict[str, Any]:
    fields = Fields(data, path, _BROKERED)
    values: dict[str, Any] = {}
    for name in _BROKERED_STRINGS:
        text = fields.text(name)
        if text is not None:
            values[name] = text
    persist = fields.boolean("forcePersistence")
    if persist is not None:
        values["forcePersistence"] = persist
    if "scheduledEnqueueTimeUtc" in fields:
        where = fields.where("scheduledEnqueueTimeUtc")
        values["scheduledEnqueueTimeUtc"] = format_instant(parse_instant(fields.get("scheduledEnqueueTimeUtc"), where))
    if "timeToLive" in fields:
        where = fields.where("timeToLive")
        ttl, style = read_duration(fields.get("timeToLive"), where)
        if ttl <= timedelta(0):
            raise ValidationError(where, "must be longer than zero")
        values["timeToLive"] = format_duration(ttl, style)
    return {name: values[name] for name in _BROKERED_ORDER if name in values}


def _parse_service_bus(
    data: object, path: str, prior: Prior | None, *, queue: bool, identity: IdentityScope | None
) -> tuple[dict[str, Any], dict[str, str]]:
    entity = "queueName" if queue else "topicPath"
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
    what = "queue name" if queue else "topic path"
    name = fields.text(entity, required=True, rule=f"is required (the {what})")
    if not name or len(name) > 260 or _CONTROL.search(name):
        raise ValidationError(fields.where(entity), f"must be a {what}: 1 to 260 characters without spaces")
    output: dict[str, Any] = {"namespace": namespace, entity: name}
    message = fields.text("message")
    if message is not None:
        output["message"] = message
    if "transportType" in fields:
        output["transportType"] = enum_value(
            fields.get("transportType"), fields.where("transportType"), TRANSPORT_TYPES
        )
    secrets: dict[str, str] = {}
    if "authentication" in fields:
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
            output["authentication"] = {"type": "NotSpecified"}
        else:
            if not key_name:
                raise ValidationError(
                    auth.where("sasKeyName"), "is required for 'SharedAccessKey' type of Authentication"
                )
            prior_auth = _sub(prior, "authentication")
            if (
                key is None
                and prior is not None
                and prior_auth is not None
                and prior_auth.output.get("type") == "SharedAccessKey"
                and _same(prior.output.get("namespace"), namespace)
                and prior_auth.output.get("sasKeyName") == key_name
            ):
                key = prior_auth.secrets.get("sasKey")
            output["authentication"] = {"type": "SharedAccessKey", "sasKeyName": key_name}
            if key is not None:
                secrets["authentication.sasKey"] = key
    if "authentication.sasKey" not in secrets and identity is not None:
        refusal = identity.service_bus_refusal(identity.service_bus_host(namespace))
        if refusal is not None:
            raise ValidationError(
                fields.where("namespace"),
                "must be a namespace name, or a host under the configured Service Bus endpoint, when no sasKey "
                f"is given: {refusal}",
            )
    if "brokeredMessageProperties" in fields:
        output["brokeredMessageProperties"] = _parse_brokered(
            fields.get("brokeredMessageProperties"), fields.where("brokeredMessageProperties")
        )
    if "customMessageProperties" in fields:
        output["customMessageProperties"] = str_map(
            fields.get("customMessageProperties"), fields.where("customMessageProperties")
        )
    return output, secrets
