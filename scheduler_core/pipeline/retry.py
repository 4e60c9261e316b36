"""Retry policies as named, precise rules: None, Fixed (Azure Scheduler) and Exponential (our extension).

An occurrence's action is attempted once and then retried up to ``retry_count`` times. Attempt ``n``
(0-based; 0 is the first try) that fails is followed by attempt ``n + 1`` after :meth:`RetryPolicy.delay`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from scheduler_core.definitions import parse_duration

DEFAULT_RETRY_COUNT = 4
DEFAULT_RETRY_INTERVAL = timedelta(seconds=30)
#: Exponential back-off is spread by up to this fraction of the delay (full jitter would break ordering).
JITTER_FRACTION = 0.1


def _duration(value: Any, default: timedelta) -> timedelta:
    if value is None:
        return default
    return parse_duration(value, "retryPolicy")


@dataclass(frozen=True)
class RetryPolicy:
    kind: str  # "None" | "Fixed" | "Exponential"
    retry_count: int
    interval: timedelta
    max_interval: timedelta | None = None

    @classmethod
    def from_action(cls, action: dict[str, Any]) -> RetryPolicy:
        """The effective policy of a canonical action (no policy = 4 retries every 30 s, as Azure Scheduler)."""
        policy = action.get("retryPolicy")
        if not policy:
            return cls("Fixed", DEFAULT_RETRY_COUNT, DEFAULT_RETRY_INTERVAL)
        kind = str(policy.get("retryType", "Fixed"))
        if kind == "None":
            return cls("None", 0, DEFAULT_RETRY_INTERVAL)
        count = policy.get("retryCount")
        return cls(
            kind,
            DEFAULT_RETRY_COUNT if count is None else int(count),
            _duration(policy.get("retryInterval"), DEFAULT_RETRY_INTERVAL),
            _duration(policy.get("maxRetryInterval"), timedelta(0)) or None,
        )

    def has_retry_after(self, attempt: int) -> bool:
        """Whether a failed attempt number ``attempt`` (0 = first try) is followed by another."""
        return self.kind != "None" and attempt < self.retry_count

    def delay(self, attempt: int, rng: random.Random | None = None) -> timedelta:
        """How long after failed attempt ``attempt`` the next one starts."""
        if self.kind != "Exponential":
            return self.interval
        base: timedelta = self.interval * (2**attempt)
        if self.max_interval is not None:
            base = min(base, self.max_interval)
        jitter: float = (rng or random.Random()).uniform(-JITTER_FRACTION, JITTER_FRACTION)
        spread: timedelta = base * (1 + jitter)
        return max(timedelta(seconds=1), spread)
