"""``properties.notifications`` at the wire (api-version 2026-12-01-preview)::

    {"onFailure": <action>, "onRecovery": <action>, "deadline": {"after": <duration>, "action": <action>}}

Each ``<action>`` is an action object of any type with an optional ``retryPolicy`` (default: the default policy),
without ``errorAction`` or ``expandPlaceholders``: a notification always expands its placeholders. ``after`` is
:data:`MIN_DEADLINE` to :data:`MAX_DEADLINE` (a queue holds the deadline's message that long). Secrets are
kept by dotted path inside the job's ``properties`` (``notifications.deadline.action.queueMessage.sasToken``),
as the job action's are."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from scheduler_core.definitions._actions import (
    ParseOptions,
    Prior,
    action_json,
    parse_single_action,
    read_action,
    restore_secrets,
)
from scheduler_core.definitions._durations import ISO, DurationStyle, format_duration, read_bounded, read_duration
from scheduler_core.definitions._json import Fields
from scheduler_core.definitions._prior import sub
from scheduler_core.definitions._retry import default_retry_policy, read_retry_policy, retry_policy_json
from scheduler_core.errors import ValidationError
from scheduler_core.identity import IdentityScope
from scheduler_core.model.actions import Deadline, Notification, NotificationKind, Notifications
from scheduler_core.model.retry import DEFAULT_RETRY_INTERVAL, Duration

__all__ = ["MAX_DEADLINE", "MIN_DEADLINE", "notifications_json", "parse_notifications", "read_notifications"]

#: Bounds of ``deadline.after``: a minute, and six days (within the seven a queue message may wait).
MIN_DEADLINE = timedelta(minutes=1)
MAX_DEADLINE = timedelta(days=6)
_HINT = "; a notification is one action (its placeholders are always expanded), without an errorAction"
_PLAIN = (NotificationKind.ON_FAILURE, NotificationKind.ON_RECOVERY)


def parse_notifications(
    data: object,
    path: str,
    prior: Prior | None,
    *,
    limits: bool,
    style: DurationStyle = ISO,
    identity: IdentityScope | None = None,
    default_retry_interval: timedelta = DEFAULT_RETRY_INTERVAL,
) -> Notifications | None:
    """A client's ``notifications`` (None: an empty object). ``prior``: the stored ``notifications`` (a secret
    the body omits is kept from it, as for the job's action)."""
    fields = Fields(data, path, tuple(kind.value for kind in NotificationKind))
    options = ParseOptions(limits, identity, style, default_retry_interval, preview=True)

    def notification(value: object, where: str, kept: Prior | None) -> Notification:
        action, retry = parse_single_action(value, where, kept, options, _HINT)
        return Notification(action, retry or default_retry_policy(style, default_retry_interval))

    plain = {
        kind: notification(fields.get(kind.value), fields.where(kind.value), sub(prior, kind.value))
        for kind in _PLAIN
        if kind.value in fields
    }
    deadline = None
    if NotificationKind.DEADLINE.value in fields:
        name = NotificationKind.DEADLINE.value
        at = Fields(fields.get(name), fields.where(name), ("after", "action"))
        for required in ("after", "action"):
            if required not in at:
                raise ValidationError(at.where(required), "is required")
        after = _after(at.get("after"), at.where("after"))
        kept = sub(sub(prior, name), "action")
        deadline = Deadline(after, notification(at.get("action"), at.where("action"), kept))
    if not plain and deadline is None:
        return None
    return Notifications(plain.get(NotificationKind.ON_FAILURE), plain.get(NotificationKind.ON_RECOVERY), deadline)


def _after(value: object, where: str) -> Duration:
    return read_bounded(value, where, (MIN_DEADLINE, "a minute"), (MAX_DEADLINE, "six days"))


def _notification_json(notification: Notification) -> tuple[dict[str, Any], dict[str, str]]:
    written, hidden = action_json(notification.action)
    written["retryPolicy"] = retry_policy_json(notification.retry_policy)
    return written, hidden


def notifications_json(notifications: Notifications) -> tuple[dict[str, Any], dict[str, str]]:
    """The canonical ``notifications`` and their secrets by dotted path inside the job's ``properties``."""
    output: dict[str, Any] = {}
    secrets: dict[str, str] = {}
    for kind in _PLAIN:
        found = notifications.of(kind)
        if found is not None:
            output[kind.value], hidden = _notification_json(found)
            secrets.update({f"notifications.{kind.value}.{key}": value for key, value in hidden.items()})
    deadline = notifications.deadline
    if deadline is not None:
        action, hidden = _notification_json(deadline.notification)
        after = format_duration(deadline.after.value, deadline.after.style)
        output[NotificationKind.DEADLINE.value] = {"after": after, "action": action}
        secrets.update({f"notifications.deadline.action.{key}": value for key, value in hidden.items()})
    return output, secrets


def _read(value: Mapping[str, Any]) -> Notification:
    return Notification(read_action(value), read_retry_policy(value.get("retryPolicy")))


def read_notifications(properties: Mapping[str, Any], secrets: Mapping[str, str]) -> Notifications | None:
    """The ``notifications`` of a stored job (canonical, trusted), with their secrets put back."""
    stored = restore_secrets(properties, secrets).get("notifications")
    if not isinstance(stored, Mapping) or not stored:
        return None
    plain = {kind: _read(stored[kind.value]) for kind in _PLAIN if isinstance(stored.get(kind.value), Mapping)}
    deadline = None
    written = stored.get(NotificationKind.DEADLINE.value)
    if isinstance(written, Mapping) and isinstance(written.get("action"), Mapping):
        after = Duration(*read_duration(written["after"], "notifications.deadline.after"))
        deadline = Deadline(after, _read(written["action"]))
    return Notifications(plain.get(NotificationKind.ON_FAILURE), plain.get(NotificationKind.ON_RECOVERY), deadline)
