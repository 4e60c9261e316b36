"""The OpenTelemetry SDK's in-memory metric reader installed as the scheduler's meter provider, and the data
points it read, for tests of ``scheduler_core.telemetry``'s instruments."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from scheduler_core import telemetry

Attributes = tuple[tuple[str, Any], ...]


@contextmanager
def metric_reader() -> Iterator[InMemoryMetricReader]:
    """An in-memory reader of everything the scheduler's instruments record while the block runs."""
    reader = InMemoryMetricReader()
    telemetry.use_meter_provider(MeterProvider(metric_readers=[reader]))
    try:
        yield reader
    finally:
        telemetry.use_meter_provider(None)


def points(reader: InMemoryMetricReader, name: str) -> dict[Attributes, Any]:
    """Data points of metric ``name`` by their sorted attributes: a sum's value, a histogram's point."""
    found: dict[Attributes, Any] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        found[tuple(sorted((point.attributes or {}).items()))] = point
    return found
