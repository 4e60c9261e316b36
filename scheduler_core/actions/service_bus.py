"""Service Bus queue and topic actions (``ServiceBusQueue``, ``ServiceBusTopic``) with ``azure-servicebus``.

The namespace endpoint comes from the setting ``SCHEDULER_SERVICE_BUS_ENDPOINT``: a DNS suffix
(``servicebus.windows.net``, the default, or a sovereign cloud's) gives ``{namespace}.{suffix}`` over
AMQP/TLS (a namespace with a dot is a fully qualified host name); a URL with ``{namespace}`` is used as
given, and the scheme ``amqp://`` (with a port) turns TLS off, as the SDK's ``UseDevelopmentEmulator=true``
does, for the Service Bus emulator and tests (see :mod:`scheduler_core.endpoints`).

Authentication: ``sasKeyName`` + ``sasKey`` (a shared access key), or, without a ``sasKey``, the function
app's own identity (``DefaultAzureCredential`` by default), which needs the *Azure Service Bus Data
Sender* role on the entity or namespace. The identity is presented only to hosts under the configured
endpoint (and ``SCHEDULER_IDENTITY_ALLOWED_HOSTS``, see :class:`scheduler_core.identity.IdentityScope`):
an action naming any other host fails without connecting.

Message mapping: ``message`` is the body (a ``data`` section, UTF-8); ``customMessageProperties`` become
application properties; ``brokeredMessageProperties`` map to their AMQP fields: ``contentType``,
``correlationId``, ``label`` (subject), ``messageId`` (default: the execution id, so Service Bus duplicate
detection can drop a repeated attempt), ``partitionKey`` (``x-opt-partition-key``), ``replyTo``,
``replyToSessionId`` (reply-to-group-id), ``sessionId`` (group-id), ``timeToLive`` (header ttl; a time to live
beyond the header's range, 2**32 - 1 ms or about 49.7 days, is left out, so the entity's own default time to
live applies, which a message's can never exceed anyway), ``to``,
``viaPartitionKey`` (``x-opt-via-partition-key``), ``scheduledEnqueueTimeUtc``
(``x-opt-scheduled-enqueue-time``). ``forcePersistence`` is accepted and ignored: every Service Bus
message is persisted today. ``transportType`` ``NetMessaging`` (a retired .NET protocol) is sent over AMQP.

Opening a sender costs about half a second in the SDK (connection, CBS token, link), so senders are kept
per namespace endpoint + entity + credential, reused by every action that targets them, and closed after
``idle_seconds`` without use (or on :meth:`ServiceBusSender.close`). Sends on one sender are serialised.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from azure.core.credentials import AzureNamedKeyCredential, TokenCredential
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus import ServiceBusSender as SdkSender
from azure.servicebus.exceptions import (
    MessageSizeExceededError,
    MessagingEntityDisabledError,
    MessagingEntityNotFoundError,
    OperationTimeoutError,
    ServiceBusAuthenticationError,
    ServiceBusAuthorizationError,
    ServiceBusConnectionError,
    ServiceBusQuotaExceededError,
    ServiceBusServerBusyError,
)

from scheduler_core.actions.base import ActionContext, ActionResult, Failure
from scheduler_core.actions.outcome import outcome_message, shown
from scheduler_core.actions.placeholders import expand_message
from scheduler_core.actions.redact import first_line, redact
from scheduler_core.adapters.azure.credentials import LazyCredential
from scheduler_core.endpoints import DEFAULT_SERVICE_BUS_ENDPOINT, Namespace, namespace_endpoint
from scheduler_core.identity import IdentityScope
from scheduler_core.model.actions import (
    BrokeredMessageProperties,
    ServiceBusAction,
    ServiceBusQueueAction,
    ServiceBusTopicAction,
)

log = logging.getLogger("scheduler_core.actions.service_bus")

__all__ = ["Namespace", "ServiceBusSender", "build_message", "namespace_endpoint"]

DEFAULT_ENDPOINT = DEFAULT_SERVICE_BUS_ENDPOINT
DEFAULT_IDLE_SECONDS = 300.0
#: The AMQP header's ``ttl`` is an unsigned 32-bit number of milliseconds.
MAX_HEADER_TTL = timedelta(milliseconds=2**32 - 1)

CredentialFactory = Callable[[], TokenCredential]
#: A failed send as a history message and a decision read it: outcome, detail, how it failed, its status
#: (None: none).
Refusal = tuple[str, str, Failure, int | None]
#: The status Service Bus's REST API answers a send with for the error the broker gave over AMQP ("Send
#: Message": 401 authorization failure, 403 quota exceeded or message too large, 410 no such queue or topic;
#: 503 server busy, "Status and error codes"); a broker error not named here carries none.
REST_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (ServiceBusAuthenticationError, 401),
    (ServiceBusAuthorizationError, 401),
    (ServiceBusQuotaExceededError, 403),
    (MessageSizeExceededError, 403),
    (MessagingEntityNotFoundError, 410),
    (ServiceBusServerBusyError, 503),
)


def build_message(action: ServiceBusAction, context: ActionContext) -> ServiceBusMessage:
    """The AMQP message of a Service Bus action (its body's placeholders expanded when
    ``context.expand_placeholders`` is on). Raises ``ValueError`` for values Service Bus refuses (e.g. a
    partitionKey that differs from the sessionId)."""
    props = action.brokered_properties or BrokeredMessageProperties()
    ttl = props.time_to_live.value if props.time_to_live is not None else None
    if ttl is not None and ttl > MAX_HEADER_TTL:
        ttl = None  # the entity's default time to live (see the module's docstring)
    message = ServiceBusMessage(
        expand_message(action, context) or "",
        application_properties={str(k): str(v) for k, v in (action.custom_properties or {}).items()} or None,
        session_id=props.session_id,
        message_id=props.message_id or context.execution_id,
        scheduled_enqueue_time_utc=props.scheduled_enqueue_time_utc,
        time_to_live=ttl,
        content_type=props.content_type,
        correlation_id=props.correlation_id,
        subject=props.label,
        to=props.to,
        reply_to=props.reply_to,
        reply_to_session_id=props.reply_to_session_id,
    )
    if props.partition_key:
        message.partition_key = props.partition_key
    if props.via_partition_key:
        annotations = message.raw_amqp_message.annotations
        if annotations is None:
            message.raw_amqp_message.annotations = annotations = {}
        annotations[b"x-opt-via-partition-key"] = props.via_partition_key
    return message


@dataclass
class _Entry:
    """One open sender. ``lock`` serialises its use; ``closed`` is set under the lock before closing."""

    client: ServiceBusClient
    sender: SdkSender
    last_used: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False

    def shutdown(self) -> None:
        for item in (self.sender, self.client):
            try:
                item.close()
            except Exception:  # closing a broken connection must not fail anything
                log.debug("closing a Service Bus sender failed", exc_info=True)


class ServiceBusSender:
    """Sends :class:`~scheduler_core.model.actions.ServiceBusQueueAction` and
    :class:`~scheduler_core.model.actions.ServiceBusTopicAction` over reused senders."""

    def __init__(
        self,
        endpoint: str = DEFAULT_ENDPOINT,
        credential_factory: CredentialFactory | None = None,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        timeout: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        identity_hosts: tuple[str, ...] = (),
    ) -> None:
        self.endpoint = endpoint
        #: Where the app's identity may go (a namespace without a sasKey must be under it); ``identity_hosts``
        #: is the setting SCHEDULER_IDENTITY_ALLOWED_HOSTS (``default_runner`` passes it).
        self.scope = IdentityScope(service_bus_endpoint=endpoint, extra_hosts=identity_hosts)
        self.idle_seconds = idle_seconds
        self.timeout = timeout
        self._clock = clock
        self._identity = LazyCredential(credential_factory).get
        self._entries: dict[tuple[str, bool, str, str, str], _Entry] = {}
        self._lock = threading.Lock()
        self._janitor: threading.Thread | None = None
        self._stop = threading.Event()
        #: Senders opened so far (a benchmark and tests read it to show reuse).
        self.opened = 0

    # ------------------------------------------------------------------------------------ senders

    def _entry(self, where: Namespace, kind: str, entity: str, key_name: str | None, key: str | None) -> _Entry:
        identity = f"sas:{key_name}:{hashlib.sha256(key.encode()).hexdigest()}" if key is not None else "identity"
        cache_key = (where.host.lower(), where.use_tls, kind, entity.lower(), identity)
        with self._lock:
            entry = self._entries.get(cache_key)
            if entry is not None and not entry.closed:
                entry.last_used = self._clock()
                return entry
        credential: Any = AzureNamedKeyCredential(key_name or "", key) if key is not None else self._identity()
        client = ServiceBusClient(
            where.host,
            credential,
            use_tls=where.use_tls,
            retry_total=1,
            retry_backoff_factor=0.2,
            retry_backoff_max=2,
        )
        sender = client.get_queue_sender(entity) if kind == "queue" else client.get_topic_sender(entity)
        created = _Entry(client, sender, self._clock())
        with self._lock:
            entry = self._entries.get(cache_key)
            if entry is not None and not entry.closed:  # another thread won the race
                created.shutdown()
                return entry
            self._entries[cache_key] = created
            self.opened += 1
            self._start_janitor()
        return created

    def _drop(self, entry: _Entry) -> None:
        """Forget and close a sender after a failure (called with ``entry.lock`` held)."""
        entry.closed = True
        with self._lock:
            for key, value in list(self._entries.items()):
                if value is entry:
                    del self._entries[key]
        entry.shutdown()

    def _start_janitor(self) -> None:
        if self._janitor is None or not self._janitor.is_alive():
            self._stop.clear()
            self._janitor = threading.Thread(target=self._sweep_loop, name="servicebus-idle-senders", daemon=True)
            self._janitor.start()

    def _sweep_loop(self) -> None:
        interval = max(0.05, min(self.idle_seconds / 2, 30.0))
        while not self._stop.wait(interval):
            self.close_idle()
            with self._lock:
                if not self._entries:
                    self._janitor = None
                    return

    def close_idle(self) -> int:
        """Close the senders unused for ``idle_seconds`` (a sender busy right now waits for the next sweep);
        returns how many were closed."""
        now = self._clock()
        closing: list[_Entry] = []
        with self._lock:
            for key, entry in list(self._entries.items()):
                if now - entry.last_used < self.idle_seconds or not entry.lock.acquire(blocking=False):
                    continue
                try:
                    entry.closed = True
                    del self._entries[key]
                    closing.append(entry)
                finally:
                    entry.lock.release()
        for entry in closing:
            entry.shutdown()
        return len(closing)

    def open_senders(self) -> int:
        with self._lock:
            return len(self._entries)

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            with entry.lock:
                entry.closed = True
            entry.shutdown()

    # --------------------------------------------------------------------------------------- send

    def send(self, action: ServiceBusQueueAction | ServiceBusTopicAction, context: ActionContext) -> ActionResult:
        """Send the action's message. The history message starts with the outcome (``Message sent``, ``Entity
        not found: <what the broker said>``, ``Access denied ...``; see :mod:`~scheduler_core.actions.outcome`)
        and never quotes the key."""
        action_type, kind, entity, namespace = action.type_name, action.entity_kind, action.entity, action.namespace
        key = (action.sas_key.reveal() or None) if action.sas_key is not None else None
        key_name = (action.authentication.sas_key_name or None) if action.authentication is not None else None
        where = f"{kind} '{entity}' in namespace '{namespace}'"
        try:
            message = build_message(action, context)
        except ValueError as exc:
            return self._failed(action_type, ("Message not sent", _said(exc), Failure.NOT_SENT, None), where, key)
        endpoint = namespace_endpoint(self.endpoint, namespace)
        if key is None:
            refusal = self.scope.service_bus_refusal(endpoint.hostname)
            if refusal is not None:  # checked when the job was written too; the settings may have changed
                detail = f"no sasKey is given, and {refusal}; host '{endpoint.hostname}' is not one of them"
                return self._failed(action_type, ("Message not sent", detail, Failure.REFUSED, None), where, key)
        try:
            self._send(endpoint, kind, entity, key_name, key, message)
        except Exception as exc:
            return self._failed(action_type, self._describe(exc, key is not None), where, key)
        sent = f"Message sent (message id '{message.message_id}')"
        return ActionResult(True, outcome_message(action_type, sent, where=where))

    def _send(
        self, endpoint: Namespace, kind: str, entity: str, key_name: str | None, key: str | None, message: Any
    ) -> None:
        """Send on the cached sender. A sender closed by the idle sweep meanwhile is replaced; a reused
        sender whose connection broke (the service drops idle connections) is replaced once at once."""
        reconnected = False
        for _ in range(4):
            opened_before = self.opened
            entry = self._entry(endpoint, kind, entity, key_name, key)
            reused = self.opened == opened_before
            with entry.lock:
                if entry.closed:
                    continue
                try:
                    entry.sender.send_messages(message, timeout=self.timeout)
                except ServiceBusConnectionError:
                    self._drop(entry)
                    if reused and not reconnected:
                        reconnected = True
                        continue
                    raise
                except Exception:
                    self._drop(entry)  # the next attempt reconnects
                    raise
                entry.last_used = self._clock()
                return
        raise ServiceBusConnectionError(message="no usable sender after several attempts")

    @staticmethod
    def _describe(exc: Exception, with_key: bool) -> Refusal:
        """(outcome, detail, how it failed, status) of a failed send: what happened, then what the broker or the
        SDK said (its first line) and the error's class. The status is the one Service Bus's REST API answers
        for the broker's error (:data:`REST_STATUS`), so that ``retryOn`` reads queue and HTTP failures alike."""
        name = type(exc).__name__
        said = f"{_said(exc)} ({name})"
        status = next((code for kind, code in REST_STATUS if isinstance(exc, kind)), None)
        failed = Failure.STATUS if status is not None else Failure.ERROR
        if isinstance(exc, MessagingEntityNotFoundError):
            return "Entity not found", said, failed, status
        if isinstance(exc, MessagingEntityDisabledError):
            return "Entity disabled", said, failed, status
        if isinstance(exc, (ServiceBusAuthenticationError, ServiceBusAuthorizationError)):
            how = (
                "the shared access key was refused (check sasKeyName and sasKey)"
                if with_key
                else "the function app's identity was refused (grant it Azure Service Bus Data Sender)"
            )
            return "Access denied", f"{how}; {said}", failed, status
        if isinstance(exc, (ServiceBusServerBusyError, ServiceBusQuotaExceededError)):
            return "Throttled or over quota", f"{said}; the retry policy applies", failed, status
        if isinstance(exc, OperationTimeoutError):
            return "Timed out", said, Failure.TIMEOUT, None
        if isinstance(exc, MessageSizeExceededError):
            return "Message too large", said, failed, status
        if isinstance(exc, ServiceBusConnectionError):
            return (
                "Could not send",
                f"the connection or the link was refused or broke; check that the namespace and the entity "
                f"exist; {said}",
                Failure.CONNECTION_ERROR,
                None,
            )
        return "Send failed", said, Failure.ERROR, None

    @staticmethod
    def _failed(action_type: str, refusal: Refusal, where: str, key: str | None) -> ActionResult:
        outcome, detail, failure, status = refusal
        text = redact(outcome_message(action_type, outcome, detail, where), [key])
        return ActionResult(False, text, failure=failure, service_status=status)


def _said(exc: Exception) -> str:
    """The first line of what an SDK error says, shown (:func:`~scheduler_core.actions.outcome.shown`)."""
    return shown(first_line(str(getattr(exc, "message", None) or exc)), one_line=True)
