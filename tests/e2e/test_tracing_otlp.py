"""OTLP: with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set, the app's metrics and spans go over OTLP/HTTP. The
receiver is ``bench.precision.OtlpCollector``, a real HTTP server on 127.0.0.1 that decodes the protobuf
payloads (the collector the metrics chart of docs/operations.md is drawn from). The app runs in a fresh
process, as the global providers can be set once per process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.precision import otlp_collector_if
from scheduler_core import telemetry

pytestmark = [pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]

APP_PROCESS = """
from opentelemetry import metrics, trace
from scheduler_core import settings, telemetry

config = settings.load()  # the app's settings, from the environment
print(telemetry.configure(config.appinsights_connection_string, config.otlp_endpoint))
telemetry.instruments().attempts.add(3, {"outcome": "succeeded", "action_type": "Http"})
telemetry.instruments().lateness.record(0.02, {"action_type": "Http"})
with telemetry.tracer().start_as_current_span("probe"):
    pass
print(trace.get_tracer_provider().force_flush(20000) and metrics.get_meter_provider().force_flush(20000))
"""


def test_metrics_and_spans_go_to_the_otlp_endpoint(tmp_path: Path) -> None:
    with otlp_collector_if(True) as collector:
        assert collector is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "APPLICATIONINSIGHTS_"))}
        env.update(
            PYTHONPATH=str(ROOT),
            AzureWebJobsStorage__accountName="acct",
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint,
        )
        done = subprocess.run(
            [sys.executable, "-c", APP_PROCESS],
            check=False,
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["otlp", "True"], done.stderr
    # cumulative points: the flush's, and the same again when the process exits
    attempts = {(p.attributes, p.value) for p in collector.points if p.name == telemetry.ATTEMPTS}
    assert attempts == {((("action_type", "Http"), ("outcome", "succeeded")), 3.0)}
    lateness = [p for p in collector.points if p.name == telemetry.LATENESS]
    assert lateness and all(p.bounds == telemetry.LATENESS_BUCKETS and sum(p.counts) == 1 for p in lateness)
    assert [span["name"] for span in collector.spans] == ["probe"]
