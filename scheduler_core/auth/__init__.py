"""Authentication and authorization of the management API ([docs/security.md](../../docs/security.md)).

- :mod:`.keys`: API keys, stored as SHA-256 hashes in ``SCHEDULER_API_KEYS``, each with a role and scoped to
  subscriptions;
- :mod:`.entra`: Microsoft Entra ID access tokens, validated against the tenant's OpenID configuration and
  signing keys (cached);
- :mod:`.roles`: the roles (Reader, Contributor), the operations and the role each needs, principals, and
  the role assignments of ``SCHEDULER_ROLE_ASSIGNMENTS``;
- :mod:`.gate`: :class:`Gate`, which turns a request's headers into a principal and allows or refuses its
  operation.
"""

from scheduler_core.auth.entra import (
    EntraConfig,
    ExpiredTokenError,
    InvalidTokenError,
    SigningKeys,
    SigningKeysUnavailableError,
    TokenValidator,
    WrongAudienceError,
    parse_entra,
)
from scheduler_core.auth.gate import Gate, GateSettings, MissingCredentialsError, build_gate, gate_from_settings
from scheduler_core.auth.keys import (
    KEY_PREFIX,
    ApiKey,
    authenticate,
    find_key,
    generate_key,
    hash_entry,
    parse_keys,
    presented_key,
)
from scheduler_core.auth.roles import (
    APP_ROLES,
    Grant,
    Operation,
    Principal,
    Role,
    RoleAssignment,
    operation_for,
    parse_assignments,
)

__all__ = [
    "APP_ROLES",
    "KEY_PREFIX",
    "ApiKey",
    "EntraConfig",
    "ExpiredTokenError",
    "Gate",
    "GateSettings",
    "Grant",
    "InvalidTokenError",
    "MissingCredentialsError",
    "Operation",
    "Principal",
    "Role",
    "RoleAssignment",
    "SigningKeys",
    "SigningKeysUnavailableError",
    "TokenValidator",
    "WrongAudienceError",
    "authenticate",
    "build_gate",
    "find_key",
    "gate_from_settings",
    "generate_key",
    "hash_entry",
    "operation_for",
    "parse_assignments",
    "parse_entra",
    "parse_keys",
    "presented_key",
]
