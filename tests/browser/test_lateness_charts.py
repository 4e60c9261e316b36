"""In a real browser: lateness is the scheduler's, attempt by attempt. Each attempt of a scheduled occurrence
is measured against its own due time (a retry against its retry time, an error action against its send, as
the entry's ``dueTime`` says); a run on demand and a backfill are shown apart, in a chart of their own, and
an entry written before ``dueTime`` whose due time is unknown is left out. The history is written through the
storage adapter as the executor writes it, so each entry's timing is exact."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core import wiring
from scheduler_core.model import ActionName, HistoryEntry, HistoryStatus
from scheduler_core.model.history import Trigger
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import CollectionRef, JobRef, history_row_key
from tests.browser.conftest import COLLECTION, GROUP, SUBSCRIPTION, Dashboard, run_scenario
from tests.support.jobs import every, http_action

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


def entry(
    expected: datetime,
    started: float,
    name: str,
    retry: int = 0,
    due: datetime | None = None,
    action: ActionName = ActionName.MAIN,
    trigger: Trigger = Trigger.SCHEDULED,
) -> HistoryEntry:
    """An attempt of the occurrence ``expected`` that started ``started`` seconds after ``due`` (or after
    ``expected`` when no due time is given)."""
    start = (due or expected) + timedelta(seconds=started)
    return HistoryEntry(
        execution_id=name,
        row_key=history_row_key(start, name),
        start_time=start,
        end_time=start + timedelta(milliseconds=200),
        expected_execution_time=expected,
        action_name=action,
        status=HistoryStatus.COMPLETED if action is ActionName.ERROR else HistoryStatus.FAILED,
        message="500 Internal Server Error: boom",
        retry_count=retry,
        repeat_count=0,
        trigger=trigger,
        due_time=due,
    )


def test_each_attempt_is_late_against_its_own_due_time_and_runs_on_demand_are_apart(dashboard: Dashboard) -> None:
    dashboard.put_collection()
    tomorrow = format_instant(datetime.now(UTC) + timedelta(days=1))  # it never runs here: its history is ours
    body = {"startTime": tomorrow, "action": http_action("http://127.0.0.1:9/x"), "recurrence": every("Day")}
    dashboard.put_job("mixed", body)
    ref = JobRef(CollectionRef(SUBSCRIPTION, GROUP, COLLECTION), "mixed")
    t = (datetime.now(UTC) - timedelta(hours=3)).replace(minute=0, second=0, microsecond=0)
    older = t + timedelta(hours=1)
    asked = t + timedelta(minutes=30)
    slot = t + timedelta(minutes=10)
    entries = [
        entry(t, 2.0, "first"),  # 2 s late
        entry(t, 1.5, "retry", retry=1, due=t + timedelta(seconds=20)),  # 21.5 s after t, 1.5 s late
        entry(t, 0.2, "error", due=t + timedelta(seconds=45), action=ActionName.ERROR),  # on time
        entry(older, 0.1, "older-first"),  # on time
        entry(older, 30.0, "older-retry", retry=1),  # before dueTime: unknown, left out
        entry(asked, 3.0, "manual", trigger=Trigger.MANUAL),  # asked for at `asked`: 3 s start delay
        entry(t - timedelta(days=1), 0.8, "backfill", due=slot, trigger=Trigger.BACKFILL),  # 0.8 s after its slot
    ]
    history = wiring.services().stores.history
    for row in entries:
        history.add(ref, row)

    seen = run_scenario(
        dashboard, "latenessCharts", group=GROUP, collection=COLLECTION, job="mixed", rows=7, audit=True
    )

    lateness = {(action, retry, late) for action, retry, late, _ in seen["lateness"]}
    assert lateness == {
        ("main", "0", "2 s late"),
        ("main", "1", "1.5 s late"),
        ("error action", "0", "on time"),
        ("main", "0", "on time"),
        ("main", "1", "—"),  # the older retry: its due time is unknown
        ("main", "0", "—"),  # the run on demand and the backfill: not lateness
    }
    assert [late for *_, late, heading in seen["lateness"] if "manual" in heading or "backfill" in heading] == ["—"] * 2
    assert seen["latenessChart"].startswith("Lateness of the last 4 executions")
    assert seen["latenessChart"].endswith("at most 2 s.")
    assert seen["delayChart"].startswith("Start delay of the last 2 runs on demand and backfills")
    assert seen["delayChart"].endswith("at most 3 s.")
    assert seen["captions"] == [
        "Outcomes over time",
        "Lateness (seconds after each attempt's due time)",
        "Runs on demand and backfills (seconds from due to start)",
    ]
    assert seen["audits"]["job with three charts"]["violations"] == []
