"""Every attempt the executor runs is a span, and the HTTP target of each attempt joins that attempt's trace:
real executions (the services over the memory adapter, simulated time, retries and an error action) against a
real HTTP server on 127.0.0.1, the spans read through the OpenTelemetry SDK's in-memory span exporter."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from scheduler_core import telemetry
from scheduler_core.settings import Settings
from tests.support.harness import Deployment, near_now
from tests.support.http_target import HttpTarget
from tests.support.jobs import job_body

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def pipeline(memory_env: Settings) -> Deployment:
    """The pipeline on the memory adapter, in simulated time from just past a whole minute of the real clock."""
    return near_now(memory_env)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use_tracer_provider(provider)
    yield exporter
    telemetry.use_tracer_provider(None)
    provider.shutdown()


def attempts(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == "scheduler.attempt"]


def test_each_attempt_of_an_execution_is_a_span_its_target_joins(
    pipeline: Deployment, target: HttpTarget, spans: InMemorySpanExporter
) -> None:
    target.answer([500, 200])
    due = pipeline.clock.now + timedelta(seconds=20)
    action = {
        "type": "Http",
        "request": {"uri": target.base_url + "/hook", "method": "POST", "body": "x"},
        "retryPolicy": {"retryType": "Fixed", "retryInterval": "PT20S", "retryCount": 1},
    }
    pipeline.put_job("retried", job_body(due, action))
    pipeline.run_until(due + timedelta(minutes=2))

    first, second = attempts(spans)
    assert [(s.attributes or {})["scheduler.attempt"] for s in (first, second)] == [1, 2]
    assert [(s.attributes or {})["scheduler.cause"] for s in (first, second)] == ["schedule", "retry"]
    assert [(s.attributes or {})["scheduler.outcome"] for s in (first, second)] == ["failed", "succeeded"]
    assert [(s.attributes or {})["scheduler.status_code"] for s in (first, second)] == [500, 200]
    assert first.status.status_code is StatusCode.ERROR and second.status.status_code is StatusCode.UNSET
    assert all(
        s.kind is SpanKind.CONSUMER and (s.attributes or {})["scheduler.job"] == "retried" for s in (first, second)
    )
    assert first.context.trace_id != second.context.trace_id  # each attempt is a trace of its own

    received = target.wait_for(2)
    for request, attempt in zip(received, (first, second), strict=True):
        trace_id = request.headers["traceparent"].split("-")[1]
        assert int(trace_id, 16) == attempt.context.trace_id


def test_an_error_action_is_an_attempt_span_of_its_own(
    pipeline: Deployment, target: HttpTarget, spans: InMemorySpanExporter
) -> None:
    target.answer([500])
    due = pipeline.clock.now + timedelta(seconds=20)
    request = {"uri": target.base_url + "/hook", "method": "POST", "body": "x"}
    action = {
        "type": "Http",
        "request": request,
        "retryPolicy": {"retryType": "None"},
        "errorAction": {"type": "Http", "request": {**request, "uri": target.base_url + "/error"}},
    }
    pipeline.put_job("guarded", job_body(due, action))
    pipeline.run_until(due + timedelta(minutes=1))

    main, error = attempts(spans)
    assert [(s.attributes or {})["scheduler.action"] for s in (main, error)] == ["main", "error"]
    assert all((s.attributes or {})["scheduler.outcome"] == "failed" for s in (main, error))
