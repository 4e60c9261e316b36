"""Spans and trace context: an attempt's span, the HTTP call as its child, and the W3C ``traceparent`` a real
target on 127.0.0.1 receives, read through the OpenTelemetry SDK's in-memory span exporter (the SDK's own
test exporter). The job and its execution message are real (the services over the memory adapter, a
one-shot job fired by a scan); the attempt runs through the app's action runner."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider, SpanKind, StatusCode

from scheduler_core import telemetry
from scheduler_core.actions import ActionContext, ActionResult
from scheduler_core.model import Job
from scheduler_core.pipeline import reporting
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.settings import Settings
from tests.support.harness import Deployment, near_now
from tests.support.http_target import HttpTarget
from tests.support.jobs import job_body

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def pipeline(memory_env: Settings) -> Deployment:
    """The pipeline on the memory adapter, in simulated time from just past a whole minute of the real clock."""
    return near_now(memory_env)


#: version 00, trace id, parent (span) id, flags (bit 0: sampled; the SDK also sets bit 1, a random trace id)
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
SECRET_QUERY = "sig=s3cr3t-sig"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Every span of the test, in the SDK's in-memory exporter (the global tracer provider untouched)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use_tracer_provider(provider)
    yield exporter
    telemetry.use_tracer_provider(None)
    provider.shutdown()


def fired(
    pipeline: Deployment, target: HttpTarget, name: str, headers: dict[str, str] | None = None
) -> ExecutionMessage:
    """A one-shot job calling ``target`` (a secret in its query string), scanned at its due time: its message."""
    due = pipeline.clock.now + timedelta(seconds=20)
    request: dict[str, object] = {"uri": f"{target.base_url}/hook?{SECRET_QUERY}", "method": "POST", "body": "x"}
    if headers:
        request["headers"] = headers
    pipeline.put_job(name, job_body(due, {"type": "Http", "request": request}))
    pipeline.clock.set(due)
    pipeline.scan()
    [message] = pipeline.take()
    return message


def run_attempt(pipeline: Deployment, message: ExecutionMessage) -> tuple[Job, ActionResult]:
    """Run the message's attempt in its span, as the executor does."""
    job = pipeline.services.service.get_job(pipeline.ref(message.job_row))
    action = job.definition.action.main
    context = ActionContext(
        job.ref.resource_id,
        job.ref.collection.resource_id,
        message.occurrence_time,
        message.stable_execution_id(),
        message.attempt,
    )
    with reporting.attempt_span(job, message, action) as span:
        result = span.record(pipeline.services.executor.runner.run(action, context))
    return job, result


def by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    finished = exporter.get_finished_spans()
    named = {span.name: span for span in finished}
    assert len(named) == len(finished), [span.name for span in finished]
    return named


def test_the_target_joins_the_trace_of_the_attempt(
    pipeline: Deployment, target: HttpTarget, spans: InMemorySpanExporter
) -> None:
    message = fired(pipeline, target, "traced")
    job, result = run_attempt(pipeline, message)
    assert result.succeeded and result.status_code == 200

    found = by_name(spans)
    attempt, call = found["scheduler.attempt"], found["POST"]
    assert attempt.kind is SpanKind.CONSUMER and call.kind is SpanKind.CLIENT
    assert call.parent is not None and call.parent.span_id == attempt.context.span_id
    assert attempt.parent is None  # the attempt starts the trace

    [received] = target.received
    header = TRACEPARENT.match(received.headers["traceparent"])
    assert header is not None, received.headers["traceparent"]
    assert int(header.group(1), 16) == attempt.context.trace_id == call.context.trace_id
    assert int(header.group(2), 16) == call.context.span_id  # the target's parent is the call's span
    assert int(header.group(3), 16) & 1  # sampled: the target should record its part

    assert dict(attempt.attributes or {}) == {
        "scheduler.subscription": "sub1",
        "scheduler.resource_group": "rg",
        "scheduler.collection": "jc",
        "scheduler.job": "traced",
        "scheduler.occurrence": message.occurrence,
        "scheduler.action": "main",
        "scheduler.attempt": 1,
        "scheduler.cause": "schedule",
        "scheduler.action_type": "Http",
        "scheduler.target": target.base_url,
        "scheduler.execution_id": message.stable_execution_id(),
        "scheduler.outcome": "succeeded",
        "scheduler.status_code": 200,
    }
    assert received.headers["x-ms-scheduler-execution-id"] == message.stable_execution_id()
    assert attempt.status.status_code is StatusCode.UNSET
    port = int(target.base_url.rsplit(":", 1)[1])
    assert dict(call.attributes or {}) == {
        "http.request.method": "POST",
        "url.scheme": "http",
        "server.address": "127.0.0.1",
        "server.port": port,
        "http.response.status_code": 200,
    }
    assert job.ref.name == "traced"


