"""Construction of Azure Storage clients from the settings.

Queue messages are base64-encoded text everywhere: ``host.json`` keeps the Functions host's default
``"messageEncoding": "base64"``, so every sender and reader goes through :func:`queue_client`.
"""

from __future__ import annotations

import functools
import urllib.request
from typing import Any

import requests
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.core.pipeline.transport import RequestsTransport
from azure.data.tables import TableServiceClient
from azure.storage.queue import (
    QueueClient,
    QueueServiceClient,
    TextBase64DecodePolicy,
    TextBase64EncodePolicy,
)

from scheduler_core.adapters.azure.credentials import LazyCredential
from scheduler_core.adapters.azure.rest import RestQueue, RestTableService
from scheduler_core.adapters.azure.rest._auth import Auth, Bearer, Sas, SharedKeyLite
from scheduler_core.adapters.azure.session import StorageSession
from scheduler_core.settings import Settings, StorageAccount

#: The app's own identity, for identity-based storage connections (built on first use).
_identity = LazyCredential()
#: Connections kept open per storage host: every queue worker and HTTP thread of an instance may talk to
#: storage at once (requests' default pool of 10 would close and reopen connections under load).
POOL_CONNECTIONS = 64
#: Storage calls give up on a connection that does not open within this many seconds...
CONNECT_TIMEOUT_SECONDS = 5.0
#: ...or that sends nothing for this long while an answer is awaited (azure-core's default is 300 s for
#: both, so a connection silently dropped by the network held a worker for 5 minutes per try). Table and
#: queue operations answer within a few seconds (the service's own limit is 30 s for a batch); a timed-out
#: try is retried by the client's retry policy (3 connection and 3 read retries, exponential back-off from
#: 0.8 s for tables, from 15 s for queues), and the pipeline's writes after an action retry again on top
#: (``pipeline/durable.py``).
READ_TIMEOUT_SECONDS = 20.0


def _default_credential() -> Any:
    return _identity.get()


@functools.cache
def storage_transport() -> RequestsTransport:
    """The one HTTP transport of the app's own storage clients (tables and queues), shared by all of them.

    Its session (:class:`~scheduler_core.adapters.azure.session.StorageSession`: a storage call goes straight to
    the adapter) keeps up to :data:`POOL_CONNECTIONS` connections per host. It reads proxy settings
    (``HTTPS_PROXY``, ``NO_PROXY``, ...) from the environment only when some are set: with none set,
    requests would still look them up, and for ``~/.netrc``, on every call, which is about a seventh of
    the CPU time of a storage call. Every call is bounded by :data:`CONNECT_TIMEOUT_SECONDS` and
    :data:`READ_TIMEOUT_SECONDS`."""
    session = StorageSession()
    session.trust_env = bool(urllib.request.getproxies())
    adapter = requests.adapters.HTTPAdapter(
        pool_connections=POOL_CONNECTIONS,
        pool_maxsize=POOL_CONNECTIONS,
        max_retries=requests.adapters.Retry(total=False, redirect=False, raise_on_status=False),
    )
    for scheme in ("http://", "https://"):
        session.mount(scheme, adapter)
    return RequestsTransport(
        session=session,
        session_owner=False,
        connection_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
    )


def table_service(settings: Settings, account: StorageAccount | None = None) -> TableServiceClient:
    """A Table service client: connection string, or the app's managed identity. ``account``: a storage account
    of the app's other than AzureWebJobsStorage's (``Settings.history_storage``); None: AzureWebJobsStorage's."""
    connection, endpoint = _where(settings, account, "table")
    if connection:
        return TableServiceClient.from_connection_string(connection, transport=storage_transport())
    return TableServiceClient(endpoint=endpoint, credential=_default_credential(), transport=storage_transport())


