"""The management API's door: who is calling (an API key or an Entra ID access token), and whether that
principal may perform an operation over a subscription.

Credentials, in order: ``x-functions-key: <API key>``; else ``Authorization: Bearer <value>``, where a
value shaped as a JWT is an Entra ID access token (when a tenant is configured) and anything else an API
key. Refusals are ARM errors: 401 (``AuthenticationFailed``, ``InvalidAuthenticationToken``,
``ExpiredAuthenticationToken``, ``InvalidAuthenticationTokenAudience``) with a ``WWW-Authenticate``
challenge, and 403 ``AuthorizationFailed`` naming the client, its object id, the action and the scope.
Authorization is decided before anything is read from storage, so a refusal is the same whether or not the
resource exists, and nothing changes.

Logged (logger ``scheduler_core.auth``), never with a key or a token: 401s at INFO (the rule that failed),
403s at WARNING (principal, action, scope, what it holds), every permitted write at INFO and every permitted
read at DEBUG (principal, action, scope).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from scheduler_core.auth.entra import (
    DEFAULT_AUTHORITY,
    EntraConfig,
    InvalidTokenError,
    SigningKeys,
    TokenValidator,
    looks_like_jwt,
    parse_entra,
)
from scheduler_core.auth.keys import ApiKey, find_key, parse_keys
from scheduler_core.auth.roles import (
    APP_ROLES,
    ASSIGNMENTS_SETTING,
    Grant,
    Operation,
    Principal,
    Role,
    RoleAssignment,
    parse_assignments,
    permits,
    refusal,
)
from scheduler_core.errors import AuthenticationError, ConfigurationError

log = logging.getLogger("scheduler_core.auth")

#: The ``realm`` of the challenge.
REALM = "Microsoft.Scheduler"


class MissingCredentialsError(AuthenticationError):
    """The request presents no credential at all (401 ``AuthenticationFailed``)."""


def _claim_text(claims: Mapping[str, Any], *names: str) -> str | None:
    for name in names:
        value = claims.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _claim_set(claims: Mapping[str, Any], name: str, lower: bool = False) -> frozenset[str]:
    value = claims.get(name)
    if not isinstance(value, list):
        return frozenset()
    return frozenset(str(item).lower() if lower else str(item) for item in value if isinstance(item, str))


def _printable(text: str) -> str:
    """A claim shown in refusals and logs: bounded, control characters replaced (no forged log lines)."""
    return "".join(c if c.isprintable() else "?" for c in text[:200])


def _quoted(text: str) -> str:
    """``text`` fit for a quoted-string of a challenge: printable ASCII, no quote or backslash, bounded."""
    return "".join(c if " " <= c <= "~" and c not in '"\\' else "'" if c == '"' else "?" for c in text)[:300]


class Gate:
    """Authenticates requests and authorizes operations for one deployment."""

    def __init__(
        self,
        keys: tuple[ApiKey, ...],
        entra: TokenValidator | None = None,
        assignments: tuple[RoleAssignment, ...] = (),
    ) -> None:
        self.keys = keys
        self.entra = entra
        self.assignments = assignments

    @property
    def entra_config(self) -> EntraConfig | None:
        return self.entra.config if self.entra is not None else None

    # ------------------------------------------------------------------------------------ authentication

    def authenticate(self, headers: Mapping[str, str]) -> Principal:
        """The principal a request's headers present. Raises an :class:`AuthenticationError` (401)."""
        try:
            return self._authenticate(headers)
        except AuthenticationError as exc:
            log.info("management API: 401 %s: %s", exc.code, exc.message)
            raise

    def _authenticate(self, headers: Mapping[str, str]) -> Principal:
        lowered = {k.lower(): v for k, v in headers.items()}
        function_key = lowered.get("x-functions-key", "").strip()
        if function_key:
            return self._key_principal(function_key)
        scheme, _, value = lowered.get("authorization", "").partition(" ")
        value = value.strip()
        if scheme.lower() != "bearer" or not value:
            raise MissingCredentialsError(self._missing_message())
        if looks_like_jwt(value):
            if self.entra is None:
                if (key := find_key(self.keys, value)) is not None:
                    return key.principal()
                raise InvalidTokenError(
                    "Entra ID access tokens are not accepted by this deployment (setting "
                    "SCHEDULER_ENTRA_TENANT_ID is empty); send an API key."
                )
            return self.principal_from_claims(self.entra.validate(value))
        return self._key_principal(value)

    def _key_principal(self, presented: str) -> Principal:
        key = find_key(self.keys, presented)
        if key is None:
            raise AuthenticationError("the API key is not valid")
        return key.principal()

    def _missing_message(self) -> str:
        text = "authentication required: send 'Authorization: Bearer <api key>' or 'x-functions-key: <api key>'"
        config = self.entra_config
        if config is not None:
            text += f", or 'Authorization: Bearer <Entra ID access token for {config.audiences[0]}>'"
        return text

    def principal_from_claims(self, claims: Mapping[str, Any]) -> Principal:
        """The principal of a validated token: its object id, and its grants from the app roles in the token
        (every subscription) and from the role assignments that match its object id, groups or app roles.

        Only what the token holds counts: a token with *group overage* (``_claim_names`` naming a source for
        ``groups``, or ``hasgroups``) holds no groups, and its source is never called (the URL is the
        token's); the principal carries a hint saying so for the log of a refusal."""
        object_id = str(claims.get("oid", "")).lower()
        client = _printable(_claim_text(claims, "upn", "unique_name", "preferred_username") or object_id)
        app_roles = _claim_set(claims, "roles")
        groups = _claim_set(claims, "groups", lower=True)
        grants = [Grant(APP_ROLES[role], None) for role in sorted(app_roles) if role in APP_ROLES]
        grants += [a.grant for a in self.assignments if a.matches(object_id, groups, app_roles)]
        hints: tuple[str, ...] = ()
        names = claims.get("_claim_names")
        overage = (isinstance(names, Mapping) and "groups" in names) or claims.get("hasgroups") is True
        if overage and "groups" not in claims:
            hints = (
                "the token has group overage (the principal is in too many groups for a 'groups' claim), so "
                "group assignments cannot match it; assign an app role to the group instead",
            )
        return Principal("entra", client, object_id, tuple(grants), hints)

    def challenge(self, exc: AuthenticationError) -> str:
        """The ``WWW-Authenticate`` value of a 401 (RFC 6750; ``authorization_uri`` as ARM sends it)."""
        params = [f'realm="{REALM}"']
        config = self.entra_config
        if config is not None:
            params.append(f'authorization_uri="{_quoted(config.authorization_uri)}"')
            params.append(f'resource_id="{_quoted(config.audiences[0])}"')
        if not isinstance(exc, MissingCredentialsError):
            params.append('error="invalid_token"')
            params.append(f'error_description="{_quoted(exc.message)}"')
        return "Bearer " + ", ".join(params)

    # ------------------------------------------------------------------------------------- authorization

    def authorize(self, principal: Principal, operation: Operation, subscription: str, scope: str) -> None:
        """Allow ``operation`` over ``scope`` (in ``subscription``) or raise the ARM 403.

        A principal that holds no role in the subscription at all is refused over the subscription's scope
        (``/subscriptions/<id>``), whatever it asked for, so the answer never depends on, or repeats, the
        names of what may be stored there; one that holds a lesser role is refused over the resource."""
        if not permits(principal, operation, subscription):
            if principal.role_in(subscription) is None:
                scope = f"/subscriptions/{subscription}"
            held = "; ".join(grant.describe() for grant in principal.grants) or "no role"
            log.warning(
                "management API: 403 %s may not perform %s over %s (holds: %s)%s",
                principal.describe(),
                operation.action,
                scope,
                held,
                "".join(f"; {hint}" for hint in principal.hints),
            )
            raise refusal(principal, operation, scope)
        level = logging.INFO if operation.role >= Role.CONTRIBUTOR else logging.DEBUG
        log.log(level, "management API: %s performs %s over %s", principal.describe(), operation.action, scope)


