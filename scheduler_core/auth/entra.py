"""Microsoft Entra ID access tokens for the management API: validated here, with PyJWT doing the cryptography.

A token is accepted when:
- it is a JWS signed with **RS256** (what Entra ID signs access tokens with; ``none``, HMAC and every
  other algorithm are refused before any key is looked at), by a key of the tenant's JWKS found by the
  token's ``kid``;
- its ``iss`` is the tenant's issuer from its OpenID configuration (v2.0, and v1.0 when the tenant
  publishes one: both token versions are accepted);
- its ``aud`` is one of the configured audiences (the API's Application ID URI, its client id);
- ``exp`` and ``nbf`` hold, with :data:`LEEWAY_SECONDS` of clock skew, and it carries an ``oid``.

What Entra ID never issues is refused before PyJWT looks at the token (:func:`_segments`): a header or payload
that is not one JSON object, repeats a member (parsers disagree on which copy counts, so a front such as
Easy Auth could read another token than this check), or holds ``NaN``/``Infinity``; a header that is not
exactly ``alg: RS256`` with a string ``kid``, or that names critical extensions (``crit``). Keys embedded in
or named by the header (``jwk``, ``jku``, ``x5u``, ``x5c``) are never used nor fetched: only the tenant's JWKS
is. Once the signature holds, the claims must have Entra ID's types: ``aud`` one string (a token for several
audiences could be replayed by each of them), ``exp``, ``nbf`` and ``iat`` finite numbers (a string or a
boolean is not a NumericDate), ``oid`` a GUID. Text of the token quoted in a refusal is cut short and has its
control characters replaced, so it cannot forge a log line.

The OpenID configuration and the JWKS are fetched over https on first use and cached
(:class:`SigningKeys`): a request never waits on the network unless its key id is unknown (keys rotated),
and then the keys are fetched again at most once per :data:`REFRESH_INTERVAL_SECONDS`; they are also
refreshed when older than :data:`MAX_AGE_SECONDS`. A tenant that cannot be reached answers 503 and is not
asked again for :data:`RETRY_AFTER_FAILURE_SECONDS`.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import jwt

from scheduler_core.errors import AuthenticationError, ConfigurationError, SchedulerError

log = logging.getLogger("scheduler_core.auth")

#: The only signature algorithm accepted (Entra ID signs access tokens with RS256).
ALGORITHMS = ("RS256",)
#: Clock skew allowed on ``exp`` and ``nbf``.
LEEWAY_SECONDS = 60
#: Least time between two fetches of the keys caused by unknown key ids.
REFRESH_INTERVAL_SECONDS = 300.0
#: Keys older than this are fetched again on the next token (Entra ID rotates keys every few weeks and
#: publishes the next one well ahead).
MAX_AGE_SECONDS = 12 * 3600.0
#: After a failed fetch, requests are refused (503) without asking the tenant again for this long.
RETRY_AFTER_FAILURE_SECONDS = 10.0
#: Longest token read (Entra ID access tokens are a few kilobytes).
MAX_TOKEN_LENGTH = 16 * 1024
#: Tenants that are not one tenant (multi-tenant endpoints): refused in the settings.
MULTI_TENANT = frozenset({"common", "organizations", "consumers"})

_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}")

TENANT_SETTING = "SCHEDULER_ENTRA_TENANT_ID"
#: The public cloud's authority (SCHEDULER_ENTRA_AUTHORITY_HOST's default).
DEFAULT_AUTHORITY = "https://login.microsoftonline.com"
AUDIENCES_SETTING = "SCHEDULER_ENTRA_AUDIENCES"


class InvalidTokenError(AuthenticationError):
    """A bearer token that is not a valid access token for this API (401)."""

    code = "InvalidAuthenticationToken"


class ExpiredTokenError(InvalidTokenError):
    code = "ExpiredAuthenticationToken"


class WrongAudienceError(InvalidTokenError):
    code = "InvalidAuthenticationTokenAudience"


class SigningKeysUnavailableError(SchedulerError):
    """The tenant's OpenID configuration or keys could not be fetched: the token cannot be judged (503)."""

    status = 503
    code = "ServiceUnavailable"


