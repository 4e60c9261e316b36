"""HTTP authentication ``ManagedServiceIdentity`` (api-version 2026-12-01-preview): ``Authorization: Bearer``
with a token of the function app's own identity for the action's ``audience``, as Logic Apps' HTTP action
does.

**Where the token comes from.** azure-identity's ``ManagedIdentityCredential``, which in Azure Functions
(App Service, Flex Consumption, Container Apps) asks the platform's identity endpoint: ``GET
$IDENTITY_ENDPOINT?resource=<audience>&api-version=2019-08-01`` with the header ``X-IDENTITY-HEADER:
$IDENTITY_HEADER``. Set ``AZURE_CLIENT_ID`` for a user-assigned identity. The credential's connections go
through an :class:`~scheduler_core.actions.outbound.OutboundPolicy` that allows exactly the endpoint of
``IDENTITY_ENDPOINT`` (its host and port; the endpoint is on loopback or link-local, which the actions'
own policy refuses) and nothing else, so no answer can redirect the request elsewhere; and the actions'
policy refuses that endpoint (:func:`reserved_endpoints`), so no job can call it. Without
``IDENTITY_ENDPOINT`` and ``IDENTITY_HEADER`` (an app without an identity, a developer machine) the attempt
fails at once, saying so; the instance metadata service is never tried.

**Tokens.** One token per audience, exactly the audience written (the resource asked for is the audience
itself, so a token is never valid for anything else), cached until ``refresh_margin`` seconds (5 minutes)
before it expires, or until the time the identity library says to refresh it; one request per audience at a
time. A refused or failed token request is a failed attempt whose message names the audience and the
reason, never the identity header or a token; nothing is cached from it.

**Where the token goes.** Only to the audience's own host and the hosts under it (a token for
``https://management.azure.com/`` to ``management.azure.com``, one for ``https://contoso.azurewebsites.net``
to that host), or to a host allowed by the setting ``SCHEDULER_IDENTITY_ALLOWED_HOSTS`` (as the app's
identity is for Storage queue and Service Bus actions: see :mod:`scheduler_core.identity`): an application
ID URI such as ``api://...`` names no host, so its API's host must be listed there. Anything else fails
without asking for a token: whoever may write jobs must not be able to send the app's tokens to a host of
their choice, which could use them elsewhere. A redirect to another host does not carry the header
(``requests`` drops ``Authorization`` when the host changes).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from azure.core.credentials import AccessToken, TokenCredential

from scheduler_core.actions.http_auth import AuthenticationProblem, OutboundRequest, scope_of
from scheduler_core.actions.outbound import (
    Endpoint,
    OutboundPolicy,
    Resolver,
    endpoint,
    guarded_session,
    literal_address,
)
from scheduler_core.actions.redact import first_line, redact
from scheduler_core.identity import HostRule, normal_host
from scheduler_core.model.actions import ManagedServiceIdentityAuthentication
from scheduler_core.uris import UriProblem, parse_target

__all__ = [
    "DEFAULT_REFRESH_MARGIN",
    "IdentityEndpoint",
    "ManagedIdentityAuth",
    "ManagedIdentityTokens",
    "audience_host",
    "reserved_endpoints",
]

#: A cached token is used until this long before it expires (the identity library also refreshes its own
#: cache in a token's last 5 minutes).
DEFAULT_REFRESH_MARGIN = 300.0
#: Audiences whose tokens are kept.
MAX_AUDIENCES = 64
#: Seconds to connect to, and to wait for an answer from, the identity endpoint.
ENDPOINT_TIMEOUT = 10.0


@dataclass(frozen=True)
class IdentityEndpoint:
    """The platform's managed identity endpoint, from ``IDENTITY_ENDPOINT`` and ``IDENTITY_HEADER``."""

    url: str
    header: str

    @property
    def host_port(self) -> tuple[str, int]:
        parts = urlsplit(self.url)
        return parts.hostname or "", parts.port or (443 if parts.scheme.lower() == "https" else 80)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> IdentityEndpoint | None:
        """The endpoint the environment names, or None when it names none (no identity here)."""
        url = (environ.get("IDENTITY_ENDPOINT") or "").strip()
        header = environ.get("IDENTITY_HEADER") or ""
        if not url or not header:
            return None
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 (a bad port raises here)
        except ValueError:
            return None
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            return None
        return cls(url, header)


