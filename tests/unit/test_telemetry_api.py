"""``telemetry.record_api_request``: management API requests counted by operation and status, with their
duration, read through the OpenTelemetry SDK's in-memory reader; and an exporter that cannot start never
stops the app."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from scheduler_core import telemetry
from tests.support.metrics import metric_reader, points


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    with metric_reader() as reader:
        yield reader


def test_requests_are_counted_by_operation_and_status_with_their_duration(reader: InMemoryMetricReader) -> None:
    telemetry.record_api_request("PUT", "job", 201, 0.05)
    telemetry.record_api_request("put", "job", 201, 0.15)
    telemetry.record_api_request("GET", "jobs", 200, 0.01)
    telemetry.record_api_request("DELETE", "job", 404)

    counts = {key: point.value for key, point in points(reader, telemetry.API_REQUESTS).items()}
    assert counts == {
        (("operation", "job.PUT"), ("status", "201")): 2,
        (("operation", "jobs.GET"), ("status", "200")): 1,
        (("operation", "job.DELETE"), ("status", "404")): 1,
    }
    durations = points(reader, telemetry.API_DURATION)
    put = durations[(("operation", "job.PUT"), ("status", "201"))]
    assert put.count == 2 and put.sum == pytest.approx(0.2)
    assert (("operation", "job.DELETE"), ("status", "404")) not in durations  # not measured, not recorded


def test_a_method_a_client_made_up_is_other(reader: InMemoryMetricReader) -> None:
    for method in ("BREW", "X-" + "A" * 50, "QUERY"):
        telemetry.record_api_request(method, "invalid", 405, 0.001)
    counts = {key: point.value for key, point in points(reader, telemetry.API_REQUESTS).items()}
    assert counts == {(("operation", "invalid.OTHER"), ("status", "405")): 3}


def test_every_instrument_is_named_in_the_list_the_docs_and_alerts_use() -> None:
    assert telemetry.API_REQUESTS in telemetry.METRIC_NAMES and telemetry.API_DURATION in telemetry.METRIC_NAMES
    assert len(set(telemetry.METRIC_NAMES)) == len(telemetry.METRIC_NAMES) == 14


def test_an_exporter_that_cannot_start_is_logged_and_the_app_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    telemetry.reset_configuration()
    meters, tracers = metrics.get_meter_provider(), trace.get_tracer_provider()
    try:
        with caplog.at_level(logging.WARNING, logger="scheduler_core.telemetry"):
            secret = "InstrumentationKey=not-a-guid-s3cr3t"
            assert telemetry.configure(secret, "") == "azure_monitor"
        [record] = caplog.records
        expected = "telemetry exporter azure_monitor failed to start (ValueError); nothing is exported"
        assert record.getMessage() == expected
        assert "s3cr3t" not in caplog.text
        assert telemetry.configure("", "http://127.0.0.1:4318") == "azure_monitor"  # chosen once per process
    finally:
        telemetry.reset_configuration()
    assert (metrics.get_meter_provider(), trace.get_tracer_provider()) == (meters, tracers)  # nothing installed


def test_lateness_buckets_tell_on_time_from_late(reader: InMemoryMetricReader) -> None:
    meters = telemetry.instruments()
    for seconds in (0.004, 0.02, 0.02, 3.0, 45.0):
        meters.lateness.record(seconds, {"action_type": "Http"})
    [point] = points(reader, telemetry.LATENESS).values()
    assert tuple(point.explicit_bounds) == telemetry.LATENESS_BUCKETS
    counts = dict(zip([*telemetry.LATENESS_BUCKETS, float("inf")], point.bucket_counts, strict=True))
    assert (counts[0.01], counts[0.025], counts[5.0], counts[60.0]) == (1, 2, 1, 1)
