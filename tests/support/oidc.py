"""A local OpenID provider standing in for a Microsoft Entra ID tenant (a test peer, never product code).

It serves, over TLS with a certificate from a test CA (:class:`tests.support.tls.TestCa`), what the
tenant serves and what the scheduler and ``azure-identity`` read:
- ``/{tenant}/v2.0/.well-known/openid-configuration`` and ``/{tenant}/.well-known/openid-configuration``
  (v2.0 and v1.0 discovery documents: issuer, token endpoint, ``jwks_uri``);
- ``/{tenant}/discovery/v2.0/keys`` and ``/common/discovery/keys`` (the JWKS: RSA public keys by ``kid``);
- ``POST /{tenant}/oauth2/v2.0/token``: the client-credentials grant of ``ClientSecretCredential`` (client id
  and secret checked; ``scope=<resource>/.default``), answering an RS256 access token with Entra ID's
  claims (``aud``, ``iss``, ``iat``/``nbf``/``exp``, ``oid``, ``tid``, ``azp``/``appid``, ``roles``,
  ``groups``, ``ver``).

The protected API is one app registration (``api_client_id``, Application ID URI ``app_id_uri``) whose
app roles are assigned to registered clients. As Entra ID does, a token for the API is a v2.0 token
(``aud`` = the API's client id, ``iss`` = ``.../{tenant}/v2.0``) when the registration asks for version 2
(``token_version``), else v1.0 (``aud`` = the Application ID URI, ``iss`` = the v1.0 issuer). Keys rotate on
:meth:`OidcProvider.rotate`; :meth:`OidcProvider.mint` makes tokens of any shape for negative tests. Every
request is recorded (``requests_to``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from jwt.algorithms import RSAAlgorithm

from tests.support.tls import HttpsPeer, Seen, TestCa, https_peer


@dataclass
class Client:
    """A registered client application (a service principal) and what it holds on the API."""

    client_id: str
    secret: str
    object_id: str
    roles: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)


class _KeyPool:
    """The RSA keys :meth:`SigningKey.new` hands out: distinct within a test, reused by the later tests of the
    process. A 2,048-bit key takes about 0.1 s of CPU to generate and the suite signs with hundreds; no
    provider, gate or token outlives its test, so a test cannot tell a reused key from a new one. The pool is
    rewound at the start of each test (``tests/conftest.py``, ``rewind_signing_keys``)."""

    def __init__(self) -> None:
        self._keys: list[rsa.RSAPrivateKey] = []
        self._next = 0
        self._lock = threading.Lock()

    def take(self) -> rsa.RSAPrivateKey:
        """A key no earlier :meth:`take` since the last :meth:`rewind` returned."""
        with self._lock:
            if self._next == len(self._keys):
                self._keys.append(rsa.generate_private_key(public_exponent=65537, key_size=2048))
            self._next += 1
            return self._keys[self._next - 1]

    def rewind(self) -> None:
        with self._lock:
            self._next = 0


KEYS = _KeyPool()


@dataclass
class SigningKey:
    kid: str
    private: rsa.RSAPrivateKey

    @classmethod
    def new(cls, kid: str | None = None) -> SigningKey:
        """A key with ``kid`` (else a random one) that differs from every other key of the test."""
        return cls(kid or f"k-{secrets.token_hex(6)}", KEYS.take())

    def jwk(self) -> dict[str, Any]:
        data: dict[str, Any] = RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        return {**data, "kid": self.kid, "use": "sig"}

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class OidcProvider:
    """The tenant. ``base_url`` is its authority host (``https://127.0.0.1:<port>``)."""

    def __init__(self, peer: HttpsPeer, tenant: str, api_client_id: str, app_id_uri: str) -> None:
        self.peer = peer
        self.tenant = tenant
        self.api_client_id = api_client_id
        self.app_id_uri = app_id_uri
        self.token_version = 2
        self.lifetime = 3600
        self.keys: list[SigningKey] = [SigningKey.new()]
        self.clients: dict[str, Client] = {}
        #: Resources other than the API a client may get tokens for (scope resource -> ``aud``).
        self.other_resources: dict[str, str] = {}
        self.failing = False  # True: every request answers 503 (the tenant is unreachable)
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return self.peer.base_url

    @property
    def issuer_v2(self) -> str:
        return f"{self.base_url}/{self.tenant}/v2.0"

    @property
    def issuer_v1(self) -> str:
        return f"{self.base_url}/sts/{self.tenant}/"

    @property
    def current(self) -> SigningKey:
        return self.keys[-1]

    def register(self, name: str, roles: list[str] | None = None, groups: list[str] | None = None) -> Client:
        client = Client(str(uuid.uuid4()), f"{name}-{secrets.token_urlsafe(16)}", str(uuid.uuid4()))
        client.roles, client.groups = list(roles or []), list(groups or [])
        self.clients[client.client_id] = client
        return client

    def rotate(self) -> SigningKey:
        """Publish a new key and sign with it from now on (the old key stays published)."""
        with self._lock:
            self.keys.append(SigningKey.new())
            return self.current

    def requests_to(self, suffix: str) -> list[Seen]:
        return self.peer.requests_to(suffix)

    # ------------------------------------------------------------------------------------------- tokens

    def claims_for(self, client: Client, resource: str) -> dict[str, Any]:
        now = int(time.time())
        if resource in (self.app_id_uri, self.api_client_id):
            v2 = self.token_version == 2
            aud = self.api_client_id if v2 else self.app_id_uri
            roles = client.roles
        else:
            v2, aud, roles = True, self.other_resources[resource], []
        claims: dict[str, Any] = {
            "aud": aud,
            "iss": self.issuer_v2 if v2 else self.issuer_v1,
            "iat": now,
            "nbf": now,
            "exp": now + self.lifetime,
            "oid": client.object_id,
            "sub": client.object_id,
            "tid": self.tenant,
            "idtyp": "app",
            "ver": "2.0" if v2 else "1.0",
            ("azp" if v2 else "appid"): client.client_id,
        }
        if roles:
            claims["roles"] = list(roles)
        if client.groups:
            claims["groups"] = list(client.groups)
        return claims

    def mint(
        self,
        claims: dict[str, Any],
        *,
        key: SigningKey | None = None,
        algorithm: str | None = "RS256",
        with_kid: bool = True,
    ) -> str:
        """A token with ``claims``, signed by ``key`` (default: the current key; its ``kid`` in the header
        unless ``with_kid`` is false); ``algorithm`` None makes an unsigned token (``alg: none``)."""
        key = key or self.current
        headers = {"kid": key.kid} if with_kid else None
        if algorithm is None:
            return jwt.encode(claims, "", algorithm=None, headers=headers)
        return jwt.encode(claims, key.private, algorithm=algorithm, headers=headers)

    def mint_hs256_with_public_key(self, claims: dict[str, Any]) -> str:
        """The classic algorithm confusion: HMAC-SHA256 keyed with the tenant's *public* key (PEM), which a
        verifier trusting the token's ``alg`` would accept. Made by hand: PyJWT refuses to make it."""
        header = {"alg": "HS256", "typ": "JWT", "kid": self.current.kid}
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = hmac.new(self.current.public_pem(), signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{_b64(signature)}"

    @staticmethod
    def tamper(token: str, **changes: Any) -> str:
        """``token`` with its payload changed and its signature kept."""
        head, payload, signature = token.split(".")
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        claims.update(changes)
        return f"{head}.{_b64(json.dumps(claims).encode())}.{signature}"

    # ------------------------------------------------------------------------------------------ serving

    def respond(self, seen: Seen) -> tuple[int, str, bytes]:
        if self.failing:
            return 503, "application/json", b'{"error": "temporarily_unavailable"}'
        path = seen.path.split("?", 1)[0]
        base, tenant = self.base_url, self.tenant
        if seen.method == "GET" and path == f"/{tenant}/v2.0/.well-known/openid-configuration":
            return self._json(
                {
                    "issuer": self.issuer_v2,
                    "authorization_endpoint": f"{base}/{tenant}/oauth2/v2.0/authorize",
                    "token_endpoint": f"{base}/{tenant}/oauth2/v2.0/token",
                    "device_authorization_endpoint": f"{base}/{tenant}/oauth2/v2.0/devicecode",
                    "jwks_uri": f"{base}/{tenant}/discovery/v2.0/keys",
                    "id_token_signing_alg_values_supported": ["RS256"],
                    "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
                }
            )
        if seen.method == "GET" and path == f"/{tenant}/.well-known/openid-configuration":
            return self._json(
                {
                    "issuer": self.issuer_v1,
                    "token_endpoint": f"{base}/{tenant}/oauth2/token",
                    "jwks_uri": f"{base}/common/discovery/keys",
                    "id_token_signing_alg_values_supported": ["RS256"],
                }
            )
        if seen.method == "GET" and path in (f"/{tenant}/discovery/v2.0/keys", "/common/discovery/keys"):
            with self._lock:
                return self._json({"keys": [key.jwk() for key in self.keys]})
        if seen.method == "POST" and path == f"/{tenant}/oauth2/v2.0/token":
            return self._token(seen)
        return 404, "application/json", b'{"error": "not_found"}'

    def _token(self, seen: Seen) -> tuple[int, str, bytes]:
        form = {k: v[0] for k, v in parse_qs(seen.body.decode()).items()}
        client = self.clients.get(form.get("client_id", ""))
        if form.get("grant_type") != "client_credentials":
            return self._error(400, "unsupported_grant_type", "AADSTS70003: only client_credentials here.")
        if client is None or not hmac.compare_digest(client.secret, form.get("client_secret", "")):
            return self._error(401, "invalid_client", "AADSTS7000215: Invalid client secret provided.")
        scope = form.get("scope", "")
        resource = scope.removesuffix("/.default")
        if not scope.endswith("/.default") or (
            resource not in (self.app_id_uri, self.api_client_id) and resource not in self.other_resources
        ):
            return self._error(400, "invalid_resource", f"AADSTS500011: no resource '{resource}' in the tenant.")
        token = self.mint(self.claims_for(client, resource))
        return self._json({"token_type": "Bearer", "expires_in": self.lifetime, "access_token": token})

    @staticmethod
    def _json(document: dict[str, Any]) -> tuple[int, str, bytes]:
        return 200, "application/json", json.dumps(document).encode()

    @staticmethod
    def _error(status: int, code: str, description: str) -> tuple[int, str, bytes]:
        return status, "application/json", json.dumps({"error": code, "error_description": description}).encode()


@contextmanager
def oidc_provider(
    ca: TestCa, tenant: str = "", api_client_id: str = "", app_id_uri: str = "api://scheduler-test"
) -> Iterator[OidcProvider]:
    """A running provider on 127.0.0.1 (https, certificate from ``ca``). Clients must trust ``ca``
    (``REQUESTS_CA_BUNDLE``, as a deployment trusts its CAs)."""
    holder: list[OidcProvider] = []

    def respond(seen: Seen) -> tuple[int, str, bytes]:
        return holder[0].respond(seen)

    with https_peer(ca, respond, require_client_cert=False) as peer:
        provider = OidcProvider(peer, tenant or str(uuid.uuid4()), api_client_id or str(uuid.uuid4()), app_id_uri)
        holder.append(provider)
        yield provider
