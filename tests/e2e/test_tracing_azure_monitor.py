"""Application Insights: the scheduler's metrics and spans leave through Microsoft's Azure Monitor exporter
(``scheduler_core/adapters/azure/monitor.py``) with an Entra ID token, and arrive as Application Insights
envelopes.

The ingestion endpoint is :func:`ingestion_endpoint`, a real HTTPS server on 127.0.0.1 **posing as
Application Insights' ingestion endpoint** (``POST /v2.1/track``, answering as the service does); the
connection string's ``IngestionEndpoint`` points at it, and it receives the exporter's real payload. HTTPS
because the exporter sends a bearer token over TLS only (its certificate from a test CA the client trusts,
as a deployment trusts its CAs). The token comes from ``TestCredential`` (a **test double** of the app's
identity) in the in-process tests, and in the subprocess test from the app's default credential against
:func:`identity_endpoint`, a real HTTP server on 127.0.0.1 **posing as App Service's managed identity
endpoint** (``IDENTITY_ENDPOINT`` / ``IDENTITY_HEADER``, which is how Azure Functions hands an app its
identity). Statsbeat and the exporter's control plane (calls to Microsoft, outside this machine) are
switched off by their settings; nothing leaves 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from azure.core.exceptions import ClientAuthenticationError

from scheduler_core import telemetry
from scheduler_core.actions import ActionContext
from scheduler_core.adapters.azure.monitor import AzureMonitorPipeline, configure_azure_monitor
from scheduler_core.pipeline import reporting
from scheduler_core.settings import Settings
from tests.actions.conftest import TestCredential
from tests.support.harness import Deployment, near_now
from tests.support.http_target import HttpTarget
from tests.support.identity_endpoint import identity_endpoint
from tests.support.jobs import job_body
from tests.support.tls import Seen, TestCa, https_peer

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def pipeline(memory_env: Settings) -> Deployment:
    """The pipeline on the memory adapter, in simulated time from just past a whole minute of the real clock."""
    return near_now(memory_env)


ROOT = Path(__file__).resolve().parents[2]
IKEY = "3a1b0c2d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
#: Settings that keep the exporter from calling Microsoft's own endpoints (statsbeat, control plane) and from
#: sending its SDK statistics to the ingestion endpoint among the scheduler's telemetry.
QUIET_EXPORTER = {
    "APPLICATIONINSIGHTS_STATSBEAT_DISABLED_ALL": "true",
    "APPLICATIONINSIGHTS_CONTROLPLANE_DISABLED": "true",
    "APPLICATIONINSIGHTS_SDKSTATS_DISABLED": "true",
}


@dataclass
class Ingestion:
    """What the ingestion endpoint received: each POST's headers and its envelopes."""

    base_url: str
    posts: list[Seen] = field(default_factory=list)

    def envelopes(self) -> list[dict[str, Any]]:
        return [item for seen in self.posts for item in json.loads(seen.body)]

    def of_type(self, base_type: str) -> list[dict[str, Any]]:
        return [e for e in self.envelopes() if e["data"]["baseType"] == base_type]

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, Any]]:
        """Each metric data point by (name, sorted properties)."""
        found = {}
        for envelope in self.of_type("MetricData"):
            data = envelope["data"]["baseData"]
            for metric in data["metrics"]:
                found[(metric["name"], tuple(sorted(data.get("properties", {}).items())))] = metric
        return found


@contextmanager
def ingestion_endpoint(ca: TestCa) -> Iterator[Ingestion]:
    """A real HTTPS server on 127.0.0.1 posing as Application Insights' ingestion endpoint: ``POST /v2.1/track``
    with a JSON array of envelopes is answered as the service answers (items received and accepted)."""

    def track(seen: Seen) -> tuple[int, str, bytes]:
        if seen.method != "POST" or seen.path != "/v2.1/track":
            return 404, "application/json", b'{"error": "not the track endpoint"}'
        items = json.loads(seen.body)
        answer = {"itemsReceived": len(items), "itemsAccepted": len(items), "errors": []}
        return 200, "application/json", json.dumps(answer).encode()

    with https_peer(ca, track, require_client_cert=False) as peer:
        ingestion = Ingestion(peer.base_url)
        ingestion.posts = peer.seen  # the peer appends what it sees
        yield ingestion


