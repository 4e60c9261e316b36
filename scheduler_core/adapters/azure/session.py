"""The ``requests`` session under the app's own storage clients: a request goes straight to the adapter.

azure-core's ``RequestsTransport`` calls ``Session.request`` for every storage call, and ``requests`` spends
more CPU there than on the wire: it builds a ``Request``, merges the session's settings into it (headers,
cookies, hooks, authentication, ``.netrc``, proxies and certificates from the environment), and on the way
back runs hooks, fills the cookie jar and looks for a redirect to offer. For a storage call none of that
applies: the pipeline sets every header, follows no redirect (``allow_redirects=False``), sends no cookie and
no session authentication. :class:`StorageSession` sends exactly what ``requests`` would have sent, the
session's default headers merged under the request's as ``requests`` merges them, through the same mounted
adapter, and answers a ``requests.Response`` read as ``requests`` reads it (the body read unless ``stream``).

Anything else goes the whole way through ``requests``: a session that reads the environment (``trust_env``:
set when proxy settings exist, :func:`~scheduler_core.adapters.azure.clients.storage_transport`), proxies,
files, redirects to follow, hooks, cookies or authentication on the session, or any argument this path does
not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from time import perf_counter
from typing import Any

import requests
from requests.structures import CaseInsensitiveDict

__all__ = ["StorageSession"]

#: The arguments of ``Session.request`` the direct path reads (with ``method`` and ``url``).
_DIRECT = frozenset({"headers", "data", "files", "timeout", "verify", "cert", "allow_redirects", "proxies", "stream"})


class StorageSession(requests.Session):
    """A ``requests`` session whose plain requests skip the session's merging (see the module)."""

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        if args or not self._direct(kwargs):
            return super().request(method, url, *args, **kwargs)
        prepared = requests.PreparedRequest()
        prepared.prepare(method=method, url=url, headers=self._headers(kwargs.get("headers")), data=kwargs.get("data"))
        # requests' merge_setting: the request's value unless None, else the session's
        stream = bool(self.stream if kwargs.get("stream") is None else kwargs["stream"])
        verify: bool | str = True if self.verify is None else self.verify
        if kwargs.get("verify") is not None:
            verify = kwargs["verify"]
        cert = self.cert if kwargs.get("cert") is None else kwargs["cert"]
        adapter = self.get_adapter(url=prepared.url or "")
        start = perf_counter()
        response = adapter.send(
            prepared, stream=stream, timeout=kwargs.get("timeout"), verify=verify, cert=cert, proxies={}
        )
        response.elapsed = timedelta(seconds=perf_counter() - start)
        if not stream:
            response.content  # noqa: B018  read now, as requests does
        return response

    def _direct(self, kwargs: Mapping[str, Any]) -> bool:
        """Whether a request with ``kwargs`` may take the direct path."""
        return (
            not self.trust_env
            and not self.proxies
            and self.auth is None
            and not self.cookies
            and not any(self.hooks.values())
            and not self.params
            and kwargs.keys() <= _DIRECT
            and kwargs.get("allow_redirects") is False
            and not kwargs.get("proxies")
            and not kwargs.get("files")
        )

    def _headers(self, headers: Mapping[str, Any] | None) -> CaseInsensitiveDict[Any]:
        """The session's headers with ``headers`` over them, a header set to None left out (requests'
        ``merge_setting``)."""
        merged: CaseInsensitiveDict[Any] = CaseInsensitiveDict(self.headers)
        for name, value in (headers or {}).items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
        return merged
