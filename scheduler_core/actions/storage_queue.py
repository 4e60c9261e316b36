"""Storage queue actions (``type: StorageQueue``) with ``azure-storage-queue``.

The account endpoint is derived from ``storageAccount`` through a template (setting
``SCHEDULER_STORAGE_QUEUE_ENDPOINT``): a bare DNS suffix such as ``core.windows.net`` (the default) or
``core.chinacloudapi.cn`` gives ``https://{account}.queue.{suffix}``; a URL containing ``{account}``
(``http://127.0.0.1:10001/{account}`` for Azurite) is used as given.

Authentication: the job's ``sasToken``, with or without its leading ``?``; without one, the function
app's own identity (a token credential, ``DefaultAzureCredential`` by default), which needs the
*Storage Queue Data Message Sender* role on the queue or account. The identity is presented only to hosts
under the configured endpoint (and ``SCHEDULER_IDENTITY_ALLOWED_HOSTS``, see
:class:`scheduler_core.identity.IdentityScope`): an action naming any other host fails without connecting.

With ``action.expandPlaceholders`` the message's placeholders are expanded first
(:mod:`scheduler_core.actions.placeholders`). The message is written in one of three formats (setting
``SCHEDULER_STORAGE_QUEUE_MESSAGE_FORMAT``):

* ``envelope`` (default): Azure Scheduler's ``StorageQueueMessage`` XML envelope (execution tag, client
  request id, expected execution time, job and collection names, the message), base64-encoded as the
  .NET storage client of Azure Scheduler did, so existing consumers and Functions queue triggers
  (which decode base64 by default) read it unchanged;
* ``base64``: the message text only, base64-encoded;
* ``text``: the message text as is.

Every failure (missing queue, bad or expired token, throttling, network) is a failed result whose message
starts with the outcome and the storage error code, then the first line of what the service said, then the
account and the queue (:mod:`~scheduler_core.actions.outcome`), and never quotes the token.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from xml.sax.saxutils import escape

import requests
from azure.core.credentials import TokenCredential
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceRequestTimeoutError,
    ServiceResponseError,
    ServiceResponseTimeoutError,
)
from azure.core.pipeline.transport import RequestsTransport
from azure.storage.queue import LinearRetry, QueueClient

from scheduler_core.actions.base import ActionContext, ActionResult, Failure
from scheduler_core.actions.outcome import failure_reason, outcome_message, shown
from scheduler_core.actions.placeholders import expand_message
from scheduler_core.actions.redact import first_line, redact
from scheduler_core.adapters.azure.credentials import LazyCredential
from scheduler_core.endpoints import DEFAULT_STORAGE_QUEUE_ENDPOINT, account_url
from scheduler_core.identity import IdentityScope
from scheduler_core.model.actions import StorageQueueAction
from scheduler_core.recurrence import format_instant

MESSAGE_FORMATS = ("envelope", "base64", "text")
__all__ = ["MESSAGE_FORMATS", "StorageQueueSender", "account_url", "encode_message", "envelope"]

DEFAULT_ENDPOINT = DEFAULT_STORAGE_QUEUE_ENDPOINT
#: Queue clients kept (one per account, queue and credential); each is cheap, the shared pool is not.
MAX_CLIENTS = 256

CredentialFactory = Callable[[], TokenCredential]
#: A failed send as a history message and a decision read it: outcome, detail, how it failed, the service's
#: HTTP status (None: no answer).
Refusal = tuple[str, str, Failure, int | None]


def envelope(message: str, context: ActionContext) -> str:
    """Azure Scheduler's ``StorageQueueMessage`` XML around the message text."""
    job = context.job_name
    collection = context.collection_name
    return (
        '<?xml version="1.0" encoding="utf-16"?>\n'
        '<StorageQueueMessage xmlns:xsd="http://www.w3.org/2001/XMLSchema" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        f"  <ExecutionTag>{escape(context.execution_id)}</ExecutionTag>\n"
        f"  <ClientRequestId>{escape(context.execution_id)}</ClientRequestId>\n"
        f"  <ExpectedExecutionTime>{format_instant(context.expected_time)}</ExpectedExecutionTime>\n"
        f"  <SchedulerJobId>{escape(job)}</SchedulerJobId>\n"
        f"  <SchedulerJobCollectionId>{escape(collection)}</SchedulerJobCollectionId>\n"
        "  <Region />\n"
        f"  <Message>{escape(message)}</Message>\n"
        "</StorageQueueMessage>"
    )


