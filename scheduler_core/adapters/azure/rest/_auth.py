"""How a request to the Table service proves who sends it: one class per scheme, each adding its part to a
request's headers or query (:class:`SharedKeyLite`, :class:`Sas`, :class:`Bearer`).

Each signs exactly the request that goes on the wire: the path and query as sent, the headers as sent.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
import time
from typing import Protocol

from azure.core.credentials import TokenCredential

#: The scope of a storage token (``azure-data-tables``' ``STORAGE_OAUTH_SCOPE``).
STORAGE_SCOPE = "https://storage.azure.com/.default"
#: A token is fetched again this many seconds before it expires (azure-core's bearer policy's margin).
REFRESH_MARGIN_SECONDS = 300


class Auth(Protocol):
    """A scheme: :meth:`sign` sets ``Authorization`` (or adds to ``query``) for one request."""

    def sign(self, method: str, path: str, query: str, headers: dict[str, str]) -> str:
        """Sign the request; returns its query string (``query``, or ``query`` with a signature added).
        ``path`` is the URL's path as sent (encoded), ``headers`` holds ``x-ms-date`` already."""
        ...

    def forget(self) -> None:
        """Drop anything cached (a token refused by the service is fetched again)."""
        ...


class SharedKeyLite:
    """The account key (a connection string's ``AccountKey``): ``SharedKeyLite account:signature``. The Table
    service signs the date and the canonicalised resource (``/account/path``, plus ``?comp=`` when the query
    names one); the Queue service (``service="queue"``) the method, the content type, the ``x-ms-`` headers
    and the same resource."""

    def __init__(self, account: str, key: str, *, service: str = "table") -> None:
        self.account = account
        self.service = service
        self._key = base64.b64decode(key)

    def sign(self, method: str, path: str, query: str, headers: dict[str, str]) -> str:
        resource = f"/{self.account}{path}"
        for part in query.split("&"):
            if part.startswith("comp="):
                resource += "?" + part
        if self.service == "table":
            signed = f"{headers['x-ms-date']}\n{resource}"
        else:
            named = sorted(
                (name.lower(), value.strip()) for name, value in headers.items() if name.lower().startswith("x-ms-")
            )
            canonical = "".join(f"{name}:{value}\n" for name, value in named)
            signed = f"{method}\n\n{headers.get('Content-Type', '')}\n\n{canonical}{resource}"
        digest = hmac.new(self._key, signed.encode(), hashlib.sha256).digest()
        headers["Authorization"] = f"SharedKeyLite {self.account}:{base64.b64encode(digest).decode()}"
        return query

    def forget(self) -> None:
        pass


class Sas:
    """A shared access signature (a connection string's ``SharedAccessSignature``): added to the query."""

    def __init__(self, signature: str) -> None:
        self.signature = signature.lstrip("?")

    def sign(self, method: str, path: str, query: str, headers: dict[str, str]) -> str:
        return f"{query}&{self.signature}" if query else self.signature

    def forget(self) -> None:
        pass


class Bearer:
    """An Entra ID token of ``credential`` (the app's managed identity) for :data:`STORAGE_SCOPE`, kept until
    :data:`REFRESH_MARGIN_SECONDS` before it expires; one fetch at a time."""

    def __init__(self, credential: TokenCredential) -> None:
        self.credential = credential
        self._token = ""
        self._expires = 0.0
        self._lock = threading.Lock()

    def sign(self, method: str, path: str, query: str, headers: dict[str, str]) -> str:
        headers["Authorization"] = f"Bearer {self._current()}"
        return query

    def _current(self) -> str:
        if time.time() < self._expires - REFRESH_MARGIN_SECONDS:
            return self._token
        with self._lock:
            if time.time() >= self._expires - REFRESH_MARGIN_SECONDS:
                token = self.credential.get_token(STORAGE_SCOPE)
                self._token, self._expires = token.token, float(token.expires_on)
            return self._token

    def forget(self) -> None:
        with self._lock:
            self._expires = 0.0
