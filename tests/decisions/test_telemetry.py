"""What an operator sees of real executions (memory adapter, simulated time, a real HTTP target): one INFO
line per attempt with its facts as ``scheduler_*`` fields and never a secret, stale and coalesced runs
explained, empty scans at DEBUG, and the OpenTelemetry instruments read through the SDK's in-memory reader."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from scheduler_core import telemetry
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.pipeline.ticks import last_tick
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, fixed_retries, http_action, job_body

LATER = START + timedelta(minutes=10)
SECRETS = ("s3cr3t-sig", "t0ken-code", "hunter2-password", "Bearer-abc-123", "/private/path")


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    """The SDK's in-memory reader, recording every instrument of this test (the global provider untouched)."""
    reader = InMemoryMetricReader()
    telemetry.use_meter_provider(MeterProvider(metric_readers=[reader]))
    yield reader
    telemetry.use_meter_provider(None)


def points(reader: InMemoryMetricReader, name: str) -> list[tuple[dict[str, Any], Any]]:
    """(attributes, value) of every data point of metric ``name``: a sum's value, a histogram's count, a
    gauge's value."""
    found: list[tuple[dict[str, Any], Any]] = []
    data = reader.get_metrics_data()
    if data is None:
        return found
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        value = getattr(point, "value", None)
                        count = getattr(point, "count", None)
                        found.append((dict(point.attributes or {}), count if value is None else value))
    return found


def secret_job(target: HttpTarget, start: datetime = LATER, **extra: Any) -> dict[str, Any]:
    action = http_action(f"{target.base_url}/private/path?sig=s3cr3t-sig&code=t0ken-code", **extra)
    action["request"]["headers"] = {"Authorization": "Bearer-abc-123"}
    action["request"]["authentication"] = {"type": "Basic", "username": "ops", "password": "hunter2-password"}
    return job_body(start, action)


def attempt_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "scheduler_core.execute" and hasattr(r, "scheduler_next")]


def assert_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    for record in caplog.records:
        text = record.getMessage() + json.dumps(telemetry.fields_of(record), default=str)
        for secret in SECRETS:
            assert secret not in text, f"{secret!r} logged by {record.name}: {text}"


def test_a_successful_attempt_is_one_info_line_naming_job_target_and_what_follows(
    deployment: Deployment, target: HttpTarget, caplog: pytest.LogCaptureFixture, reader: InMemoryMetricReader
) -> None:
    caplog.set_level(logging.DEBUG, logger="scheduler_core")
    deployment.put_job("nightly", secret_job(target))
    deployment.clock.set(LATER - timedelta(seconds=30))
    deployment.scan()
    deployment.clock.set(LATER + timedelta(seconds=2))  # two seconds late
    [report] = deployment.deliver()
    assert report.outcome is Outcome.SUCCEEDED

    [record] = attempt_records(caplog)
    assert record.levelno == logging.INFO
    fields = telemetry.fields_of(record)
    origin = target.base_url  # http://127.0.0.1:<port>
    assert fields["scheduler_collection"] == "jc1" and fields["scheduler_job"] == "nightly"
    assert fields["scheduler_target"] == origin
    assert fields["scheduler_action_type"] == "Http"
    assert (fields["scheduler_attempt"], fields["scheduler_attempts"]) == (1, 5)  # default policy: 4 retries
    assert (fields["scheduler_outcome"], fields["scheduler_status_code"]) == ("succeeded", 200)
    assert fields["scheduler_lateness_s"] == pytest.approx(2.0, abs=0.01)
    assert fields["scheduler_duration_s"] >= 0
    assert fields["scheduler_next"] == "completed"  # a one-time job: its only occurrence succeeded
    assert fields["scheduler_occurrence"] == LATER.strftime("%Y-%m-%dT%H:%M:%SZ")
    text = record.getMessage()
    assert text.startswith("jc1/nightly: occurrence ") and f"attempt 1/5 Http {origin} -> succeeded (200)" in text
    assert "next: job Completed" in text
    assert_no_secret(caplog)

    assert points(reader, telemetry.ATTEMPTS) == [({"outcome": "succeeded", "action_type": "Http"}, 1)]
    [(attributes, count)] = points(reader, telemetry.LATENESS)
    assert (attributes, count) == ({"action_type": "Http"}, 1)
    assert points(reader, telemetry.JOBS_FINISHED) == [({"state": "Completed"}, 1)]