def encode_message(message: str, context: ActionContext, message_format: str) -> str:
    if message_format == "text":
        return message
    text = envelope(message, context) if message_format == "envelope" else message
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


class StorageQueueSender:
    """Sends :class:`~scheduler_core.model.actions.StorageQueueAction`. ``credential_factory`` gives the
    identity used without a SAS token (called once, on first need); ``session`` is the pooled HTTP
    transport shared by every queue client."""

    def __init__(
        self,
        endpoint: str = DEFAULT_ENDPOINT,
        credential_factory: CredentialFactory | None = None,
        message_format: str = "envelope",
        timeout: float = 60.0,
        session: requests.Session | None = None,
        identity_hosts: tuple[str, ...] = (),
    ) -> None:
        if message_format not in MESSAGE_FORMATS:
            raise ValueError(f"message format must be one of {', '.join(MESSAGE_FORMATS)}")
        self.endpoint = endpoint
        #: Where the app's identity may go (an account without a sasToken must be under it); ``identity_hosts``
        #: is the setting SCHEDULER_IDENTITY_ALLOWED_HOSTS (``default_runner`` passes it).
        self.scope = IdentityScope(storage_queue_endpoint=endpoint, extra_hosts=identity_hosts)
        self.message_format = message_format
        self.timeout = timeout
        self._identity = LazyCredential(credential_factory).get
        self._session = session or requests.Session()
        self._transport = RequestsTransport(session=self._session, session_owner=False)
        self._clients: OrderedDict[tuple[str, str, str], QueueClient] = OrderedDict()
        self._lock = threading.Lock()

    def _client(self, url: str, queue: str, token: str | None) -> QueueClient:
        key = (url, queue, hashlib.sha256(token.encode()).hexdigest() if token is not None else "")
        with self._lock:
            client = self._clients.get(key)
            if client is not None:
                self._clients.move_to_end(key)
                return client
        credential: Any = token if token is not None else self._identity()
        client = QueueClient(
            url,
            queue,
            credential=credential,
            transport=self._transport,
            retry_policy=LinearRetry(backoff=1, retry_total=1, random_jitter_range=1),
            connection_timeout=min(10.0, self.timeout),
            read_timeout=self.timeout,
        )
        with self._lock:
            self._clients[key] = client
            while len(self._clients) > MAX_CLIENTS:
                self._clients.popitem(last=False)
        return client

    def send(self, action: StorageQueueAction, context: ActionContext) -> ActionResult:
        """Add the action's message to its queue. The history message starts with the outcome (``Message
        added``, ``Queue not found (QueueNotFound): <the service's message>``, ``Access denied ...``; see
        :mod:`~scheduler_core.actions.outcome`) and never quotes the token."""
        account = action.storage_account
        queue = action.queue_name
        raw_token = action.sas_token.reveal() if action.sas_token is not None else None
        token = raw_token.strip().lstrip("?") if raw_token else None
        where = f"queue '{queue}' of storage account '{account}'"
        url = account_url(self.endpoint, account)
        content = encode_message(expand_message(action, context) or "", context, self.message_format)
        if token is None:
            host = self.scope.storage_queue_host(account)
            refusal = self.scope.storage_queue_refusal(host)
            if refusal is not None:  # checked when the job was written too; the settings may have changed
                detail = f"no sasToken is given, and {refusal}; host '{host}' is not one of them"
                return self._failed(("Message not added", detail, Failure.REFUSED, None), where, token)
        options: dict[str, Any] = {}
        if token is None and url.startswith("http://"):
            options["enforce_https"] = False  # a local emulator; in Azure the endpoint is always https
        try:
            client = self._client(url, queue, token)
            sent = client.send_message(content, **options)
        except Exception as exc:
            return self._failed(self._describe(exc, url, token), where, token)
        message_id = getattr(sent, "id", None) or ""
        return ActionResult(
            True,
            outcome_message(
                "StorageQueue",
                f"Message added (message id '{message_id}', {len(content)} characters, format {self.message_format})",
                where=where,
            ),
        )

    @classmethod
    def _describe(cls, exc: Exception, url: str, token: str | None) -> Refusal:
        """(outcome, detail, how it failed, the service's HTTP status) of a failed send: the storage error code
        and the first line of the service's message (or of the SDK error's). Raises ``exc`` again when it is
        not a storage or SDK error."""
        said = _said(exc)
        status = getattr(exc, "status_code", None) if isinstance(exc, HttpResponseError) else None
        if isinstance(exc, ResourceNotFoundError):
            return f"Queue not found ({cls._code(exc, 'QueueNotFound')})", said, Failure.STATUS, status or 404
        if isinstance(exc, ClientAuthenticationError):
            code = cls._code(exc, f"HTTP {status or type(exc).__name__}")
            return "Access denied", _join(f"{_denied(token)} ({code})", said), Failure.STATUS, status or 403
        if isinstance(exc, HttpResponseError) and status is not None:
            code = cls._code(exc, str(getattr(exc, "reason", None) or ""))
            http = f"HTTP {status}{', ' + code if code else ''}"
            if status in (429, 500, 503) or code in ("ServerBusy", "OperationTimedOut"):
                outcome = f"Throttled or unavailable ({http})"
                return outcome, _join(said, "the retry policy applies"), Failure.STATUS, status
            if status == 403:
                return "Access denied", _join(f"{_denied(token)} ({http})", said), Failure.STATUS, status
            return f"Failed ({http})", said, Failure.STATUS, status
        if isinstance(exc, (ServiceRequestTimeoutError, ServiceResponseTimeoutError)):
            return "Timed out", f"{failure_reason(exc)} at '{url}'", Failure.TIMEOUT, None
        if isinstance(exc, (ServiceRequestError, ServiceResponseError)):
            return "Could not reach the account", f"{failure_reason(exc)} at '{url}'", Failure.CONNECTION_ERROR, None
        if isinstance(exc, ValueError):  # a malformed token or account URL, reported by the SDK before sending
            return "Message not added", said, Failure.NOT_SENT, None
        if isinstance(exc, HttpResponseError):
            return "Failed", said, Failure.ERROR, None
        raise exc

    @staticmethod
    def _code(exc: Exception, default: str = "") -> str:
        """The storage error code (``QueueNotFound``, ``AuthenticationFailed``, ...) of an SDK error."""
        code = getattr(exc, "error_code", None)
        return str(getattr(code, "value", code)) if code else default

    @staticmethod
    def _failed(refusal: Refusal, where: str, token: str | None) -> ActionResult:
        outcome, detail, failure, status = refusal
        text = redact(outcome_message("StorageQueue", outcome, detail, where), [token])
        return ActionResult(False, text, failure=failure, service_status=status)

    def close(self) -> None:
        with self._lock:
            self._clients.clear()
        self._session.close()


def _said(exc: Exception) -> str:
    """The first line of what an SDK error says (the service's own message for a storage error), shown."""
    return shown(first_line(str(getattr(exc, "message", None) or exc)), one_line=True)


def _join(*parts: str) -> str:
    return "; ".join(part for part in parts if part)


def _denied(token: str | None) -> str:
    """Why a send is refused, by the credential it was sent with."""
    if token:
        return "the SAS token is invalid, expired or lacks the 'add' permission"
    return "the function app's identity was refused (grant it Storage Queue Data Message Sender)"
