"""``scheduler.api.requests`` and ``scheduler.api.duration`` are recorded by the management API for every
request it answers (the real function app on the local host, over Azurite), read through the OpenTelemetry
SDK's in-memory reader: a create, a read, a refused request and a path that names nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from scheduler_core import telemetry
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

RG = "/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections"


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    telemetry.use_meter_provider(MeterProvider(metric_readers=[reader]))
    yield reader
    telemetry.use_meter_provider(None)


def points(reader: InMemoryMetricReader, name: str) -> dict[tuple[tuple[str, Any], ...], Any]:
    found: dict[tuple[tuple[str, Any], ...], Any] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        found[tuple(sorted((point.attributes or {}).items()))] = point
    return found


def test_every_answered_request_is_counted_by_operation_and_status(reader: InMemoryMetricReader, api: Api) -> None:
    body = {"location": "westus", "properties": {"sku": {"name": "Standard"}}}
    assert api.call("PUT", f"{RG}/jc1", body).status_code in (200, 201)
    assert api.call("GET", f"{RG}/jc1").status_code == 200
    assert api.call("GET", f"{RG}/jc1", key="wrong-key").status_code == 401
    assert api.call("GET", "/subscriptions/sub1/nothing/here").status_code == 404

    counts = {
        f"{dict(key)['operation']} {dict(key)['status']}": point.value
        for key, point in points(reader, telemetry.API_REQUESTS).items()
    }
    assert counts == {"collection.PUT 201": 1, "collection.GET 200": 1, "collection.GET 401": 1, "invalid.GET 404": 1}
    durations = points(reader, telemetry.API_DURATION)
    read = durations[(("operation", "collection.GET"), ("status", "200"))]
    assert read.count == 1 and read.sum > 0
