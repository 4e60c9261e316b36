"""Construction of Azure Storage clients from the settings.

Queue messages are base64-encoded text everywhere: ``host.json`` keeps the Functions host's default
``"messageEncoding": "base64"``, so every sender and reader goes through :func:`queue_client`.
"""

from __future__ import annotations

import functools
import re
import urllib.request
from collections.abc import Mapping
from typing import Any

import requests
import urllib3
from azure.core.pipeline.transport import RequestsTransport
from azure.data.tables import TableServiceClient
from azure.storage.queue import (
    QueueClient,
    QueueServiceClient,
    TextBase64DecodePolicy,
    TextBase64EncodePolicy,
)
from requests.structures import CaseInsensitiveDict
from requests.utils import check_header_validity, get_encoding_from_headers, requote_uri
from urllib3 import BaseHTTPResponse
from urllib3.connectionpool import ConnectionPool

from scheduler_core.adapters.azure.credentials import LazyCredential
from scheduler_core.settings import Settings

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


#: URLs that requests would prepare unchanged but for :func:`requests.utils.requote_uri`: ASCII, a lowercase
#: http(s) scheme and host, a path without dot segments, a query if not empty, only characters a URI allows,
#: percent-escapes in upper case. The storage SDKs build every URL this way (keys and names percent-encoded);
#: anything else takes requests' full preparation.
_CANONICAL_URL = re.compile(
    r"https?://[a-z0-9][a-z0-9.\-]*(?::[1-9][0-9]{0,4})?"
    r"(?:/(?!\.\.?(?:[/?]|$))(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-F]{2})*)+"
    r"(?:\?(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-F]{2})+)?"
)
#: The scheme and authority of a URL.
_ORIGIN = re.compile(r"[^:/?#]*://[^/?#]*")


class _OneWriteConnection(urllib3.connection.HTTPConnection):
    """A connection that sends a request's head and body in one write when the body is text or bytes (every
    storage call with a body): one system call and one segment instead of two, so the storage service does
    not wake up for a head whose body is still on its way. The bytes sent are the same."""

    _held: bytes | None = None  # the head, waiting for the body
    _holding = False  # a body follows the head that is being sent

    def request(
        self,
        method: str,
        url: str,
        body: Any = None,
        headers: Any = None,
        **kwargs: Any,
    ) -> None:
        self._held, self._holding = None, isinstance(body, str | bytes) and len(body) > 0
        try:
            super().request(method, url, body=body, headers=headers, **kwargs)
            if self._held is not None:  # no body was sent after all: the head goes alone
                super().send(self._held)
        finally:
            self._held, self._holding = None, False

    def send(self, data: Any) -> None:
        if self._holding and isinstance(data, bytes):
            if self._held is None:
                self._held = data  # the head (http.client sends it before the body)
                return
            data, self._held, self._holding = self._held + data, None, False
        super().send(data)


class _OneWriteTlsConnection(_OneWriteConnection, urllib3.connection.HTTPSConnection):
    """:class:`_OneWriteConnection` over TLS."""


class _OneWritePool(urllib3.HTTPConnectionPool):
    ConnectionCls = _OneWriteConnection


class _OneWriteTlsPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _OneWriteTlsConnection


