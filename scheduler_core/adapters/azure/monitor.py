"""Application Insights: the scheduler's metrics and spans through Microsoft's Azure Monitor OpenTelemetry
exporter (``azure-monitor-opentelemetry-exporter``), authenticated with the app's managed identity.

:func:`configure_azure_monitor` is what :func:`scheduler_core.telemetry.configure` runs when
``APPLICATIONINSIGHTS_CONNECTION_STRING`` is set. It builds an SDK meter provider whose periodic reader
exports to Application Insights (``customMetrics``) and an SDK tracer provider whose batch processor exports
spans (an attempt as a request, its HTTP call as a dependency), and installs both as the process's global
providers. The connection string only says where to send (``IngestionEndpoint``) and which resource
(``InstrumentationKey``); every request carries an Entra ID token of the app's identity (scope
``https://monitor.azure.com//.default``, role Monitoring Metrics Publisher), as the component's local
authentication is disabled (``infra/modules/monitoring.bicep``).

Importing this module costs nothing: the exporter and the SDK (about 0.4 s of imports) are imported when
:func:`configure_azure_monitor` runs, on the first invocation, never when ``function_app`` is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler_core import __version__
from scheduler_core.adapters.azure.credentials import LazyCredential

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

__all__ = ["DEFAULT_EXPORT_INTERVAL_SECONDS", "SERVICE_NAME", "AzureMonitorPipeline", "configure_azure_monitor"]

#: Metrics are exported this often (the SDK's default; Application Insights aggregates per minute).
DEFAULT_EXPORT_INTERVAL_SECONDS = 60.0
#: The ``service.name`` of the telemetry (Application Insights' cloud role name).
SERVICE_NAME = "azure-scheduler"

#: The app's own identity (``DefaultAzureCredential``: the managed identity in Azure), built on first use.
_identity = LazyCredential()


@dataclass(frozen=True)
class AzureMonitorPipeline:
    """The providers that export to Application Insights."""

    meter_provider: MeterProvider
    tracer_provider: TracerProvider

    def flush(self, timeout_seconds: float = 30.0) -> bool:
        """Export what was recorded now (spans ended and the current metric values); True if both exports
        finished within the timeout."""
        millis = int(timeout_seconds * 1000)
        spans = self.tracer_provider.force_flush(millis)
        metrics = self.meter_provider.force_flush(millis)
        return bool(spans) and bool(metrics)

    def shutdown(self) -> None:
        """Export what is left and stop the exporters' threads."""
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


def configure_azure_monitor(
    connection_string: str,
    credential: TokenCredential | None = None,
    *,
    export_interval_seconds: float = DEFAULT_EXPORT_INTERVAL_SECONDS,
    install: bool = True,
    **exporter_options: Any,
) -> AzureMonitorPipeline:
    """Export metrics and spans to the Application Insights resource of ``connection_string`` with
    ``credential`` (default: the app's managed identity through ``DefaultAzureCredential``).

    ``install`` sets the providers as the process's global ones (what the app does; a test records through
    :func:`scheduler_core.telemetry.use_meter_provider` / ``use_tracer_provider`` instead, as the global
    providers can be set once per process). ``exporter_options`` go to both exporters as they are (e.g.
    ``storage_directory`` or ``disable_offline_storage`` for the exporter's retry files)."""
    from azure.monitor.opentelemetry.exporter import AzureMonitorMetricExporter, AzureMonitorTraceExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    options: dict[str, Any] = {
        **exporter_options,
        "connection_string": connection_string,
        "credential": credential if credential is not None else _identity.get(),
    }
    resource = Resource.create({"service.name": SERVICE_NAME, "service.version": __version__})
    reader = PeriodicExportingMetricReader(
        AzureMonitorMetricExporter(**options), export_interval_millis=export_interval_seconds * 1000
    )
    meter_provider = MeterProvider(metric_readers=[reader], resource=resource)
    tracer_provider = TracerProvider(resource=resource)
    span_exporter = AzureMonitorTraceExporter(tracer_provider=tracer_provider, **options)
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
    if install:
        from opentelemetry import metrics, trace

        metrics.set_meter_provider(meter_provider)
        trace.set_tracer_provider(tracer_provider)
    return AzureMonitorPipeline(meter_provider, tracer_provider)
