"""Timer triggers of the local host: 6-field NCRONTAB schedules (seconds first), evaluated in UTC."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

from azure.functions.timer import TimerRequest
from croniter import croniter

from scheduler_core.errors import ConfigurationError
from scheduler_core.host.app_index import TimerFunction, resolve_setting_references
from scheduler_core.host.http_server import invoke

log = logging.getLogger("scheduler_core.host")

#: A run that starts this much after its scheduled time is reported as past due, as the host does.
PAST_DUE_AFTER = timedelta(seconds=1)


def parse_ncrontab(schedule: str) -> str:
    """Check an NCRONTAB expression of 6 fields (seconds first) and return it normalised."""
    fields = schedule.split()
    if len(fields) != 6:
        raise ConfigurationError(
            f"timer schedule {schedule!r}: NCRONTAB needs 6 fields (second minute hour day month weekday)"
        )
    expression = " ".join(fields)
    if not croniter.is_valid(expression, second_at_beginning=True):
        raise ConfigurationError(f"timer schedule {schedule!r} is not a valid NCRONTAB expression")
    return expression


def next_fire_time(expression: str, after: datetime) -> datetime:
    """The first instant strictly after ``after`` that the schedule names (aware UTC)."""
    result: datetime = croniter(expression, after, second_at_beginning=True).get_next(datetime)
    return result.astimezone(UTC)


class TimerRunner:
    """Runs one timer function on its schedule in a thread; executions never overlap (like the host)."""

    def __init__(self, function: TimerFunction, stop: threading.Event) -> None:
        self.function = function
        self.expression = parse_ncrontab(resolve_setting_references(function.schedule))
        self._stop = stop
        self._thread = threading.Thread(target=self._run, name=f"timer-{function.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def fire(self, scheduled: datetime | None = None) -> None:
        """Run the function once now, as the scheduled occurrence ``scheduled`` (default: now)."""
        now = datetime.now(UTC)
        scheduled = scheduled or now
        past_due = now - scheduled > PAST_DUE_AFTER
        request = TimerRequest(
            past_due=past_due,
            schedule_status={
                "Last": scheduled.isoformat(),
                "Next": next_fire_time(self.expression, now).isoformat(),
            },
            schedule={"AdjustForDST": True},
        )
        invocation = uuid.uuid4().hex[:12]
        started = time.perf_counter()
        outcome = "ok"
        try:
            invoke(self.function.handler, request)
        except Exception:
            outcome = "failed"
            log.exception("function=%s trigger=timer invocation %s raised", self.function.name, invocation)
        log.info(
            "function=%s trigger=timer scheduled=%s past_due=%s -> %s in %.1f ms (invocation %s)",
            self.function.name,
            scheduled.strftime("%Y-%m-%dT%H:%M:%SZ"),
            past_due,
            outcome,
            (time.perf_counter() - started) * 1000,
            invocation,
        )

    def _run(self) -> None:
        if self.function.run_on_startup:
            self.fire()
        scheduled = next_fire_time(self.expression, datetime.now(UTC))
        while not self._stop.is_set():
            delay = (scheduled - datetime.now(UTC)).total_seconds()
            if delay > 0 and self._stop.wait(min(delay, 1.0)):
                return
            if datetime.now(UTC) < scheduled:
                continue
            self.fire(scheduled)
            scheduled = next_fire_time(self.expression, max(scheduled, datetime.now(UTC) - PAST_DUE_AFTER))
