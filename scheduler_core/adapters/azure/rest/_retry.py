"""When a failed call is tried again, as the SDK's client of the same service would try it.

:class:`Tries`: azure-core's ``RetryPolicy`` with ``azure-data-tables``' defaults (the Table service):

- An answer of 408, 429, 500, 502, 503, 504 or 506 and above is retried for ``GET``, ``PUT``, ``DELETE`` and
  ``HEAD``; for ``POST`` and ``PATCH`` (an insert, a merge, a batch) only 500, 503 and 504. An answer carrying
  ``Retry-After`` is retried whatever its method, after the time it names.
- A connection that could not be opened, or that broke after the request was sent, is retried for ``GET``,
  ``PUT``, ``DELETE`` and ``HEAD`` only (an insert or a batch may have landed).
- At most 10 retries in all, 3 per kind (connection, read, status); the first at once, then
  0.8 s x 2^(n-1) for the n-th failure in a row (1.6 s, 3.2 s, ...), never more than 120 s.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol

from azure.core.pipeline.policies._utils import parse_retry_after  # azure-core's own reading

#: Methods retried after any retryable failure.
IDEMPOTENT = frozenset({"HEAD", "GET", "PUT", "DELETE", "OPTIONS", "TRACE"})
#: Statuses retried (azure-core's ``_RETRY_CODES``: everything but the "safe" codes below 506).
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504}) | frozenset(range(506, 999))
#: Statuses for which an insert, a merge or a batch is retried.
UNSAFE_RETRY_STATUSES = frozenset({500, 503, 504})
BACKOFF_FACTOR = 0.8
BACKOFF_MAX = 120.0


class Retries(Protocol):
    """A call's retry rules: each failure asks whether, and after how many seconds, to try again."""

    def after_answer(self, method: str, status: int, headers: dict[str, str]) -> float | None:
        """Seconds to wait before trying again after an answer of ``status`` (None: it is the call's answer)."""
        ...

    def after_error(self, method: str, *, connecting: bool) -> float | None:
        """Seconds to wait before trying again after a connection that could not be opened (``connecting``) or
        broke (None: the error is the call's)."""
        ...


@dataclass
class Tries:
    """What a call has left of its retries (``total``: the call's ``retry_total``, 10 by default)."""

    total: int = 10
    connect: int = 3
    read: int = 3
    status: int = 3
    failures: int = 0

    def after_answer(self, method: str, status: int, headers: dict[str, str]) -> float | None:
        """Seconds to wait before trying again after an answer of ``status`` (None: do not)."""
        if status < 400 or status == 202:
            return None
        if not headers.get("retry-after"):  # azure-core: a Retry-After makes any method's answer retryable
            if method in IDEMPOTENT:
                if status not in RETRY_STATUSES:
                    return None
            elif method not in {"POST", "PATCH"} or status not in UNSAFE_RETRY_STATUSES:
                return None
        if not self.total:
            return None
        self.status -= 1
        return self._next(retry_after(headers))

    def after_error(self, method: str, *, connecting: bool) -> float | None:
        """Seconds to wait before trying again after a connection failure (None: do not)."""
        if method not in IDEMPOTENT:
            return None
        if connecting:
            self.connect -= 1
        else:
            self.read -= 1
        return self._next(None)

    def _next(self, wait: float | None) -> float | None:
        self.total -= 1
        self.failures += 1
        if min(self.total, self.connect, self.read, self.status) < 0:
            return None
        if wait is not None:
            return wait
        return 0.0 if self.failures <= 1 else min(BACKOFF_MAX, BACKOFF_FACTOR * 2 ** (self.failures - 1))


def retry_after(headers: dict[str, str]) -> float | None:
    """The wait an answer asks for, read as azure-core's ``get_retry_after`` reads it: ``Retry-After`` (seconds or
    an HTTP date) first, else ``retry-after-ms`` or ``x-ms-retry-after-ms``; None for none, for no wait (the
    back-off applies, as azure-core's sleep falls back to it) or for a value that cannot be read."""
    for name, scale in (("retry-after", 1.0), ("retry-after-ms", 1000.0), ("x-ms-retry-after-ms", 1000.0)):
        value = headers.get(name)
        if value:
            try:
                return parse_retry_after(value) / scale or None
            except (TypeError, ValueError, OverflowError):
                return None
    return None


@dataclass
class StorageTries:
    """The Storage SDKs' ``ExponentialRetry`` (``azure-storage-queue``): any method is tried again after a
    connection failure, a 408 or a 5xx other than 501 and 505; at most ``total`` retries (3 by default), 3 per
    kind; the n-th after ``initial`` + ``base``^n seconds, give or take ``jitter`` (the SDK's defaults: 15 s, 3,
    3 s: 18, 24 and 42 s)."""

    total: int = 3
    initial: float = 15.0
    base: float = 3.0
    jitter: float = 3.0
    connect: int = 3
    read: int = 3
    status: int = 3
    count: int = 0

    def after_answer(self, method: str, status: int, headers: dict[str, str]) -> float | None:
        if status == 408 or (status >= 500 and status not in (501, 505)):
            self.status -= 1
            return self._next()
        return None

    def after_error(self, method: str, *, connecting: bool) -> float | None:
        if connecting:
            self.connect -= 1
        else:
            self.read -= 1
        return self._next()

    def _next(self) -> float | None:
        self.total -= 1
        left = [value for value in (self.total, self.connect, self.read, self.status) if value]
        if left and min(left) < 0:
            return None
        self.count += 1  # counted before the wait is computed, as the SDK's increment() does
        backoff = self.initial + self.base**self.count
        low = backoff - self.jitter if backoff > self.jitter else 0
        return random.uniform(low, backoff + self.jitter)
