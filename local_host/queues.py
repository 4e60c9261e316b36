"""Queue triggers of the local host, with the semantics of the Functions host's queue extension.

For each queue function: poll with exponential back-off up to ``maxPollingInterval`` while the queue is
empty; fetch ``batchSize`` messages at a time and fetch again when fewer than ``newBatchThreshold`` are in
flight; run the function; delete the message on success; on failure make it visible again after
``visibilityTimeout``, or move it to ``<queue>-poison`` once it has been dequeued ``maxDequeueCount`` times.

Two cases never run the function, as in the extension (azure-sdk-for-net, ``sdk/storage/``
``Microsoft.Azure.WebJobs.Extensions.Storage.Common/src/Shared/Queues/QueueProcessor.cs`` and ``QueueListener.cs``,
``Microsoft.Azure.WebJobs.Extensions.Storage.Queues/src/QueueServiceClientProvider.cs``):

- A message received with a dequeue count *above* ``maxDequeueCount`` (its earlier receives ended without a
  result: a worker or host that died, a lease that ran out) goes to ``<queue>-poison`` and is deleted
  before the function is invoked: ``QueueProcessor.BeginProcessingMessageAsync`` calls
  ``HandlePoisonMessageAsync`` (``CopyMessageToPoisonQueueAsync``, then ``DeleteMessageAsync``) and returns
  false when ``message.DequeueCount > MaxDequeueCount``, and ``QueueListener.ProcessMessageAsync`` then returns
  without executing. (A failed run at ``DequeueCount >= MaxDequeueCount`` goes there too, after the run:
  ``CompleteProcessingMessageAsync``; below it, ``ReleaseMessageAsync`` makes it visible again after
  ``visibilityTimeout``.)
- With ``messageEncoding`` base64, a message whose text is not base64 goes to ``<queue>-poison`` at once and
  is deleted, whatever its dequeue count: ``QueueServiceClientProvider.CreateClient`` subscribes
  ``QueueClientOptions.MessageDecodingFailed`` with a handler that, for a received message, calls the queue
  processor's ``HandlePoisonMessageAsync`` with a poison queue client built *without* encoding, so the text
  lands there as it was stored. The other messages of the batch run as usual. (azure-storage-queue's decode
  policy would fail the whole receive instead, hiding every message of the batch for the processing lease;
  so the pollers receive the stored text and decode each message themselves.)

Each trigger's ``connection`` is resolved as the extension resolves it (``local_host/connections.py``): a
connection string, or an identity-based connection (``<connection>__queueServiceUri``, ``__serviceUri`` or
``__accountName``) reached with a token credential (in Azure the app's managed identity; here, for a local
Azurite started with ``--oauth basic`` and no identity at hand, a stand-in). A connection the extension would
refuse stops the host at start-up with an error naming the setting. The clients verify TLS with the CA bundle
of ``REQUESTS_CA_BUNDLE`` when it is set (:func:`ca_bundle`).

A message is copied to the poison queue as the text it was stored with. The extension copies
``message.Body`` (the decoded bytes; ``MessageText`` in earlier releases) through the poison queue's client,
which encodes it again: the same text for any canonical base64, what every sender of this app writes.

The functions themselves run as the Python worker runs sync functions: on one thread pool shared by every
queue function of the app, ``PYTHON_THREADPOOL_THREAD_COUNT`` threads (an app setting: environment or
``local.settings.json`` ``Values``; 40 when unset, the value the Bicep sets in Azure, see docs/deploy.md
§11). Messages fetched
beyond that wait for a thread, invisible, as they wait in the worker's queue in Azure. The local host
(``local_host/runtime.py``) hands the pollers functions bound to its worker (``local_host/worker.py``), which
enforces ``functionTimeout`` and fails the invocations of a worker that is restarted or dies: such a failure
settles the message like any other (visible again after ``visibilityTimeout``, its dequeue count raised by
the next receive).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import logging
import os
import ssl
import threading
import time
import urllib.request
import uuid
from collections.abc import Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import requests
from azure.core.credentials import TokenCredential
from azure.core.exceptions import ResourceExistsError
from azure.core.pipeline.transport import RequestsTransport
from azure.functions.queue import QueueMessage as FunctionQueueMessage
from azure.storage.queue import ExponentialRetry, QueueClient, QueueMessage

from local_host import connections
from local_host.app_index import QueueFunction, resolve_setting_references
from local_host.connections import StorageConnection
from local_host.hostjson import QueueOptions, invocation_log
from local_host.http_server import invoke
from local_host.worker import HostStoppingError
from scheduler_core.adapters.azure.clients import rest_queue
from scheduler_core.adapters.azure.rest import RestQueue
from scheduler_core.errors import ConfigurationError
from scheduler_core.storage.names import POISON_SUFFIX

log = logging.getLogger("local_host")

#: How long a fetched message stays invisible while its function runs (the host renews; we do not need to).
PROCESSING_LEASE_SECONDS = 600
MIN_POLLING_INTERVAL = 0.1


#: Bounds of every queue call (azure-core's default is 300 s each): a dropped connection holds a poller
#: for at most these, not five minutes.
CONNECT_TIMEOUT_SECONDS = 5
READ_TIMEOUT_SECONDS = 20


#: The Python worker's setting for the size of its thread pool, which runs every sync function.
THREAD_COUNT_SETTING = "PYTHON_THREADPOOL_THREAD_COUNT"
#: Its value when unset: what the Bicep sets in Azure (``pythonThreadpoolThreadCount`` of infra/main.bicep), so
#: that local runs and the benchmarks have Azure's concurrency. A test keeps the two equal.
DEFAULT_THREAD_COUNT = 40


def worker_thread_count(environ: Mapping[str, str] | None = None) -> int:
    """Threads that run queue functions: ``PYTHON_THREADPOOL_THREAD_COUNT``, 40 when unset or empty.

    The worker accepts 1 and more; where it would log a warning and fall back to its default for a value
    that is not a number, the local host refuses to start, naming the setting.
    """
    env = os.environ if environ is None else environ
    text = env.get(THREAD_COUNT_SETTING, "").strip()
    if not text:
        return DEFAULT_THREAD_COUNT
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise ConfigurationError(
            f"setting {THREAD_COUNT_SETTING} must be a whole number of threads, 1 or more, got {text!r}"
        )
    return count


def worker_pool(threads: int) -> ThreadPoolExecutor:
    """The pool queue functions run on, shared by all of them as the Python worker's pool is."""
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="worker")


