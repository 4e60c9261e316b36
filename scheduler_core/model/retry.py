"""Retry policies as named, precise rules: None, Fixed (Azure Scheduler) and Exponential (our extension).

An occurrence's action is attempted once and then retried up to ``retry_count`` times. Attempt ``n``
(0-based; 0 is the first try) that fails is followed by attempt ``n + 1`` after :meth:`RetryPolicy.delay`.
The defaults (:data:`DEFAULT_RETRY_COUNT` retries every :data:`DEFAULT_RETRY_INTERVAL`) are those of
Azure Scheduler and are defined here only.

Pure values: no I/O. The wire form (``retryPolicy``) is read and written by :mod:`scheduler_core.definitions`.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

__all__ = [
    "DEFAULT_RETRY_COUNT",
    "DEFAULT_RETRY_INTERVAL",
    "DEFAULT_RETRY_POLICY",
    "JITTER_FRACTION",
    "Duration",
    "DurationStyle",
    "RetryPolicy",
    "RetryType",
]

#: An action without a retry policy is retried this many more times (scheduler-concepts-terms.md)...
DEFAULT_RETRY_COUNT = 4
#: ... at this interval.
DEFAULT_RETRY_INTERVAL = timedelta(seconds=30)
#: Exponential back-off is spread by up to this fraction of the delay (full jitter would break ordering).
JITTER_FRACTION = 0.1

#: How a duration was written: ``"iso"`` (ISO 8601, ``PT30S``) or ``"timespan"`` (.NET TimeSpan,
#: ``00:00:30``); ``scheduler_core.definitions`` reads and writes both.
DurationStyle = Literal["iso", "timespan"]


@dataclass(frozen=True, slots=True)
class Duration:
    """A non-negative length of time and the style it was written in, so that it is answered in that
    style (a client reads back what it wrote). Two durations are equal when both value and style are."""

    value: timedelta
    style: DurationStyle = "iso"


class RetryType(enum.StrEnum):
    """How a failed attempt is retried (``retryPolicy.retryType``; values in the swagger's spelling)."""

    NONE = "None"
    """Never retried: a failed first attempt ends the occurrence (and runs the error action)."""
    FIXED = "Fixed"
    """Retried ``retry_count`` times, each ``retry_interval`` after the failed attempt (Azure Scheduler)."""
    EXPONENTIAL = "Exponential"
    """Retried ``retry_count`` times; the delay doubles after each failure (``retry_interval`` first),
    capped at ``max_retry_interval`` when given, and spread by +/- :data:`JITTER_FRACTION`."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """The retry policy of an action. The default is Azure Scheduler's: Fixed, 4 retries every 30 s.

    ``kind`` NONE has ``retry_count`` 0 (and its interval is not written out). ``max_retry_interval``
    only means something to EXPONENTIAL (it is never shorter than ``retry_interval``)."""

    kind: RetryType = RetryType.FIXED
    retry_count: int = DEFAULT_RETRY_COUNT
    retry_interval: Duration = Duration(DEFAULT_RETRY_INTERVAL)
    max_retry_interval: Duration | None = None

    @classmethod
    def never(cls) -> RetryPolicy:
        """The policy of ``retryType: None``: a failed attempt is not retried."""
        return cls(RetryType.NONE, 0)

    @property
    def interval(self) -> timedelta:
        """The (first) delay between a failed attempt and the next one."""
        return self.retry_interval.value

    @property
    def max_interval(self) -> timedelta | None:
        """The longest exponential delay (before jitter), or None for no cap."""
        return self.max_retry_interval.value if self.max_retry_interval is not None else None

    @property
    def retries(self) -> bool:
        """Whether a failed first attempt is retried at all."""
        return self.kind is not RetryType.NONE and self.retry_count > 0

    def has_retry_after(self, attempt: int) -> bool:
        """Whether a failed attempt number ``attempt`` (0 = first try) is followed by another."""
        return self.kind is not RetryType.NONE and attempt < self.retry_count

    def delay(self, attempt: int, rng: random.Random | None = None) -> timedelta:
        """How long after failed attempt ``attempt`` the next one starts: ``interval`` (FIXED), or
        ``interval * 2**attempt`` capped at ``max_interval`` and spread by +/- :data:`JITTER_FRACTION`,
        at least one second (EXPONENTIAL). ``rng`` is the source of the jitter (a seeded one in tests)."""
        if self.kind is not RetryType.EXPONENTIAL:
            return self.interval
        base: timedelta = self.interval * (2**attempt)
        if self.max_interval is not None:
            base = min(base, self.max_interval)
        jitter: float = (rng or random.Random()).uniform(-JITTER_FRACTION, JITTER_FRACTION)
        spread: timedelta = base * (1 + jitter)
        return max(timedelta(seconds=1), spread)


#: The policy of an action without one (Fixed, :data:`DEFAULT_RETRY_COUNT` retries every
#: :data:`DEFAULT_RETRY_INTERVAL`, written in ISO 8601).
DEFAULT_RETRY_POLICY = RetryPolicy()
