"""Outbound HTTP authentication: one small class per scheme that sees the built request
(:class:`OutboundRequest`) and adds what it needs, in the manner of httpx's ``Auth.auth_flow``:
:class:`BasicAuth` (the ``Authorization: Basic`` header), :class:`BearerTokenAuth` (``ActiveDirectoryOAuth``:
a token from the shared :class:`OAuthTokens` cache) and :class:`ClientCertificateAuth` (the mutual-TLS
session of the certificate). A new scheme (a body-signing one, say) is a model class, its parser and one
class here, picked in :meth:`~scheduler_core.actions.http.HttpSender.authenticator`.

``ClientCertificate``: the PFX is opened with ``cryptography`` and loaded into an :class:`ssl.SSLContext`
(the standard library loads keys only from files, so the key and chain are written, with the key encrypted
under a random one-time password, to a private temporary directory that is removed at once). A
``requests`` session with a guarded adapter (``outbound.py``) using that context is kept per certificate, so
the TLS pool is reused.

``ActiveDirectoryOAuth``: a client-credentials token from Entra ID through ``azure-identity``'s
``ClientSecretCredential`` (authority host configurable for sovereign clouds and tests, setting
``SCHEDULER_ENTRA_AUTHORITY_HOST``; its connections checked by the outbound policy like the action's own),
for the scope ``{audience}/.default``, as Azure CLI forms scopes from v1 resources. Tokens are cached per
(authority, tenant, client, secret, audience) until ``refresh_margin`` before they expire. Neither the
secret nor the token is ever put in a message or a log line.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import ssl
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import requests
from azure.core.credentials import AccessToken, TokenCredential
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    PrivateFormat,
    pkcs12,
)

from scheduler_core.actions.outbound import OutboundPolicy, guarded_session
from scheduler_core.actions.redact import first_line, redact
from scheduler_core.model.actions import (
    ActiveDirectoryOAuthAuthentication,
    BasicAuthentication,
    ClientCertificateAuthentication,
)

DEFAULT_AUTHORITY_HOST = "https://login.microsoftonline.com"
#: A cached token is used until this long before it expires.
DEFAULT_REFRESH_MARGIN = 300.0
MAX_CACHED = 64


class AuthenticationProblem(Exception):
    """The request cannot be authenticated; the message is safe for history (no secret in it)."""


def _digest(*parts: str | None) -> str:
    return hashlib.sha256("\x00".join(p or "" for p in parts).encode()).hexdigest()


# ------------------------------------------------------------------------------------- client certificate


def client_certificate_context(pfx_base64: str, password: str | None) -> ssl.SSLContext:
    """An SSL client context (system trust store, TLS >= 1.2) presenting the PFX's certificate."""
    try:
        data = base64.b64decode("".join(pfx_base64.split()), validate=True)
    except ValueError:
        raise AuthenticationProblem("the client certificate is not base64-encoded PFX") from None
    candidates: list[bytes | None] = [password.encode()] if password else [None, b""]
    loaded = None
    for candidate in candidates:
        try:
            loaded = pkcs12.load_key_and_certificates(data, candidate)
            break
        except (ValueError, TypeError):
            continue
    if loaded is None:
        raise AuthenticationProblem("the client certificate (PFX) could not be opened with its password")
    key, cert, extra = loaded
    if key is None or cert is None:
        raise AuthenticationProblem("the client certificate (PFX) must hold a certificate and its private key")
    one_time = secrets.token_bytes(32)
    key_pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(one_time))
    chain_pem = cert.public_bytes(Encoding.PEM) + b"".join(c.public_bytes(Encoding.PEM) for c in extra or [])
    context = ssl.create_default_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    with tempfile.TemporaryDirectory(prefix="scheduler-cert-") as folder:
        os.chmod(folder, 0o700)
        cert_path, key_path = Path(folder, "chain.pem"), Path(folder, "key.pem")
        cert_path.write_bytes(chain_pem)
        key_path.touch(mode=0o600)
        key_path.write_bytes(key_pem)
        context.load_cert_chain(cert_path, key_path, password=one_time)
    return context


class ClientCertificateSessions:
    """One ``requests`` session per client certificate (LRU), each with the certificate's SSL context and
    every connection (http and https, every redirect hop) checked by ``policy``."""

    def __init__(self, base: requests.Session, policy: OutboundPolicy) -> None:
        self._base = base
        self._policy = policy
        self._sessions: OrderedDict[str, requests.Session] = OrderedDict()
        self._lock = threading.Lock()

    def session_for(self, pfx: str, password: str | None) -> requests.Session:
        key = _digest(pfx, password)
        with self._lock:
            session = self._sessions.get(key)
            if session is not None:
                self._sessions.move_to_end(key)
                return session
        context = client_certificate_context(pfx, password)
        session = guarded_session(self._policy, ssl_context=context)
        session.verify = self._base.verify
        session.trust_env = self._base.trust_env
        with self._lock:
            self._sessions[key] = session
            while len(self._sessions) > MAX_CACHED:
                _, old = self._sessions.popitem(last=False)
                old.close()
        return session


# ------------------------------------------------------------------------------------------------ OAuth

CredentialFactory = Callable[..., TokenCredential]


def client_secret_credentials(policy: OutboundPolicy) -> CredentialFactory:
    """A factory of ``ClientSecretCredential`` whose calls to the authority (token endpoint, discovery,
    every redirect hop) are connections checked by ``policy``."""
    from azure.core.pipeline.transport import RequestsTransport

    session = guarded_session(policy)

    def make(tenant: str, client_id: str, secret: str, authority: str) -> TokenCredential:
        from azure.identity import ClientSecretCredential

        transport = RequestsTransport(session=session, session_owner=False)
        return ClientSecretCredential(
            tenant, client_id, secret, authority=authority, disable_instance_discovery=True, transport=transport
        )

    return make


