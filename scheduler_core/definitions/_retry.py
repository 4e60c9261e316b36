"""Retry policies at the wire (``retryPolicy``): parse a client's, read a stored one, write the canonical
one. The defaults are :mod:`scheduler_core.model.retry`'s; the limits here are the service's rules."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from scheduler_core.definitions._durations import ISO, DurationStyle, format_duration, read_bounded, read_duration
from scheduler_core.definitions._json import Fields, enum_value
from scheduler_core.errors import ValidationError
from scheduler_core.model.retry import (
    DEFAULT_RETRY_COUNT,
    DEFAULT_RETRY_INTERVAL,
    Duration,
    Failure,
    RetryPolicy,
    RetryType,
)

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

#: The fields of ``retryPolicy`` on api-version 2026-12-01-preview only.
PREVIEW_RETRY = ("retryOn", "maxRetryDuration")
#: At most this many ``retryOn`` entries.
MAX_RETRY_ON = 32
#: The outcomes without a status that ``retryOn`` names (lower case -> canonical).
_RETRY_ON_OUTCOMES = {str(failure).lower(): str(failure) for failure in (Failure.TIMEOUT, Failure.CONNECTION_ERROR)}
RETRY_ON_RULE = 'a status of 300 to 599 ("429"), a status class ("5xx", "4xx", "3xx"), "Timeout" or "ConnectionError"'
#: Bounds of ``maxRetryDuration``: those of a retry interval.
MIN_RETRY_DURATION = MIN_RETRY_INTERVAL
MAX_RETRY_DURATION = MAX_RETRY_INTERVAL
#: The bounds of both, in words for their errors.
_LEAST = (MIN_RETRY_INTERVAL, "15 seconds")
_MOST = (MAX_RETRY_INTERVAL, "18 months")

RETRY_TYPES = {"none": RetryType.NONE, "fixed": RetryType.FIXED, "exponential": RetryType.EXPONENTIAL}


def default_retry_policy(style: DurationStyle = ISO, interval: timedelta = DEFAULT_RETRY_INTERVAL) -> RetryPolicy:
    """The policy of an action without one: retried 4 more times at ``interval`` (30 seconds unless a
    plan says otherwise), written in ``style``."""
    return RetryPolicy(retry_interval=Duration(interval, style))


def _interval(fields: Fields, name: str) -> Duration | None:
    """A retry interval in the style it was written in."""
    if name not in fields:
        return None
    return read_bounded(fields.get(name), fields.where(name), _LEAST, _MOST)


def _retry_on(value: object, path: str) -> tuple[str, ...]:
    """``retryOn``: a non-empty list of distinct entries, each a status of 300 to 599 (``429``, or ``"429"``),
    a status class (``"4xx"``, ``"5xx"``, ``"3xx"``) or an outcome without a status (``"Timeout"``,
    ``"ConnectionError"``, in any casing); canonical spelling, in the order written."""
    if not isinstance(value, list) or not value:
        raise ValidationError(path, f"must be a non-empty list of {RETRY_ON_RULE}")
    if len(value) > MAX_RETRY_ON:
        raise ValidationError(path, f"must have at most {MAX_RETRY_ON} entries, not {len(value)}")
    entries: list[str] = []
    for index, item in enumerate(value):
        where = f"{path}[{index}]"
        text = str(item).strip() if isinstance(item, (str, int)) and not isinstance(item, bool) else None
        entry = _RETRY_ON_OUTCOMES.get(text.lower()) if text is not None else None
        if entry is None and text is not None:
            if re.fullmatch(r"[3-5][0-9][0-9]", text):
                entry = text
            elif re.fullmatch(r"[3-5][xX][xX]", text):
                entry = f"{text[0]}xx"
        if entry is None:
            raise ValidationError(where, f"must be one of {RETRY_ON_RULE}, not {json.dumps(item)[:60]}")
        if entry in entries:
            raise ValidationError(where, f"repeats '{entry}'")
        entries.append(entry)
    return tuple(entries)


def _retry_duration(fields: Fields) -> Duration | None:
    """``maxRetryDuration``: :data:`MIN_RETRY_DURATION` up to :data:`MAX_RETRY_DURATION`."""
    if "maxRetryDuration" not in fields:
        return None
    return read_bounded(fields.get("maxRetryDuration"), fields.where("maxRetryDuration"), _LEAST, _MOST)


def parse_retry_policy(
    data: object,
    path: str,
    style: DurationStyle = ISO,
    default_interval: timedelta = DEFAULT_RETRY_INTERVAL,
    preview: bool = False,
) -> RetryPolicy:
    """The effective policy of a client's ``retryPolicy``. ``None`` drops the other fields (so that a
    PATCH to None works on a stored Fixed policy); ``maxRetryInterval`` only means something to
    ``Exponential`` and is dropped otherwise. A ``retryInterval`` not given is ``default_interval``,
    written in ``style``. ``preview``: the preview wire (``retryOn``, ``maxRetryDuration``)."""
    names = ("retryType", "retryInterval", "retryCount", "maxRetryInterval")
    fields = Fields(data, path, names + (PREVIEW_RETRY if preview else ()), preview=() if preview else PREVIEW_RETRY)
    retry_on = _retry_on(fields.get("retryOn"), fields.where("retryOn")) if "retryOn" in fields else None
    budget = _retry_duration(fields)
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
    count = DEFAULT_RETRY_COUNT if count is None else count
    return RetryPolicy(retry_type, count, interval, max_interval, retry_on, budget)


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
    retry_on = policy.get("retryOn")
    return RetryPolicy(
        kind,
        DEFAULT_RETRY_COUNT if count is None else int(count),
        interval or Duration(DEFAULT_RETRY_INTERVAL),
        max_interval if kind is RetryType.EXPONENTIAL and max_interval and max_interval.value else None,
        tuple(str(entry) for entry in retry_on) if retry_on else None,
        _stored_duration(policy.get("maxRetryDuration"), "retryPolicy.maxRetryDuration"),
    )


def retry_policy_json(policy: RetryPolicy, *, preview: bool = True) -> dict[str, Any]:
    """The canonical ``retryPolicy``: ``{"retryType": "None"}``, or type, interval (in its style) and
    count, for Exponential the cap when there is one, and (``preview``) ``retryOn`` and ``maxRetryDuration``
    when set."""
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
    if preview and policy.retry_on is not None:
        out["retryOn"] = list(policy.retry_on)
    if preview and policy.max_retry_duration is not None:
        out["maxRetryDuration"] = format_duration(policy.max_retry_duration.value, policy.max_retry_duration.style)
    return out
