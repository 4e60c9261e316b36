"""The process's alarms: actions run at their times, in order, on one thread; an earlier alarm added while the
thread waits for a later one still runs on time; a failing action does not stop the others."""

from __future__ import annotations

import threading
import time

import pytest

from scheduler_core.alarms import Alarms


def test_actions_run_at_their_times_in_order_and_an_earlier_one_added_later_is_not_held_back() -> None:
    alarms = Alarms("test-alarms")
    ran: list[tuple[str, float]] = []
    done = threading.Event()
    start = time.monotonic()

    def action(name: str) -> None:
        ran.append((name, time.monotonic() - start))
        if len(ran) == 3:
            done.set()

    alarms.add(start + 1.0, lambda: action("late"))
    time.sleep(0.05)  # the thread now waits for the late one
    alarms.add(start + 0.2, lambda: action("early"))
    alarms.add(start + 0.2, lambda: action("early, added second"))
    assert done.wait(5)
    assert [name for name, _ in ran] == ["early", "early, added second", "late"]
    early, _, late = (at for _, at in ran)
    assert 0.2 <= early < 0.6  # woken for it, not at the late one's time
    assert late >= 1.0


def test_a_failing_action_is_logged_and_the_next_one_still_runs(caplog: pytest.LogCaptureFixture) -> None:
    alarms = Alarms("test-alarms")
    ran = threading.Event()

    def fail() -> None:
        raise RuntimeError("boom")

    now = time.monotonic()
    alarms.add(now, fail)
    alarms.add(now + 0.05, ran.set)
    assert ran.wait(5)
    assert any("an alarm's action failed" in record.message for record in caplog.records)