def scope_of(audience: str) -> str:
    """The v2 scope of a v1 resource (``https://management.core.windows.net/`` ->
    ``https://management.core.windows.net//.default``), or the audience when it already is a scope."""
    return audience if audience.endswith("/.default") else f"{audience}/.default"


@dataclass
class _Cached:
    credential: TokenCredential
    token: AccessToken | None = None


class OAuthTokens:
    """Client-credentials tokens, cached until ``refresh_margin`` seconds before they expire.

    ``credential_factory(tenant, client_id, secret, authority)`` makes the credential (the default is
    ``ClientSecretCredential`` connecting through ``policy``, see :func:`client_secret_credentials`);
    ``clock`` gives the time in seconds since the epoch.
    """

    def __init__(
        self,
        authority_host: str = DEFAULT_AUTHORITY_HOST,
        refresh_margin: float = DEFAULT_REFRESH_MARGIN,
        credential_factory: CredentialFactory | None = None,
        clock: Callable[[], float] = time.time,
        policy: OutboundPolicy | None = None,
    ) -> None:
        self.authority_host = authority_host.rstrip("/") or DEFAULT_AUTHORITY_HOST
        self.refresh_margin = refresh_margin
        self.policy = policy or OutboundPolicy()
        self._factory = credential_factory or client_secret_credentials(self.policy)
        self._clock = clock
        self._cache: OrderedDict[str, _Cached] = OrderedDict()
        self._lock = threading.Lock()
        self._fetch_locks: dict[str, threading.Lock] = {}

    def token(self, authentication: ActiveDirectoryOAuthAuthentication) -> str:
        """A bearer token for the ``ActiveDirectoryOAuth`` credentials. Raises :class:`AuthenticationProblem`."""
        tenant = authentication.tenant
        client_id = authentication.client_id
        secret = authentication.secret.reveal()
        audience = authentication.audience
        if not (tenant and client_id and secret and audience):
            raise AuthenticationProblem("tenant, audience, clientId and secret are required for ActiveDirectoryOAuth")
        key = _digest(self.authority_host, tenant.lower(), client_id.lower(), secret, audience)
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                entry = _Cached(self._factory(tenant, client_id, secret, self.authority_host))
                self._cache[key] = entry
                while len(self._cache) > MAX_CACHED:
                    self._cache.popitem(last=False)
            self._cache.move_to_end(key)
            fetch_lock = self._fetch_locks.setdefault(key, threading.Lock())
        with fetch_lock:  # one token request per credential at a time
            current = entry.token
            if current is not None and current.expires_on - self.refresh_margin > self._clock():
                return current.token
            try:
                entry.token = entry.credential.get_token(scope_of(audience))
            except Exception as exc:
                detail = redact(first_line(str(getattr(exc, "message", None) or exc), 200), [secret])
                raise AuthenticationProblem(
                    f"no Entra ID token for client '{client_id}' in tenant '{tenant}' from "
                    f"'{self.authority_host}' ({type(exc).__name__}: {detail})"
                ) from None
            return entry.token.token


# ------------------------------------------------------------------------------------------- schemes


@dataclass
class OutboundRequest:
    """An HTTP action's request as built, before it is sent: what an authentication scheme sees and may
    change (``headers``, or ``session``, the pooled ``requests`` session it is sent on). ``body`` is the
    exact bytes sent (a signing scheme signs them)."""

    method: str
    uri: str
    headers: dict[str, str]
    body: bytes | None
    session: requests.Session


class RequestAuth(Protocol):
    """One authentication scheme, holding its credentials (and any shared cache it needs)."""

    def apply(self, request: OutboundRequest) -> None:
        """Add what the scheme needs to ``request``. Raises :class:`AuthenticationProblem` (a message
        safe for history) when the request cannot be authenticated: it is then not sent."""
        ...


def basic_authorization(username: str, password: str) -> str:
    """The ``Authorization`` value of Basic authentication, as ``requests`` forms it (Latin-1 text)."""
    pair = username.encode("latin1") + b":" + password.encode("latin1")
    return "Basic " + base64.b64encode(pair).strip().decode("ascii")


@dataclass(frozen=True)
class BasicAuth:
    """``Basic``: the ``Authorization`` header (replacing one the job's headers may carry)."""

    authentication: BasicAuthentication

    def apply(self, request: OutboundRequest) -> None:
        credentials = self.authentication
        request.headers["Authorization"] = basic_authorization(credentials.username, credentials.password.reveal())


@dataclass(frozen=True)
class BearerTokenAuth:
    """``ActiveDirectoryOAuth``: ``Authorization: Bearer`` with a client-credentials token from ``tokens``."""

    authentication: ActiveDirectoryOAuthAuthentication
    tokens: OAuthTokens

    def apply(self, request: OutboundRequest) -> None:
        request.headers["Authorization"] = f"Bearer {self.tokens.token(self.authentication)}"


@dataclass(frozen=True)
class ClientCertificateAuth:
    """``ClientCertificate``: the request is sent on the certificate's mutual-TLS session from ``sessions``."""

    authentication: ClientCertificateAuthentication
    sessions: ClientCertificateSessions

    def apply(self, request: OutboundRequest) -> None:
        password = self.authentication.password
        request.session = self.sessions.session_for(
            self.authentication.pfx.reveal(), (password.reveal() or None) if password is not None else None
        )