KeysFactory = Callable[[EntraConfig], SigningKeys]


def build_gate(
    api_keys: str,
    *,
    authority: str = DEFAULT_AUTHORITY,
    tenant: str = "",
    audiences: str = "",
    role_assignments: str = "",
    signing_keys: KeysFactory = SigningKeys,
) -> Gate:
    """The gate from the settings' text: ``SCHEDULER_API_KEYS``, ``SCHEDULER_ENTRA_AUTHORITY_HOST``,
    ``SCHEDULER_ENTRA_TENANT_ID``, ``SCHEDULER_ENTRA_AUDIENCES``, ``SCHEDULER_ROLE_ASSIGNMENTS``. Raises
    :class:`ConfigurationError` naming the bad setting. ``signing_keys`` makes the key cache (a seam for
    tests of its refresh rules)."""
    keys = parse_keys(api_keys)
    config = parse_entra(authority, tenant, audiences)
    assignments = parse_assignments(role_assignments)
    if assignments and config is None:
        raise ConfigurationError(
            f"setting {ASSIGNMENTS_SETTING} is set but SCHEDULER_ENTRA_TENANT_ID is empty: role assignments "
            "name Entra ID principals"
        )
    validator = TokenValidator(config, signing_keys(config)) if config is not None else None
    return Gate(keys, validator, assignments)


class GateSettings(Protocol):
    """The settings a gate is built from (``scheduler_core.settings.Settings`` has them)."""

    @property
    def api_keys(self) -> str: ...
    @property
    def entra_authority_host(self) -> str: ...
    @property
    def entra_tenant_id(self) -> str: ...
    @property
    def entra_audiences(self) -> str: ...
    @property
    def role_assignments(self) -> str: ...


def gate_from_settings(config: GateSettings, signing_keys: KeysFactory = SigningKeys) -> Gate:
    """:func:`build_gate` from the parsed settings (the composition root and the local host call it)."""
    return build_gate(
        config.api_keys,
        authority=config.entra_authority_host,
        tenant=config.entra_tenant_id,
        audiences=config.entra_audiences,
        role_assignments=config.role_assignments,
        signing_keys=signing_keys,
    )
