"""Retry policies at the wire (``retryPolicy``): parse a client's, read a stored one, write the canonical
one. The defaults are :mod:`scheduler_core.model.retry`'s; the limits here are the service's rules."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from scheduler_core.definitions._durations import ISO, DurationStyle, format_duration, read_duration
from scheduler_core.definitions._json import Fields, enum_value
from scheduler_core.errors import ValidationError
from scheduler_core.model.retry import DEFAULT_RETRY_COUNT, DEFAULT_RETRY_INTERVAL, Duration, RetryPolicy, RetryType

__all__ = [
    "MAX_RETRY_COUNT",
    "MAX_RETRY_INTERVAL",
    "MIN_RETRY_INTERVAL",
    "default_retry_policy",
    "parse_retry_policy",
    "read_retry_policy",
    "retry_policy_json",
]

#: Retry policy limits (scheduler-concepts-terms.md, 2018+): intervals of 15 s to 18 months, 20 retries.
MIN_RETRY_INTERVAL = timedelta(seconds=15)
MAX_RETRY_INTERVAL = timedelta(days=548)
MAX_RETRY_COUNT = 20

RETRY_TYPES = {"none": RetryType.NONE, "fixed": RetryType.FIXED, "exponential": RetryType.EXPONENTIAL}


def default_retry_policy(style: DurationStyle = ISO, interval: timedelta = DEFAULT_RETRY_INTERVAL) -> RetryPolicy:
    """The policy of an action without one: retried 4 more times at ``interval`` (30 seconds unless a
    plan says otherwise), written in ``style``."""
    return RetryPolicy(retry_interval=Duration(interval, style))


def _interval(fields: Fields, name: str) -> Duration | None:
    """A retry interval in the style it was written in."""
    if name not in fields:
        return None
    where = fields.where(name)
    value, style = read_duration(fields.get(name), where)
    if not MIN_RETRY_INTERVAL <= value <= MAX_RETRY_INTERVAL:
        raise ValidationError(
            where,
            f"must be between {format_duration(MIN_RETRY_INTERVAL, style)} (15 seconds) and "
            f"{format_duration(MAX_RETRY_INTERVAL, style)} (18 months), not {format_duration(value, style)}",
        )
    return Duration(value, style)


def parse_retry_policy(
    data: object, path: str, style: DurationStyle = ISO, default_interval: timedelta = DEFAULT_RETRY_INTERVAL
) -> RetryPolicy:
    """The effective policy of a client's ``retryPolicy``. ``None`` drops the other fields (so that a
    PATCH to None works on a stored Fixed policy); ``maxRetryInterval`` only means something to
    ``Exponential`` and is dropped otherwise. A ``retryInterval`` not given is ``default_interval``,
    written in ``style``."""
    fields = Fields(data, path, ("retryType", "retryInterval", "retryCount", "maxRetryInterval"))
    retry_type = RetryType.FIXED
    if "retryType" in fields:
        retry_type = enum_value(fields.get("retryType"), fields.where("retryType"), RETRY_TYPES)
    interval = _interval(fields, "retryInterval")
    count = fields.integer("retryCount", 0, MAX_RETRY_COUNT)
    max_interval = _interval(fields, "maxRetryInterval")
    if retry_type is RetryType.NONE:
        return RetryPolicy.never()
    if interval is None:
        interval = Duration(default_interval, style)
    if retry_type is not RetryType.EXPONENTIAL:
        max_interval = None
    elif max_interval is not None and max_interval.value < interval.value:
        raise ValidationError(
            fields.where("maxRetryInterval"),
            f"must not be shorter than retryInterval ({format_duration(interval.value, interval.style)})",
        )
    return RetryPolicy(retry_type, DEFAULT_RETRY_COUNT if count is None else count, interval, max_interval)


def _stored_duration(value: object, name: str) -> Duration | None:
    if value is None:
        return None
    delta, style = read_duration(value, name)
    return Duration(delta, style)


def read_retry_policy(policy: Mapping[str, Any] | None) -> RetryPolicy:
    """The policy of a stored (canonical) ``retryPolicy``, trusted: no limits are checked. No policy is
    the default; missing fields take the defaults."""
    if not policy:
        return RetryPolicy()
    kind = RetryType(str(policy.get("retryType", RetryType.FIXED)))
    if kind is RetryType.NONE:
        return RetryPolicy.never()
    count = policy.get("retryCount")
    interval = _stored_duration(policy.get("retryInterval"), "retryPolicy.retryInterval")
    max_interval = _stored_duration(policy.get("maxRetryInterval"), "retryPolicy.maxRetryInterval")
    return RetryPolicy(
        kind,
        DEFAULT_RETRY_COUNT if count is None else int(count),
        interval or Duration(DEFAULT_RETRY_INTERVAL),
        max_interval if kind is RetryType.EXPONENTIAL and max_interval and max_interval.value else None,
    )


def retry_policy_json(policy: RetryPolicy) -> dict[str, Any]:
    """The canonical ``retryPolicy``: ``{"retryType": "None"}``, or type, interval (in its style) and
    count, and for Exponential the cap when there is one."""
    if policy.kind is RetryType.NONE:
        return {"retryType": RetryType.NONE.value}
    out: dict[str, Any] = {
        "retryType": policy.kind.value,
        "retryInterval": format_duration(policy.retry_interval.value, policy.retry_interval.style),
        "retryCount": policy.retry_count,
    }
    cap = policy.max_retry_interval
    if policy.kind is RetryType.EXPONENTIAL and cap is not None:
        out["maxRetryInterval"] = format_duration(cap.value, cap.style)
    return out
