"""Timer triggers run as singletons, when the instance holding the timer's lock goes: after a crash its lease
expires and the other instance takes the timer over within the lease period and the recovery interval, making
up the missed occurrence at once; after a graceful stop the lease is released and the other takes over at its
next poll. Either way no occurrence runs twice, and the host that went runs nothing more.

Two in-process local hosts share the session's Azurite and a host id, as in ``tests/e2e/test_timer_singleton.py``
(its ``hosts`` fixture and app): host.json's ``singleton`` section at its shortest (lease 15 s, recovery
polling 15 s), a timer every 2 seconds. A module of its own, so that its waits run beside that one's.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import azure.functions as func
import pytest
from azure.storage.blob import BlobServiceClient

from local_host.runtime import LocalHost
from tests.e2e.test_timer_singleton import (
    LEASE,
    RECOVERY,
    SLACK,
    Calls,
    assert_once_per_occurrence,
    blobs,
    crash,
    host_id,
    hosts,
    lease_state,
    make_app,
    wait_for,
)

__all__ = ["blobs", "host_id", "hosts"]  # fixtures of test_timer_singleton, used here

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


def test_a_crashed_holder_hands_the_timer_over_within_the_lease_period_and_the_recovery_interval(
    hosts: Callable[[func.FunctionApp], LocalHost], host_id: str, blobs: BlobServiceClient
) -> None:
    calls = Calls()
    first = hosts(make_app("a", calls))
    wait_for(lambda: first.timers[0].holds_lock, timeout=10)
    second = hosts(make_app("b", calls))
    wait_for(lambda: len(calls.of("a")) >= 1, timeout=5)
    assert not second.timers[0].holds_lock
    crash(first)
    crashed_at = time.monotonic()  # its timer thread has ended: it runs nothing after this
    assert lease_state(blobs, host_id) == "leased"  # not released: it must expire
    taken = wait_for(lambda: len(calls.of("b")) >= 1, timeout=LEASE + RECOVERY + SLACK)
    print(f"\ntakeover after a crash: {taken:.1f} s (bound {LEASE + RECOVERY:g} s)")
    assert all(call.at <= crashed_at for call in calls.of("a")), "the crashed host ran the timer again"
    # The new holder makes up what was missed at once (the status blob says the next run is past)...
    assert calls.of("b")[0].past_due
    # ...and then runs on schedule, never an occurrence the first host ran.
    wait_for(lambda: len(calls.of("b")) >= 3, timeout=8)
    assert_once_per_occurrence(calls.snapshot())


def test_a_graceful_stop_releases_the_lease_and_the_other_takes_over_at_its_next_poll(
    hosts: Callable[[func.FunctionApp], LocalHost], host_id: str, blobs: BlobServiceClient
) -> None:
    calls = Calls()
    first = hosts(make_app("a", calls))
    wait_for(lambda: first.timers[0].holds_lock, timeout=10)
    second = hosts(make_app("b", calls))
    wait_for(lambda: len(calls.of("a")) >= 1, timeout=5)
    first.stop()
    stopped_at = time.monotonic()
    assert lease_state(blobs, host_id) == "available"  # released, not left to expire
    taken = wait_for(lambda: len(calls.of("b")) >= 1, timeout=RECOVERY + SLACK)
    print(f"\ntakeover after a graceful stop: {taken:.1f} s (bound {RECOVERY:g} s)")
    assert second.timers[0].holds_lock
    assert all(call.at <= stopped_at for call in calls.of("a"))
    assert_once_per_occurrence(calls.snapshot())
