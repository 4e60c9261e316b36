"""Durable writes: the storage writes that follow an action retry through a storage outage of a minute.

Once an action has run, losing its record is worse than waiting: the claim, the history row, the counters
and the final state must land, or the occurrence is either unrecorded or (after the lease) run again. So
these writes retry with bounded exponential back-off (:data:`BACKOFF`, more than 60 s in all) on
*transient* errors only: connection errors, timeouts, 408, 429 and 5xx. Every other error (a 404, 409,
412, a 400) is final and raised at once. Each write retried this way must be idempotent: a retried
request whose first try landed (the answer was lost) must not apply twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from scheduler_core.errors import StorageError

log = logging.getLogger("scheduler_core.durable")

T = TypeVar("T")

#: Waits between tries (seconds): 13 tries over 0.5 + 1 + 2 + 4 + 8 + 8 * 7 = 71.5 s of waiting, plus the
#: tries themselves (each bounded by the storage clients' timeouts).
BACKOFF: tuple[float, ...] = (0.5, 1, 2, 4, 8, 8, 8, 8, 8, 8, 8, 8)


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` may go away by itself (retry) rather than be the answer (do not): a
    :class:`StorageError` that says so (no answer, 408, 429, 5xx), or a connection error or timeout."""
    if isinstance(error, StorageError):
        return error.transient
    return isinstance(error, ConnectionError | TimeoutError)


def durably(
    what: str,
    write: Callable[[], T],
    sleep: Callable[[float], None] = time.sleep,
    backoff: Sequence[float] = BACKOFF,
) -> T:
    """Run ``write``, retrying it after each wait of ``backoff`` while it fails transiently."""
    for wait in (*backoff, None):
        try:
            return write()
        except Exception as error:
            if wait is None or not is_transient(error):
                raise
            log.warning(
                "%s: transient storage error (%s: %s); retrying in %g s", what, type(error).__name__, error, wait
            )
            sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover
