"""``scheduler.api.requests`` and ``scheduler.api.duration`` are recorded by the management API for every
request it answers (the real function app on the local host, over Azurite), read through the OpenTelemetry
SDK's in-memory reader: a create, a read, a refused request and a path that names nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from scheduler_core import telemetry
from tests.e2e.conftest import Api
from tests.support.metrics import metric_reader, points

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

RG = "/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections"


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    with metric_reader() as reader:
        yield reader


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
