"""What the scheduler tells an operator: metrics through the OpenTelemetry API, the structured fields of its
log lines, and the JSON lines of the local host's console (docs/operations.md shows what they look like).

- **Metrics.** :class:`Instruments` holds every instrument under the names the alert rules query
  (``infra/modules/alerts.bicep``). Only ``opentelemetry-api`` is imported, and only on first use (never when
  ``function_app`` is imported). With no SDK configured the API's instruments do nothing.
- **Exporter.** :func:`configure` chooses one on the first invocation (``scheduler_core.wiring``): Azure
  Monitor when ``APPLICATIONINSIGHTS_CONNECTION_STRING`` is set, OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is
  set, nothing otherwise (:func:`exporter_for`).
- **Log fields.** Every fact of a log line is also passed as ``extra=`` under a ``scheduler_*`` key
  (:data:`FIELD_PREFIX`), which Application Insights shows as custom dimensions; :class:`JsonFormatter` writes
  them as JSON lines (``SCHEDULER_LOG_FORMAT=json``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider, _Gauge

log = logging.getLogger("scheduler_core.telemetry")

#: The meter's name (the instrumentation scope).
METER_NAME = "scheduler_core"

ATTEMPTS = "scheduler.attempts"
LATENESS = "scheduler.lateness"
RETRIES = "scheduler.retries"
ERROR_ACTIONS = "scheduler.error_actions"
JOBS_FINISHED = "scheduler.jobs.finished"
COALESCED = "scheduler.occurrences.coalesced"
SCAN_DURATION = "scheduler.scan.duration"
SCAN_ROWS = "scheduler.scan.rows"
DISPATCH_TICKS = "scheduler.dispatch.ticks"
EXECUTION_QUEUE_DEPTH = "scheduler.execution_queue.depth"
POISON_QUEUE_LENGTH = "scheduler.poison_queue.length"
API_REQUESTS = "scheduler.api.requests"

#: Every instrument's name (the alert rules and docs/operations.md name them).
METRIC_NAMES = (
    ATTEMPTS,
    LATENESS,
    RETRIES,
    ERROR_ACTIONS,
    JOBS_FINISHED,
    COALESCED,
    SCAN_DURATION,
    SCAN_ROWS,
    DISPATCH_TICKS,
    EXECUTION_QUEUE_DEPTH,
    POISON_QUEUE_LENGTH,
    API_REQUESTS,
)


class Instruments:
    """Every instrument, created from ``provider`` (default: the process's global meter provider, whose
    instruments follow a provider set later)."""

    def __init__(self, provider: MeterProvider | None = None) -> None:
        from opentelemetry import metrics

        meter = metrics.get_meter(METER_NAME, meter_provider=provider)
        self.attempts: Counter = meter.create_counter(
            ATTEMPTS, unit="{attempt}", description="Action attempts, by outcome and action_type"
        )
        self.lateness: Histogram = meter.create_histogram(
            LATENESS, unit="s", description="Start of an occurrence's first call minus its due time"
        )
        self.retries: Counter = meter.create_counter(RETRIES, unit="{retry}", description="Retries scheduled")
        self.error_actions: Counter = meter.create_counter(
            ERROR_ACTIONS, unit="{attempt}", description="Error actions sent after a last failed retry"
        )
        self.jobs_finished: Counter = meter.create_counter(
            JOBS_FINISHED, unit="{job}", description="Jobs that ended, by state (Completed, Faulted)"
        )
        self.coalesced: Counter = meter.create_counter(
            COALESCED, unit="{occurrence}", description="Occurrences missed and folded into one late run"
        )
        self.scan_duration: Histogram = meter.create_histogram(
            SCAN_DURATION, unit="s", description="Duration of one due-index shard scan"
        )
        self.scan_rows: Counter = meter.create_counter(
            SCAN_ROWS, unit="{row}", description="Due-index rows a shard scan read"
        )
        self.dispatch_ticks: Counter = meter.create_counter(
            DISPATCH_TICKS, unit="{tick}", description="Dispatch timer ticks (one a minute when healthy)"
        )
        self.execution_queue_depth: _Gauge = meter.create_gauge(
            EXECUTION_QUEUE_DEPTH, unit="{message}", description="Approximate messages in the execution queue"
        )
        self.poison_queue_length: _Gauge = meter.create_gauge(
            POISON_QUEUE_LENGTH, unit="{message}", description="Approximate messages in the execution poison queue"
        )
        self.api_requests: Counter = meter.create_counter(
            API_REQUESTS, unit="{request}", description="Management API requests, by operation and status"
        )


_lock = threading.Lock()
_current: list[Instruments] = []


def instruments() -> Instruments:
    """The process's instruments (created on first use, importing ``opentelemetry-api`` then)."""
    if not _current:
        with _lock:
            if not _current:
                _current.append(Instruments())
    return _current[0]