def connection_string(ingestion: Ingestion) -> str:
    return f"InstrumentationKey={IKEY};IngestionEndpoint={ingestion.base_url}/"


@pytest.fixture(scope="module")
def ca() -> TestCa:
    return TestCa()


@pytest.fixture
def ingestion(ca: TestCa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Ingestion]:
    for name, value in QUIET_EXPORTER.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca.write_pem(tmp_path)))
    with ingestion_endpoint(ca) as running:
        yield running


@contextmanager
def exporting(ingestion: Ingestion, credential: Any) -> Iterator[AzureMonitorPipeline]:
    """The Azure Monitor pipeline, recorded into by the scheduler's instruments and tracer (not installed as
    the process's global providers, which can be set once per process)."""
    pipeline = configure_azure_monitor(
        connection_string(ingestion), credential, install=False, disable_offline_storage=True
    )
    telemetry.use_meter_provider(pipeline.meter_provider)
    telemetry.use_tracer_provider(pipeline.tracer_provider)
    try:
        yield pipeline
    finally:
        telemetry.use_meter_provider(None)
        telemetry.use_tracer_provider(None)
        pipeline.shutdown()


def one_shot(pipeline: Deployment, target: HttpTarget, name: str) -> None:
    due = pipeline.clock.now + timedelta(seconds=20)
    request = {"uri": f"{target.base_url}/hook?sig=s3cr3t", "method": "POST", "body": "x"}
    pipeline.put_job(name, job_body(due, {"type": "Http", "request": request}))


def test_metrics_and_the_call_of_a_real_execution_reach_application_insights_with_a_token(
    pipeline: Deployment, target: HttpTarget, ingestion: Ingestion
) -> None:
    credential = TestCredential()
    with exporting(ingestion, credential) as monitor:
        one_shot(pipeline, target, "nightly")
        pipeline.run_until(pipeline.clock.now + timedelta(minutes=2))
        assert len(target.received) == 1
        assert monitor.flush(20)

    assert ingestion.posts, "nothing reached the ingestion endpoint"
    for post in ingestion.posts:
        assert post.headers["Authorization"] == "Bearer test-managed-identity-token"
    assert set(credential.scopes) == {("https://monitor.azure.com//.default",)}
    assert {e["iKey"] for e in ingestion.envelopes()} == {IKEY}
    assert {e["tags"]["ai.cloud.role"] for e in ingestion.envelopes()} == {"azure-scheduler"}

    metrics = ingestion.metrics()
    assert metrics[("scheduler.attempts", (("action_type", "Http"), ("outcome", "succeeded")))]["value"] == 1
    lateness = metrics[("scheduler.lateness", (("action_type", "Http"),))]
    assert lateness["count"] == 1 and lateness["value"] >= 0
    assert metrics[("scheduler.jobs.finished", (("state", "Completed"),))]["value"] == 1

    [call] = [e["data"]["baseData"] for e in ingestion.of_type("RemoteDependencyData")]
    assert call["type"] == "HTTP" and call["name"].startswith("POST")
    assert call["resultCode"] == "200" and call["success"] is True
    assert call["target"] == target.base_url.removeprefix("http://")
    assert "s3cr3t" not in json.dumps(ingestion.envelopes())


