"""Job bodies for tests: the wire form of a job, built from the parts a test cares about.

A test that is not about the wire itself builds its job here instead of writing the JSON by hand, so that a
body says what the test needs (an ``Http`` action to a real target, a recurrence, a retry policy) and nothing
else. Tests of the wire (parsing, validation, the API's answers) still write their bodies out.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from scheduler_core.recurrence import format_instant

#: ``retryPolicy`` of no retries.
NO_RETRY: dict[str, Any] = {"retryType": "None"}


def http_action(url: str, *, method: str = "POST", body: str | None = "ping", **extra: Any) -> dict[str, Any]:
    """An ``Http`` action to ``url`` (``body`` None: none); ``extra`` adds ``retryPolicy``, ``errorAction``, and
    any other action field."""
    request: dict[str, Any] = {"uri": url, "method": method}
    if body is not None:
        request["body"] = body
    return {"type": "Http", "request": request, **extra}


def fixed_retries(count: int, interval: str = "PT20S") -> dict[str, Any]:
    """``retryPolicy`` of ``count`` retries ``interval`` apart."""
    return {"retryType": "Fixed", "retryInterval": interval, "retryCount": count}


def every(frequency: str, interval: int = 1, **extra: Any) -> dict[str, Any]:
    """``recurrence`` of every ``interval`` ``frequency`` (``extra``: ``count``, ``endTime``, ``schedule``...)."""
    return {"frequency": frequency, "interval": interval, **extra}


def job_body(
    start: datetime | str | None,
    action: dict[str, Any],
    recurrence: dict[str, Any] | None = None,
    **properties: Any,
) -> dict[str, Any]:
    """A job's wire body: ``startTime`` (None: none), ``action``, ``recurrence`` (None: a one-shot job), and
    any further property (``state``, ``overlapPolicy``, ...)."""
    body: dict[str, Any] = {"action": action}
    if start is not None:
        body["startTime"] = start if isinstance(start, str) else format_instant(start)
    if recurrence is not None:
        body["recurrence"] = recurrence
    return {"properties": {**body, **properties}}


def http_job(
    url: str,
    start: datetime | str | None = None,
    recurrence: dict[str, Any] | None = None,
    *,
    action: dict[str, Any] | None = None,
    **properties: Any,
) -> dict[str, Any]:
    """A job whose action is an ``Http`` POST to ``url`` (``action``: further action fields, such as
    ``retryPolicy``), with :func:`job_body`'s other parts."""
    return job_body(start, http_action(url, **(action or {})), recurrence, **properties)
