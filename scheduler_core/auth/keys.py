"""API keys of the management API: stored as SHA-256 hashes, each with a role and scoped to subscriptions.

``SCHEDULER_API_KEYS`` holds entries separated by ``;``. Each entry is ``[reader:|contributor:]sha256:<hex
digest>`` optionally followed by ``@sub1,sub2`` (the subscription ids the key may use; none or ``@*`` =
all). Without a role prefix a key is a Contributor, as every key was before roles existed, so existing
settings keep their meaning; ``reader:`` makes a read-only key (dashboards, monitoring). Keys are random
and long (:func:`generate_key` makes 256-bit ones), so a plain SHA-256 digest is enough to keep them from
being recovered from the settings; the plaintext never needs to be stored by the service.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from scheduler_core.auth.roles import Grant, Principal, Role, parse_subscriptions
from scheduler_core.errors import AuthenticationError, ConfigurationError, ForbiddenError

KEY_PREFIX = "sks_"  # "scheduler key secret": makes keys recognisable to secret scanners


@dataclass(frozen=True)
class ApiKey:
    digest: bytes
    subscriptions: frozenset[str] | None  # None = every subscription
    role: Role = Role.CONTRIBUTOR

    def allows(self, subscription_id: str) -> bool:
        return self.subscriptions is None or subscription_id.lower() in self.subscriptions

    @property
    def key_id(self) -> str:
        """How refusals and logs name the key: the start of its hash (never the key)."""
        return f"api-key sha256:{self.digest.hex()[:12]}"

    def principal(self) -> Principal:
        return Principal("key", self.key_id, self.key_id, (Grant(self.role, self.subscriptions),))


def generate_key() -> str:
    """A new random API key (plaintext: shown once, never stored by the service)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_entry(key: str, subscriptions: list[str] | None = None, role: Role = Role.CONTRIBUTOR) -> str:
    """The ``SCHEDULER_API_KEYS`` entry for ``key`` (a Contributor entry has no prefix, as before roles)."""
    entry = ("reader:" if role == Role.READER else "") + "sha256:" + hashlib.sha256(key.encode()).hexdigest()
    if subscriptions:
        entry += "@" + ",".join(subscriptions)
    return entry


def parse_keys(text: str) -> tuple[ApiKey, ...]:
    """Parse the ``SCHEDULER_API_KEYS`` setting. Raises :class:`ConfigurationError` on a bad entry."""
    keys: list[ApiKey] = []
    for number, raw_entry in enumerate(text.split(";"), start=1):
        entry = raw_entry.strip()
        if not entry:
            continue
        digest_part, _, scope = entry.partition("@")
        role = Role.CONTRIBUTOR
        first, _, rest = digest_part.partition(":")
        if Role.parse(first) is not None:
            role = Role.parse(first) or role
            digest_part = rest
        algorithm, _, digest_hex = digest_part.partition(":")
        if algorithm.lower() != "sha256" or len(digest_hex) != 64:
            raise ConfigurationError(
                f"SCHEDULER_API_KEYS entry {number}: expected '[reader:|contributor:]sha256:<64 hex digits>[@subs]'"
            )
        try:
            digest = bytes.fromhex(digest_hex)
        except ValueError:
            raise ConfigurationError(f"SCHEDULER_API_KEYS entry {number}: digest is not hexadecimal") from None
        keys.append(ApiKey(digest, parse_subscriptions(scope), role))
    return tuple(keys)


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key a request presents: ``x-functions-key: KEY``, else ``Authorization: Bearer KEY``.

    ``x-functions-key`` wins when both are sent, so that behind App Service Authentication a client can
    carry its Entra ID token in ``Authorization`` and its API key in ``x-functions-key``."""
    lowered = {k.lower(): v for k, v in headers.items()}
    key = lowered.get("x-functions-key", "").strip()
    if key:
        return key
    scheme, _, value = lowered.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def find_key(keys: tuple[ApiKey, ...], key: str) -> ApiKey | None:
    """The configured key whose hash is that of ``key`` (every entry compared in constant time)."""
    digest = hashlib.sha256(key.encode()).digest()
    match = None
    for candidate in keys:
        if hmac.compare_digest(candidate.digest, digest):
            match = candidate
    return match


def authenticate(keys: tuple[ApiKey, ...], headers: Mapping[str, str], subscription_id: str | None) -> ApiKey:
    """The key that authorises this request, or an error (API keys only; :class:`scheduler_core.auth.Gate`
    also accepts Entra ID tokens and checks roles).

    A missing or unknown key is 401. A valid key used on a subscription outside its scope is 403 for
    every path of that subscription, existing or not, so it learns nothing about what is stored there.
    """
    key = presented_key(headers)
    if key is None:
        raise AuthenticationError(
            "authentication required: send 'Authorization: Bearer <api key>' or 'x-functions-key: <api key>'"
        )
    match = find_key(keys, key)
    if match is None:
        raise AuthenticationError("the API key is not valid")
    if subscription_id is not None and not match.allows(subscription_id):
        raise ForbiddenError(f"the API key is not authorised for subscription '{subscription_id}'")
    return match
