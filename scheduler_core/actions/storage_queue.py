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
names the account, the queue and the storage error code, and never the token.
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
    ServiceResponseError,
)
from azure.core.pipeline.transport import RequestsTransport
from azure.storage.queue import LinearRetry, QueueClient

from scheduler_core.actions.base import ActionContext, ActionResult
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
                return self._failed(
                    f"message not added to {where}: no sasToken is given, and {refusal}; host '{host}' is not "
                    "one of them",
                    token,
                )
        options: dict[str, Any] = {}
        if token is None and url.startswith("http://"):
            options["enforce_https"] = False  # a local emulator; in Azure the endpoint is always https
        try:
            client = self._client(url, queue, token)
            sent = client.send_message(content, **options)
        except ResourceNotFoundError as exc:
            code = self._code(exc, "QueueNotFound")
            return self._failed(f"{where} was not found ({code})", token)
        except ClientAuthenticationError as exc:
            code = self._code(exc, f"HTTP {getattr(exc, 'status_code', None) or type(exc).__name__}")
            how = (
                "the SAS token is invalid, expired or lacks the 'add' permission"
                if token
                else ("the function app's identity was refused (grant it Storage Queue Data Message Sender)")
            )
            return self._failed(f"access to {where} denied: {how} ({code})", token)
        except HttpResponseError as exc:
            status = getattr(exc, "status_code", None)
            code = self._code(exc, str(getattr(exc, "reason", None) or ""))
            if status in (429, 500, 503) or code in ("ServerBusy", "OperationTimedOut"):
                text = f"{where} is throttled or unavailable (HTTP {status}{', ' + str(code) if code else ''})"
                return self._failed(f"{text}; the retry policy applies", token)
            if status == 403:
                return self._failed(
                    f"access to {where} denied: the SAS token is invalid, expired or lacks the 'add' permission "
                    f"(HTTP 403{', ' + str(code) if code else ''})",
                    token,
                )
            return self._failed(f"sending to {where} failed (HTTP {status}{', ' + str(code) if code else ''})", token)
        except (ServiceRequestError, ServiceResponseError) as exc:
            reason = first_line(str(exc.message if hasattr(exc, "message") else exc))
            return self._failed(f"could not reach {where} at '{url}': {type(exc).__name__}: {reason}", token)
        except ValueError as exc:  # a malformed token or account URL, reported by the SDK before sending
            return self._failed(f"could not send to {where}: {first_line(str(exc))}", token)
        message_id = getattr(sent, "id", None) or ""
        return ActionResult(
            True,
            f"StorageQueue Action - Message added to {where} (message id '{message_id}', "
            f"{len(content)} characters, format {self.message_format})",
        )

    @staticmethod
    def _code(exc: Exception, default: str = "") -> str:
        """The storage error code (``QueueNotFound``, ``AuthenticationFailed``, ...) of an SDK error."""
        code = getattr(exc, "error_code", None)
        return str(getattr(code, "value", code)) if code else default

    @staticmethod
    def _failed(text: str, token: str | None) -> ActionResult:
        return ActionResult(False, redact(f"StorageQueue Action - {text}", [token]))

    def close(self) -> None:
        with self._lock:
            self._clients.clear()
        self._session.close()
