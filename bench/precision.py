"""Benchmark: firing precision, end to end, in real time.

    .venv/bin/python -m bench.precision [--jobs 600] [--spread 120] [--threads 40] [--plan elastic-premium]
    .venv/bin/python -m bench.precision --jobs 300 --failing 30 --chart docs/images/metrics.svg

Runs the whole function app on the local host (HTTP API, dispatch timer, scan and execution queues) on a
private Azurite, creates ``--jobs`` one-shot HTTP jobs through the API with start times spread over
``--spread`` seconds (second-level start times), and measures for each the lateness: the instant the HTTP
server on loopback received the call minus the job's start time. Prints p50 / p99 / max lateness.
``--threads`` is ``PYTHON_THREADPOOL_THREAD_COUNT`` (the threads that run queue functions; 40 as in Azure).
``--plan elastic-premium`` runs the local host with HTTP and timer invocations on those threads too, as the
Python worker runs every sync function on an Elastic Premium plan (default: threads of their own).

``--chart PATH`` also exports the app's metrics and spans over OTLP/HTTP (``OTEL_EXPORTER_OTLP_ENDPOINT``,
every 5 s; needs ``opentelemetry-exporter-otlp-proto-http``) to :class:`OtlpCollector`, a tiny collector in
this process, and draws them as an SVG dashboard (:func:`render_dashboard`); ``--failing N`` adds N jobs
whose target answers 500 (one retry 20 s later, then an error action to the same target), so that failures,
retries and faulted jobs show. Lateness is measured on the ``--jobs`` jobs only.

Also printed: the CPU time of this process (the host, its Azurite client side and the target) from the first
due time to the end, per fired job. ``--reporting-cost`` instead measures, in this process, what reporting one
attempt costs (``reporting.attempt_span`` and ``attempt_ran``: its log line, metrics and span) with logging off,
with INFO lines to a handler (plain and JSON), and with the OpenTelemetry SDK recording (:func:`reporting_cost`).
"""

from __future__ import annotations

import argparse
import gzip
import html
import math
import resource
import threading
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path
from typing import Any

import requests

from bench.common import ROOT, add_plan_option, azurite_settings, percentile, table
from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth
from tests.support.http_target import http_target

JC = "subscriptions/bench/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/c"
#: How often the app exports metrics to the collector with ``--chart`` (milliseconds).
CHART_EXPORT_INTERVAL_MS = 5000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=600)
    parser.add_argument("--spread", type=int, default=120)
    parser.add_argument("--lead", type=int, default=45, help="seconds between the start and the first due time")
    parser.add_argument("--threads", type=int, default=None, help="PYTHON_THREADPOOL_THREAD_COUNT (default: as set)")
    parser.add_argument("--chart", type=Path, default=None, help="export metrics over OTLP and draw them (SVG)")
    parser.add_argument("--failing", type=int, default=0, help="with --chart: jobs whose target answers 500")
    parser.add_argument("--reporting-cost", action="store_true", help="measure what reporting an attempt costs")
    parser.add_argument("--worst", type=int, default=0, help="also list the N latest calls (due time, lateness)")
    add_plan_option(parser)
    args = parser.parse_args()
    if args.reporting_cost:
        print(reporting_cost())
        return
    with otlp_collector_if(args.chart is not None) as collector:
        extra = {}
        if args.threads is not None:  # a setting, over local.settings.sample.json's value
            extra["PYTHON_THREADPOOL_THREAD_COUNT"] = str(args.threads)
        if collector is not None:
            extra |= {
                "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
                "OTEL_METRIC_EXPORT_INTERVAL": str(CHART_EXPORT_INTERVAL_MS),
                "OTEL_BSP_SCHEDULE_DELAY": str(CHART_EXPORT_INTERVAL_MS),
            }
        lateness, fired, duplicates, first, cpu, worst = run(args, extra)
        if collector is not None:
            time.sleep(CHART_EXPORT_INTERVAL_MS / 1000 + 1)  # the last export after the last attempt
            title = (
                f"bench.precision, {args.jobs} jobs over {args.spread} s and {args.failing} failing, "
                f"local host on Azurite, {datetime.now(UTC):%Y-%m-%d}"
            )
            args.chart.write_text(render_dashboard(collector, first.timestamp(), title), encoding="utf-8")
            print(f"chart: {args.chart} ({len(collector.points)} data points, {len(collector.spans)} spans)")
    for seconds, at in worst:
        print(f"late: due {at:%H:%M:%S} (second {at.second:2d} of its minute) arrived {seconds:.3f} s late")
    print(
        table(
            [
                "jobs",
                "fired",
                "missing",
                "duplicates",
                "p50 lateness s",
                "p99 lateness s",
                "max lateness s",
                "min lateness s",
                "CPU ms per fired job",
            ],
            [
                [
                    args.jobs,
                    fired,
                    args.jobs - fired,
                    duplicates,
                    f"{percentile(lateness, 0.5):.2f}",
                    f"{percentile(lateness, 0.99):.2f}",
                    f"{max(lateness, default=float('nan')):.2f}",
                    f"{min(lateness, default=float('nan')):.2f}",
                    f"{cpu * 1000 / max(fired, 1):.1f}",
                ]
            ],
        )
    )


