"""Timer triggers of the local host: the schedule monitor makes up a run missed while the host was down."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import azure.functions as func
import pytest

from local_host.app_index import TimerFunction, index_app
from local_host.schedule_status import ScheduleStatus
from local_host.timers import ScheduleStatusStore, TimerRunner

YEARLY = "0 0 0 1 1 *"  # never comes round during a test


def timer_function(calls: list[bool], use_monitor: bool = True, run_on_startup: bool = False) -> TimerFunction:
    app = func.FunctionApp()

    @app.timer_trigger(schedule=YEARLY, arg_name="timer", use_monitor=use_monitor, run_on_startup=run_on_startup)
    def yearly(timer: func.TimerRequest) -> None:
        calls.append(timer.past_due)

    [function] = index_app(app).timers
    return function


@pytest.fixture
def run_timer() -> Iterator[Callable[[TimerFunction, ScheduleStatusStore | None], TimerRunner]]:
    stop = threading.Event()
    runners: list[TimerRunner] = []

    def start(function: TimerFunction, store: ScheduleStatusStore | None) -> TimerRunner:
        runner = TimerRunner(function, stop, store)
        runner.start()
        runners.append(runner)
        return runner

    yield start
    stop.set()
    for runner in runners:
        runner.join(timeout=5)


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_a_run_missed_while_the_host_was_down_is_made_up_at_start_up_as_past_due(
    tmp_path: Path, run_timer: Callable[[TimerFunction, ScheduleStatusStore | None], TimerRunner]
) -> None:
    calls: list[bool] = []
    store = ScheduleStatusStore(tmp_path)
    missed = datetime.now(UTC) - timedelta(seconds=30)
    store.save("yearly", ScheduleStatus(None, missed, missed - timedelta(seconds=10)))
    run_timer(timer_function(calls), store)
    assert wait_for(lambda: calls == [True])
    # The status is written after the run returns: wait for it rather than race the timer's thread.
    assert wait_for(lambda: (saved := store.load("yearly")) is not None and saved.last is not None)
    status = store.load("yearly")
    assert status is not None
    assert status.last == missed
    assert status.next > datetime.now(UTC)  # the next yearly run, so a restart now makes nothing up


def test_a_host_stopped_before_its_first_run_still_makes_it_up_after_a_restart(
    tmp_path: Path, run_timer: Callable[[TimerFunction, ScheduleStatusStore | None], TimerRunner]
) -> None:
    calls: list[bool] = []
    store = ScheduleStatusStore(tmp_path)
    run_timer(timer_function(calls), store)
    assert wait_for(lambda: store.load("yearly") is not None)
    status = store.load("yearly")
    assert status is not None and status.last is None and status.next > datetime.now(UTC)
    assert calls == []  # nothing was missed: no run at start-up


def test_no_run_is_made_up_without_the_monitor_or_when_none_was_missed(
    tmp_path: Path, run_timer: Callable[[TimerFunction, ScheduleStatusStore | None], TimerRunner]
) -> None:
    calls: list[bool] = []
    missed = datetime.now(UTC) - timedelta(seconds=30)
    unmonitored = ScheduleStatusStore(tmp_path / "unmonitored")
    unmonitored.save("yearly", ScheduleStatus(None, missed, missed))
    run_timer(timer_function(calls, use_monitor=False), unmonitored)
    upcoming = ScheduleStatusStore(tmp_path / "upcoming")
    upcoming.save("yearly", ScheduleStatus(None, datetime.now(UTC) + timedelta(days=1), missed))
    run_timer(timer_function(calls), upcoming)
    time.sleep(0.5)
    assert calls == []


def test_run_on_startup_runs_once_at_start_up_not_past_due(
    run_timer: Callable[[TimerFunction, ScheduleStatusStore | None], TimerRunner],
) -> None:
    calls: list[bool] = []
    run_timer(timer_function(calls, run_on_startup=True), None)
    assert wait_for(lambda: calls == [False])


def test_an_unreadable_status_is_treated_as_none(tmp_path: Path) -> None:
    store = ScheduleStatusStore(tmp_path)
    (tmp_path / "yearly.status.json").write_text("{not json", encoding="utf-8")
    assert store.load("yearly") is None
