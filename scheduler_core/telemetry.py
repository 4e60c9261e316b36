"""What the scheduler tells an operator: metrics through the OpenTelemetry API, the structured fields of its
log lines, and the JSON lines of the local host's console (docs/operations.md shows what they look like).

- **Metrics.** :class:`Instruments` holds every instrument under the names the alert rules query
  (``infra/modules/alerts.bicep``). Only ``opentelemetry-api`` is imported, and only on first use (never when
  ``function_app`` is imported). With no SDK configured the API's instruments do nothing.
- **Exporter.** :func:`configure` chooses one on the first invocation (``scheduler_core.wiring``): Azure
  Monitor when ``APPLICATIONINSIGHTS_CONNECTION_STRING`` is set (``scheduler_core.adapters.azure.monitor``,
  with the app's managed identity), OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, nothing otherwise
  (:func:`exporter_for`); metrics and spans alike.
- **Spans.** :func:`tracer` is the scheduler's tracer (``opentelemetry-api``, imported on first use): one
  span per attempt (``scheduler_core.pipeline.reporting.attempt_span``) and, inside it, one client span per
  HTTP call, whose context goes to the target as a W3C ``traceparent`` header (:func:`inject_trace_context`).
  With no SDK configured they are the API's non-recording spans and no header is sent.
- **Log fields.** Every fact of a log line is also passed as ``extra=`` under a ``scheduler_*`` key
  (:data:`FIELD_PREFIX`), which Application Insights shows as custom dimensions; :class:`JsonFormatter` writes
  them as JSON lines (``SCHEDULER_LOG_FORMAT=json``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, MutableMapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider, _Gauge
    from opentelemetry.trace import Tracer, TracerProvider

log = logging.getLogger("scheduler_core.telemetry")

#: The meter's name (the instrumentation scope).
METER_NAME = "scheduler_core"

ATTEMPTS = "scheduler.attempts"
LATENESS = "scheduler.lateness"
FLOW_WAIT = "scheduler.flow.wait"
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
API_DURATION = "scheduler.api.duration"

#: Every instrument's name (the alert rules and docs/operations.md name them).
METRIC_NAMES = (
    ATTEMPTS,
    LATENESS,
    FLOW_WAIT,
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
    API_DURATION,
)

#: Bucket bounds (seconds) of the lateness histogram: the SDK's default bounds (0, 5, 10, 25, ... 10,000)
#: would put every on-time call in one bucket. 10 s is the default of the lateness alert.
LATENESS_BUCKETS = (0.0, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
#: Bucket bounds (seconds) of the duration histograms (a shard scan, an API request).
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


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
            LATENESS,
            unit="s",
            description="Start of an occurrence's first call minus its due time",
            explicit_bucket_boundaries_advisory=LATENESS_BUCKETS,
        )
        self.flow_wait: Histogram = meter.create_histogram(
            FLOW_WAIT,
            unit="s",
            description="Time an attempt waited for its flowControl key's limits (not in the lateness)",
            explicit_bucket_boundaries_advisory=LATENESS_BUCKETS,
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
            SCAN_DURATION,
            unit="s",
            description="Duration of one due-index shard scan",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
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
        self.api_duration: Histogram = meter.create_histogram(
            API_DURATION,
            unit="s",
            description="Time to answer a management API request, by operation and status",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
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


#: Methods named as such in the ``operation`` attribute; any other is ``OTHER`` (a client chooses the method,
#: and an attribute's values must stay few).
API_METHODS = frozenset({"GET", "PUT", "PATCH", "POST", "DELETE", "HEAD", "OPTIONS"})


def api_operation(method: str, route_kind: str) -> str:
    """The ``operation`` attribute of an API request: ``<route kind>.<METHOD>``, e.g. ``job.PUT``,
    ``collection_action.POST``, ``invalid.GET`` (the route kind is the path's, as the handler parsed it)."""
    upper = method.upper()
    return f"{route_kind}.{upper if upper in API_METHODS else 'OTHER'}"


def record_api_request(method: str, route_kind: str, status: int, seconds: float | None = None) -> None:
    """One management API request answered: counted by operation (:func:`api_operation`) and status, and
    its duration (``seconds``, when measured) recorded under the same attributes."""
    attributes = {"operation": api_operation(method, route_kind), "status": str(status)}
    meters = instruments()
    meters.api_requests.add(1, attributes)
    if seconds is not None:
        meters.api_duration.record(max(0.0, seconds), attributes)


# ------------------------------------------------------------------------------------------------ traces

#: The tracer's name (the instrumentation scope of every span of the scheduler).
TRACER_NAME = METER_NAME

_tracers: list[Tracer] = []


def tracer() -> Tracer:
    """The scheduler's tracer (created on first use, importing ``opentelemetry-api`` then). Until a tracer
    provider is set it is the API's proxy, which follows the global provider once one is set."""
    if not _tracers:
        with _lock:
            if not _tracers:
                from opentelemetry import trace

                _tracers.append(trace.get_tracer(TRACER_NAME))
    return _tracers[0]


def use_tracer_provider(provider: TracerProvider | None) -> Tracer:
    """Trace into ``provider`` from now on (tests pass an SDK provider with an in-memory exporter); None goes
    back to the global provider."""
    from opentelemetry import trace

    with _lock:
        _tracers[:] = [trace.get_tracer(TRACER_NAME, tracer_provider=provider)]
        return _tracers[0]


def inject_trace_context(headers: MutableMapping[str, str]) -> None:
    """Add the current span's context to outgoing ``headers`` with the process's propagator (by default
    W3C trace context: ``traceparent``, and ``tracestate`` when there is one; ``OTEL_PROPAGATORS`` chooses
    others). Nothing is added outside a recording span. A header the caller already set is kept (the job's
    own ``traceparent`` wins)."""
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    present = {name.lower() for name in headers}
    for name, value in carrier.items():
        if name.lower() not in present:
            headers[name] = value


# ----------------------------------------------------------------------------------------------- exporter

Exporter = Literal["azure_monitor", "otlp", "none"]
#: Sets up the Azure Monitor exporter from a connection string. By default
#: :func:`scheduler_core.adapters.azure.monitor.configure_azure_monitor` (the app's managed identity); the
#: composition root may pass its own (only adapters import Azure SDKs).
AzureMonitorSetup = Callable[[str], object]

_configured: list[Exporter] = []


def exporter_for(connection_string: str, otlp_endpoint: str) -> Exporter:
    """Which exporter the settings choose: Azure Monitor first, then OTLP, else none."""
    if connection_string.strip():
        return "azure_monitor"
    if otlp_endpoint.strip():
        return "otlp"
    return "none"


def configure(connection_string: str, otlp_endpoint: str, azure_monitor: AzureMonitorSetup | None = None) -> Exporter:
    """Set up the chosen exporter, for metrics and spans, once per process (later calls return the first
    choice). A missing optional package or an exporter that fails to start (a malformed connection string)
    is logged, never raised: the scheduler runs on without telemetry."""
    with _lock:
        if _configured:
            return _configured[0]
        choice = exporter_for(connection_string, otlp_endpoint)
        _configured.append(choice)
    try:
        if choice == "azure_monitor":
            (azure_monitor or _configure_azure_monitor)(connection_string)
        elif choice == "otlp":
            _configure_otlp()
    except ImportError as exc:
        log.warning("telemetry exporter %s not available (%s); nothing is exported", choice, exc.name)
    except Exception as exc:  # telemetry must never stop the scheduler (the exception may quote the setting)
        log.warning("telemetry exporter %s failed to start (%s); nothing is exported", choice, type(exc).__name__)
    else:
        log.info("telemetry exporter: %s", choice, extra={"scheduler_exporter": choice})
    return choice


def _configure_azure_monitor(connection_string: str) -> None:
    """The Azure Monitor exporter with the app's managed identity (imported here: never at app import)."""
    from scheduler_core.adapters.azure.monitor import configure_azure_monitor

    configure_azure_monitor(connection_string)


def _configure_otlp() -> None:
    """SDK meter and tracer providers exporting over OTLP/HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (read by the
    exporters; optional packages ``opentelemetry-sdk`` and ``opentelemetry-exporter-otlp-proto-http``)."""
    from opentelemetry import metrics, trace
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # type: ignore[import-not-found,unused-ignore]
        OTLPMetricExporter,
    )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
        OTLPSpanExporter,
    )
    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    metrics.set_meter_provider(SdkMeterProvider(metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]))
    tracer_provider = SdkTracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(tracer_provider)