@dataclass(frozen=True)
class EntraConfig:
    """The tenant whose tokens are accepted and the audiences they must be for."""

    authority: str  # https://login.microsoftonline.com (SCHEDULER_ENTRA_AUTHORITY_HOST)
    tenant: str
    audiences: tuple[str, ...]

    @property
    def authorization_uri(self) -> str:
        return f"{self.authority}/{self.tenant}"

    @property
    def discovery_urls(self) -> tuple[str, str]:
        """The v2.0 and v1.0 OpenID configuration documents of the tenant."""
        base = self.authorization_uri
        return f"{base}/v2.0/.well-known/openid-configuration", f"{base}/.well-known/openid-configuration"


def parse_entra(authority: str, tenant: str, audiences: str) -> EntraConfig | None:
    """The Entra ID configuration from the settings' text, or None when no tenant is set (tokens are then
    not accepted). Raises :class:`ConfigurationError` naming the setting and the rule."""
    tenant = tenant.strip()
    listed = tuple(dict.fromkeys(a for a in re.split(r"[;,\s]+", audiences) if a))
    if not tenant:
        if listed:
            raise ConfigurationError(f"setting {AUDIENCES_SETTING} is set but {TENANT_SETTING} is empty")
        return None
    if tenant.lower() in MULTI_TENANT or not _TENANT.fullmatch(tenant):
        raise ConfigurationError(
            f"setting {TENANT_SETTING} must be one tenant: its id (a GUID) or a verified domain, got {tenant[:80]!r}"
        )
    if not listed:
        raise ConfigurationError(
            f"setting {AUDIENCES_SETTING} must list the accepted token audiences (the API's Application ID URI "
            f"such as api://scheduler, and/or its client id) when {TENANT_SETTING} is set"
        )
    authority = authority.strip().rstrip("/")
    if not authority.startswith("https://"):
        raise ConfigurationError(f"the Entra ID authority must be an https URL, got {authority!r}")
    return EntraConfig(authority, tenant, listed)


# ------------------------------------------------------------------------------------------- the keys

Fetch = Callable[[str], Mapping[str, Any]]


def fetch_json(url: str) -> Mapping[str, Any]:
    """GET ``url`` (https only) and return its JSON object. Raises on any failure. Proxies and the CA
    bundle come from the environment (``HTTPS_PROXY``, ``REQUESTS_CA_BUNDLE``), as for any client."""
    import requests

    if urlsplit(url).scheme != "https":
        raise ValueError(f"refusing to fetch keys over {urlsplit(url).scheme or 'no scheme'}: {url}")
    response = requests.get(url, timeout=(5, 10), allow_redirects=False, headers={"Accept": "application/json"})
    response.raise_for_status()
    data = response.json()
    if not isinstance(data, dict):
        raise ValueError(f"{url} did not answer a JSON object")
    return data


