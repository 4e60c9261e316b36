"""Actions: what a job does when it fires. A union of typed classes, one per kind of action, with the
authentication each kind supports and the write-only values (:class:`Secret`) that never print.

* :class:`HttpAction` (types ``Http`` and ``Https``) with no authentication or one of
  :data:`HttpAuthentication`: :class:`BasicAuthentication`, :class:`ClientCertificateAuthentication`,
  :class:`ActiveDirectoryOAuthAuthentication`, :class:`ManagedServiceIdentityAuthentication` (preview), and
  optionally a :class:`RequestSigning` (preview);
* :class:`StorageQueueAction`;
* :class:`ServiceBusQueueAction` and :class:`ServiceBusTopicAction` (:class:`ServiceBusAction`), with
  :class:`SharedAccessKeyAuthentication` or the app's identity.

:data:`Action` is their union; :class:`JobAction` is a job's main action, its retry policy and its
optional error action. A new kind of action is one class here (added to :data:`Action`), one parser in
:mod:`scheduler_core.definitions` and one sender in :mod:`scheduler_core.actions`; ``mypy`` points at
every ``match`` that lacks the new case.

Pure values: no I/O, no Azure imports. :mod:`scheduler_core.definitions` converts them to and from the
ARM JSON of the wire (``action``), in one function per direction.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Final
from urllib.parse import urlsplit

from scheduler_core.model.retry import DEFAULT_RETRY_POLICY, Duration, RetryPolicy

__all__ = [
    "FAILURE_PLACEHOLDERS",
    "FRAMING_HEADERS",
    "PLACEHOLDERS",
    "PLACEHOLDER_REFERENCE",
    "Action",
    "ActiveDirectoryOAuthAuthentication",
    "BasicAuthentication",
    "BrokeredMessageProperties",
    "ClientCertificateAuthentication",
    "Deadline",
    "HttpAction",
    "HttpAuthentication",
    "JobAction",
    "ManagedServiceIdentityAuthentication",
    "Notification",
    "NotificationKind",
    "Notifications",
    "RequestSigning",
    "Secret",
    "ServiceBusAction",
    "ServiceBusQueueAction",
    "ServiceBusTopicAction",
    "SharedAccessKeyAuthentication",
    "SigningScheme",
    "StorageQueueAction",
    "TransportType",
    "framing_header",
    "placeholder_name",
]

_MASK: Final = "Secret('***')"


class Secret:
    """A write-only value (a password, key, token or certificate). ``repr`` and ``str`` show
    ``Secret('***')``, so a logged or printed action never shows it; :meth:`reveal` gives the text to the
    one place that needs it (a sender, the definitions writer). Equal by value, hashable, immutable."""

    __slots__ = ("_value",)
    _value: str

    def __init__(self, value: str) -> None:
        object.__setattr__(self, "_value", value)

    def reveal(self) -> str:
        """The secret text."""
        return self._value

    def __repr__(self) -> str:
        return _MASK

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Secret is immutable")

    def __reduce__(self) -> tuple[type[Secret], tuple[str]]:
        return (Secret, (self._value,))


# ---------------------------------------------------------------------------------------------- HTTP


@dataclass(frozen=True, slots=True)
class BasicAuthentication:
    """HTTP Basic authentication: ``Authorization: Basic base64(username:password)``."""

    username: str
    password: Secret


@dataclass(frozen=True, slots=True)
class ClientCertificateAuthentication:
    """Mutual TLS with a client certificate. ``pfx`` is the base64 PKCS #12 file and ``password`` opens it
    (None: no password). ``thumbprint`` (SHA-1, upper-case hex), ``subject_name`` (``CN=name, O=org``) and
    ``expiration`` (aware UTC) are read from the certificate when the job is written, for responses."""

    pfx: Secret
    password: Secret | None
    thumbprint: str
    subject_name: str
    expiration: datetime


@dataclass(frozen=True, slots=True)
class ActiveDirectoryOAuthAuthentication:
    """A client-credentials token from Entra ID (``Authorization: Bearer``): the app ``client_id`` with
    ``secret`` in ``tenant``, for ``audience`` (a v1 resource such as ``https://management.core.windows.net/``)."""

    tenant: str
    audience: str
    client_id: str
    secret: Secret


@dataclass(frozen=True, slots=True)
class ManagedServiceIdentityAuthentication:
    """A bearer token of the app's own identity (``ManagedServiceIdentity``, as Logic Apps names it) for
    ``audience`` (a resource URI such as ``https://management.azure.com/``). api-version
    2026-12-01-preview."""

    audience: str


#: How an HTTP action authenticates (no authentication: None).
HttpAuthentication = (
    BasicAuthentication
    | ClientCertificateAuthentication
    | ActiveDirectoryOAuthAuthentication
    | ManagedServiceIdentityAuthentication
)


class SigningScheme(enum.StrEnum):
    """``request.signing.scheme``: how an HTTP request is signed."""

    STANDARD_WEBHOOKS = "StandardWebhooks"
    """The Standard Webhooks specification: headers ``webhook-id`` (the execution id),
    ``webhook-timestamp`` and ``webhook-signature`` (``v1,`` + base64 HMAC-SHA256 of
    ``id.timestamp.body`` under the secret's bytes)."""


@dataclass(frozen=True, slots=True)
class RequestSigning:
    """``request.signing`` (api-version 2026-12-01-preview): the ``scheme`` and its write-only ``secret``
    (Standard Webhooks: ``whsec_`` + base64 of the key bytes, 24 to 64 bytes)."""

    secret: Secret
    scheme: SigningScheme = SigningScheme.STANDARD_WEBHOOKS


#: Headers that frame a request or belong to one connection (RFC 9110 section 7.6.1, RFC 9112), and
#: ``Proxy-*``: the sender alone sets them, so that no job can change how its request is read by the target,
#: or make the end of its request the start of another's (request smuggling). A job's definition may not
#: hold them (400) and the sender drops any that a job stored before this rule holds.
FRAMING_HEADERS = (
    "Host",
    "Content-Length",
    "Transfer-Encoding",
    "Connection",
    "Keep-Alive",
    "TE",
    "Trailer",
    "Upgrade",
    "Expect",
)
_FRAMING = frozenset(name.lower() for name in FRAMING_HEADERS)


def framing_header(name: str) -> bool:
    """Whether ``name`` is a framing or hop-by-hop header (:data:`FRAMING_HEADERS`, ``Proxy-*``)."""
    low = name.strip().lower()
    return low in _FRAMING or low.startswith("proxy-")


@dataclass(frozen=True, slots=True)
class HttpAction:
    """An HTTP(S) request. ``https`` is the type ``Https`` (the URI must be https) rather than ``Http``.
    ``method`` is upper case; ``headers`` and ``body`` are None when the definition has none (an empty
    ``headers`` object is kept as written). ``authentication`` None sends none; ``not_specified_written``
    records that the definition said so explicitly (``{"type": "NotSpecified"}``), which is answered back.
    ``signing`` (None: unsigned) signs each request (api-version 2026-12-01-preview). ``timeout`` (None: the
    app's ``SCHEDULER_HTTP_TIMEOUT_SECONDS``) bounds each attempt's call, redirects included (api-version
    2026-12-01-preview)."""

    uri: str
    method: str
    https: bool = False
    headers: Mapping[str, str] | None = None
    body: str | None = None
    authentication: HttpAuthentication | None = None
    not_specified_written: bool = False
    signing: RequestSigning | None = None
    timeout: Duration | None = None
    #: ``request.asyncPolling.maxDuration`` (api-version 2026-12-01-preview): a ``202 Accepted`` with
    #: ``Location`` is an operation still running, polled with GET until it ends or this long after it began.
    #: None: a 202 is the answer (a success), as in Azure Scheduler.
    async_polling: Duration | None = None

    @property
    def type_name(self) -> str:
        """The action's ``type``: ``Https`` or ``Http``."""
        return "Https" if self.https else "Http"

    @property
    def uses_authentication(self) -> bool:
        """Whether the request carries outbound authentication (what the Free plan refuses)."""
        return self.authentication is not None


# ------------------------------------------------------------------------------------- Storage queue


@dataclass(frozen=True, slots=True)
class StorageQueueAction:
    """A message added to an Azure Storage queue. ``sas_token`` None: the app's own identity is used."""

    type_name: ClassVar[str] = "StorageQueue"
    uses_authentication: ClassVar[bool] = False

    storage_account: str
    queue_name: str
    message: str
    sas_token: Secret | None = None


# --------------------------------------------------------------------------------------- Service Bus


class TransportType(enum.StrEnum):
    """``transportType`` of a Service Bus action; every message is sent over AMQP whatever it says."""

    NOT_SPECIFIED = "NotSpecified"
    """No preference (AMQP)."""
    NET_MESSAGING = "NetMessaging"
    """The retired .NET SBMP protocol: accepted for compatibility, sent over AMQP."""
    AMQP = "AMQP"
    """AMQP 1.0."""


@dataclass(frozen=True, slots=True)
class SharedAccessKeyAuthentication:
    """A Service Bus shared access key. ``sas_key`` None (a key name without a key): the app's identity."""

    sas_key_name: str
    sas_key: Secret | None = None


@dataclass(frozen=True, slots=True)
class BrokeredMessageProperties:
    """``brokeredMessageProperties``: each None when not given. ``force_persistence`` is accepted and
    ignored (every Service Bus message is persisted)."""

    content_type: str | None = None
    correlation_id: str | None = None
    force_persistence: bool | None = None
    label: str | None = None
    message_id: str | None = None
    partition_key: str | None = None
    reply_to: str | None = None
    reply_to_session_id: str | None = None
    scheduled_enqueue_time_utc: datetime | None = None
    session_id: str | None = None
    time_to_live: Duration | None = None
    to: str | None = None
    via_partition_key: str | None = None


@dataclass(frozen=True, slots=True)
class ServiceBusAction:
    """A message sent to a Service Bus queue or topic (``entity``) in ``namespace``. Use the subclasses
    :class:`ServiceBusQueueAction` and :class:`ServiceBusTopicAction`.

    ``authentication`` None uses the app's identity; ``not_specified_written`` records an explicit
    ``{"type": "NotSpecified"}``. ``message``, ``transport_type``, ``brokered_properties`` and
    ``custom_properties`` are None when not given (empty objects are kept as written)."""

    type_name: ClassVar[str] = ""
    #: ``queue`` or ``topic``.
    entity_kind: ClassVar[str] = ""
    uses_authentication: ClassVar[bool] = False

    namespace: str
    entity: str
    message: str | None = None
    transport_type: TransportType | None = None
    authentication: SharedAccessKeyAuthentication | None = None
    not_specified_written: bool = False
    brokered_properties: BrokeredMessageProperties | None = None
    custom_properties: Mapping[str, str] | None = field(default=None)

    @property
    def sas_key(self) -> Secret | None:
        """The shared access key, or None when the app's identity is used."""
        return self.authentication.sas_key if self.authentication is not None else None


@dataclass(frozen=True, slots=True)
class ServiceBusQueueAction(ServiceBusAction):
    """A message sent to the Service Bus queue ``entity`` (``queueName``)."""

    type_name: ClassVar[str] = "ServiceBusQueue"
    entity_kind: ClassVar[str] = "queue"


@dataclass(frozen=True, slots=True)
class ServiceBusTopicAction(ServiceBusAction):
    """A message published to the Service Bus topic ``entity`` (``topicPath``)."""

    type_name: ClassVar[str] = "ServiceBusTopic"
    entity_kind: ClassVar[str] = "topic"


#: Every kind of action a job can fire.
Action = HttpAction | StorageQueueAction | ServiceBusQueueAction | ServiceBusTopicAction


# ---------------------------------------------------------------------------------------- a job's action

#: The placeholders ``expandPlaceholders`` turns on, ``@{name}`` (Logic Apps' syntax), and what each stands for.
PLACEHOLDERS: Final = {
    "scheduledTime": "the occurrence's scheduled instant (ISO 8601, UTC)",
    "actualTime": "when the attempt started (ISO 8601, UTC)",
    "executionId": "the attempt's execution id (the same on every delivery of one attempt)",
    "attempt": "the attempt number (0 for the first try)",
    "jobName": "the job's name",
    "collectionName": "the job collection's name",
    "historyUrl": "the dashboard's page of the job, with its history (empty when the app's host is not known)",
    "failure.status": "the error action's: the status the main action's last attempt got (empty without one)",
    "failure.reason": "the error action's: how that attempt failed (Status, Timeout, ConnectionError, Refused, ...)",
    "failure.body": "the error action's: an excerpt of what the target answered (one line, secrets masked)",
    "failure.executionId": "the error action's: the execution id of that attempt",
    "failure.attempts": "the error action's: how many attempts the main action made",
}
#: The placeholders only an error action knows (what the main action's failure was).
FAILURE_PLACEHOLDERS: Final = tuple(name for name in PLACEHOLDERS if name.startswith("failure."))
#: A placeholder reference, ``@{name}`` (group 1: the name). With ``expandPlaceholders`` on, every ``@{`` in
#: a text the placeholders expand in must start one whose name is a key of :data:`PLACEHOLDERS` in any
#: casing (checked when the job is written); a URI holds them in its query only.
PLACEHOLDER_REFERENCE: Final = re.compile(r"@\{([^{}]*)\}")
_PLACEHOLDER_NAMES: Final = {name.lower(): name for name in PLACEHOLDERS}


def placeholder_name(name: str) -> str | None:
    """The canonical name of a placeholder written ``name`` (any casing, surrounding spaces ignored), or None
    when there is no such placeholder."""
    return _PLACEHOLDER_NAMES.get(name.strip().lower())


@dataclass(frozen=True, slots=True)
class FlowControl:
    """``action.flowControl`` (api-version 2026-12-01-preview): at most ``rate_per_second`` calls a second
    (evenly spaced) and at most ``parallelism`` calls at once to the target named by ``key``, shared by every
    job of the subscription that names the key (None: :func:`flow_key` of the action, its target). Work over a
    limit waits; at least one limit is set."""

    key: str | None = None
    rate_per_second: float | None = None
    parallelism: int | None = None


def flow_key(action: Action) -> str:
    """The target an action's calls count against when its ``flowControl`` names no key: an HTTP action's
    host (and port, when not the scheme's), a Storage queue (``account/queue``), a Service Bus namespace."""
    match action:
        case HttpAction():
            parts = urlsplit(action.uri)
            host = (parts.hostname or "").lower()
            default = 443 if parts.scheme.lower() == "https" else 80
            try:
                port = parts.port
            except ValueError:
                port = None
            return host if port in (None, default) else f"{host}:{port}"
        case StorageQueueAction():
            return f"{action.storage_account.lower()}/{action.queue_name.lower()}"
        case _:
            return action.namespace.lower()


@dataclass(frozen=True, slots=True)
class JobAction:
    """What a job does: the ``main`` action under ``retry_policy``, and, when every attempt of an
    occurrence failed, the optional ``error`` action. ``error_retry_policy`` is the error action's own
    policy as written (None when it has none); the executor retries both actions under ``retry_policy``.

    ``expand_placeholders`` (api-version 2026-12-01-preview; off by default, so an existing body holding
    ``@{`` is sent as written) turns on the placeholders of :data:`PLACEHOLDERS` in the request body, header
    values and URI query, and in queue and Service Bus messages, of both actions. ``flow_control`` (the same
    api-version) limits the main action's calls (every attempt of it: retries, runs on demand, backfills,
    replays and polls); the error action and notifications are not limited."""

    main: Action
    retry_policy: RetryPolicy = DEFAULT_RETRY_POLICY
    error: Action | None = None
    error_retry_policy: RetryPolicy | None = None
    expand_placeholders: bool = False
    flow_control: FlowControl | None = None

    @property
    def flow_key(self) -> str | None:
        """The key the main action's calls count against (:class:`FlowControl`); None: not flow-controlled."""
        if self.flow_control is None:
            return None
        return (self.flow_control.key or flow_key(self.main)).lower()

    @property
    def actions(self) -> tuple[Action, ...]:
        """The main action, then the error action when there is one."""
        return (self.main,) if self.error is None else (self.main, self.error)

    @property
    def action_types(self) -> tuple[str, ...]:
        """The ``type`` of each action, main first (``("Https", "StorageQueue")``)."""
        return tuple(action.type_name for action in self.actions)

    @property
    def uses_authentication(self) -> bool:
        """Whether an HTTP action (main or error) uses outbound authentication (Basic, ClientCertificate or
        ActiveDirectoryOAuth; a Service Bus key or a SAS token does not count)."""
        return any(action.uses_authentication for action in self.actions)

    def retry_intervals(self) -> list[float]:
        """The retry interval in seconds of each policy as written (main, then the error action's) that
        retries at all (not None, a retry count above 0). For Exponential that is the first (shortest)
        delay. Empty when nothing is retried."""
        policies = (self.retry_policy, self.error_retry_policy if self.error is not None else None)
        return [policy.interval.total_seconds() for policy in policies if policy is not None and policy.retries]


class NotificationKind(enum.StrEnum):
    """When a job notifies (``properties.notifications``, api-version 2026-12-01-preview); the text is the wire
    name and what an execution message's ``action`` carries."""

    ON_FAILURE = "onFailure"
    """A scheduled occurrence faulted after one that did not (the first of a failure streak)."""
    ON_RECOVERY = "onRecovery"
    """A scheduled occurrence completed after a streak of faulted ones."""
    DEADLINE = "deadline"
    """A scheduled occurrence had not succeeded its deadline's ``after`` past its scheduled time."""


@dataclass(frozen=True, slots=True)
class Notification:
    """An action a job sends when it notifies (any action type), retried under ``retry_policy``; its
    placeholders are always expanded. A notification that fails is retried and recorded, and never fails the
    job."""

    action: Action
    retry_policy: RetryPolicy = DEFAULT_RETRY_POLICY


@dataclass(frozen=True, slots=True)
class Deadline:
    """``notifications.deadline``: ``notification`` is sent when a scheduled occurrence has not succeeded
    ``after`` its scheduled time (whether its attempts failed, still run, or never ran)."""

    after: Duration
    notification: Notification


@dataclass(frozen=True, slots=True)
class Notifications:
    """A job's ``properties.notifications``: the action of each :class:`NotificationKind` it has."""

    on_failure: Notification | None = None
    on_recovery: Notification | None = None
    deadline: Deadline | None = None

    def of(self, kind: NotificationKind) -> Notification | None:
        """The notification of ``kind`` (None: the job has none)."""
        if kind is NotificationKind.DEADLINE:
            return self.deadline.notification if self.deadline is not None else None
        return self.on_failure if kind is NotificationKind.ON_FAILURE else self.on_recovery

    def items(self) -> tuple[tuple[NotificationKind, Notification], ...]:
        """Each notification the job has, with its kind, in the wire's order."""
        return tuple((kind, found) for kind in NotificationKind if (found := self.of(kind)) is not None)
