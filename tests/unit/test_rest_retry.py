"""The storage clients' retry waits are the SDKs' own: each wait compared with the SDK policy's
``get_backoff_time`` for the same failure count (the scripted-server tests in tests/contract count the tries)."""

from __future__ import annotations

from azure.core.pipeline.policies import RetryPolicy
from azure.storage.queue import ExponentialRetry

from scheduler_core.adapters.azure.rest._retry import StorageTries, Tries


def test_table_waits_are_azure_cores_with_the_tables_defaults() -> None:
    policy = RetryPolicy(retry_backoff_factor=0.8)
    tries = Tries()
    for failures in range(1, 4):
        wait = tries.after_answer("GET", 503, {})
        assert wait == policy.get_backoff_time({"history": [None] * failures, "backoff": 0.8, "max_backoff": 120})
    assert tries.after_answer("GET", 503, {}) is None  # three status retries, then the answer stands


def test_queue_waits_are_the_storage_sdks_exponential_retry() -> None:
    for initial, base in ((15, 3), (1, 2)):
        sdk = ExponentialRetry(initial_backoff=initial, increment_base=base, random_jitter_range=0)
        tries = StorageTries(initial=initial, base=base, jitter=0)
        waits = [tries.after_error("POST", connecting=True) for _ in range(4)]
        assert waits[:3] == [sdk.get_backoff_time({"count": count}) for count in (1, 2, 3)]
        assert waits[3] is None
    assert StorageTries(jitter=0).after_answer("GET", 500, {}) == 18  # the first retry of a default queue client
