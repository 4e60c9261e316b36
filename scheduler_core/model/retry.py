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
from datetime import datetime, timedelta
from typing import Literal

__all__ = [
    "DEFAULT_RETRY_COUNT",
    "DEFAULT_RETRY_INTERVAL",
    "DEFAULT_RETRY_POLICY",
    "JITTER_FRACTION",
    "MAX_FAILURE_BODY",
    "MAX_RETRY_AFTER",
    "Duration",
    "DurationStyle",
    "Failure",
    "FailureFacts",
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


class Failure(enum.StrEnum):
    """How an attempt failed, in the words of ``retryPolicy.retryOn`` and ``@{failure.reason}``."""

    STATUS = "Status"
    """The target answered, with a status that is not a success (:attr:`ActionResult.failure_status`)."""
    TIMEOUT = "Timeout"
    """No answer before the attempt's deadline (the HTTP timeout, a broker's operation timeout)."""
    CONNECTION_ERROR = "ConnectionError"
    """No answer: the connection was refused, reset or not made (name lookup, TLS)."""
    REFUSED = "Refused"
    """Not sent: the outbound policy refused the host (on the first hop or a redirect)."""
    NOT_SENT = "NotSent"
    """Not sent: the request could not be made (its URI, its credentials' token)."""
    ERROR = "Error"
    """Any other failure (an action type not sent here, an internal error, a broker's own refusal)."""


#: At most this many characters of a failed attempt's answer go to its error action (``@{failure.body}``).
MAX_FAILURE_BODY = 1024


@dataclass(frozen=True, slots=True)
class FailureFacts:
    """What an error action knows of the failure it follows (``@{failure.*}``): how the last attempt of the
    main action failed (``reason``), its status (None: no answer), an excerpt of what the target answered
    (at most :data:`MAX_FAILURE_BODY` characters on one line, secrets masked), that attempt's execution id and
    how many attempts the occurrence's main action made."""

    reason: str
    status: int | None = None
    body: str = ""
    execution_id: str = ""
    attempts: int = 0


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
    #: ``retryOn`` (api-version 2026-12-01-preview): the failures that are retried, each a status (``"429"``),
    #: a status class (``"5xx"``) or a :class:`Failure` (``"Timeout"``, ``"ConnectionError"``), in canonical
    #: spelling; None: every failure (Azure Scheduler's rule).
    retry_on: tuple[str, ...] | None = None
    #: ``maxRetryDuration`` (preview): no retry starts later than this after the occurrence's first attempt
    #: started; None: no bound but ``retry_count``.
    max_retry_duration: Duration | None = None

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

    def retries_failure(self, failure: Failure | None, status: int | None) -> bool:
        """Whether ``retryOn`` lets a failure be retried: always without it; with it, when one of its entries
        names the failure (``"Timeout"``, ``"ConnectionError"``), its status (``"429"``) or its status's class
        (``"5xx"``). ``status``: the answer's (or a queue service's) status, None without one."""
        if self.retry_on is None:
            return True
        named = {str(failure)} if failure is not None else set()
        if status is not None:
            named |= {str(status), f"{status // 100}xx"}
        return any(entry in named for entry in self.retry_on)

    def wait_after(self, attempt: int, asked: timedelta | None, rng: random.Random | None = None) -> timedelta:
        """The wait before the retry that follows failed attempt ``attempt``: :meth:`delay`, or what the target
        asked for (``Retry-After``) when that is longer, at most ``max_retry_interval`` when the policy has one,
        else at most :data:`MAX_RETRY_AFTER`."""
        wait = self.delay(attempt, rng)
        if asked is None or asked <= wait:
            return wait
        cap = self.max_interval if self.max_interval is not None else MAX_RETRY_AFTER
        return max(wait, min(asked, cap))

    def in_budget(self, first_started: datetime, retry_at: datetime) -> bool:
        """Whether a retry due at ``retry_at`` may start: ``max_retry_duration`` after ``first_started`` (the
        occurrence's first attempt) has not passed by then (always, without one)."""
        if self.max_retry_duration is None:
            return True
        return retry_at - first_started <= self.max_retry_duration.value


#: A ``Retry-After`` longer than the policy's delay is honoured up to ``maxRetryInterval``, or this without one.
MAX_RETRY_AFTER = timedelta(hours=1)

#: The policy of an action without one (Fixed, :data:`DEFAULT_RETRY_COUNT` retries every
#: :data:`DEFAULT_RETRY_INTERVAL`, written in ISO 8601).
DEFAULT_RETRY_POLICY = RetryPolicy()
