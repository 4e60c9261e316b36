"""The parts of ``host.json`` the local host honours: the HTTP route prefix and concurrency, the queue settings,
the ``singleton`` section's listener lock (the lease that makes a timer trigger run on one instance), and
``logging.logLevel`` (the least level logged per category, as the Functions host filters its logs)."""

from __future__ import annotations

import json
import logging
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


#: The shortest and longest lease Azure Storage grants, in seconds: the bounds of ``listenerLockPeriod``, and the
#: shortest ``listenerLockRecoveryPollingInterval`` (WebJobs SDK ``SingletonOptions``).
MIN_LEASE_PERIOD = 15.0
MAX_LEASE_PERIOD = 60.0
#: .NET's ``TimeSpan.MaxValue`` in seconds: as ``listenerLockRecoveryPollingInterval`` it turns the polling off.
TIMESPAN_MAX_SECONDS = 922337203685.4775807


@dataclass(frozen=True)
class SingletonOptions:
    """host.json ``singleton``: the listener lock of timer triggers, with the WebJobs SDK's defaults and ranges.

    A timer trigger runs on the one host instance that holds its listener lock, a blob lease of
    ``listener_lock_period`` seconds (15 to 60: what Azure Storage grants), renewed at half the period. An
    instance that did not get it tries again every ``listener_lock_recovery_polling_interval`` seconds (at
    least 15; None: never, .NET's ``TimeSpan.MaxValue``). After the holder dies, the timer is down for at most
    the period plus the polling interval: the rule these bounds keep (``SingletonOptions`` in
    azure-webjobs-sdk ``src/Microsoft.Azure.WebJobs.Host/Singleton/SingletonOptions.cs``). A value out of range
    raises :class:`ConfigurationError`, as the Functions host refuses to start with one.
    """

    listener_lock_period: float = 60.0
    listener_lock_recovery_polling_interval: float | None = 60.0

    def __post_init__(self) -> None:
        if not MIN_LEASE_PERIOD <= self.listener_lock_period <= MAX_LEASE_PERIOD:
            raise ConfigurationError(
                f"host.json: singleton.listenerLockPeriod must be between 00:00:15 and 00:01:00 "
                f"(got {self.listener_lock_period:g} s)"
            )
        recovery = self.listener_lock_recovery_polling_interval
        if recovery is not None and recovery < MIN_LEASE_PERIOD:
            raise ConfigurationError(
                "host.json: singleton.listenerLockRecoveryPollingInterval must be at least 00:00:15 "
                f"(got {recovery:g} s)"
            )


#: host.json's (.NET's) log levels as Python's: ``None`` logs nothing of its category.
LOG_LEVELS = {
    "trace": logging.DEBUG,
    "debug": logging.DEBUG,
    "information": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "none": logging.CRITICAL + 10,
}


@dataclass(frozen=True)
class HostConfig:
    route_prefix: str = "api"
    queues: QueueOptions = QueueOptions()
    function_timeout: float | None = None
    http: HttpOptions = HttpOptions()
    singleton: SingletonOptions = SingletonOptions()
    #: ``logging.logLevel``: (category, Python level) per category named, ``default`` included.
    log_levels: tuple[tuple[str, int], ...] = ()


def load_log_levels(section: object) -> tuple[tuple[str, int], ...]:
    """``host.json`` ``logging.logLevel``: each category's least level. A category is a logger name prefix
    (``Function`` is every function's invocation lines, ``Function.scan_shard`` one function's), the longest
    one naming a logger wins, as in the Functions host; ``default`` is every other category."""
    if section is None:
        return ()
    if not isinstance(section, dict):
        raise ConfigurationError("host.json: logging.logLevel must be an object")
    levels = []
    for category, name in section.items():
        level = LOG_LEVELS.get(str(name).lower())
        if level is None:
            allowed = ", ".join(word.title() for word in LOG_LEVELS)
            raise ConfigurationError(f"host.json: logging.logLevel.{category} must be one of {allowed}, got {name!r}")
        levels.append((str(category), level))
    return tuple(levels)


def _bounded(value: object, default: int, name: str) -> int:
    number = int(str(value)) if value is not None else -1
    if number == -1:
        return default
    if number < 1:
        raise ConfigurationError(f"host.json: extensions.http.{name} must be -1 or a positive number")
    return number


def load_singleton(section: object) -> SingletonOptions:
    """``host.json`` ``singleton`` (absent: the defaults, 60 s and 60 s); a ``TimeSpan.MaxValue`` polling
    interval turns the polling off (None)."""
    if section is None:
        return SingletonOptions()
    if not isinstance(section, dict):
        raise ConfigurationError("host.json: singleton must be an object")
    defaults = SingletonOptions()
    period = section.get("listenerLockPeriod")
    recovery: float | None = defaults.listener_lock_recovery_polling_interval
    if section.get("listenerLockRecoveryPollingInterval") is not None:
        recovery = parse_timespan(str(section["listenerLockRecoveryPollingInterval"]))
        if recovery >= int(TIMESPAN_MAX_SECONDS):
            recovery = None
    return SingletonOptions(
        listener_lock_period=parse_timespan(str(period)) if period is not None else defaults.listener_lock_period,
        listener_lock_recovery_polling_interval=recovery,
    )


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
        singleton=load_singleton(data.get("singleton")),
        log_levels=load_log_levels((data.get("logging") or {}).get("logLevel")),
    )


def invocation_log(function: str) -> logging.Logger:
    """The logger of a function's invocation lines: category ``Function.<name>``, as the Functions host's (so
    ``logging.logLevel`` in host.json quiets one function's lines, or every function's with ``Function``)."""
    return logging.getLogger(f"Function.{function}")


def apply_log_levels(levels: tuple[tuple[str, int], ...], default: int | None = None) -> None:
    """Set each category's level (``default``, if given, is the root's: the console's threshold for every
    category host.json does not name)."""
    for category, level in levels:
        if category.lower() != "default":
            logging.getLogger(category).setLevel(level)
    if default is not None:
        logging.getLogger().setLevel(default)