def use_meter_provider(provider: MeterProvider | None) -> Instruments:
    """Record into ``provider`` from now on (tests pass an SDK provider with an in-memory reader); None goes
    back to the global provider."""
    with _lock:
        _current[:] = [Instruments(provider)]
        return _current[0]


def record_api_request(operation: str, status: int) -> None:
    """Count one management API request (``operation``: e.g. ``jobs.put``; ``status``: the HTTP status)."""
    instruments().api_requests.add(1, {"operation": operation, "status": str(status)})


# ----------------------------------------------------------------------------------------------- exporter

Exporter = Literal["azure_monitor", "otlp", "none"]
#: Configures the Azure Monitor exporter from a connection string (``azure-monitor-opentelemetry``'s
#: ``configure_azure_monitor``); supplied by the composition root, as only adapters import Azure SDKs.
AzureMonitorSetup = Callable[[str], None]

_configured: list[Exporter] = []


def exporter_for(connection_string: str, otlp_endpoint: str) -> Exporter:
    """Which exporter the settings choose: Azure Monitor first, then OTLP, else none."""
    if connection_string.strip():
        return "azure_monitor"
    if otlp_endpoint.strip():
        return "otlp"
    return "none"


def configure(connection_string: str, otlp_endpoint: str, azure_monitor: AzureMonitorSetup | None = None) -> Exporter:
    """Set up the chosen exporter once per process (later calls return the first choice). A missing
    optional package is logged, never raised: the scheduler runs on without metrics."""
    with _lock:
        if _configured:
            return _configured[0]
        choice = exporter_for(connection_string, otlp_endpoint)
        _configured.append(choice)
    try:
        if choice == "azure_monitor":
            if azure_monitor is None:
                log.warning("APPLICATIONINSIGHTS_CONNECTION_STRING is set but no Azure Monitor exporter is wired")
            else:
                azure_monitor(connection_string)
        elif choice == "otlp":
            _configure_otlp()
    except ImportError as exc:
        log.warning("metrics exporter %s not available (%s); metrics are not exported", choice, exc.name)
    else:
        log.info("metrics exporter: %s", choice, extra={"scheduler_exporter": choice})
    return choice


def _configure_otlp() -> None:
    """An SDK meter provider exporting over OTLP/HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (read by the exporter;
    optional packages ``opentelemetry-sdk`` and ``opentelemetry-exporter-otlp-proto-http``)."""
    from opentelemetry import metrics
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # type: ignore[import-not-found,unused-ignore]
        OTLPMetricExporter,
    )
    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    metrics.set_meter_provider(SdkMeterProvider(metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]))


def reset_configuration() -> None:
    """Forget the exporter choice (tests)."""
    with _lock:
        _configured.clear()


# --------------------------------------------------------------------------------------------------- logs

#: Every structured log field of the scheduler starts with this (custom dimensions in Application Insights).
FIELD_PREFIX = "scheduler_"


def target_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL: never its path, query string, user info or fragment."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(unparsable url)"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields of a log record (its ``scheduler_*`` attributes)."""
    return {key: value for key, value in vars(record).items() if key.startswith(FIELD_PREFIX)}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC), level, logger, message, every ``scheduler_*`` field, and the
    exception's text if any."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(_jsonable(fields_of(record)))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def _jsonable(values: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: value if isinstance(value, str | int | float | bool) or value is None else str(value)
        for key, value in values.items()
    }
