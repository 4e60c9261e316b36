"""Shared pieces of the benchmarks: a private Azurite, settings, timing and table printing."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from local_host.azurite import Azurite  # noqa: E402
from local_host.runtime import PLANS  # noqa: E402
from scheduler_core import settings, wiring  # noqa: E402
from scheduler_core.adapters.azure.provision import provision  # noqa: E402


def add_plan_option(parser: argparse.ArgumentParser) -> None:
    """``--plan``, the local host's plan (``LocalHost(plan=...)``, ``python -m local_host run --plan``): HTTP and
    timers on threads of their own (``default``), or every invocation on the worker's one pool of
    ``PYTHON_THREADPOOL_THREAD_COUNT`` threads, as the Python worker runs sync functions (``elastic-premium``)."""
    parser.add_argument(
        "--plan",
        choices=PLANS,
        default="default",
        help="the local host's plan: elastic-premium runs HTTP and timers on the worker's one pool too",
    )


@contextmanager
def azurite_settings(**extra: str) -> Iterator[settings.Settings]:
    """A private in-memory Azurite and settings pointing at it (fresh tables and queues)."""
    with Azurite() as azurite:
        suffix = uuid.uuid4().hex[:6]
        sample = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
        values = {
            **sample,
            "AzureWebJobsStorage": azurite.connection_string,
            "SCHEDULER_TABLE_PREFIX": f"b{suffix}",
            "SCHEDULER_SCAN_QUEUE": f"scan-{suffix}",
            "SCHEDULER_EXECUTION_QUEUE": f"exec-{suffix}",
            **extra,
        }
        os.environ.update(values)
        wiring.reset()
        config = settings.load()
        provision(config)
        yield config


def timed_calls(fn: Callable[[int], None], count: int, threads: int) -> tuple[float, list[float]]:
    """Run ``fn(i)`` for i in range(count) on ``threads`` threads: (wall seconds, per-call latencies)."""
    latencies: list[float] = []

    def one(i: int) -> None:
        started = time.perf_counter()
        fn(i)
        latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(one, range(count)))
    return time.perf_counter() - started, latencies


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