#: First back-off of a poller's failed queue call, about that of the Functions host's storage clients (Azure.Core's
#: default retry: 0.8 s, exponential, 3 tries). azure-storage-queue's own default waits 15 s first: one
#: connection dropped under load then stopped a poller, and every execution behind it, for 15 s.
RETRY_BACKOFF_SECONDS = 1

#: Connections kept open to the storage host by the pollers' clients together: every worker thread settles
#: (deletes) its message through its poller's client, so the pool must hold one per thread, or each call
#: beyond requests' default of 10 opens and drops a connection ("Connection pool is full").
POOL_CONNECTIONS = 128


#: Where the pollers' clients find the certificate authorities they trust: requests' own variables, read as
#: requests reads them (its session ignores the environment here, see :func:`_transport`); unset: certifi's.
#: A local Azurite with HTTPS (``local_host/azurite.py``, ``AzuriteHttps``) has a certificate of the user's
#: own CA, which the user names here.
CA_BUNDLE_SETTINGS = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def ca_bundle(environ: Mapping[str, str] | None = None) -> str | bool:
    """The CA bundle the pollers' clients verify TLS with (:data:`CA_BUNDLE_SETTINGS`), True for the default."""
    env = os.environ if environ is None else environ
    return next((env[name] for name in CA_BUNDLE_SETTINGS if env.get(name)), True)


@functools.cache
def _transport(verify: str | bool = True) -> RequestsTransport:
    """One pooled HTTP transport for the pollers' queue clients (the Functions host keeps its connections),
    per CA bundle ``verify``."""
    session = requests.Session()
    session.trust_env = bool(urllib.request.getproxies())
    adapter = requests.adapters.HTTPAdapter(pool_connections=POOL_CONNECTIONS, pool_maxsize=POOL_CONNECTIONS)
    for scheme in ("http://", "https://"):
        session.mount(scheme, adapter)
    return RequestsTransport(
        session=session,
        session_owner=False,
        connection_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
        connection_verify=verify,
    )


def _queue_client(connection: StorageConnection, queue: str, credential: TokenCredential | None) -> QueueClient:
    """A client of ``queue`` on ``connection`` (its connection string, else its service URI with ``credential``)
    that sends and receives messages' text as stored (no encode or decode policy): the pollers decode each
    message themselves (:func:`decode_message_text`), so that one message that is not base64 cannot fail a
    whole receive. (The extension builds a ``QueueServiceClient`` from the connection and takes the queue's
    client from it: ``QueueListenerFactory``; the queue's URL is the service URI and the queue's name.)"""
    options: dict[str, Any] = {
        "connection_timeout": CONNECT_TIMEOUT_SECONDS,
        "read_timeout": READ_TIMEOUT_SECONDS,
        "transport": _transport(ca_bundle()),
        "retry_policy": ExponentialRetry(initial_backoff=RETRY_BACKOFF_SECONDS, increment_base=2, retry_total=3),
    }
    if connection.connection_string is not None:
        return QueueClient.from_connection_string(connection.connection_string, queue, **options)
    return QueueClient(str(connection.service_uri), queue, credential=credential, **options)