def test_a_failed_answer_marks_both_spans_failed(
    pipeline: Deployment, target: HttpTarget, spans: InMemorySpanExporter
) -> None:
    target.answer([503])
    _, result = run_attempt(pipeline, fired(pipeline, target, "down"))
    assert not result.succeeded and result.status_code == 503

    found = by_name(spans)
    attempt, call = found["scheduler.attempt"], found["POST"]
    assert attempt.status.status_code is StatusCode.ERROR and call.status.status_code is StatusCode.ERROR
    assert (attempt.attributes or {})["scheduler.outcome"] == "failed"
    assert (attempt.attributes or {})["scheduler.status_code"] == 503
    assert (call.attributes or {})["http.response.status_code"] == 503


def test_a_call_that_gets_no_answer_has_no_status_code(
    pipeline: Deployment, target: HttpTarget, spans: InMemorySpanExporter
) -> None:
    message = fired(pipeline, target, "unreachable")
    pipeline.services.service.patch_job(
        pipeline.ref("unreachable"),
        {"properties": {"action": {"type": "Http", "request": {"uri": "http://127.0.0.1:9/", "method": "GET"}}}},
    )
    _, result = run_attempt(pipeline, message)
    assert not result.succeeded and result.status_code is None
    found = by_name(spans)
    assert "scheduler.status_code" not in (found["scheduler.attempt"].attributes or {})
    assert "http.response.status_code" not in (found["GET"].attributes or {})
    assert found["GET"].status.status_code is StatusCode.ERROR


def test_no_span_attribute_carries_the_path_or_query(
    pipeline: Deployment, target: HttpTarget, spans: InMemorySpanExporter
) -> None:
    run_attempt(pipeline, fired(pipeline, target, "quiet"))
    for span in spans.get_finished_spans():
        for value in (span.attributes or {}).values():
            assert "/hook" not in str(value) and SECRET_QUERY not in str(value), (span.name, value)


def test_the_jobs_own_traceparent_header_wins(
    pipeline: Deployment, target: HttpTarget, spans: InMemorySpanExporter
) -> None:
    own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    run_attempt(pipeline, fired(pipeline, target, "own", headers={"TraceParent": own}))
    [received] = target.received
    values = [value for name, value in received.headers.items() if name.lower() == "traceparent"]
    assert values == [own]
    assert {span.name for span in spans.get_finished_spans()} == {"scheduler.attempt", "POST"}


def test_without_tracing_no_traceparent_is_sent(pipeline: Deployment, target: HttpTarget) -> None:
    telemetry.use_tracer_provider(NoOpTracerProvider())  # what the API does when no exporter is configured
    try:
        _, result = run_attempt(pipeline, fired(pipeline, target, "untraced"))
    finally:
        telemetry.use_tracer_provider(None)
    assert result.succeeded
    [received] = target.received
    assert not any(name.lower() in ("traceparent", "tracestate") for name in received.headers)
