"""pauseAfterFailures (api-version 2026-12-01-preview): a job is disabled, with the reason, once that many
consecutive occurrences have faulted.

An occurrence ends once its main action (with its retries) and its error action are over: completed when the
main action succeeded, faulted otherwise (``policies.occurrence_end``). The count goes back to the last
completed occurrence; backfills, runs on demand and ``Skipped`` occurrences count neither way (by their
history entries' trigger and status). The rule (pure) case by case; the pipeline acting on it is shown end to
end in ``tests/e2e/policies/test_pause_after_failures.py``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scheduler_core import policies
from scheduler_core.model import ActionName, HistoryEntry, HistoryStatus
from scheduler_core.model.history import Trigger
from scheduler_core.policies import End

T0 = datetime(2030, 5, 1, 6, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


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
