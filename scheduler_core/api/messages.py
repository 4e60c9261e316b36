"""Plain request and response values of the management API (no Azure Functions types)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from scheduler_core.errors import MethodNotAllowedError, SchedulerError

#: The methods that read: all a read-only route (``/``, ``/health``, ``/openapi``, ``/dashboard``) answers; any
#: other gets an ARM 405 (:class:`MethodNotAllowed`) with them as ``Allow``.
READ_METHODS = frozenset({"GET", "HEAD"})


class MethodNotAllowed(MethodNotAllowedError):
    """A 405 that knows the methods its resource answers: :meth:`ApiResponse.error` lists them in ``Allow``,
    which RFC 9110 §15.5.6 requires of every 405. The management API, ``/dashboard`` and ``/health`` refuse
    a method with it (``/openapi`` sets the same ``Allow`` itself)."""

    def __init__(self, message: str, allowed: Iterable[str], code: str = MethodNotAllowedError.code) -> None:
        super().__init__(message)
        #: The methods the resource answers, upper case, sorted, each once.
        self.allowed: tuple[str, ...] = tuple(sorted({method.upper() for method in allowed}))
        #: The ARM error code: ``InvalidHttpVerb`` (ARM's), or a route's own documented one.
        self.code = code

    @property
    def allow_header(self) -> str:
        """The value of ``Allow``: the methods, comma-separated."""
        return ", ".join(self.allowed)


@dataclass(frozen=True)
class ApiRequest:
    method: str
    url: str  # absolute URL as the client sent it (scheme://host/path?query)
    path: str  # the part after the route prefix, percent-encoded, e.g. "subscriptions/x/providers/..."
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes = b""

    @staticmethod
    def path_from_route(decoded: str) -> str:
        """``path`` from a route value the host has already percent-decoded: encoded again, segment by
        segment, because the API decodes each name exactly once. A segment keeps all it holds (``?``, ``%``,
        ...) and the name rule judges it; nothing is decoded twice."""
        return "/".join(quote(segment, safe="", errors="surrogatepass") for segment in decoded.split("/"))

    @classmethod
    def under_subscriptions(
        cls,
        method: str,
        url: str,
        resource: str,
        query: Mapping[str, str],
        headers: Mapping[str, str],
        body: bytes = b"",
    ) -> ApiRequest:
        """The request of the management API's route ``subscriptions/{*resource}``, ``resource`` the value the
        host decoded (:meth:`path_from_route`): how every route that hands a request to the API builds it."""
        return cls(method, url, cls.path_from_route("subscriptions/" + resource), dict(query), dict(headers), body)

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        for key, value in self.headers.items():
            if key.lower() == lowered:
                return value
        return None


@dataclass
class ApiResponse:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> ApiResponse:
        out = {"Content-Type": "application/json; charset=utf-8", **(headers or {})}
        return cls(status, json.dumps(payload, separators=(",", ":")).encode(), out)

    @classmethod
    def error(cls, exc: SchedulerError) -> ApiResponse:
        """The ARM error body of ``exc`` with its status; a :class:`MethodNotAllowed` adds ``Allow``."""
        headers = {"Allow": exc.allow_header} if isinstance(exc, MethodNotAllowed) else None
        return cls.json(exc.status, exc.to_arm(), headers)

    @classmethod
    def empty(cls, status: int = 200, headers: Mapping[str, str] | None = None) -> ApiResponse:
        return cls(status, b"", dict(headers or {}))