def test_an_attempt_is_a_request_and_the_target_shares_its_operation(
    pipeline: Deployment, target: HttpTarget, ingestion: Ingestion
) -> None:
    target.answer([500])
    one_shot(pipeline, target, "flaky")
    pipeline.clock.set(pipeline.clock.now + timedelta(seconds=20))
    pipeline.scan()
    [message] = pipeline.take()
    job = pipeline.services.service.get_job(pipeline.ref("flaky"))
    action = job.definition.action.main
    context = ActionContext(
        job.ref.resource_id, job.ref.collection.resource_id, message.occurrence_time, "exec-1", message.attempt
    )
    with exporting(ingestion, TestCredential()) as monitor:
        with reporting.attempt_span(job, message, action) as span:
            span.record(pipeline.services.executor.runner.run(action, context))
        assert monitor.flush(20)

    [request] = ingestion.of_type("RequestData")
    data = request["data"]["baseData"]
    assert data["name"] == "scheduler.attempt" and data["success"] is False
    assert data["properties"]["scheduler.job"] == "flaky"
    assert data["properties"]["scheduler.collection"] == "jc"
    assert data["properties"]["scheduler.occurrence"] == message.occurrence
    assert data["properties"]["scheduler.outcome"] == "failed"
    assert str(data["properties"]["scheduler.status_code"]) == "500"
    [dependency] = ingestion.of_type("RemoteDependencyData")
    assert dependency["data"]["baseData"]["resultCode"] == "500"
    operation = request["tags"]["ai.operation.id"]
    assert dependency["tags"]["ai.operation.id"] == operation
    assert dependency["tags"]["ai.operation.parentId"] == data["id"]
    [received] = target.received
    trace_id, parent_id = received.headers["traceparent"].split("-")[1:3]
    assert trace_id == operation  # the target's telemetry joins the same operation in Application Insights
    assert parent_id == dependency["data"]["baseData"]["id"]


@dataclass
class RefusingCredential:
    """**Test double** of an identity that cannot get a token (no role, no identity on the machine)."""

    asked: int = 0

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.asked += 1
        raise ClientAuthenticationError("no managed identity here")


def test_without_a_token_nothing_is_sent(ingestion: Ingestion) -> None:
    credential = RefusingCredential()
    with exporting(ingestion, credential) as monitor:
        telemetry.instruments().attempts.add(1, {"outcome": "succeeded", "action_type": "Http"})
        monitor.flush(20)
    assert credential.asked >= 1
    assert ingestion.posts == []  # the instrumentation key alone is never used to send


#: Run in a fresh process: the app's own set-up (telemetry.configure, as the first invocation runs it) with
#: the connection string, then one attempt counted and one span, exported at exit by the providers' flush.
APP_PROCESS = """
import sys
from opentelemetry import metrics, trace
from scheduler_core import telemetry

choice = telemetry.configure(sys.argv[1], "")
telemetry.instruments().attempts.add(1, {"outcome": "failed", "action_type": "Http"})
with telemetry.tracer().start_as_current_span("probe"):
    pass
ok = trace.get_tracer_provider().force_flush(20000) and metrics.get_meter_provider().force_flush(20000)
print(choice, type(trace.get_tracer_provider()).__module__, ok)
"""


def test_the_app_sends_with_its_managed_identity(ingestion: Ingestion, tmp_path: Path) -> None:
    """The production path: ``telemetry.configure`` chooses Azure Monitor for the connection string, the
    adapter gets a token for the app's identity from the platform's identity endpoint, and the telemetry
    arrives with it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_", "IDENTITY_", "MSI_", "IMDS_"))}
    with identity_endpoint() as identity:
        env.update(
            IDENTITY_ENDPOINT=identity.url,
            IDENTITY_HEADER=identity.header,
            PYTHONPATH=str(ROOT),
            HOME=str(tmp_path),  # no developer credential of this machine's user is found instead
        )
        done = subprocess.run(
            [sys.executable, "-c", APP_PROCESS, connection_string(ingestion)],
            check=False,
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["azure_monitor", "opentelemetry.sdk.trace", "True"], done.stderr
    [request] = identity.seen()
    assert request.headers["X-IDENTITY-HEADER"] == identity.header
    assert request.path == "/msi/token" and request.query["resource"] == ["https://monitor.azure.com/"]
    assert request.query["api-version"] == ["2019-08-01"]
    assert ingestion.posts
    token = identity.token_for("https://monitor.azure.com/", 1)
    assert {post.headers["Authorization"] for post in ingestion.posts} == {f"Bearer {token}"}
    names = {e["data"]["baseData"].get("name") for e in ingestion.envelopes()}
    assert "probe" in names
    assert ("scheduler.attempts", (("action_type", "Http"), ("outcome", "failed"))) in ingestion.metrics()
