"""What every in-memory store shares: opaque ETags, stored values normalised as a table would give them
back, and the fault seam (:class:`FaultSeam`) through which a test makes one call fail."""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

_ETAGS = itertools.count(1)
_ETAG_LOCK = threading.Lock()

F = TypeVar("F", bound=Callable[..., Any])


def new_etag() -> str:
    """A fresh opaque ETag, never given out before in this process (every write gets one)."""
    with _ETAG_LOCK:
        return f'W/"memory-{next(_ETAGS)}"'


def require_etag(etag: str) -> str:
    """``etag`` as the guard of a write; an empty one is a caller's bug, refused with ``ValueError`` as the
    Azure SDK refuses it."""
    if not etag:
        raise ValueError("an ETag-guarded write needs an ETag (an empty one guards nothing)")
    return etag


def as_stored(value: Any) -> Any:
    """A deep copy of a JSON value as Table Storage gives it back (it stores it as JSON text): tuples
    become lists, and a value JSON cannot hold fails as the Azure adapter fails (``TypeError``)."""
    return json.loads(json.dumps(value))


def utc(instant: datetime) -> datetime:
    """``instant`` in UTC as a table gives it back (a naive instant is taken to be UTC)."""
    return instant.replace(tzinfo=UTC) if instant.tzinfo is None else instant.astimezone(UTC)


def utc_or_none(instant: datetime | None) -> datetime | None:
    return None if instant is None else utc(instant)


@dataclass(frozen=True)
class _Fault:
    error: BaseException
    landed: bool


class FaultSeam:
    """**Test seam** of the in-memory stores: make the next call(s) of one method fail, deterministically,
    as a store that cannot be reached (:class:`~scheduler_core.errors.StorageError`) or a write that lost a
    race (:class:`~scheduler_core.errors.WriteRaceError`) would. Nothing in the product calls it.

    ``fail_next("save", StorageError("down"))`` makes the next ``save`` raise without touching the store;
    with ``landed=True`` the call takes effect first and then raises (a write whose answer was lost).
    Faults of one method are used up in the order they were set. A caller that calls several methods
    (``job_slots.subtract_jobs`` reads with ``get``, writes with ``set_job_count``) meets each
    method's faults. A generator method (``due_before``, ``list`` of history) raises when it is first
    iterated."""

    def __init__(self) -> None:
        self._faults: dict[str, deque[_Fault]] = {}
        self._faults_lock = threading.Lock()

    def fail_next(self, method: str, error: BaseException, *, times: int = 1, landed: bool = False) -> None:
        """Make the next ``times`` calls of ``method`` raise ``error`` (after taking effect if ``landed``)."""
        member = getattr(type(self), method, None)
        if method.startswith("_") or not getattr(member, "_faultable", False):
            raise ValueError(f"{type(self).__name__} has no method {method!r} that can be made to fail")
        with self._faults_lock:
            self._faults.setdefault(method, deque()).extend(_Fault(error, landed) for _ in range(times))

    def clear_faults(self) -> None:
        """Forget every fault not yet raised."""
        with self._faults_lock:
            self._faults.clear()

    def _raise_fault(self, method: str, *, landed: bool) -> None:
        with self._faults_lock:
            pending = self._faults.get(method)
            if not pending or pending[0].landed != landed:
                return
            fault = pending.popleft()
        raise fault.error


def faultable(method: F) -> F:
    """Method decorator: the method meets the faults :meth:`FaultSeam.fail_next` sets on it."""
    name = method.__name__
    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def generator(self: FaultSeam, *args: Any, **kwargs: Any) -> Iterator[Any]:
            self._raise_fault(name, landed=False)
            yield from method(self, *args, **kwargs)
            self._raise_fault(name, landed=True)

        wrapped: Any = generator
    else:

        @functools.wraps(method)
        def call(self: FaultSeam, *args: Any, **kwargs: Any) -> Any:
            self._raise_fault(name, landed=False)
            result = method(self, *args, **kwargs)
            self._raise_fault(name, landed=True)
            return result

        wrapped = call
    wrapped._faultable = True
    return wrapped  # type: ignore[no-any-return]
