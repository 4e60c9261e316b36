"""One storage endpoint (a Table or a Queue service): where requests go, how they are signed, and how a failed
one is tried again."""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from azure.core.exceptions import ServiceRequestError, ServiceResponseError

from scheduler_core.adapters.azure.rest._auth import Auth, Bearer
from scheduler_core.adapters.azure.rest._http import Answer, Connections, http_date
from scheduler_core.adapters.azure.rest._retry import Retries


class Endpoint:
    """``endpoint`` (``https://account.<service>.core.windows.net``, or the emulator's
    ``http://host:port/account``), signed by ``auth``, every request with ``headers`` (the service's version
    among them); ``retries(options)`` gives a call its retry rules. ``tls``: how an HTTPS endpoint's certificate
    is verified (None: certifi's CAs, as the SDK's). A token (``Bearer``) is refused for an ``http`` endpoint."""

    def __init__(
        self,
        endpoint: str,
        auth: Auth,
        headers: Mapping[str, str],
        retries: Callable[[Mapping[str, Any]], Retries],
        *,
        connect_timeout: float,
        read_timeout: float,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        parts = urlsplit(endpoint)
        scheme = parts.scheme or "https"
        if isinstance(auth, Bearer) and scheme != "https":
            raise ValueError(
                "a token is sent over HTTPS only (as the SDK's clients refuse a token credential over HTTP)"
            )
        port = parts.port or (443 if scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self.url = f"{scheme}://{parts.netloc}{self.prefix}"
        self.auth = auth
        self.headers = dict(headers)
        self.retries = retries
        self.connections = Connections(scheme, parts.hostname or "", port, connect_timeout, read_timeout, tls)

    def call(
        self,
        method: str,
        path: str,
        *,
        query: str = "",
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Answer:
        """One call, tried again by its retry rules; ``path`` below the endpoint, encoded. ``options``: the
        SDK's per-call ``connection_timeout``, ``read_timeout`` and ``retry_total``. A bearer token the service
        refuses (401) is fetched again once."""
        options = options or {}
        retries = self.retries(options)
        challenged = False
        full = self.prefix + path
        while True:
            sent = {"x-ms-date": http_date(), **self.headers, **(headers or {})}
            signed = self.auth.sign(method, full, query, sent)
            try:
                answer = self.connections.request(
                    method,
                    f"{full}?{signed}" if signed else full,
                    sent,
                    body,
                    connect_timeout=options.get("connection_timeout"),
                    read_timeout=options.get("read_timeout"),
                )
            except (ServiceRequestError, ServiceResponseError) as error:
                wait = retries.after_error(method, connecting=isinstance(error, ServiceRequestError))
                if wait is None:
                    raise
                time.sleep(wait)
                continue
            if answer.status == 401 and isinstance(self.auth, Bearer) and not challenged:
                challenged = True
                self.auth.forget()
                continue
            wait = retries.after_answer(method, answer.status, answer.headers)
            if wait is None:
                return answer
            time.sleep(wait)

    def close(self) -> None:
        self.connections.close()