def test_a_failed_attempt_says_when_it_is_retried_and_the_last_one_that_the_job_faulted(
    deployment: Deployment, target: HttpTarget, caplog: pytest.LogCaptureFixture, reader: InMemoryMetricReader
) -> None:
    caplog.set_level(logging.INFO, logger="scheduler_core")
    target.answer([500])
    deployment.put_job("flaky", secret_job(target, retryPolicy=fixed_retries(1, "PT20S")))
    deployment.run_until(LATER + timedelta(minutes=2))

    first, last = attempt_records(caplog)
    one, two = telemetry.fields_of(first), telemetry.fields_of(last)
    assert (one["scheduler_attempt"], one["scheduler_attempts"], one["scheduler_status_code"]) == (1, 2, 500)
    assert one["scheduler_next"] == "retry" and one["scheduler_retry_at"] is not None
    assert f"next: retry at {one['scheduler_retry_at']}" in first.getMessage()
    assert (two["scheduler_attempt"], two["scheduler_outcome"], two["scheduler_next"]) == (2, "failed", "faulted")
    assert "next: job Faulted" in last.getMessage()
    # The retry's lateness is measured against its own retry time, not against the occurrence (20 s before).
    retry_at = datetime.fromisoformat(one["scheduler_retry_at"].replace("Z", "+00:00"))
    since_retry_time = two["scheduler_since_occurrence_s"] - (retry_at - LATER).total_seconds()
    assert two["scheduler_since_occurrence_s"] > 15  # PT20S after the first call
    assert two["scheduler_lateness_s"] == pytest.approx(since_retry_time, abs=0.01)
    assert 0 <= two["scheduler_lateness_s"] < 2
    assert f"{two['scheduler_lateness_s']:.3f} s late (" in last.getMessage() and " s late" in first.getMessage()
    assert_no_secret(caplog)

    assert points(reader, telemetry.ATTEMPTS) == [({"outcome": "failed", "action_type": "Http"}, 2)]
    assert points(reader, telemetry.RETRIES) == [({"action": "main"}, 1)]
    assert points(reader, telemetry.JOBS_FINISHED) == [({"state": "Faulted"}, 1)]
    [(_, lateness_count)] = points(reader, telemetry.LATENESS)
    assert lateness_count == 2  # the first call against its occurrence, the retry against its retry time

    [entry] = [e for e in deployment.service.list_history(deployment.ref("flaky")) if e.retry_count == 1]
    assert entry.due_time == retry_at  # the history entry keeps what the retry was due at


def test_a_run_on_demand_is_not_lateness(
    deployment: Deployment, target: HttpTarget, caplog: pytest.LogCaptureFixture, reader: InMemoryMetricReader
) -> None:
    caplog.set_level(logging.INFO, logger="scheduler_core")
    deployment.put_job("nightly", secret_job(target, LATER + timedelta(days=1)))
    deployment.service.run_job(deployment.ref("nightly"))
    deployment.clock.advance(3)  # taken three seconds after it was asked for
    [report] = deployment.deliver()
    assert report.outcome is Outcome.SUCCEEDED

    [record] = attempt_records(caplog)
    fields = telemetry.fields_of(record)
    assert fields["scheduler_lateness_s"] is None and fields["scheduler_since_occurrence_s"] == pytest.approx(
        3, abs=0.01
    )
    assert "s after its occurrence (not lateness)" in record.getMessage()
    assert points(reader, telemetry.LATENESS) == []


def test_the_error_action_is_named_as_what_follows_the_last_failed_retry(
    deployment: Deployment, target: HttpTarget, caplog: pytest.LogCaptureFixture, reader: InMemoryMetricReader
) -> None:
    caplog.set_level(logging.INFO, logger="scheduler_core")
    target.answer([500])
    error = {"type": "Http", "request": {"uri": f"{target.base_url}/error?key=t0ken-code", "method": "POST"}}
    deployment.put_job("guarded", secret_job(target, retryPolicy=NO_RETRY, errorAction=error))
    deployment.run_until(LATER + timedelta(minutes=1))

    main, error_attempt = attempt_records(caplog)
    assert telemetry.fields_of(main)["scheduler_next"] == "error_action"
    assert "next: error action sent" in main.getMessage()
    assert telemetry.fields_of(error_attempt)["scheduler_action"] == "error"
    assert telemetry.fields_of(error_attempt)["scheduler_next"] == "faulted"
    # The error action is late against its send, which here is its occurrence's instant: still lateness.
    assert telemetry.fields_of(error_attempt)["scheduler_lateness_s"] == pytest.approx(0, abs=0.01)
    assert points(reader, telemetry.ERROR_ACTIONS) == [({}, 1)]
    assert_no_secret(caplog)


@pytest.mark.parametrize("change", ["disabled", "edited", "deleted"])
def test_a_stale_message_says_why(
    deployment: Deployment,
    target: HttpTarget,
    caplog: pytest.LogCaptureFixture,
    reader: InMemoryMetricReader,
    change: str,
) -> None:
    caplog.set_level(logging.INFO, logger="scheduler_core")
    deployment.put_job("gone", secret_job(target))
    deployment.clock.set(LATER - timedelta(seconds=30))
    deployment.scan()
    ref = deployment.ref("gone")
    if change == "disabled":
        deployment.service.patch_job(ref, {"properties": {"state": "Disabled"}})
    elif change == "edited":
        deployment.put_job("gone", secret_job(target, LATER + timedelta(hours=1)))  # moved: not due now
    else:
        deployment.service.delete_job(ref)
    deployment.clock.set(LATER)
    reports = deployment.deliver()  # the message of the old generation (an edit may have sent its own)
    assert Outcome.STALE in [report.outcome for report in reports]

    [record] = [r for r in caplog.records if getattr(r, "scheduler_outcome", None) == "stale"]
    assert record.levelno == logging.INFO
    assert telemetry.fields_of(record)["scheduler_reason"] == change
    assert telemetry.fields_of(record)["scheduler_job"] == "gone"
    assert "gone" in record.getMessage() and f"({change})" in record.getMessage()
    assert ({"outcome": "stale", "action_type": "unknown"}, 1) in points(reader, telemetry.ATTEMPTS)


