"""Flow control state (:class:`scheduler_core.ports.FlowLimits`) on every adapter: reservations evenly spaced
and in order, at most ``limit`` slots held at once (also when many take them at the same time), a dead holder's
slot free once its time has passed, renewals, and the notes of waiting attempts."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from scheduler_core.ports import FlowLimits

T0 = datetime(2030, 1, 1, 12, tzinfo=UTC)
KEY = "flow-0123456789abcdef"
SPACING = timedelta(milliseconds=250)


def test_reservations_are_spaced_in_order_and_a_past_one_starts_now(flow: FlowLimits) -> None:
    starts = [flow.reserve(KEY, SPACING, T0, f"attempt {i}") for i in range(4)]
    assert starts == [T0 + SPACING * i for i in range(4)]
    later = T0 + timedelta(seconds=10)
    assert flow.reserve(KEY, SPACING, later, "late") == later  # the key was idle: at once
    assert flow.reserve("flow-other", SPACING, T0, "other") == T0  # keys are apart


def test_a_holder_that_reserved_gets_its_start_again_and_takes_no_other(flow: FlowLimits) -> None:
    first = flow.reserve(KEY, SPACING, T0, "attempt")
    assert flow.reserve(KEY, SPACING, T0 + timedelta(seconds=1), "attempt") == first  # a copy of its message
    assert flow.reserve(KEY, SPACING, T0, "next") == T0 + SPACING  # nothing was taken by the copy
    flow.forget(KEY, "attempt")
    flow.forget(KEY, "attempt")  # twice: nothing more
    assert flow.reserve(KEY, SPACING, T0, "after") == T0 + 2 * SPACING  # its instant stays taken


def test_a_late_attempt_whose_reservation_is_the_keys_last_starts_now_else_after_the_last(flow: FlowLimits) -> None:
    assert flow.reserve(KEY, SPACING, T0, "a") == T0
    assert flow.reserve(KEY, SPACING, T0, "b") == T0 + SPACING
    late = T0 + SPACING + timedelta(milliseconds=100)  # b arrives after its start: no one reserved after it
    assert (
        flow.reserve(KEY, SPACING, late, "b", passed=T0 + SPACING) == late
    )  # not the key's next instant, T0 + 2 spacings
    assert flow.reserve(KEY, SPACING, late, "c") == late + SPACING  # the spacing holds after it
    assert flow.reserve(KEY, SPACING, late, "d") == late + 2 * SPACING
    # c arrives late too, but d reserved after it: c takes the instant after d's
    again = late + SPACING + timedelta(milliseconds=100)
    assert flow.reserve(KEY, SPACING, again, "c", passed=late + SPACING) == late + 3 * SPACING


def test_concurrent_reservations_never_share_an_instant(flow: FlowLimits) -> None:
    with ThreadPoolExecutor(8) as pool:
        starts = list(pool.map(lambda i: flow.reserve(KEY, SPACING, T0, f"h{i}"), range(24)))
    assert sorted(starts) == [T0 + SPACING * i for i in range(24)]


def test_concurrent_copies_of_one_attempt_share_one_start(flow: FlowLimits) -> None:
    with ThreadPoolExecutor(8) as pool:
        starts = list(pool.map(lambda i: flow.reserve(KEY, SPACING, T0, f"h{i % 3}"), range(12)))
    assert sorted(set(starts)) == [T0 + SPACING * i for i in range(3)]


def test_at_most_limit_slots_are_held_and_a_release_frees_one(flow: FlowLimits) -> None:
    until = T0 + timedelta(seconds=15)
    assert flow.acquire(KEY, 2, "a", until, T0) and flow.acquire(KEY, 2, "b", until, T0)
    assert not flow.acquire(KEY, 2, "c", until, T0)
    assert flow.acquire(KEY, 2, "a", until + timedelta(seconds=5), T0)  # its own: a renewal
    flow.release(KEY, "b")
    flow.release(KEY, "b")  # twice: nothing more
    assert flow.acquire(KEY, 2, "c", until, T0)
    assert not flow.acquire(KEY, 2, "d", until, T0)


def test_a_slot_whose_time_has_passed_is_free(flow: FlowLimits) -> None:
    assert flow.acquire(KEY, 1, "died", T0 + timedelta(seconds=15), T0)
    assert not flow.acquire(KEY, 1, "next", T0 + timedelta(seconds=30), T0 + timedelta(seconds=14))
    assert flow.acquire(KEY, 1, "next", T0 + timedelta(seconds=30), T0 + timedelta(seconds=15))
    assert not flow.acquire(KEY, 1, "died", T0 + timedelta(seconds=45), T0 + timedelta(seconds=16))  # it is gone


def test_many_taking_at_once_never_hold_more_than_the_limit(flow: FlowLimits) -> None:
    until = T0 + timedelta(minutes=1)
    with ThreadPoolExecutor(8) as pool:
        taken = list(pool.map(lambda i: flow.acquire(KEY, 3, f"h{i}", until, T0), range(16)))
    assert sum(taken) <= 3
    assert sum(taken) >= 1  # contention may leave slots unused for a moment, never over-fill them


def test_waiting_notes_are_per_job_ordered_and_run_out(flow: FlowLimits) -> None:
    until = T0 + timedelta(seconds=30)
    flow.wait(KEY, "job|a", "2030-01-01T12:01:00Z|schedule|main|000", until)
    flow.wait(KEY, "job|a", "2030-01-01T12:00:00Z|schedule|main|000", until)
    flow.wait(KEY, "job|b", "2030-01-01T11:00:00Z|schedule|main|000", until)
    assert flow.first_waiting(KEY, "job|a", T0) == "2030-01-01T12:00:00Z|schedule|main|000"
    assert flow.waiting(KEY, "job|a", "2030-01-01T12:01:00Z|schedule|main|000", T0) == until
    assert flow.waiting(KEY, "job|a", "2030-01-01T13:00:00Z|schedule|main|000", T0) is None
    flow.done_waiting(KEY, "job|a", "2030-01-01T12:00:00Z|schedule|main|000")
    assert flow.first_waiting(KEY, "job|a", T0) == "2030-01-01T12:01:00Z|schedule|main|000"
    assert flow.first_waiting(KEY, "job|a", until) is None  # run out
    assert flow.waiting(KEY, "job|a", "2030-01-01T12:01:00Z|schedule|main|000", until) is None