def _message_client(client: QueueClient) -> QueueClient | RestQueue:
    """The client a poller takes, settles and poisons messages through: the app's own client of ``client``'s
    queue (:func:`scheduler_core.adapters.azure.clients.rest_queue`: the SDK's calls and retry rules at about a
    fifth of its CPU; on Azure this work is the .NET extension's, not the app's), with the same retries,
    timeouts and CA bundle as ``client``; ``client`` itself when proxy settings exist."""
    verify = ca_bundle()
    tls = ssl.create_default_context(cafile=verify) if isinstance(verify, str) else None
    messages = rest_queue(
        client,
        retries=3,
        initial=RETRY_BACKOFF_SECONDS,
        base=2,
        tls=tls,
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
    )
    return client if messages is None else messages


#: What ``Convert.FromBase64String`` (the .NET decoding the extension's base64 encoding uses) skips.
_BASE64_WHITESPACE = str.maketrans("", "", " \t\r\n")


def decode_message_text(text: str, encoding: str) -> bytes | None:
    """The body of a message stored as ``text`` under host.json's ``messageEncoding``; None when it is not
    valid base64 with ``base64`` (the extension's ``MessageDecodingFailed``).

    base64 is decoded as .NET's ``Convert.FromBase64String`` decodes it: whitespace is ignored, any other
    character outside the alphabet, a length that is not a multiple of 4 or misplaced padding is an error.
    """
    if encoding != "base64":
        return text.encode("utf-8")
    try:
        return base64.b64decode(text.translate(_BASE64_WHITESPACE), validate=True)
    except (binascii.Error, ValueError):
        return None


