"""The pipeline policies' decisions (``scheduler_core.policies``): pure functions over the typed
policy values and the facts, so each rule is shown here case by case; the pipeline acting on them is shown
end to end in ``tests/e2e/test_policies*.py``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core import policies
from scheduler_core.errors import ValidationError
from scheduler_core.model import ActionName, HistoryEntry, HistoryStatus, JobState
from scheduler_core.model.history import Trigger
from scheduler_core.model.job import MissedRunMode, MissedRunPolicy, OverlapPolicy
from scheduler_core.model.retry import Duration, RetryPolicy, RetryType
from scheduler_core.policies import End, Start
from scheduler_core.recurrence import Frequency, Recurrence, compile_adjusted

T0 = datetime(2030, 5, 1, 6, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


# ------------------------------------------------------------------------------------------------ overlap


def test_allow_all_and_no_unfinished_occurrence_run() -> None:
    for policy in OverlapPolicy:
        assert policies.on_overlap(policy, T0 + HOUR, None).start is Start.RUN
    assert policies.on_overlap(OverlapPolicy.ALLOW_ALL, T0 + HOUR, T0, T0 + HOUR).start is Start.RUN


def test_an_occurrence_never_overlaps_itself() -> None:
    # a redelivery of the running occurrence's own message
    assert policies.on_overlap(OverlapPolicy.SKIP, T0, T0).start is Start.RUN


def test_skip_skips_with_the_reason() -> None:
    verdict = policies.on_overlap(OverlapPolicy.SKIP, T0 + HOUR, T0)
    assert verdict.start is Start.SKIP
    assert "2030-05-01T06:00:00Z was still running" in verdict.reason and "overlapPolicy Skip" in verdict.reason


def test_buffer_one_lets_one_wait_and_skips_a_later_one() -> None:
    first = policies.on_overlap(OverlapPolicy.BUFFER_ONE, T0 + HOUR, T0)
    assert first.start is Start.WAIT
    again = policies.on_overlap(OverlapPolicy.BUFFER_ONE, T0 + HOUR, T0, T0 + HOUR)  # the waiting one, redelivered
    assert again.start is Start.WAIT
    later = policies.on_overlap(OverlapPolicy.BUFFER_ONE, T0 + 2 * HOUR, T0, T0 + HOUR)
    assert later.start is Start.SKIP and "already waits" in later.reason and "BufferOne" in later.reason


def test_an_unfinished_occurrence_is_taken_as_lost_after_its_longest_chain() -> None:
    lease = timedelta(minutes=2)
    none = RetryPolicy(RetryType.NONE, retry_count=0)
    # one try of the main action and one of the error action, each a lease, then ten leases of slack
    assert policies.unfinished_until(T0, none, lease) == T0 + 2 * lease + 10 * lease
    fixed = RetryPolicy(RetryType.FIXED, retry_count=3, retry_interval=Duration(timedelta(minutes=5)))
    assert policies.unfinished_until(T0, fixed, lease) == T0 + 2 * (3 * timedelta(minutes=5) + 4 * lease) + 10 * lease
    exponential = RetryPolicy(RetryType.EXPONENTIAL, retry_count=2, retry_interval=Duration(timedelta(minutes=1)))
    longest = policies.unfinished_until(T0, exponential, lease)
    assert longest >= T0 + 2 * (timedelta(minutes=3) + 3 * lease) + 10 * lease


# ------------------------------------------------------------------------------------------- missed runs

MISSED = [T0, T0 + HOUR, T0 + 2 * HOUR, T0 + 3 * HOUR]
NOW = T0 + 3 * HOUR + timedelta(minutes=30)


def window(hours: int) -> Duration:
    return Duration(timedelta(hours=hours))


def test_run_once_without_window_is_todays_coalescing() -> None:
    decided = policies.catch_up(MissedRunPolicy(), list(reversed(MISSED)), NOW)
    assert decided == policies.CatchUp((T0,), 4, 0)
    assert decided.reason == ""


def test_run_once_with_a_window_drops_the_older_ones() -> None:
    decided = policies.catch_up(MissedRunPolicy(MissedRunMode.RUN_ONCE, window(2)), MISSED, NOW)
    assert decided.run == (T0 + 2 * HOUR,) and decided.stands_for == 2 and decided.dropped == 2
    assert "2 occurrence(s)" in decided.reason


def test_run_all_runs_each_kept_one_in_order() -> None:
    assert policies.catch_up(MissedRunPolicy(MissedRunMode.RUN_ALL), MISSED[::-1], NOW).run == tuple(MISSED)
    decided = policies.catch_up(MissedRunPolicy(MissedRunMode.RUN_ALL, window(1)), MISSED, NOW)
    assert decided.run == (T0 + 3 * HOUR,) and decided.stands_for == 1 and decided.dropped == 3


def test_skip_runs_none_and_a_window_can_drop_all() -> None:
    assert policies.catch_up(MissedRunPolicy(MissedRunMode.SKIP), MISSED, NOW) == policies.CatchUp((), 0, 4)
    narrow = MissedRunPolicy(MissedRunMode.RUN_ALL, Duration(timedelta(minutes=10)))
    assert policies.catch_up(narrow, MISSED, NOW) == policies.CatchUp((), 0, 4)


def test_occurrences_dropped_by_a_catch_up_are_told_in_one_message() -> None:
    skip = policies.MissedSpan(T0, T0 + 10 * HOUR, 11, "missedRunPolicy Skip")
    assert policies.dropped_reason([skip]) == (
        "Skipped: 11 occurrence(s) from 2030-05-01T06:00:00Z to 2030-05-01T16:00:00Z missed while the service "
        "was down (missedRunPolicy Skip)"
    )
    assert policies.dropped_reason([]) == ""
    # older than the window, and beyond the runs of one catch-up (RunAll): one message, in order
    old = policies.MissedSpan(T0, T0 + HOUR, 2, "older than the missedRunPolicy window PT6H")
    beyond = policies.MissedSpan(T0 + 1002 * HOUR, None, 5000, "beyond", before=T0 + 6002 * HOUR)
    assert policies.dropped_reason([beyond, old]) == (
        "Skipped: 5002 occurrence(s) from 2030-05-01T06:00:00Z up to 2031-01-06T08:00:00Z (excluded) missed "
        "while the service was down (older than the missedRunPolicy window PT6H; beyond)"
    )
    # uncounted (the series ended during a long outage): no number is made up
    assert policies.dropped_reason([policies.MissedSpan(T0, None, None, "missedRunPolicy Skip")]) == (
        "Skipped: the occurrences from 2030-05-01T06:00:00Z on missed while the service was down (missedRunPolicy Skip)"
    )


def test_missed_means_found_a_minute_late() -> None:
    assert not policies.is_missed(T0, T0 + timedelta(seconds=59))
    assert policies.is_missed(T0, T0 + timedelta(seconds=60))


# ------------------------------------------------------------------------------------ occurrence outcome


def test_how_an_attempt_ends_its_occurrence() -> None:
    assert policies.occurrence_end(True, True, False, False) is End.COMPLETED
    assert policies.occurrence_end(True, False, True, False) is None  # a retry follows
    assert policies.occurrence_end(True, False, False, True) is None  # the error action follows
    assert policies.occurrence_end(True, False, False, False) is End.FAULTED
    assert policies.occurrence_end(False, True, False, False) is End.FAULTED  # the error action ran: faulted
    assert policies.occurrence_end(False, False, True, False) is None


def row(
    occurrence: datetime,
    status: str,
    action: ActionName = ActionName.MAIN,
    repeat: int = 1,
    trigger: Trigger = Trigger.SCHEDULED,
) -> HistoryEntry:
    return HistoryEntry(
        execution_id="x",
        row_key=f"{occurrence.isoformat()}{status}{action}",
        start_time=occurrence,
        end_time=occurrence,
        expected_execution_time=occurrence,
        action_name=action,
        status=status,  # type: ignore[arg-type]
        message="Skipped: ..." if status == policies.SKIPPED else "m",
        retry_count=0,
        repeat_count=repeat,
        trigger=trigger,
    )


def test_consecutive_faults_count_back_to_the_last_completed_occurrence() -> None:
    rows = [
        row(T0, HistoryStatus.COMPLETED),
        row(T0 + HOUR, HistoryStatus.FAILED),
        row(T0 + HOUR, HistoryStatus.COMPLETED, ActionName.ERROR),  # the error action succeeding: still faulted
        row(T0 + 2 * HOUR, policies.SKIPPED),  # neither way
        row(T0 + 3 * HOUR, HistoryStatus.FAILED),
        row(T0 + 3 * HOUR, HistoryStatus.FAILED),  # a retry
        row(T0 + 4 * HOUR, HistoryStatus.COMPLETED, repeat=0),  # a run on demand: neither way
        row(T0 + 5 * HOUR, HistoryStatus.FAILED),
    ]
    assert policies.consecutive_faults(rows) == 3
    assert policies.consecutive_faults(rows, before=T0 + 5 * HOUR) == 2
    assert (
        policies.consecutive_faults(
            [*rows, row(T0 + 6 * HOUR, HistoryStatus.FAILED), row(T0 + 6 * HOUR, HistoryStatus.COMPLETED)]
        )
        == 0
    )
    assert policies.consecutive_faults([]) == 0


def test_backfills_and_runs_on_demand_count_neither_way_by_their_trigger() -> None:
    """A backfill's entries name past occurrences of the schedule (even the same instants as scheduled ones)
    and carry a repeat count: their trigger keeps them out of the count."""
    rows = [
        row(T0, HistoryStatus.FAILED),
        row(T0 + HOUR, HistoryStatus.COMPLETED, trigger=Trigger.BACKFILL),  # a backfill of T0 + 1h succeeding
        row(T0 + HOUR, HistoryStatus.FAILED),
        row(T0 + 2 * HOUR, HistoryStatus.FAILED, trigger=Trigger.BACKFILL),
        row(T0 + 2 * HOUR, HistoryStatus.COMPLETED, trigger=Trigger.MANUAL, repeat=0),
        row(T0 + 3 * HOUR, HistoryStatus.FAILED),
    ]
    assert policies.consecutive_faults(rows) == 3  # T0, T0 + 1h and T0 + 3h: the backfills left out
    assert policies.consecutive_faults([row(T0, HistoryStatus.FAILED, trigger=Trigger.BACKFILL)] * 3) == 0


def test_pause_after_n_consecutive_faulted_occurrences() -> None:
    assert not policies.pauses(None, End.FAULTED, 100)
    assert not policies.pauses(3, End.FAULTED, 1)
    assert policies.pauses(3, End.FAULTED, 2)
    assert not policies.pauses(3, End.COMPLETED, 5)
    assert not policies.pauses(1, None, 0)  # the occurrence goes on (its error action follows)
    assert policies.pauses(1, End.FAULTED, 0)
    assert "3 consecutive faulted" in policies.pause_reason(3)


def test_delete_after_completion_only_when_completed() -> None:
    assert policies.deletes(True, JobState.COMPLETED)
    assert not policies.deletes(True, JobState.FAULTED)
    assert not policies.deletes(True, None)
    assert not policies.deletes(False, JobState.COMPLETED)


# ----------------------------------------------------------------------------------------------- backfill


def hourly(count: int | None = None) -> Recurrence:
    return Recurrence(Frequency.HOUR, count=count)


def test_backfill_takes_the_occurrences_of_the_window_in_order() -> None:
    schedule = compile_adjusted(T0, hourly(), T0)
    found = policies.backfill_occurrences(schedule, T0 + HOUR, T0 + 4 * HOUR)
    assert found == [T0 + HOUR, T0 + 2 * HOUR, T0 + 3 * HOUR]  # start included, end excluded
    assert policies.backfill_occurrences(schedule, T0 - 5 * HOUR, T0 + timedelta(minutes=1)) == [T0]
    assert policies.backfill_occurrences(schedule, T0 + timedelta(minutes=1), T0 + timedelta(minutes=59)) == []


def test_backfill_with_jitter_takes_the_fire_instants() -> None:
    schedule = compile_adjusted(T0, hourly(), T0, jitter=timedelta(minutes=10), key="sub1/rg1/jc1/j")
    found = policies.backfill_occurrences(schedule, T0, T0 + 3 * HOUR)
    assert [schedule.nominal(fire) for fire in found] == [T0, T0 + HOUR, T0 + 2 * HOUR]


def test_backfill_refuses_more_than_1000() -> None:
    schedule = compile_adjusted(T0, Recurrence(Frequency.MINUTE), T0)
    assert len(policies.backfill_occurrences(schedule, T0, T0 + timedelta(minutes=1000))) == 1000
    with pytest.raises(ValidationError) as caught:
        policies.backfill_occurrences(schedule, T0, T0 + timedelta(minutes=1001))
    assert caught.value.path == "endTime" and "more than 1000" in caught.value.rule