def data_tables(settings: Settings, account: StorageAccount | None = None) -> RestTableService | TableServiceClient:
    """The Table service the stores, the claims and the flow limits read and write through: the app's own
    client (:class:`~scheduler_core.adapters.azure.rest.RestTableService`, about a fifth of the SDK's CPU per
    call), signed as :func:`table_service`'s would be (account key, shared access signature or the app's
    identity); the SDK's client when proxy settings exist (the app's own client connects directly)."""
    sdk = table_service(settings, account)
    if urllib.request.getproxies():
        return sdk
    credential = sdk.credential
    auth: Auth
    if isinstance(credential, AzureNamedKeyCredential):
        auth = SharedKeyLite(credential.named_key.name, credential.named_key.key)
    elif isinstance(credential, AzureSasCredential):
        auth = Sas(credential.signature)
    else:
        auth = Bearer(credential)
    return RestTableService(sdk.url, auth, connect_timeout=CONNECT_TIMEOUT_SECONDS, read_timeout=READ_TIMEOUT_SECONDS)


def _where(settings: Settings, account: StorageAccount | None, service: str) -> tuple[str | None, str]:
    """The connection string, or else the ``service`` endpoint, of ``account`` (None: AzureWebJobsStorage's)."""
    if account is not None:
        return account.connection_string, account.endpoint
    if settings.storage_connection_string:
        return settings.storage_connection_string, ""
    return None, f"https://{settings.storage_account_name}.{service}.core.windows.net"


def queue_service(settings: Settings, account: StorageAccount | None = None) -> QueueServiceClient:
    """A Queue service client, for managing queues (not for messages: see :func:`queue_client`)."""
    connection, endpoint = _where(settings, account, "queue")
    if connection:
        return QueueServiceClient.from_connection_string(connection, transport=storage_transport())
    return QueueServiceClient(account_url=endpoint, credential=_default_credential(), transport=storage_transport())


def queue_client(
    settings: Settings,
    name: str,
    *,
    decoded: bool = True,
    account: StorageAccount | None = None,
    retries: int | None = None,
) -> QueueClient:
    """A client for one queue that encodes and decodes messages as base64 text, as the Functions host does
    (``decoded=False``: one that leaves the content as stored, for a peek that reads only when messages were
    sent, so that a message that is not base64 cannot make it fail). ``account``: as for :func:`table_service`
    (``Settings.execution_storage`` for the execution queues). ``retries``: how many times a failed call is
    tried again (None: the queue client's default, 3 times from 15 s: far too long for a health probe).

    (``QueueServiceClient.get_queue_client`` does not pass encode policies on, so build the client here.)
    """
    policies: dict[str, Any] = {"transport": storage_transport()}
    if decoded:
        policies.update(message_encode_policy=TextBase64EncodePolicy(), message_decode_policy=TextBase64DecodePolicy())
    if retries is not None:
        policies.update(retry_total=retries)
    connection, endpoint = _where(settings, account, "queue")
    if connection:
        return QueueClient.from_connection_string(connection, name, **policies)
    return QueueClient(endpoint, name, credential=_default_credential(), **policies)


def rest_queue(client: QueueClient, **options: Any) -> RestQueue | None:
    """The app's own client of ``client``'s queue (:class:`~scheduler_core.adapters.azure.rest.RestQueue`, about
    a fifth of the SDK's CPU per call), signed as ``client`` is (account key, shared access signature or a
    token credential); None when proxy settings exist (the app's own client connects directly). ``options``:
    :class:`RestQueue`'s (``retries``, ``initial``, ``base``, ``jitter``, ``tls``; timeouts: this module's)."""
    if urllib.request.getproxies():
        return None
    credential: Any = client.credential
    auth: Auth
    if credential is None:
        auth = Sas(client._query_str)  # the signature the connection string gave the SDK's client
    elif hasattr(credential, "account_key"):
        auth = SharedKeyLite(credential.account_name, credential.account_key, service="queue")
    else:
        auth = Bearer(credential)
    options.setdefault("connect_timeout", CONNECT_TIMEOUT_SECONDS)
    options.setdefault("read_timeout", READ_TIMEOUT_SECONDS)
    return RestQueue(f"{client.scheme}://{client.primary_hostname}", client.queue_name, auth, **options)
