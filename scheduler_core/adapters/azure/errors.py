"""The one place where Azure SDK errors become the service's error tree.

An adapter method handles the SDK errors that mean something to it (a missing row, an existing row, an
ETag mismatch) itself; everything else that escapes it (a connection error, a timeout, a throttling or
server answer) leaves as :class:`~scheduler_core.errors.StorageError`, with the SDK's error as its cause.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import requests
from azure.core.exceptions import AzureError, HttpResponseError

from scheduler_core.errors import SchedulerError, StorageError

C = TypeVar("C", bound=type)


def storage_error(error: BaseException) -> SchedulerError | None:
    """The service's error for a foreign ``error`` raised by storage (None: not a storage failure, such as
    a bug, which is left as it is). Errors of the service's own tree are returned unchanged."""
    if isinstance(error, SchedulerError):
        return error
    if isinstance(error, HttpResponseError) and error.status_code is not None:
        reason = getattr(error, "reason", None) or type(error).__name__
        return StorageError(f"storage answered {error.status_code} ({reason})", error.status_code)
    if isinstance(error, AzureError | requests.RequestException | ConnectionError | TimeoutError):
        return StorageError(f"storage could not be reached ({type(error).__name__})")
    return None


def _translating(method: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def generator(*args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from method(*args, **kwargs)
            except Exception as error:
                mapped = storage_error(error)
                if mapped is None or mapped is error:
                    raise
                raise mapped from error

        return generator

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Exception as error:
            mapped = storage_error(error)
            if mapped is None or mapped is error:
                raise
            raise mapped from error

    return call


def translated(cls: C) -> C:
    """Class decorator: every public method of ``cls`` raises the service's errors only (see
    :func:`storage_error`); generators are translated while they are iterated."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or not inspect.isfunction(member):
            continue
        setattr(cls, name, _translating(member))
    return cls
