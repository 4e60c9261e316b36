"""Timer triggers of the local host: 6-field NCRONTAB schedules (seconds first), evaluated in UTC.

Like the Functions host, a timer with ``use_monitor`` keeps its schedule status (last and next scheduled
run) in a store that outlives the process: when the host starts after a scheduled run was missed (the
host was down at that instant), the function runs at once, with ``past_due`` set, instead of waiting for
its next occurrence. The Functions host keeps this status in a blob of ``AzureWebJobsStorage``
(``azure-webjobs-hosts/timers/...``); the local host keeps it in a JSON file per function
(:class:`ScheduleStatusStore`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from azure.functions.timer import TimerRequest
from croniter import croniter

from local_host.app_index import TimerFunction, resolve_setting_references
from local_host.http_server import invoke
from scheduler_core.errors import ConfigurationError

log = logging.getLogger("local_host")

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


@dataclass(frozen=True)
class ScheduleStatus:
    """What the schedule monitor remembers of a timer: its last scheduled run and the next one due."""

    last: datetime | None
    next: datetime
    last_updated: datetime

    def to_json(self) -> str:
        return json.dumps(
            {
                "Last": self.last.isoformat() if self.last else None,
                "Next": self.next.isoformat(),
                "LastUpdated": self.last_updated.isoformat(),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> ScheduleStatus:
        data = json.loads(text)
        last = data.get("Last")
        return cls(
            last=datetime.fromisoformat(last).astimezone(UTC) if last else None,
            next=datetime.fromisoformat(data["Next"]).astimezone(UTC),
            last_updated=datetime.fromisoformat(data["LastUpdated"]).astimezone(UTC),
        )


class ScheduleStatusStore:
    """Schedule statuses as JSON files, one per timer function, in ``directory`` (the host's state)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, function_name: str) -> Path:
        return self.directory / f"{function_name}.status.json"

    def load(self, function_name: str) -> ScheduleStatus | None:
        """The stored status, or None when there is none (or it cannot be read: treated as new)."""
        try:
            return ScheduleStatus.from_json(self._path(function_name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("timer %s: unreadable schedule status (%s); starting afresh", function_name, exc)
            return None

    def save(self, function_name: str, status: ScheduleStatus) -> None:
        """Write the status atomically (a crash mid-write leaves the previous one)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._path(function_name)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(status.to_json(), encoding="utf-8")
        os.replace(temporary, path)


class TimerRunner:
    """Runs one timer function on its schedule in a thread; executions never overlap (like the host).

    With a ``monitor`` store and a function that uses the monitor, a run missed while the host was down
    is made up at start-up (past due), as the Functions host does; ``run_on_startup`` runs it at start-up
    regardless.
    """

    def __init__(
        self, function: TimerFunction, stop: threading.Event, monitor: ScheduleStatusStore | None = None
    ) -> None:
        self.function = function
        self.expression = parse_ncrontab(resolve_setting_references(function.schedule))
        self._stop = stop
        self._monitor = monitor if function.use_monitor else None
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

    def _record(self, last: datetime | None, following: datetime) -> None:
        if self._monitor is None:
            return
        try:
            self._monitor.save(self.function.name, ScheduleStatus(last, following, datetime.now(UTC)))
        except OSError as exc:
            log.warning("timer %s: schedule status not saved (%s)", self.function.name, exc)

    def past_due_at_start(self, now: datetime) -> datetime | None:
        """The scheduled run missed while the host was down (the monitor's next run is past), if any."""
        if self._monitor is None:
            return None
        status = self._monitor.load(self.function.name)
        if status is None or status.next > now:
            return None
        return status.next

    def _run(self) -> None:
        now = datetime.now(UTC)
        missed = self.past_due_at_start(now)
        scheduled = next_fire_time(self.expression, now)
        if missed is None:
            # Recorded before any start-up run, so a host stopped before its first tick (or during its
            # start-up run) still makes that tick up on restart.
            self._record(None, scheduled)
        if missed is not None or self.function.run_on_startup:
            self.fire(missed)  # the missed run (past due), or else the start-up run (now)
            scheduled = next_fire_time(self.expression, datetime.now(UTC))
            self._record(missed, scheduled)
        while not self._stop.is_set():
            delay = (scheduled - datetime.now(UTC)).total_seconds()
            if delay > 0 and self._stop.wait(min(delay, 1.0)):
                return
            if datetime.now(UTC) < scheduled:
                continue
            self.fire(scheduled)
            following = next_fire_time(self.expression, max(scheduled, datetime.now(UTC) - PAST_DUE_AFTER))
            self._record(scheduled, following)
            scheduled = following