class SigningKeys:
    """The tenant's issuers and signing keys, fetched on first use and cached (thread-safe).

    ``fetch`` gets a JSON document (:func:`fetch_json`); ``clock`` is a monotonic clock in seconds (a seam
    for tests of the refresh rules)."""

    def __init__(
        self,
        config: EntraConfig,
        fetch: Fetch = fetch_json,
        clock: Callable[[], float] = time.monotonic,
        refresh_interval: float = REFRESH_INTERVAL_SECONDS,
        max_age: float = MAX_AGE_SECONDS,
        retry_after_failure: float = RETRY_AFTER_FAILURE_SECONDS,
    ) -> None:
        self.config = config
        self._fetch = fetch
        self._clock = clock
        self.refresh_interval = refresh_interval
        self.max_age = max_age
        self.retry_after_failure = retry_after_failure
        self._lock = threading.Lock()
        self._keys: dict[str, jwt.PyJWK] | None = None
        self._issuers: frozenset[str] = frozenset()
        self._fetched_at = 0.0
        self._failed_at: float | None = None
        self.fetches = 0  # completed loads (discovery + JWKS), for logs and tests

    def issuers(self) -> frozenset[str]:
        with self._lock:
            self._ensure_loaded()
            return self._issuers

    def key(self, kid: str) -> jwt.PyJWK:
        """The signing key ``kid``. Raises :class:`InvalidTokenError` for a key the tenant does not publish,
        :class:`SigningKeysUnavailableError` when the keys cannot be fetched."""
        with self._lock:
            self._ensure_loaded()
            assert self._keys is not None
            found = self._keys.get(kid)
            if found is None and self._clock() - self._fetched_at >= self.refresh_interval:
                log.info("Entra ID token signed with an unknown key id %r: fetching the tenant's keys again", kid[:80])
                self._load(keep_old=True)
                found = self._keys.get(kid)
            if found is None:
                raise InvalidTokenError(
                    f"The access token is signed with the key '{_show(kid, 80)}', which is not one of the signing "
                    f"keys of tenant '{self.config.tenant}'."
                )
            return found

    def _ensure_loaded(self) -> None:
        if self._keys is None:
            self._load(keep_old=False)
        elif self._clock() - self._fetched_at >= self.max_age:
            self._load(keep_old=True)

    def _load(self, keep_old: bool) -> None:
        now = self._clock()
        if self._failed_at is not None and now - self._failed_at < self.retry_after_failure:
            if keep_old and self._keys is not None:
                return
            raise SigningKeysUnavailableError(
                f"the signing keys of Entra ID tenant '{self.config.tenant}' could not be fetched; try again shortly"
            )
        try:
            issuers, keys = self._download()
        except SigningKeysUnavailableError:
            raise
        except Exception as exc:
            self._failed_at = now
            log.warning(
                "could not fetch the OpenID configuration or keys of Entra ID tenant %r from %s (%s: %s)",
                self.config.tenant,
                self.config.authority,
                type(exc).__name__,
                str(exc)[:300],
            )
            if keep_old and self._keys is not None:
                return  # keep the keys we have; ask again after retry_after_failure
            raise SigningKeysUnavailableError(
                f"the signing keys of Entra ID tenant '{self.config.tenant}' could not be fetched; try again shortly"
            ) from None
        self._keys, self._issuers, self._fetched_at, self._failed_at = keys, issuers, now, None
        self.fetches += 1
        log.info(
            "Entra ID tenant %r: issuers %s, %d signing keys (%s)",
            self.config.tenant,
            sorted(issuers),
            len(keys),
            ", ".join(sorted(keys)),
        )

    def _download(self) -> tuple[frozenset[str], dict[str, jwt.PyJWK]]:
        v2_url, v1_url = self.config.discovery_urls
        v2 = self._fetch(v2_url)
        issuers = {_issuer(v2, v2_url)}
        try:
            issuers.add(_issuer(self._fetch(v1_url), v1_url))
        except Exception as exc:  # a tenant (or a test provider) without v1.0 tokens: v2.0 alone
            log.debug("no v1.0 OpenID configuration at %s (%s)", v1_url, type(exc).__name__)
        jwks_uri = v2.get("jwks_uri")
        if not isinstance(jwks_uri, str) or urlsplit(jwks_uri).scheme != "https":
            raise ValueError(f"the OpenID configuration at {v2_url} has no https jwks_uri")
        return frozenset(issuers), _parse_jwks(self._fetch(jwks_uri))


def _issuer(document: Mapping[str, Any], url: str) -> str:
    issuer = document.get("issuer")
    if not isinstance(issuer, str) or not issuer or "{tenantid}" in issuer.lower():
        raise ValueError(f"the OpenID configuration at {url} names no issuer of one tenant")
    return issuer