class QueuePoller:
    """Polls one queue for one function in a thread and runs its messages on ``pool``.

    Up to ``batchSize + newBatchThreshold`` messages are in flight at once, as the host's queue extension
    fetches them; how many run at once is the pool's size (see :func:`worker_pool`). Without a pool the
    poller makes one of :func:`worker_thread_count` threads and shuts it down in :meth:`join`.
    """

    def __init__(
        self, function: QueueFunction, options: QueueOptions, stop: threading.Event, pool: Executor | None = None
    ) -> None:
        self.function = function
        self.options = options
        self.queue_name = resolve_setting_references(function.queue_name)
        self.poison_queue_name = self.queue_name + POISON_SUFFIX
        #: The trigger's connection, resolved as the queue extension resolves it (``local_host/connections.py``),
        #: and the token credential of an identity-based one (None with a connection string).
        self.connection = connections.resolve(function.connection, "queue")
        self.credential = connections.token_credential(self.connection) if self.connection.identity_based else None
        if self.credential is not None:
            log.info(
                "queue %s of function %s: identity-based connection %s from setting %s, token from %s",
                self.queue_name,
                function.name,
                self.connection.name,
                self.connection.source,
                type(self.credential).__name__,
            )
        self._queue = _queue_client(self.connection, self.queue_name, self.credential)
        self._poison = _queue_client(self.connection, self.poison_queue_name, self.credential)
        self._messages = _message_client(self._queue)
        self._poison_messages = _message_client(self._poison)
        self._stop = stop
        self._in_flight = 0
        self._lock = threading.Condition()
        self._own_pool = pool is None
        self._pool: Executor = worker_pool(worker_thread_count()) if pool is None else pool
        self._thread = threading.Thread(target=self._run, name=f"poll-{function.name}", daemon=True)

    def start(self) -> None:
        for queue in (self._queue, self._poison):
            with contextlib.suppress(ResourceExistsError):
                queue.create_queue()
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)
        if self._own_pool:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def _run(self) -> None:
        delay = MIN_POLLING_INTERVAL
        while not self._stop.is_set():
            with self._lock:
                while self._in_flight > self.options.new_batch_threshold and not self._stop.is_set():
                    self._lock.wait(0.5)
                room = self.options.batch_size
            try:
                messages = list(
                    self._messages.receive_messages(
                        messages_per_page=room, max_messages=room, visibility_timeout=PROCESSING_LEASE_SECONDS
                    )
                )
            except Exception as exc:
                log.warning("queue %s: receive failed (%s); retrying", self.queue_name, exc)
                messages = []
            if not messages:
                if self._stop.wait(delay):
                    return
                delay = min(delay * 2, max(self.options.max_polling_interval, MIN_POLLING_INTERVAL))
                continue
            delay = MIN_POLLING_INTERVAL
            with self._lock:
                self._in_flight += len(messages)
            for message in messages:
                self._pool.submit(self._process, message)

    def _process(self, message: QueueMessage) -> None:
        try:
            self.process(message)
        finally:
            with self._lock:
                self._in_flight -= 1
                self._lock.notify_all()

    def process(self, message: QueueMessage) -> None:
        """Run the function on one received message and settle it (delete, release or poison).

        A message that is not valid base64 (with ``messageEncoding`` base64) or that was received more than
        ``maxDequeueCount`` times goes to the poison queue without running (see the module's docstring).
        """
        text = message.content if isinstance(message.content, str) else (message.content or b"").decode()
        started = time.perf_counter()
        invocation = uuid.uuid4().hex[:12]
        dequeue_count = message.dequeue_count or 0
        body = decode_message_text(text, self.options.message_encoding)
        if body is None:
            outcome = self._poison_unrun(message, text, "its text is not valid base64 (messageEncoding base64)")
        elif dequeue_count > self.options.max_dequeue_count:
            reason = f"dequeued {dequeue_count} times, more than maxDequeueCount {self.options.max_dequeue_count}"
            outcome = self._poison_unrun(message, text, reason)
        else:
            outcome = self._invoke_and_settle(message, text, body)
        invocation_log(self.function.name).info(
            "function=%s trigger=queue queue=%s message=%s dequeue_count=%s -> %s in %.1f ms (invocation %s)",
            self.function.name,
            self.queue_name,
            message.id,
            message.dequeue_count,
            outcome,
            (time.perf_counter() - started) * 1000,
            invocation,
        )

    def _invoke_and_settle(self, message: QueueMessage, text: str, body: bytes) -> str:
        request = FunctionQueueMessage(  # type: ignore[no-untyped-call]
            id=message.id,
            body=body,
            dequeue_count=message.dequeue_count,
            expiration_time=message.expires_on,
            insertion_time=message.inserted_on,
            time_next_visible=message.next_visible_on,
            pop_receipt=message.pop_receipt,
        )
        try:
            invoke(self.function.handler, request)
        except HostStoppingError:  # never ran: left hidden for the processing lease, as a fetched message is
            return "not run, the host is stopping (visible again after its processing lease)"
        except Exception as exc:  # the function's failure, its functionTimeout, or its worker's end
            return self._settle_failure(message, text, exc)
        try:
            self._messages.delete_message(message.id, message.pop_receipt)
        except Exception as exc:  # the message comes back after its lease; the function drops duplicates
            log.warning("queue %s: message %s ran but was not deleted (%s)", self.queue_name, message.id, exc)
            return "ok, not deleted (it comes back after its lease)"
        return "ok"

    def _poison_unrun(self, message: QueueMessage, text: str, reason: str) -> str:
        """Move a message to the poison queue without running the function (``HandlePoisonMessageAsync``)."""
        log.warning(
            "function=%s message=%s: %s; moving it to queue '%s' without running the function",
            self.function.name,
            message.id,
            reason,
            self.poison_queue_name,
        )
        try:
            self._poison_message(message, text)
        except Exception as exc:  # left invisible for the processing lease: the next receive tries again
            log.warning("queue %s: message %s not moved to poison (%s)", self.queue_name, message.id, exc)
            return f"not run ({reason}); not moved to poison, it comes back after its lease"
        return f"not run ({reason}), moved to {self.poison_queue_name}"

    def _poison_message(self, message: QueueMessage, text: str) -> None:
        """``CopyMessageToPoisonQueueAsync`` then ``DeleteMessageAsync``: the text as stored, then the original."""
        self._poison_messages.send_message(text)
        self._messages.delete_message(message.id, message.pop_receipt)

    def _settle_failure(self, message: QueueMessage, text: str, exc: Exception) -> str:
        """``CompleteProcessingMessageAsync`` of a failed invocation: poison at ``maxDequeueCount``, else
        ``ReleaseMessageAsync`` (visible again after ``visibilityTimeout``)."""
        log.error("function=%s message=%s raised %s: %s", self.function.name, message.id, type(exc).__name__, exc)
        if (message.dequeue_count or 0) >= self.options.max_dequeue_count:
            self._poison_message(message, text)
            return f"failed, moved to {self.poison_queue_name}"
        self._messages.update_message(
            message.id, message.pop_receipt, visibility_timeout=int(self.options.visibility_timeout)
        )
        return f"failed, visible again in {self.options.visibility_timeout:g} s"
