"""Outbound HTTP authentication: one small class per scheme that sees the built request
(:class:`OutboundRequest`) and adds what it needs, in the manner of httpx's ``Auth.auth_flow``:
:class:`BasicAuth` (the ``Authorization: Basic`` header), :class:`BearerTokenAuth` (``ActiveDirectoryOAuth``:
a token from the shared :class:`OAuthTokens` cache) and :class:`ClientCertificateAuth` (the mutual-TLS
TLS context of the certificate). A new scheme (a body-signing one, say) is a model class, its parser and one
class here, picked in :meth:`~scheduler_core.actions.http.HttpSender.authenticator`.

``ClientCertificate``: the PFX is opened with ``cryptography`` and loaded into an :class:`ssl.SSLContext`
(the standard library loads keys only from files, so the key and chain are written, with the key encrypted
under a random one-time password, to a private temporary directory that is removed at once). The context is
kept per certificate; each call's connections (guarded, ``outbound.py``) are its own.

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

from azure.core.credentials import AccessToken, TokenCredential
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    PrivateFormat,
    pkcs12,
)

from scheduler_core.actions.outbound import OutboundPolicy, guarded_session
from scheduler_core.actions.redact import first_line, redact
from scheduler_core.definitions._certificates import PfxPasswordError, PfxRefusedError, check_pfx
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
    """An SSL client context (system trust store, TLS >= 1.2) presenting the PFX's certificate.

    The PFX is checked first by :func:`~scheduler_core.definitions._certificates.check_pfx` (the rule the
    API applies when a job is written: size, structure, iteration counts, key size), so a stored PFX that
    breaks it fails the attempt at once with :class:`AuthenticationProblem` naming the rule, and is never
    opened."""
    try:
        data = base64.b64decode("".join(pfx_base64.split()), validate=True)
    except ValueError:
        raise AuthenticationProblem("the client certificate is not base64-encoded PFX") from None
    try:
        check_pfx(data, password)
    except PfxPasswordError:
        raise AuthenticationProblem("the client certificate (PFX) could not be opened with its password") from None
    except PfxRefusedError as exc:
        raise AuthenticationProblem(f"the client certificate (PFX) {exc}") from None
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


class ClientCertificateContexts:
    """The SSL context of each client certificate (LRU, :data:`MAX_CACHED`): opening a PFX is costly, so a
    context is made once and used by every call with that certificate (each call on connections of its
    own)."""

    def __init__(self) -> None:
        self._contexts: OrderedDict[str, ssl.SSLContext] = OrderedDict()
        self._lock = threading.Lock()

    def context_for(self, pfx: str, password: str | None) -> ssl.SSLContext:
        key = _digest(pfx, password)
        with self._lock:
            context = self._contexts.get(key)
            if context is not None:
                self._contexts.move_to_end(key)
                return context
        context = client_certificate_context(pfx, password)
        with self._lock:
            self._contexts[key] = context
            while len(self._contexts) > MAX_CACHED:
                self._contexts.popitem(last=False)
        return context


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
    change (``headers``, or ``ssl_context``, the client certificate's TLS context its connections use).
    ``uri`` is the URL as ``requests`` prepared it and ``host`` the host its connection is made to (every
    decision that depends on the host is made on this one). ``body`` is the exact bytes sent (a signing
    scheme signs them)."""

    method: str
    uri: str
    host: str
    headers: dict[str, str]
    body: bytes | None
    ssl_context: ssl.SSLContext | None = None


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
    """``ClientCertificate``: the request's connections present the certificate (its context from ``contexts``)."""

    authentication: ClientCertificateAuthentication
    contexts: ClientCertificateContexts

    def apply(self, request: OutboundRequest) -> None:
        password = self.authentication.password
        request.ssl_context = self.contexts.context_for(
            self.authentication.pfx.reveal(), (password.reveal() or None) if password is not None else None
        )