def _parse_jwks(document: Mapping[str, Any]) -> dict[str, jwt.PyJWK]:
    """The RSA signing keys of a JWKS by key id (keys for other uses or types are skipped)."""
    keys: dict[str, jwt.PyJWK] = {}
    entries = document.get("keys")
    if not isinstance(entries, list):
        raise ValueError("the JWKS has no 'keys' list")
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("kty") != "RSA" or entry.get("use", "sig") != "sig":
            continue
        kid = entry.get("kid")
        if not isinstance(kid, str) or not kid:
            continue
        try:
            keys[kid] = jwt.PyJWK(entry, algorithm="RS256")
        except jwt.PyJWKError as exc:
            log.warning("skipping signing key %r of the JWKS: %s", kid, exc)
    if not keys:
        raise ValueError("the JWKS has no RSA signing key")
    return keys


# ------------------------------------------------------------------------------------------- validation


def _instant(value: Any) -> str:
    try:
        return datetime.fromtimestamp(float(value), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (TypeError, ValueError, OverflowError, OSError):
        return _show(value, 40)


def _show(value: Any, limit: int = 200) -> str:
    """A value of the token as a refusal quotes it: cut at ``limit`` characters, control and other
    unprintable characters replaced by ``?`` (a refusal is logged and sent in a header)."""
    if isinstance(value, list):
        return ",".join(_show(v, limit) for v in value[:5])
    return "".join(c if c.isprintable() else "?" for c in str(value)[:limit])


_BASE64URL = re.compile(r"[A-Za-z0-9_-]+", re.ASCII)
_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", re.ASCII)


class _Malformed(ValueError):
    """A header or payload that Entra ID would never issue (the reason is the message)."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name in out:
            raise _Malformed(f"its '{_show(name, 40)}' member is given more than once")
        out[name] = value
    return out


def _constant(name: str) -> Any:
    raise _Malformed(f"it holds {name}, which is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Malformed(f"it holds the number {_show(text, 40)}, which is out of range")
    return value


def _part(segment: str, name: str) -> dict[str, Any]:
    """One base64url JSON object of a compact JWS, strictly: an object, no member twice, finite numbers."""
    try:
        data = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
        value = json.loads(data, object_pairs_hook=_object, parse_constant=_constant, parse_float=_finite)
    except _Malformed as exc:
        raise InvalidTokenError(f"The access token's {name} is malformed: {exc}.") from None
    except (binascii.Error, ValueError, RecursionError):
        raise InvalidTokenError("The access token is not a JSON Web Token.") from None
    if not isinstance(value, dict):
        raise InvalidTokenError(f"The access token's {name} is not a JSON object.")
    return value


def _segments(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and the payload of a compact JWS, read strictly (:func:`_part`)."""
    parts = token.split(".")
    # an empty signature is a shape (alg: none), refused for its algorithm
    shaped = len(parts) == 3 and bool(_BASE64URL.fullmatch(parts[0]) and _BASE64URL.fullmatch(parts[1]))
    if not shaped or not (parts[2] == "" or _BASE64URL.fullmatch(parts[2])):
        raise InvalidTokenError("The access token is not a JSON Web Token.")
    return _part(parts[0], "header"), _part(parts[1], "payload")


def _numeric_date(claims: Mapping[str, Any], name: str) -> None:
    value = claims.get(name)
    if value is None and name == "iat":
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidTokenError(
            f"The access token's '{name}' claim must be a number of seconds since 1970 (a NumericDate), not "
            f"'{_show(json.dumps(value), 40)}'."
        )


def _check_types(claims: Mapping[str, Any], audiences: tuple[str, ...]) -> None:
    """The claims of a token whose signature holds have the types Entra ID gives them."""
    for name in ("exp", "nbf", "iat"):
        _numeric_date(claims, name)
    audience = claims.get("aud")
    if not isinstance(audience, str):
        allowed = ", ".join(f"'{a}'" for a in audiences)
        raise WrongAudienceError(
            f"The access token has been obtained for audiences '{_show(audience)}'; an access token must be for "
            f"exactly one audience, one of the allowed audiences {allowed}."
        )
    oid = claims.get("oid")
    if not isinstance(oid, str) or not _GUID.fullmatch(oid):
        raise InvalidTokenError(
            f"The access token's 'oid' claim must be the principal's object id (a GUID), not "
            f"'{_show(json.dumps(oid), 60)}'."
        )


def looks_like_jwt(value: str) -> bool:
    """Whether a bearer value has the shape of a JWS (``header.payload.signature``, header ``eyJ...``).
    API keys never do (``sks_`` and URL-safe base64 without dots)."""
    return value.startswith("eyJ") and value.count(".") == 2


class TokenValidator:
    """Validates Entra ID access tokens against one tenant and its accepted audiences."""

    def __init__(self, config: EntraConfig, keys: SigningKeys | None = None, leeway: int = LEEWAY_SECONDS) -> None:
        self.config = config
        self.keys = keys or SigningKeys(config)
        self.leeway = leeway

    def validate(self, token: str) -> dict[str, Any]:
        """The token's claims. Raises :class:`InvalidTokenError` (or a subclass) saying which rule failed."""
        if len(token) > MAX_TOKEN_LENGTH:
            raise InvalidTokenError(f"The access token is longer than {MAX_TOKEN_LENGTH} characters.")
        header, _ = _segments(token)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in ALGORITHMS:
            raise InvalidTokenError(
                f"The access token is signed with algorithm '{_show(alg, 40)}'; only {', '.join(ALGORITHMS)} is "
                "accepted."
            )
        if "crit" in header:
            raise InvalidTokenError(
                "The access token names critical header extensions ('crit'); none is accepted (Entra ID uses none)."
            )
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise InvalidTokenError("The access token names no signing key ('kid' header).")
        key = self.keys.key(kid)
        issuers = self.keys.issuers()
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=list(ALGORITHMS),
                audience=list(self.config.audiences),
                issuer=issuers,
                leeway=self.leeway,
                options={"require": ["exp", "nbf", "iss", "aud", "oid"], "verify_iat": False},
            )
        except jwt.PyJWTError as exc:
            raise self._refusal(token, exc, issuers) from None
        _check_types(claims, self.config.audiences)
        return claims

    def _refusal(self, token: str, exc: jwt.PyJWTError, issuers: frozenset[str]) -> InvalidTokenError:
        """The 401 for a token PyJWT refused: claims are read again unverified only to name the bad value
        (the signature was checked first, so a forged token is refused for its signature)."""
        try:
            claims = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            claims = {}
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if isinstance(exc, jwt.ExpiredSignatureError):
            return ExpiredTokenError(
                f"The access token expiry UTC time '{_instant(claims.get('exp'))}' is earlier than current UTC "
                f"time '{now}'."
            )
        if isinstance(exc, jwt.ImmatureSignatureError):
            return InvalidTokenError(
                f"The access token is not valid before UTC time '{_instant(claims.get('nbf'))}'; current UTC time "
                f"is '{now}'."
            )
        if isinstance(exc, jwt.InvalidAudienceError):
            allowed = ", ".join(f"'{a}'" for a in self.config.audiences)
            return WrongAudienceError(
                f"The access token has been obtained for wrong audience or resource '{_show(claims.get('aud'))}'. "
                f"It should exactly match one of the allowed audiences {allowed}."
            )
        if isinstance(exc, jwt.InvalidIssuerError):
            expected = ", ".join(f"'{i}'" for i in sorted(issuers))
            return InvalidTokenError(
                f"The access token is from the wrong issuer '{_show(claims.get('iss'))}'. It must be issued by "
                f"{expected} (tenant '{self.config.tenant}')."
            )
        if isinstance(exc, jwt.MissingRequiredClaimError):
            return InvalidTokenError(f"The access token has no '{exc.claim}' claim.")
        if isinstance(exc, jwt.InvalidSignatureError):
            return InvalidTokenError("The access token has an invalid signature.")
        return InvalidTokenError(f"The access token is invalid ({type(exc).__name__}).")
