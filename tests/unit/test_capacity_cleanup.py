"""The cleanup's part of the capacity model (bench/capacity.py): its load on the account, spread over its
window, the messages it keeps in flight and what it leaves for firing, on fixed inputs."""

from __future__ import annotations

import pytest

from bench.capacity import (
    GOAL,
    CleanupCost,
    CleanupRun,
    Compute,
    Limits,
    cleanup_account_load,
    cleanup_messages_in_flight,
    fires_left_during_cleanup,
)
from scheduler_core.pipeline.cleanup import SPREAD

COST = CleanupCost(requests_per_job=4.0, claim_batches=2.0, window_s=20 * 3600.0)


def test_the_model_spreads_over_the_window_the_code_spreads_over() -> None:
    assert CleanupCost().window_s == SPREAD.total_seconds()


def test_ten_million_jobs_are_a_small_steady_load() -> None:
    assert COST.requests == 6.0
    assert cleanup_account_load(10_000_000, COST) == pytest.approx(10_000_000 * 6 / 72_000)  # 833/s
    compute = Compute(cpu_ms_per_fire=10.0, storage_call_ms=10.0)
    assert cleanup_messages_in_flight(10_000_000, COST, compute) == pytest.approx(8.33, abs=0.01)


def test_what_the_cleanup_leaves_for_firing() -> None:
    limits = Limits()
    assert fires_left_during_cleanup(0, COST, GOAL, limits) == pytest.approx(5_000)
    assert fires_left_during_cleanup(12_000_000, COST, GOAL, limits) == pytest.approx((20_000 - 1_000) / 4)
    assert fires_left_during_cleanup(10**12, COST, GOAL, limits) == 0  # never below zero
    assert fires_left_during_cleanup(12_000_000, COST, GOAL, limits, accounts=2) == pytest.approx(9_750)


def test_a_measured_run_gives_requests_and_rates_per_job() -> None:
    ops = {"table query": 300, "table batch": 100, "queue get": 2, "queue delete": 1}
    run = CleanupRun(workers=2, jobs=100, removed=20, history_removed=160, messages=3, seconds=4.0, ops=ops)
    assert run.jobs_per_s == 25.0
    assert run.table_requests_per_job() == 4.0
    assert run.queue_requests_per_job() == pytest.approx(0.03)