class _StorageAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter, lighter for the storage clients: the connection pool of a host (and TLS settings)
    is looked up once, not rebuilt from the URL on every call; a response is not searched for cookies
    (storage sets none, and these clients send none); a request leaves in one write
    (:class:`_OneWriteConnection`)."""

    def __init__(self, pool_connections: int, pool_maxsize: int, max_retries: requests.adapters.Retry) -> None:
        super().__init__(pool_connections=pool_connections, pool_maxsize=pool_maxsize, max_retries=max_retries)
        self._pools: dict[tuple[str, Any, Any], ConnectionPool] = {}

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any) -> None:
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _OneWritePool, "https": _OneWriteTlsPool}

    def get_connection_with_tls_context(
        self,
        request: requests.PreparedRequest,
        verify: bool | str | None,
        proxies: Mapping[str, str] | None = None,
        cert: Any = None,
    ) -> ConnectionPool:
        origin = _ORIGIN.match(request.url) if not proxies and isinstance(request.url, str) else None
        if origin is None:
            return super().get_connection_with_tls_context(request, verify, proxies, cert)
        key = (origin.group(), verify, tuple(cert) if isinstance(cert, list) else cert)
        pool = self._pools.get(key)
        if pool is None or getattr(pool, "pool", None) is None:  # not seen yet, or closed (evicted)
            pool = self._pools[key] = super().get_connection_with_tls_context(request, verify, proxies, cert)
        return pool

    def build_response(self, req: requests.PreparedRequest, resp: BaseHTTPResponse) -> requests.Response:
        response = requests.Response()
        response.status_code = resp.status
        response.headers = CaseInsensitiveDict(resp.headers)
        response.encoding = get_encoding_from_headers(response.headers)
        response.raw = resp
        response.reason = resp.reason or ""
        response.url = req.url.decode("utf-8") if isinstance(req.url, bytes) else str(req.url)
        response.request = req
        response.connection = self
        return response


class _StorageSession(requests.Session):
    """A session for the storage clients' own calls (no proxies: see :func:`storage_transport`).

    azure-core's transport calls :meth:`request` with a method, an SDK-built URL, headers and a str or bytes
    body, redirects off. For exactly that, the request is prepared as requests would prepare it (same URL,
    headers checked the same way, same body and ``Content-Length``) and sent straight to its adapter, without
    requests' per-call merging of session settings, cookie jars, hooks and redirect look-ahead, which cost
    about a fifth of the CPU time of a storage call. Any other call goes the ordinary way."""

    def request(  # type: ignore[override]
        self,
        method: str,
        url: str,
        data: Any = None,
        headers: Any = None,
        files: Any = None,
        timeout: Any = None,
        allow_redirects: bool = True,
        proxies: Any = None,
        stream: bool | None = None,
        verify: Any = None,
        cert: Any = None,
        **kwargs: Any,
    ) -> requests.Response:
        ordinary = (
            kwargs
            or files
            or proxies
            or allow_redirects
            or self.trust_env
            or self.proxies
            or self.auth is not None
            or len(self.cookies)
            or not isinstance(url, str)
            or not isinstance(data, str | bytes | None)
            or _CANONICAL_URL.fullmatch(url) is None
        )
        if ordinary:
            return super().request(
                method,
                url,
                data=data,
                headers=headers,
                files=files,
                timeout=timeout,
                allow_redirects=allow_redirects,
                proxies=proxies,
                stream=stream,
                verify=verify,
                cert=cert,
                **kwargs,
            )
        prepared = requests.PreparedRequest()
        prepared.method = method.upper()
        prepared.url = requote_uri(url)
        merged: CaseInsensitiveDict[Any] = CaseInsensitiveDict(self.headers)  # the session's, then the call's
        merged.update(headers or {})
        prepared.headers = CaseInsensitiveDict()
        for name, value in merged.items():
            if value is not None:  # None removes a session default, as in requests
                check_header_validity((name, value))
                prepared.headers[name] = value
        prepared.body = data or None
        if prepared.body is not None:
            length = len(data.encode("utf-8") if isinstance(data, str) else data)
            if length:
                prepared.headers["Content-Length"] = str(length)
        elif prepared.method not in ("GET", "HEAD") and prepared.headers.get("Content-Length") is None:
            prepared.headers["Content-Length"] = "0"
        prepared.hooks = {"response": []}
        settings = {
            "stream": False if stream is None else stream,
            "verify": self.verify if verify is None else verify,
            "cert": self.cert if cert is None else cert,
        }
        return self.send(prepared, timeout=timeout, allow_redirects=False, proxies={}, **settings)

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        if self.trust_env or kwargs.get("allow_redirects", True) or request.hooks.get("response"):
            return super().send(request, **kwargs)
        kwargs.pop("allow_redirects")
        response = self.get_adapter(url=str(request.url)).send(request, **kwargs)
        if not kwargs.get("stream"):
            response.content  # noqa: B018 (read the body now, as requests does)
        return response


@functools.cache
def storage_transport() -> RequestsTransport:
    """The one HTTP transport of the app's own storage clients (tables and queues), shared by all of them.

    Its session keeps up to :data:`POOL_CONNECTIONS` connections per host. It reads proxy settings
    (``HTTPS_PROXY``, ``NO_PROXY``, ...) from the environment only when some are set: with none set,
    requests would still look them up, and for ``~/.netrc``, on every call, which is about a seventh of
    the CPU time of a storage call; and then its calls skip the rest of requests' per-call work that does
    nothing here (:class:`_StorageSession`). Every call is bounded by :data:`CONNECT_TIMEOUT_SECONDS` and
    :data:`READ_TIMEOUT_SECONDS`."""
    proxied = bool(urllib.request.getproxies())
    session = requests.Session() if proxied else _StorageSession()
    session.trust_env = proxied
    adapter = (requests.adapters.HTTPAdapter if proxied else _StorageAdapter)(
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


def table_service(settings: Settings) -> TableServiceClient:
    """A Table service client: connection string, or the app's managed identity."""
    if settings.storage_connection_string:
        return TableServiceClient.from_connection_string(
            settings.storage_connection_string, transport=storage_transport()
        )
    endpoint = f"https://{settings.storage_account_name}.table.core.windows.net"
    return TableServiceClient(endpoint=endpoint, credential=_default_credential(), transport=storage_transport())


def _queue_endpoint(settings: Settings) -> str:
    return f"https://{settings.storage_account_name}.queue.core.windows.net"


def queue_service(settings: Settings) -> QueueServiceClient:
    """A Queue service client, for managing queues (not for messages: see :func:`queue_client`)."""
    if settings.storage_connection_string:
        return QueueServiceClient.from_connection_string(
            settings.storage_connection_string, transport=storage_transport()
        )
    return QueueServiceClient(
        account_url=_queue_endpoint(settings), credential=_default_credential(), transport=storage_transport()
    )


def queue_client(settings: Settings, name: str) -> QueueClient:
    """A client for one queue that encodes and decodes messages as base64 text, as the Functions host does.

    (``QueueServiceClient.get_queue_client`` does not pass encode policies on, so build the client here.)
    """
    policies: dict[str, Any] = {
        "message_encode_policy": TextBase64EncodePolicy(),
        "message_decode_policy": TextBase64DecodePolicy(),
        "transport": storage_transport(),
    }
    if settings.storage_connection_string:
        return QueueClient.from_connection_string(settings.storage_connection_string, name, **policies)
    return QueueClient(_queue_endpoint(settings), name, credential=_default_credential(), **policies)