def set_log_level(level: int | None) -> None:
    """``SCHEDULER_LOG_LEVEL``: the least level of the scheduler's own loggers (``scheduler_core.*``; None: leave
    them as the host configured them)."""
    if level is not None:
        logging.getLogger("scheduler_core").setLevel(level)


#: Libraries whose loggers the app sets to WARNING unless something configured them: the Azure SDK's
#: HttpLoggingPolicy writes every storage request's URL and headers at INFO, and the Functions Python worker
#: runs with its root logger at INFO (Azure/azure-sdk-for-python#17961), so in Azure each storage call would
#: format and ship a log record (0.1-0.16 ms of CPU per call, measured, and Application Insights ingestion).
QUIETED_LIBRARIES = ("azure", "urllib3")


def quiet_libraries() -> None:
    """Set each of :data:`QUIETED_LIBRARIES`' loggers to WARNING, unless its level was set already (by the
    host, a test or the user): their warnings and errors still show, their per-request lines do not."""
    for name in QUIETED_LIBRARIES:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


def reset_configuration() -> None:
    """Forget the exporter choice (tests)."""
    with _lock:
        _configured.clear()


# --------------------------------------------------------------------------------------------------- logs

#: Every structured log field of the scheduler starts with this (custom dimensions in Application Insights).
FIELD_PREFIX = "scheduler_"


def target_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, the host read as ``requests`` reads it to connect (urllib3's parser:
    ``https://a.example\\@b.example/`` is ``a.example``, where the call goes): never its path, query string,
    user info or fragment."""
    from urllib3.exceptions import LocationParseError
    from urllib3.util import parse_url

    try:
        parts = parse_url(url.strip())
    except (LocationParseError, ValueError):
        return "(unparsable url)"
    host = (parts.host or "").lower()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{(parts.scheme or '').lower()}://{host}" + (f":{parts.port}" if parts.port is not None else "")


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
