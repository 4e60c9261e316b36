"""A job action's ``flowControl`` at the wire (api-version 2026-12-01-preview): parse a client's, write the
canonical one, read a stored one.

``{"key": "payments-api", "ratePerSecond": 5, "parallelism": 2}``: ``key`` (optional, 1 to :data:`MAX_KEY`
printable characters, answered as written and compared without regard to case; absent: the action's target,
:func:`~scheduler_core.model.actions.flow_key`), ``ratePerSecond`` (:data:`MIN_RATE` to :data:`MAX_RATE`
calls a second, fractions allowed) and ``parallelism`` (1 to :data:`MAX_PARALLELISM` calls at once): at
least one of the two limits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scheduler_core.definitions._json import Fields, int_value, kind
from scheduler_core.errors import ValidationError
from scheduler_core.model.actions import FlowControl

__all__ = [
    "MAX_KEY",
    "MAX_PARALLELISM",
    "MAX_RATE",
    "MIN_RATE",
    "flow_control_json",
    "parse_flow_control",
    "read_flow_control",
]

MAX_KEY = 256
MIN_RATE = 0.01
MAX_RATE = 1000.0
MAX_PARALLELISM = 1000
_FIELDS = ("key", "ratePerSecond", "parallelism")


def _key(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(path, f"must be a string of 1 to {MAX_KEY} printable characters, not {kind(value)}")
    text = value.strip()
    if not text or len(text) > MAX_KEY:
        raise ValidationError(path, f"must be 1 to {MAX_KEY} printable characters (surrounding spaces ignored)")
    if not text.isprintable():
        raise ValidationError(path, "must hold printable characters only (no control characters)")
    return text


def _rate(value: object, path: str) -> float:
    rule = f"must be a number of calls a second from {MIN_RATE} to {MAX_RATE:g}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(path, f"{rule}, not {kind(value)}")
    if isinstance(value, int) and abs(value) > 10**9:
        raise ValidationError(path, f"{rule}, not a number of {len(str(abs(value)))} digits")
    rate = float(value)
    if not math.isfinite(rate) or not MIN_RATE <= rate <= MAX_RATE:
        raise ValidationError(path, f"{rule}, not {rate:g}")
    return rate


def parse_flow_control(value: object, path: str) -> FlowControl | None:
    """A client's ``flowControl`` (``path`` names it in errors); None when it is null."""
    if value is None:
        return None
    fields = Fields(value, path, _FIELDS)
    key = _key(fields.get("key"), fields.where("key")) if "key" in fields else None
    rate = _rate(fields.get("ratePerSecond"), fields.where("ratePerSecond")) if "ratePerSecond" in fields else None
    parallelism = None
    if "parallelism" in fields:
        parallelism = int_value(fields.get("parallelism"), fields.where("parallelism"), 1, MAX_PARALLELISM)
    if rate is None and parallelism is None:
        raise ValidationError(path, "must set ratePerSecond, parallelism or both")
    return FlowControl(key=key, rate_per_second=rate, parallelism=parallelism)


def flow_control_json(flow: FlowControl) -> dict[str, Any]:
    """The canonical ``flowControl``: the fields set, in the order key, ratePerSecond, parallelism (a whole rate
    written as an integer)."""
    out: dict[str, Any] = {}
    if flow.key is not None:
        out["key"] = flow.key
    if flow.rate_per_second is not None:
        rate = flow.rate_per_second
        out["ratePerSecond"] = int(rate) if rate.is_integer() else rate
    if flow.parallelism is not None:
        out["parallelism"] = flow.parallelism
    return out


def read_flow_control(stored: Mapping[str, Any] | None) -> FlowControl | None:
    """A stored ``flowControl`` (as :func:`flow_control_json` wrote it). Trusted."""
    return None if not stored else parse_flow_control(dict(stored), "flowControl")