def test_an_empty_scan_is_debug_and_a_coalesced_run_names_the_job_and_its_occurrences(
    deployment: Deployment, target: HttpTarget, caplog: pytest.LogCaptureFixture, reader: InMemoryMetricReader
) -> None:
    caplog.set_level(logging.DEBUG, logger="scheduler_core")
    deployment.scan()
    scans = [r for r in caplog.records if hasattr(r, "scheduler_shard")]
    assert len(scans) == deployment.settings.due_shards
    assert {r.levelno for r in scans} == {logging.DEBUG}

    deployment.put_job("every-minute", job_body(LATER, http_action(target.base_url), {"frequency": "Minute"}))
    deployment.clock.set(LATER + timedelta(minutes=10, seconds=30))  # the service was down for ten minutes
    caplog.clear()
    deployment.scan()

    [coalesced] = [r for r in caplog.records if hasattr(r, "scheduler_missed") and r.name == "scheduler_core.dispatch"]
    assert coalesced.levelno == logging.INFO
    assert telemetry.fields_of(coalesced)["scheduler_job"] == "every-minute"
    assert telemetry.fields_of(coalesced)["scheduler_missed"] == 11
    assert "jc1/every-minute" in coalesced.getMessage() and "stands for 11" in coalesced.getMessage()
    busy = [r for r in caplog.records if getattr(r, "scheduler_fired", 0)]
    assert [r.levelno for r in busy] == [logging.INFO]
    assert points(reader, telemetry.COALESCED) == [({}, 11)]
    durations = points(reader, telemetry.SCAN_DURATION)
    assert len(durations) == deployment.settings.due_shards  # one series per shard
    assert sum(value for _, value in points(reader, telemetry.SCAN_ROWS)) >= 1


def test_a_tick_counts_itself_records_its_heartbeat_and_samples_the_queue_depth(
    deployment: Deployment, target: HttpTarget, caplog: pytest.LogCaptureFixture, reader: InMemoryMetricReader
) -> None:
    caplog.set_level(logging.INFO, logger="scheduler_core")
    deployment.put_job("soon", job_body(LATER, http_action(target.base_url)))
    deployment.clock.set(LATER - timedelta(seconds=30))
    deployment.scan()  # one execution message queued
    sent: list[str] = []
    assert last_tick(deployment.storage.stores) is None

    deployment.dispatcher.tick(sent.append, deployment.clock())

    assert len(sent) == deployment.settings.due_shards
    assert last_tick(deployment.storage.stores) == deployment.clock()
    assert points(reader, telemetry.DISPATCH_TICKS) == [({}, 1)]
    assert points(reader, telemetry.EXECUTION_QUEUE_DEPTH) == [({}, 1)]
    [record] = [r for r in caplog.records if hasattr(r, "scheduler_execution_queue_depth")]
    assert telemetry.fields_of(record)["scheduler_execution_queue_depth"] == 1
    assert deployment.scan().fired == 0  # the heartbeat row is in no shard a scan reads


def test_json_lines_carry_every_field_of_a_real_attempt(
    deployment: Deployment, target: HttpTarget, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="scheduler_core")
    deployment.put_job("nightly", secret_job(target))
    deployment.run_until(LATER + timedelta(seconds=5))
    [record] = attempt_records(caplog)

    line = json.loads(telemetry.JsonFormatter().format(record))

    assert line["level"] == "INFO" and line["logger"] == "scheduler_core.execute"
    assert line["message"] == record.getMessage()
    assert line["scheduler_job"] == "nightly" and line["scheduler_status_code"] == 200
    assert line["time"].endswith("Z")
    for secret in SECRETS:
        assert secret not in json.dumps(line)


@pytest.mark.parametrize(
    ("connection_string", "otlp", "expected"),
    [
        ("InstrumentationKey=00000000-0000-0000-0000-000000000000", "", "azure_monitor"),
        ("InstrumentationKey=x", "http://127.0.0.1:4318", "azure_monitor"),
        ("", "http://127.0.0.1:4318", "otlp"),
        ("  ", "", "none"),
        ("", "", "none"),
    ],
)
def test_the_exporter_follows_the_settings(connection_string: str, otlp: str, expected: str) -> None:
    assert telemetry.exporter_for(connection_string, otlp) == expected


def test_targets_are_logged_without_path_query_or_user_info() -> None:
    assert telemetry.target_of("https://user:pw@example.com:8443/a/b?sig=1#f") == "https://example.com:8443"
    assert telemetry.target_of("http://[::1]:80/x?y") == "http://[::1]:80"
    assert telemetry.target_of("https://example.com/x") == "https://example.com"
    # the host the call connects to, not the one urlsplit reads past a backslash
    assert telemetry.target_of("https://attacker.example\\@management.azure.com/x") == "https://attacker.example"