def run(
    args: argparse.Namespace, extra: dict[str, str]
) -> tuple[list[float], int, int, datetime, float, list[tuple[float, datetime]]]:
    """Create the jobs, wait for them to fire: (lateness of each fired job, fired, duplicates, first due, CPU
    seconds of this process from the first due time on, the ``--worst`` latest calls as (lateness, due))."""
    key = auth.generate_key()
    with (
        azurite_settings(SCHEDULER_API_KEYS=auth.hash_entry(key), **extra),
        http_target() as target,
        http_target([500]) as failing_target,
    ):
        import function_app

        with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), plan=args.plan) as host:
            print(f"plan {host.plan}: queue functions on {host.worker_threads} threads")
            session = requests.Session()
            session.headers["Authorization"] = f"Bearer {key}"
            body = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}}
            assert session.put(f"{host.base_url}/{JC}?api-version=2016-03-01", json=body, timeout=30).ok
            first = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=args.lead)
            due = {f"j{i}": first + timedelta(seconds=(i * args.spread) // args.jobs) for i in range(args.jobs)}
            failing = {
                f"f{i}": first + timedelta(seconds=(i * args.spread) // max(args.failing, 1))
                for i in range(args.failing)
            }

            def put(name: str) -> None:
                if name in due:
                    action: dict[str, Any] = {
                        "type": "Http",
                        "request": {"uri": f"{target.base_url}/{name}", "method": "POST"},
                    }
                    start = due[name]
                else:
                    request = {"uri": f"{failing_target.base_url}/{name}", "method": "POST"}
                    action = {
                        "type": "Http",
                        "request": request,
                        "retryPolicy": {"retryType": "Fixed", "retryInterval": "PT20S", "retryCount": 1},
                        "errorAction": {"type": "Http", "request": {**request, "uri": request["uri"] + "/error"}},
                    }
                    start = failing[name]
                job = {"properties": {"startTime": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "action": action}}
                response = session.put(f"{host.base_url}/{JC}/jobs/{name}?api-version=2016-03-01", json=job, timeout=60)
                assert response.status_code == 201, response.text

            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=8) as pool:
                list(pool.map(put, [*due, *failing]))
            took = time.perf_counter() - started
            print(f"created {args.jobs + args.failing} jobs in {took:.1f} s; first due at {first:%H:%M:%S}")
            time.sleep(max(0.0, first.timestamp() - 2 - time.time()))
            cpu_before = process_cpu()
            last_due = max([*due.values(), *failing.values()])
            deadline = last_due.timestamp() + 60
            while time.time() < deadline and len(target.received) < args.jobs:
                time.sleep(0.5)
            if failing:  # the retries (20 s later) and the error actions
                time.sleep(max(0.0, last_due.timestamp() + 25 - time.time()))
            cpu = process_cpu() - cpu_before
    lateness = []
    late: list[tuple[float, datetime]] = []
    seen = set()
    for request in target.received:
        name = request.path.strip("/")
        if name in due and name not in seen:
            seen.add(name)
            lateness.append(request.at - due[name].timestamp())
            late.append((lateness[-1], due[name]))
    worst = sorted(late, reverse=True)[: args.worst]
    return lateness, len(seen), len(target.received) - len(seen), first, cpu, worst


def process_cpu() -> float:
    """User and system CPU seconds of this process so far (every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ------------------------------------------------------------------------------------ reporting cost


def reporting_cost(attempts: int = 20000) -> str:
    """Microseconds of CPU per attempt reported (``attempt_span`` around the call's result, ``attempt_ran``),
    best of three rounds of ``attempts``, in four set-ups: logging off (the bench's local host: no handler,
    root at WARNING) and no SDK; INFO lines through a handler into a null stream (as a host that ships every
    line), plain and as JSON; and INFO lines plus the OpenTelemetry SDK recording metrics (an in-memory reader)
    and spans (a batch processor whose exporter drops them), as with an exporter configured."""
    import io
    import logging

    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from scheduler_core import settings, telemetry, wiring
    from scheduler_core.actions import ActionResult
    from scheduler_core.adapters.memory import memory_storage
    from scheduler_core.pipeline import reporting
    from scheduler_core.pipeline.messages import ExecutionMessage
    from scheduler_core.pipeline.reporting import NextStep
    from scheduler_core.recurrence import format_instant
    from scheduler_core.storage.keys import CollectionRef, JobRef

    class Dropping(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    now = datetime.now(UTC).replace(microsecond=0)
    services = wiring.build(settings.load({"AzureWebJobsStorage__accountName": "bench"}), storage=memory_storage())
    collection = CollectionRef("bench", "rg", "c")
    services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    ref = JobRef(collection, "j1")
    action = {"type": "Http", "request": {"uri": "https://example.com/hook?sig=x", "method": "POST"}}
    body = {"properties": {"startTime": format_instant(now + timedelta(hours=1)), "action": action}}
    job, _ = services.service.put_job(ref, body)
    message = ExecutionMessage(ref.partition_key, ref.row_key, job.generation, format_instant(now))
    http = job.definition.action.main
    policy = job.definition.action.retry_policy
    result = ActionResult(True, "Http Action - Response from host 'example.com': '200 OK'", 200)

    def one() -> None:
        with reporting.attempt_span(job, message, http) as span:
            span.record(result)
        reporting.attempt_ran(job, message, http, policy, "succeeded", "e1", result, now, now, NextStep.CONTINUE, None)

    def best(rounds: int = 3) -> float:
        timings = []
        for _ in range(rounds):
            started = time.process_time()
            for _ in range(attempts):
                one()
            timings.append((time.process_time() - started) / attempts * 1e6)
        return min(timings)

    execute_log = logging.getLogger("scheduler_core.execute")
    rows: list[list[object]] = []
    rows.append(["logging off (no handler), no SDK", f"{best():.1f}"])
    handler = logging.StreamHandler(io.StringIO())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    execute_log.addHandler(handler)
    execute_log.setLevel(logging.INFO)
    try:
        for stream_round in ("plain", "json"):
            if stream_round == "json":
                handler.setFormatter(telemetry.JsonFormatter())
            handler.stream = io.StringIO()
            rows.append([f"INFO lines to a handler ({stream_round}), no SDK", f"{best():.1f}"])
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(BatchSpanProcessor(Dropping()))
        telemetry.use_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
        telemetry.use_tracer_provider(tracer_provider)
        handler.stream = io.StringIO()
        rows.append(["INFO lines (JSON) + SDK metrics and spans", f"{best():.1f}"])
        tracer_provider.shutdown()
    finally:
        telemetry.use_meter_provider(None)
        telemetry.use_tracer_provider(None)
        execute_log.removeHandler(handler)
        execute_log.setLevel(logging.NOTSET)
    return table(["reporting one attempt", "CPU µs per attempt"], rows)


# ------------------------------------------------------------------------------------- OTLP collector


@dataclass(frozen=True)
class Point:
    """One metric data point as exported: a sum's or gauge's ``value``, or a histogram's buckets."""

    name: str
    attributes: tuple[tuple[str, str], ...]
    at: float  # seconds since the epoch
    value: float | None = None
    bounds: tuple[float, ...] = ()
    counts: tuple[int, ...] = ()


@dataclass
class OtlpCollector:
    """A tiny OTLP/HTTP collector on 127.0.0.1 (a benchmark peer): ``POST /v1/metrics`` and ``/v1/traces``
    with protobuf bodies (``opentelemetry-proto``), kept as :class:`Point` and span summaries."""

    endpoint: str = ""
    points: list[Point] = field(default_factory=list)
    spans: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take_metrics(self, body: bytes) -> None:
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (  # type: ignore[import-not-found,unused-ignore]
            ExportMetricsServiceRequest,
        )

        request = ExportMetricsServiceRequest.FromString(body)
        found = []
        for exported in request.resource_metrics:
            for scope in exported.scope_metrics:
                for metric in scope.metrics:
                    kind = metric.WhichOneof("data")
                    for point in getattr(metric, kind).data_points:
                        attributes = tuple(sorted((a.key, _text(a.value)) for a in point.attributes))
                        at = point.time_unix_nano / 1e9
                        if kind == "histogram":
                            found.append(
                                Point(
                                    metric.name,
                                    attributes,
                                    at,
                                    None,
                                    tuple(point.explicit_bounds),
                                    tuple(point.bucket_counts),
                                )
                            )
                        else:
                            value = point.as_double if point.WhichOneof("value") == "as_double" else point.as_int
                            found.append(Point(metric.name, attributes, at, float(value)))
        with self.lock:
            self.points.extend(found)

    def take_spans(self, body: bytes) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # type: ignore[import-not-found,unused-ignore]
            ExportTraceServiceRequest,
        )

        request = ExportTraceServiceRequest.FromString(body)
        found = [
            {
                "name": span.name,
                "trace_id": span.trace_id.hex(),
                "attributes": {a.key: _text(a.value) for a in span.attributes},
            }
            for exported in request.resource_spans
            for scope in exported.scope_spans
            for span in scope.spans
        ]
        with self.lock:
            self.spans.extend(found)


def _text(value: Any) -> str:
    kind = value.WhichOneof("value")
    return str(getattr(value, kind)) if kind else ""


@contextmanager
def otlp_collector_if(wanted: bool) -> Iterator[OtlpCollector | None]:
    if not wanted:
        yield None
        return
    collector = OtlpCollector()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path == "/v1/metrics":
                collector.take_metrics(body)
            elif self.path == "/v1/traces":
                collector.take_spans(body)
            self.send_response(200 if self.path in ("/v1/metrics", "/v1/traces") else 404)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    collector.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield collector
    finally:
        server.shutdown()
        server.server_close()


# ------------------------------------------------------------------------------------ SVG dashboard

Series = list[tuple[float, float]]
COLOURS = {
    "succeeded": "#2e7d32",
    "failed": "#c62828",
    "busy": "#f9a825",
    "duplicate": "#8d6e63",
    "stale": "#757575",
    "p50": "#1565c0",
    "p99": "#ef6c00",
    "max": "#6a1b9a",
}
#: Lines drawn dashed (behind the others: drawn first).
DASHED = frozenset({"max"})
PALETTE = ("#1565c0", "#c62828", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f")


def sums_by(points: Sequence[Point], name: str, key: str) -> dict[str, Series]:
    """Cumulative sums of metric ``name`` per value of attribute ``key`` (every attribute set with that value
    summed), as (export time, total) in time order."""
    per_time: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
    for point in points:
        if point.name == name and point.value is not None:
            label = dict(point.attributes).get(key, name)
            per_time[label][round(point.at, 1)] += point.value
    return {label: sorted(values.items()) for label, values in per_time.items()}


def rates(series: Series) -> Series:
    """Per-interval increases of a cumulative series, at the end of each interval."""
    return [(t1, max(0.0, v1 - v0)) for (_, v0), (t1, v1) in pairwise(series)]


def histogram_quantiles(points: Sequence[Point], name: str, quantiles: Sequence[float]) -> dict[float, Series]:
    """Per-interval quantiles of a cumulative histogram (attribute sets merged): the upper bound of the bucket
    where each quantile falls among the observations of that interval."""
    merged: dict[float, list[int]] = {}
    bounds: tuple[float, ...] = ()
    for point in points:
        if point.name == name and point.counts:
            bounds = point.bounds
            at = round(point.at, 1)
            current = merged.setdefault(at, [0] * len(point.counts))
            for i, count in enumerate(point.counts):
                current[i] += count
    found: dict[float, Series] = {q: [] for q in quantiles}
    times = sorted(merged)
    for before, after in pairwise(times):
        delta = [b - a for a, b in zip(merged[before], merged[after], strict=True)]
        total = sum(delta)
        if total <= 0:
            continue
        for q in quantiles:
            running = 0
            for i, count in enumerate(delta):
                running += count
                if running >= q * total:
                    upper = bounds[i] if i < len(bounds) else (bounds[-1] * 2 if bounds else 0.0)
                    found[q].append((after, upper))
                    break
    return found


def gauges(points: Sequence[Point], name: str) -> Series:
    return sorted({round(p.at, 1): p.value for p in points if p.name == name and p.value is not None}.items())


@dataclass
class Panel:
    title: str
    unit: str
    lines: dict[str, Series] = field(default_factory=dict)
    bars: dict[str, Series] = field(default_factory=dict)


def render_dashboard(collector: OtlpCollector, origin: float, title: str) -> str:
    """Four panels, dashboard style: attempts by outcome, lateness quantiles, queue depths, retries and ends."""
    with collector.lock:
        points = list(collector.points)
        spans = len([s for s in collector.spans if s["name"] == "scheduler.attempt"])
    attempts = {k: rates(v) for k, v in sums_by(points, "scheduler.attempts", "outcome").items()}
    quantiles = histogram_quantiles(points, "scheduler.lateness", (0.5, 0.99, 1.0))
    panels = [
        Panel(f"scheduler.attempts per {CHART_EXPORT_INTERVAL_MS // 1000} s, by outcome", "attempts", bars=attempts),
        Panel(
            "scheduler.lateness (due time to call), per interval",
            "seconds (upper bound of the histogram bucket)",
            lines={"p50": quantiles[0.5], "p99": quantiles[0.99], "max": quantiles[1.0]},
        ),
        Panel(
            "queue depths sampled by the dispatch tick",
            "messages",
            lines={
                "scheduler.execution_queue.depth": gauges(points, "scheduler.execution_queue.depth"),
                "scheduler.poison_queue.length": gauges(points, "scheduler.poison_queue.length"),
            },
        ),
        Panel(
            "retries, error actions, jobs finished (cumulative)",
            "count",
            lines={
                "scheduler.retries": _total(sums_by(points, "scheduler.retries", "action")),
                "scheduler.error_actions": _total(sums_by(points, "scheduler.error_actions", "-")),
                **{
                    f"jobs.finished {state}": series
                    for state, series in sums_by(points, "scheduler.jobs.finished", "state").items()
                },
            },
        ),
    ]
    width, height, pad = 1200, 760, 24
    panel_w, panel_h = (width - 3 * pad) / 2, (height - 3 * pad - 40) / 2
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="Segoe UI, Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#f5f6f8"/>',
        f'<text x="{pad}" y="30" font-size="16" font-weight="600" fill="#222">{html.escape(title)}</text>',
        f'<text x="{width - pad}" y="30" text-anchor="end" fill="#555">{spans} attempt spans exported; '
        "x: seconds from the first due time</text>",
    ]
    for index, panel in enumerate(panels):
        x = pad + (index % 2) * (panel_w + pad)
        y = 40 + pad + (index // 2) * (panel_h + pad)
        parts.append(_panel(panel, x, y, panel_w, panel_h, origin))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _total(by_label: dict[str, Series]) -> Series:
    totals: dict[float, float] = defaultdict(float)
    for series in by_label.values():
        for at, value in series:
            totals[at] += value
    return sorted(totals.items())


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    step = 10 ** len(str(int(value))) / 10 if value >= 1 else 0.1
    while step > value:
        step /= 10
    for factor in (1, 2, 2.5, 5, 10):
        if factor * step >= value:
            return factor * step
    return value


def _panel(panel: Panel, x: float, y: float, w: float, h: float, origin: float) -> str:
    left, right, top, bottom = 56, 16, 52, 62
    plot_w, plot_h = w - left - right, h - top - bottom
    all_series = [*panel.lines.values(), *panel.bars.values()]
    times = [t - origin for s in all_series for t, _ in s]
    t_min, t_max = (min(times), max(times)) if times else (0.0, 1.0)
    t_min, t_max = min(t_min, 0.0), max(t_max, t_min + 1)
    if panel.bars:
        stacked: dict[float, float] = defaultdict(float)
        for series in panel.bars.values():
            for t, v in series:
                stacked[t] += v
        raw_max = max(stacked.values(), default=0.0)
    else:
        raw_max = max((v for s in all_series for _, v in s), default=0.0)
    v_step = _nice_max(raw_max / 4)
    intervals = max(1, math.ceil(raw_max / v_step - 1e-9))
    v_max = v_step * intervals

    def px(t: float) -> float:
        return x + left + (t - origin - t_min) / (t_max - t_min) * plot_w

    def py(v: float) -> float:
        return y + top + plot_h - v / v_max * plot_h

    out = [
        f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6" fill="#fff" stroke="#d9dce1"/>',
        f'<text x="{x + 12}" y="{y + 22}" font-size="13" font-weight="600" fill="#222">'
        f"{html.escape(panel.title)}</text>",
    ]
    for i in range(intervals + 1):
        value = round(v_step * i, 10)
        out.append(
            f'<line x1="{x + left}" x2="{x + left + plot_w}" y1="{py(value):.1f}" y2="{py(value):.1f}" '
            'stroke="#eceef1"/>'
        )
        out.append(f'<text x="{x + left - 6}" y="{py(value) + 4:.1f}" text-anchor="end" fill="#666">{value:g}</text>')
    step = _nice_max((t_max - t_min) / 6)
    tick = math.ceil(t_min / step) * step
    while tick <= t_max:
        out.append(
            f'<text x="{px(tick + origin):.1f}" y="{y + top + plot_h + 16:.1f}" text-anchor="middle" '
            f'fill="#666">{tick:g}</text>'
        )
        tick += step
    out.append(f'<text x="{x + 12}" y="{y + top - 12}" fill="#888">{html.escape(panel.unit)}</text>')
    if panel.bars:
        bar_w = max(2.0, plot_w / max(1, len({t for s in panel.bars.values() for t, _ in s})) * 0.7)
        base: dict[float, float] = defaultdict(float)
        for label, series in panel.bars.items():
            colour = COLOURS.get(label, PALETTE[0])
            for t, v in series:
                if v <= 0:
                    continue
                y0, y1 = py(base[t]), py(base[t] + v)
                out.append(
                    f'<rect x="{px(t) - bar_w:.1f}" y="{y1:.1f}" width="{bar_w:.1f}" height="{y0 - y1:.1f}" '
                    f'fill="{colour}"/>'
                )
                base[t] += v
    ordered = sorted(enumerate(panel.lines.items()), key=lambda item: item[1][0] not in DASHED)
    for i, (label, series) in ordered:
        colour = COLOURS.get(label, PALETTE[i % len(PALETTE)])
        if series:
            path = " ".join(f"{px(t):.1f},{py(v):.1f}" for t, v in series)
            dash = ' stroke-dasharray="6 4"' if label in DASHED else ""
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
            out += [f'<circle cx="{px(t):.1f}" cy="{py(v):.1f}" r="2.5" fill="{colour}"/>' for t, v in series]
    legend = [*panel.bars, *panel.lines]
    for i, label in enumerate(legend):
        colour = COLOURS.get(
            label, PALETTE[(i - len(panel.bars)) % len(PALETTE)] if label in panel.lines else PALETTE[0]
        )
        lx, ly = x + left + (i % 2) * (plot_w / 2), y + h - 24 + (i // 2) * 15
        out.append(f'<rect x="{lx:.1f}" y="{ly - 9:.1f}" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{lx + 14:.1f}" y="{ly:.1f}" fill="#333">{html.escape(label)}</text>')
    return "\n".join(out)


if __name__ == "__main__":
    main()
