"""The parts of ``host.json`` the local host honours: the HTTP route prefix and concurrency, the queue settings."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scheduler_core.errors import ConfigurationError

_TIMESPAN = re.compile(r"^(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d+))?$")


def parse_timespan(text: str) -> float:
    """Seconds in a .NET TimeSpan string such as ``00:00:02`` or ``1.02:00:00``."""
    match = _TIMESPAN.match(text.strip())
    if match is None:
        raise ConfigurationError(f"host.json: {text!r} is not a TimeSpan (d.hh:mm:ss)")
    days, hours, minutes, seconds, fraction = match.groups()
    total = int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + int(seconds)
    return total + (float("0." + fraction) if fraction else 0.0)


@dataclass(frozen=True)
class QueueOptions:
    """host.json ``extensions.queues``, with the Functions host's defaults."""

    batch_size: int = 16
    new_batch_threshold: int = 8
    max_dequeue_count: int = 5
    visibility_timeout: float = 0.0
    max_polling_interval: float = 60.0
    message_encoding: str = "base64"


@dataclass(frozen=True)
class HttpOptions:
    """host.json ``extensions.http`` concurrency (-1 in Azure means unbounded; the local host bounds it)."""

    max_concurrent_requests: int = 16
    max_outstanding_requests: int = 200


@dataclass(frozen=True)
class HostConfig:
    route_prefix: str = "api"
    queues: QueueOptions = QueueOptions()
    function_timeout: float | None = None
    http: HttpOptions = HttpOptions()


def _bounded(value: object, default: int, name: str) -> int:
    number = int(str(value)) if value is not None else -1
    if number == -1:
        return default
    if number < 1:
        raise ConfigurationError(f"host.json: extensions.http.{name} must be -1 or a positive number")
    return number


def load_host_json(path: Path) -> HostConfig:
    """Parse ``host.json``; a missing file gives the host's defaults."""
    if not path.exists():
        return HostConfig()
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    extensions = data.get("extensions", {})
    http_section = extensions.get("http", {})
    prefix = http_section.get("routePrefix", "api")
    http = HttpOptions(
        max_concurrent_requests=_bounded(http_section.get("maxConcurrentRequests"), 16, "maxConcurrentRequests"),
        max_outstanding_requests=_bounded(http_section.get("maxOutstandingRequests"), 200, "maxOutstandingRequests"),
    )
    q = extensions.get("queues", {})
    batch_size = int(q.get("batchSize", 16))
    queues = QueueOptions(
        batch_size=batch_size,
        new_batch_threshold=int(q.get("newBatchThreshold", batch_size // 2)),
        max_dequeue_count=int(q.get("maxDequeueCount", 5)),
        visibility_timeout=parse_timespan(q.get("visibilityTimeout", "00:00:00")),
        max_polling_interval=parse_timespan(q.get("maxPollingInterval", "00:01:00")),
        message_encoding=str(q.get("messageEncoding", "base64")).lower(),
    )
    if not 1 <= queues.batch_size <= 32:
        raise ConfigurationError("host.json: extensions.queues.batchSize must be between 1 and 32")
    if queues.message_encoding not in ("base64", "none"):
        raise ConfigurationError("host.json: extensions.queues.messageEncoding must be 'base64' or 'none'")
    timeout = data.get("functionTimeout")
    return HostConfig(
        route_prefix=str(prefix).strip("/"),
        queues=queues,
        function_timeout=parse_timespan(timeout) if timeout else None,
        http=http,
    )
