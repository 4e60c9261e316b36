"""Who may do what: the two roles, the operations of the API and the role each needs, principals and their
grants, and the configured role assignments (``SCHEDULER_ROLE_ASSIGNMENTS``).

As in Azure's RBAC, a role is held *over a scope*; here the scope is a set of subscription ids (or all of
them). ``Reader`` may read (GET a collection or a job, list them, read history); ``Contributor`` may also
write (PUT, PATCH), delete, run, backfill, enable and disable. Operations are named with Azure Scheduler's
action names (``Microsoft.Scheduler/jobCollections/jobs/write``), which a refusal states in ARM's words.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass

from scheduler_core.errors import ConfigurationError, ForbiddenError


class Role(enum.IntEnum):
    """A role; a higher one includes every permission of the lower ones."""

    READER = 1
    CONTRIBUTOR = 2

    @property
    def title(self) -> str:
        return self.name.capitalize()

    @classmethod
    def parse(cls, text: str) -> Role | None:
        """``reader`` / ``Contributor`` (any case) -> the role; anything else -> None."""
        return {"reader": cls.READER, "contributor": cls.CONTRIBUTOR}.get(text.strip().lower())


#: Entra ID app roles (the ``roles`` claim) that grant a role on every subscription of the deployment
#: (matched exactly, as the token states them).
APP_ROLES: dict[str, Role] = {"Scheduler.Reader": Role.READER, "Scheduler.Contributor": Role.CONTRIBUTOR}
#: Their values in lower case: an ``approle`` assignment may not name one (it could not narrow it).
BUILT_IN_APP_ROLES = frozenset(role.lower() for role in APP_ROLES)


@dataclass(frozen=True)
class Operation:
    """An API operation: its Azure action name and the least role that may perform it."""

    action: str
    role: Role


_P = "Microsoft.Scheduler/jobCollections"
COLLECTION_READ = Operation(f"{_P}/read", Role.READER)
COLLECTION_WRITE = Operation(f"{_P}/write", Role.CONTRIBUTOR)
COLLECTION_DELETE = Operation(f"{_P}/delete", Role.CONTRIBUTOR)
COLLECTION_ENABLE = Operation(f"{_P}/enable/action", Role.CONTRIBUTOR)
COLLECTION_DISABLE = Operation(f"{_P}/disable/action", Role.CONTRIBUTOR)
JOB_READ = Operation(f"{_P}/jobs/read", Role.READER)
JOB_WRITE = Operation(f"{_P}/jobs/write", Role.CONTRIBUTOR)
JOB_DELETE = Operation(f"{_P}/jobs/delete", Role.CONTRIBUTOR)
JOB_RUN = Operation(f"{_P}/jobs/run/action", Role.CONTRIBUTOR)
JOB_BACKFILL = Operation(f"{_P}/jobs/backfill/action", Role.CONTRIBUTOR)
JOB_RERUN = Operation(f"{_P}/jobs/jobHistories/rerun/action", Role.CONTRIBUTOR)
HISTORY_READ = Operation(f"{_P}/jobs/jobHistories/read", Role.READER)
CALENDAR_READ = Operation(f"{_P}/calendars/read", Role.READER)
CALENDAR_WRITE = Operation(f"{_P}/calendars/write", Role.CONTRIBUTOR)
CALENDAR_DELETE = Operation(f"{_P}/calendars/delete", Role.CONTRIBUTOR)

#: (path kind of ``scheduler_core.api.paths``, HTTP method, action segment) -> the operation.
OPERATIONS: dict[tuple[str, str, str | None], Operation] = {
    ("subscription_collections", "GET", None): COLLECTION_READ,
    ("group_collections", "GET", None): COLLECTION_READ,
    ("collection", "GET", None): COLLECTION_READ,
    ("collection", "PUT", None): COLLECTION_WRITE,
    ("collection", "PATCH", None): COLLECTION_WRITE,
    ("collection", "DELETE", None): COLLECTION_DELETE,
    ("collection_action", "POST", "enable"): COLLECTION_ENABLE,
    ("collection_action", "POST", "disable"): COLLECTION_DISABLE,
    ("jobs", "GET", None): JOB_READ,
    ("job", "GET", None): JOB_READ,
    ("job", "PUT", None): JOB_WRITE,
    ("job", "PATCH", None): JOB_WRITE,
    ("job", "DELETE", None): JOB_DELETE,
    ("job_run", "POST", None): JOB_RUN,
    ("job_backfill", "POST", None): JOB_BACKFILL,
    ("job_history", "GET", None): HISTORY_READ,
    ("job_history_rerun", "POST", None): JOB_RERUN,
    ("job_occurrences", "GET", None): JOB_READ,
    ("calendars", "GET", None): CALENDAR_READ,
    ("calendar", "GET", None): CALENDAR_READ,
    ("calendar", "PUT", None): CALENDAR_WRITE,
    ("calendar", "DELETE", None): CALENDAR_DELETE,
}


def operation_for(kind: str, method: str, action: str | None = None) -> Operation:
    """The operation of ``method`` on a path of ``kind``. A method the table does not list needs the
    highest role (the API answers it 405 anyway)."""
    found = OPERATIONS.get((kind, method.upper(), action))
    return found or Operation(f"{_P}/{method.lower()}", Role.CONTRIBUTOR)


@dataclass(frozen=True)
class Grant:
    """``role`` over ``subscriptions`` (lower-case ids; None = every subscription)."""

    role: Role
    subscriptions: frozenset[str] | None

    def covers(self, subscription: str) -> bool:
        return self.subscriptions is None or subscription.lower() in self.subscriptions

    def describe(self) -> str:
        where = "every subscription" if self.subscriptions is None else ", ".join(sorted(self.subscriptions))
        return f"{self.role.title} on {where}"


@dataclass(frozen=True)
class Principal:
    """Who sent a request. ``client`` and ``object_id`` are what a refusal names (as ARM names the client
    and its object id); neither is a secret. ``kind`` is ``entra`` or ``key``."""

    kind: str
    client: str
    object_id: str
    grants: tuple[Grant, ...]
    #: What an operator should know when this principal is refused (logged with a 403, never answered).
    hints: tuple[str, ...] = ()

    def role_in(self, subscription: str) -> Role | None:
        """The highest role this principal holds over ``subscription`` (None: no access)."""
        roles = [grant.role for grant in self.grants if grant.covers(subscription)]
        return max(roles) if roles else None

    def describe(self) -> str:
        return f"{self.client} (object id {self.object_id})" if self.client != self.object_id else self.client


def refusal(principal: Principal, operation: Operation, scope: str) -> ForbiddenError:
    """The 403 of ARM for ``principal`` attempting ``operation`` over ``scope``."""
    return ForbiddenError(
        f"The client '{principal.client}' with object id '{principal.object_id}' does not have authorization "
        f"to perform action '{operation.action}' over scope '{scope}' or the scope is invalid. If access was "
        "recently granted, please refresh your credentials."
    )


def permits(principal: Principal, operation: Operation, subscription: str) -> bool:
    role = principal.role_in(subscription)
    return role is not None and role >= operation.role


# ------------------------------------------------------------------------------------------ assignments

ASSIGNMENT_KINDS = ("oid", "group", "approle")
ASSIGNMENTS_SETTING = "SCHEDULER_ROLE_ASSIGNMENTS"


@dataclass(frozen=True)
class RoleAssignment:
    """``role`` over ``subscriptions`` for the Entra ID principals that match: ``kind`` ``oid`` (the
    token's ``oid``: a user or a service principal), ``group`` (an id in the token's ``groups`` claim) or
    ``approle`` (a value in its ``roles`` claim)."""

    role: Role
    kind: str
    value: str
    subscriptions: frozenset[str] | None

    def matches(self, object_id: str, groups: frozenset[str], app_roles: frozenset[str]) -> bool:
        if self.kind == "oid":
            return object_id.lower() == self.value
        if self.kind == "group":
            return self.value in groups
        return self.value in app_roles

    @property
    def grant(self) -> Grant:
        return Grant(self.role, self.subscriptions)


def parse_subscriptions(scope: str) -> frozenset[str] | None:
    """``sub1,sub2`` -> their lower-case ids; empty or ``*`` -> None (every subscription)."""
    subs = [s.strip().lower() for s in scope.split(",") if s.strip()]
    return None if not subs or subs == ["*"] else frozenset(subs)


def parse_assignments(text: str) -> tuple[RoleAssignment, ...]:
    """Parse ``SCHEDULER_ROLE_ASSIGNMENTS``: entries separated by ``;``, each
    ``<reader|contributor>:<oid|group|approle>:<value>[@sub1,sub2]`` (no suffix or ``@*``: every
    subscription). ``oid`` and ``group`` values are object ids (GUIDs). Raises :class:`ConfigurationError`
    naming the entry and the rule."""
    assignments: list[RoleAssignment] = []
    for number, raw_entry in enumerate(text.split(";"), start=1):
        entry = raw_entry.strip()
        if not entry:
            continue
        body, _, scope = entry.partition("@")
        parts = body.split(":", 2)
        where = f"setting {ASSIGNMENTS_SETTING} entry {number}"
        if len(parts) != 3:
            raise ConfigurationError(
                f"{where}: expected '<reader|contributor>:<oid|group|approle>:<value>[@subscriptions]', "
                f"got {body[:80]!r}"
            )
        role_text, kind, value = (part.strip() for part in parts)
        role = Role.parse(role_text)
        if role is None:
            raise ConfigurationError(f"{where}: the role must be 'reader' or 'contributor', got {role_text[:40]!r}")
        kind = kind.lower()
        if kind not in ASSIGNMENT_KINDS:
            raise ConfigurationError(f"{where}: the principal kind must be one of oid, group, approle, got {kind!r}")
        if kind in ("oid", "group"):
            try:
                value = str(uuid.UUID(value))
            except ValueError:
                raise ConfigurationError(
                    f"{where}: a {kind} must be an object id (a GUID), got {value[:60]!r}"
                ) from None
        elif not value or any(c.isspace() for c in value):
            raise ConfigurationError(f"{where}: an approle must be an app role value without spaces, got {value!r}")
        elif value.lower() in BUILT_IN_APP_ROLES:
            raise ConfigurationError(
                f"{where}: the app role {value!r} is built in: it grants its role on every subscription by itself, "
                "so an assignment cannot narrow it to some subscriptions; for roles per subscription, assign an app "
                "role of your own (for example Ops.Contributor) or name the group or the object id"
            )
        assignments.append(RoleAssignment(role, kind, value, parse_subscriptions(scope)))
    return tuple(assignments)
