"""missedRunPolicy (api-version 2026-12-01-preview): what a scan does with the occurrences it finds missed (a
minute or more after their instant: the service was down).

RunOnce (the default: today's coalescing) runs one late run standing for them all, or for those within its
window; RunAll runs each, in order, within its window; Skip runs none and resumes at the next. What is not run
is told in one ``Skipped`` entry, its message naming how many occurrences from when to when and why; RunOnce
after an outage of more than a thousand occurrences skips nothing.

The rule (``scheduler_core.policies.catch_up``, pure) case by case, then in simulated time on the memory
adapter (:class:`tests.support.harness.Deployment`) with a real HTTP target."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_core import policies
from scheduler_core.definitions import Wire
from scheduler_core.model import HistoryStatus
from scheduler_core.model.job import MissedRunMode, MissedRunPolicy
from scheduler_core.model.retry import Duration
from scheduler_core.recurrence import format_instant
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, http_action

#: The instant the rule is shown at (its messages name it).
AT = datetime(2030, 5, 1, 6, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
#: The first occurrence of the jobs run in simulated time.
T0 = START + timedelta(hours=1)
MINUTE = timedelta(minutes=1)


# ------------------------------------------------------------------------------------------- the rule


MISSED = [AT, AT + HOUR, AT + 2 * HOUR, AT + 3 * HOUR]


NOW = AT + 3 * HOUR + timedelta(minutes=30)


def window(hours: int) -> Duration:
    return Duration(timedelta(hours=hours))


def test_run_once_without_window_is_todays_coalescing() -> None:
    decided = policies.catch_up(MissedRunPolicy(), list(reversed(MISSED)), NOW)
    assert decided == policies.CatchUp((AT,), 4, 0)
    assert decided.reason == ""


def test_run_once_with_a_window_drops_the_older_ones() -> None:
    decided = policies.catch_up(MissedRunPolicy(MissedRunMode.RUN_ONCE, window(2)), MISSED, NOW)
    assert decided.run == (AT + 2 * HOUR,) and decided.stands_for == 2 and decided.dropped == 2
    assert "2 occurrence(s)" in decided.reason


def test_run_all_runs_each_kept_one_in_order() -> None:
    assert policies.catch_up(MissedRunPolicy(MissedRunMode.RUN_ALL), MISSED[::-1], NOW).run == tuple(MISSED)
    decided = policies.catch_up(MissedRunPolicy(MissedRunMode.RUN_ALL, window(1)), MISSED, NOW)
    assert decided.run == (AT + 3 * HOUR,) and decided.stands_for == 1 and decided.dropped == 3


def test_skip_runs_none_and_a_window_can_drop_all() -> None:
    assert policies.catch_up(MissedRunPolicy(MissedRunMode.SKIP), MISSED, NOW) == policies.CatchUp((), 0, 4)
    narrow = MissedRunPolicy(MissedRunMode.RUN_ALL, Duration(timedelta(minutes=10)))
    assert policies.catch_up(narrow, MISSED, NOW) == policies.CatchUp((), 0, 4)


def test_occurrences_dropped_by_a_catch_up_are_told_in_one_message() -> None:
    skip = policies.MissedSpan(AT, AT + 10 * HOUR, 11, "missedRunPolicy Skip")
    assert policies.dropped_reason([skip]) == (
        "Skipped: 11 occurrence(s) from 2030-05-01T06:00:00Z to 2030-05-01T16:00:00Z missed while the service "
        "was down (missedRunPolicy Skip)"
    )
    assert policies.dropped_reason([]) == ""
    # older than the window, and beyond the runs of one catch-up (RunAll): one message, in order
    old = policies.MissedSpan(AT, AT + HOUR, 2, "older than the missedRunPolicy window PT6H")
    beyond = policies.MissedSpan(AT + 1002 * HOUR, None, 5000, "beyond", before=AT + 6002 * HOUR)
    assert policies.dropped_reason([beyond, old]) == (
        "Skipped: 5002 occurrence(s) from 2030-05-01T06:00:00Z up to 2031-01-06T08:00:00Z (excluded) missed "
        "while the service was down (older than the missedRunPolicy window PT6H; beyond)"
    )
    # uncounted (the series ended during a long outage): no number is made up
    assert policies.dropped_reason([policies.MissedSpan(AT, None, None, "missedRunPolicy Skip")]) == (
        "Skipped: the occurrences from 2030-05-01T06:00:00Z on missed while the service was down (missedRunPolicy Skip)"
    )


def test_missed_means_found_a_minute_late() -> None:
    assert not policies.is_missed(AT, AT + timedelta(seconds=59))
    assert policies.is_missed(AT, AT + timedelta(seconds=60))


# ------------------------------------------------------------------------------- after a long outage


def test_run_once_with_a_window_after_an_outage_of_more_than_a_thousand_occurrences_skips_nothing(
    deployment: Deployment, target: HttpTarget
) -> None:
    body: dict[str, Any] = {
        "properties": {
            "startTime": format_instant(T0),
            "action": http_action(f"{target.base_url}/hook", retryPolicy=NO_RETRY),
            "recurrence": {"frequency": "Minute"},
            "missedRunPolicy": {"mode": "RunOnce", "window": "P2D"},
        }
    }
    deployment.service.put_job(deployment.ref("j"), body, wire=Wire.PREVIEW)
    deployment.clock.set(T0 + timedelta(minutes=1100))  # the service was down
    deployment.run_until(T0 + timedelta(minutes=1101, seconds=30))

    rows = deployment.history("j")
    assert rows, "the catch-up ran"
    assert [r.message for r in rows if r.status == HistoryStatus.SKIPPED] == []