def reserved_endpoints(identity: IdentityEndpoint | None, resolver: Resolver) -> frozenset[Endpoint]:
    """The endpoints of ``identity`` no action may call: its host and port, and each address its host
    resolves to (a name that does not resolve is kept as a name)."""
    if identity is None:
        return frozenset()
    host, port = identity.host_port
    found = {endpoint(host, port)}
    if literal_address(host) is None:  # a name: its addresses too
        with contextlib.suppress(OSError):
            found |= {endpoint(address, port) for address in resolver(host)}
    return frozenset(found)


class LastAnswer(threading.local):
    """The HTTP status of the identity endpoint's last answer in this thread (the identity library's errors
    do not say it)."""

    status: int | None = None

    def record(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        self.status = response.status_code


def identity_credential(
    identity: IdentityEndpoint, client_id: str | None, timeout: float, answers: LastAnswer | None = None
) -> TokenCredential:
    """azure-identity's ``ManagedIdentityCredential`` (it reads ``IDENTITY_ENDPOINT`` and ``IDENTITY_HEADER``
    itself) over a session that reaches ``identity``'s endpoint and nothing else, with two quick retries;
    ``answers`` records the status of each answer."""
    from azure.core.pipeline.transport import RequestsTransport
    from azure.identity import ManagedIdentityCredential

    host, port = identity.host_port
    policy = OutboundPolicy(allow_metadata_endpoints=True, only=frozenset({endpoint(host, port)}))
    session = guarded_session(policy)
    session.trust_env = False  # no proxy: the connection must be to the endpoint itself
    if answers is not None:
        session.hooks["response"].append(answers.record)
    transport = RequestsTransport(
        session=session, session_owner=False, connection_timeout=timeout, read_timeout=timeout
    )
    options: dict[str, Any] = {"transport": transport, "retry_total": 2, "retry_backoff_factor": 0.2}
    return ManagedIdentityCredential(client_id=client_id or None, **options)


def audience_host(audience: str) -> str:
    """The host an audience names (``https://management.azure.com/`` -> ``management.azure.com``), read by the
    target URI rule (:func:`scheduler_core.uris.parse_target`); "" for an audience that names none
    (``api://...``, a GUID) or that is an http(s) URI outside the rule (``https://a.example\\@b.example``,
    which parsers read as two hosts): such an audience's token goes only where the settings allow."""
    text = audience.strip()
    if not text.lower().startswith(("http://", "https://", "http:", "https:")):
        return ""
    try:
        return normal_host(parse_target(text).host)
    except UriProblem:
        return ""


@dataclass
class _Token:
    token: str
    refresh_at: float


class ManagedIdentityTokens:
    """Tokens of the app's identity, one per audience, cached (see the module).

    ``identity`` is the platform's endpoint (None: the app has no identity here, every request fails);
    ``credential``, when given, is used instead of ``ManagedIdentityCredential`` (the app's identity as the
    runner was given it: a seam for tests). ``allowed_hosts`` is ``SCHEDULER_IDENTITY_ALLOWED_HOSTS``;
    ``clock`` gives seconds since the epoch."""

    def __init__(
        self,
        identity: IdentityEndpoint | None,
        *,
        credential: TokenCredential | None = None,
        client_id: str | None = None,
        allowed_hosts: tuple[str, ...] = (),
        refresh_margin: float = DEFAULT_REFRESH_MARGIN,
        timeout: float = ENDPOINT_TIMEOUT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.identity = identity
        self.refresh_margin = refresh_margin
        self.allowed = HostRule.from_endpoint("", "", allowed_hosts)
        self._given = credential
        self._client_id = client_id
        self._timeout = timeout
        self._clock = clock
        self._credential: TokenCredential | None = credential
        self._answers = LastAnswer()
        self._tokens: OrderedDict[str, _Token] = OrderedDict()
        self._lock = threading.Lock()
        self._fetch_locks: dict[str, threading.Lock] = {}
        #: Token requests made so far (each one a call of the credential).
        self.requests = 0

    def refusal(self, audience: str, target_host: str) -> str | None:
        """Why a token for ``audience`` may not go to ``target_host`` (None: it may)."""
        host = normal_host(target_host)
        owner = audience_host(audience)
        if host and owner and (host == owner or host.endswith("." + owner)):
            return None
        if host and self.allowed.allows(host):
            return None
        listed = self.allowed.describe()
        return (
            f"the app's token for audience '{audience}' goes only to that audience's host and the hosts under it, "
            f"or to hosts allowed by SCHEDULER_IDENTITY_ALLOWED_HOSTS (now: {listed}); host '{target_host}' is "
            "not one of them"
        )

    def _credential_now(self) -> TokenCredential:
        with self._lock:
            if self._credential is None:
                assert self.identity is not None
                self._credential = identity_credential(self.identity, self._client_id, self._timeout, self._answers)
            return self._credential

    def token(self, audience: str) -> str:
        """A bearer token for ``audience``. Raises :class:`AuthenticationProblem` (a message safe for history)."""
        if self.identity is None and self._given is None:
            raise AuthenticationProblem(
                "no token of the app's managed identity: IDENTITY_ENDPOINT and IDENTITY_HEADER are not set "
                "(turn on the function app's system-assigned identity, or assign one and set AZURE_CLIENT_ID)"
            )
        with self._lock:
            cached = self._tokens.get(audience)
            if cached is not None:
                self._tokens.move_to_end(audience)
            fetch_lock = self._fetch_locks.setdefault(audience, threading.Lock())
        with fetch_lock:  # one request per audience at a time; the others wait for its token
            with self._lock:
                cached = self._tokens.get(audience)
            if cached is not None and self._clock() < cached.refresh_at:
                return cached.token
            fresh = self._fetch(audience)
            with self._lock:
                self._tokens[audience] = fresh
                self._tokens.move_to_end(audience)
                while len(self._tokens) > MAX_AUDIENCES:
                    dropped, _ = self._tokens.popitem(last=False)
                    self._fetch_locks.pop(dropped, None)
            return fresh.token

    def _fetch(self, audience: str) -> _Token:
        credential = self._credential_now()
        with self._lock:
            self.requests += 1
        self._answers.status = None
        try:
            info = _token_info(credential, scope_of(audience))
        except Exception as exc:
            hidden = [self.identity.header if self.identity is not None else None]
            detail = redact(first_line(str(getattr(exc, "message", None) or exc), 240), hidden)
            status = self._answers.status
            answered = f"the identity endpoint answered HTTP {status}; " if status is not None else ""
            raise AuthenticationProblem(
                f"no token of the app's managed identity for audience '{audience}' ({answered}"
                f"{type(exc).__name__}: {detail})"
            ) from None
        token, expires_on, refresh_on = info
        refresh_at = expires_on - self.refresh_margin
        if refresh_on is not None:
            refresh_at = min(refresh_at, refresh_on)
        return _Token(token, refresh_at)


def _token_info(credential: TokenCredential, scope: str) -> tuple[str, float, float | None]:
    """(token, expires on, refresh on) from ``get_token_info`` when the credential has it, else ``get_token``."""
    get_info = getattr(credential, "get_token_info", None)
    if callable(get_info):
        info = get_info(scope)
        return info.token, float(info.expires_on), float(info.refresh_on) if info.refresh_on else None
    token: AccessToken = credential.get_token(scope)
    return token.token, float(token.expires_on), None


@dataclass(frozen=True)
class ManagedIdentityAuth:
    """``ManagedServiceIdentity``: ``Authorization: Bearer`` with the app's token for the audience, sent only
    where :meth:`ManagedIdentityTokens.refusal` allows."""

    authentication: ManagedServiceIdentityAuthentication
    tokens: ManagedIdentityTokens

    def apply(self, request: OutboundRequest) -> None:
        audience = self.authentication.audience
        refusal = self.tokens.refusal(audience, request.host)  # the host the connection is made to
        if refusal is not None:
            raise AuthenticationProblem(refusal)
        for name in [name for name in request.headers if name.lower() == "authorization"]:
            del request.headers[name]
        request.headers["Authorization"] = f"Bearer {self.tokens.token(audience)}"
