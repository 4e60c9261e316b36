"""Timer triggers of the local host: 6-field NCRONTAB schedules (seconds first), evaluated in UTC.

Like the Functions host, a timer with ``use_monitor`` keeps its schedule status (last and next scheduled
run) in a store that outlives the process: when its listener starts after a scheduled run was missed (the
host was down at that instant), the function runs at once, with ``past_due`` set, instead of waiting for
its next occurrence. A host with a host id (``python -m local_host run``, or ``LocalHost(host_id=...)``)
keeps the status where the Functions host does, in the blob ``azure-webjobs-hosts/timers/<hostId>/
Host.Functions.<name>/status`` of ``AzureWebJobsStorage`` (``local_host.leases.BlobScheduleStatusStore``),
and runs each timer as a singleton: only the instance holding the timer's listener lock (a blob lease,
``local_host.leases``) starts its listener, so the app's instances tick once per occurrence, not once each.
:class:`ScheduleStatusStore` keeps statuses in files instead, for a runner used on its own.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from azure.functions.timer import TimerRequest
from croniter import croniter

from local_host.app_index import TimerFunction, resolve_setting_references
from local_host.hostjson import SingletonOptions, invocation_log
from local_host.http_server import invoke
from local_host.schedule_status import ScheduleStatus
from scheduler_core.errors import ConfigurationError

if TYPE_CHECKING:
    from local_host.leases import ListenerLock

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


class StatusStore(Protocol):
    """Where a timer's schedule status is kept, by function name (:class:`ScheduleStatusStore`, or
    ``local_host.leases.BlobScheduleStatusStore`` as the Functions host keeps it)."""

    def load(self, function_name: str) -> ScheduleStatus | None: ...

    def save(self, function_name: str, status: ScheduleStatus) -> None: ...


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
    is made up when the listener starts (past due), as the Functions host does; ``run_on_startup`` runs it
    when the listener starts regardless.

    With a ``lock`` (a singleton listener lock, ``local_host.leases.ListenerLock``) the listener starts only
    once this instance holds the lock: it tries when started, then every recovery interval while another
    instance holds it (``SingletonListener``). So the start-up and past-due runs happen on the holder only,
    when it gets the lock; on stop, the listener stops before the lock is released.
    """

    def __init__(
        self,
        function: TimerFunction,
        stop: threading.Event,
        monitor: StatusStore | None = None,
        lock: ListenerLock | None = None,
    ) -> None:
        self.function = function
        self.expression = parse_ncrontab(resolve_setting_references(function.schedule))
        self._stop = stop
        self._monitor = monitor if function.use_monitor else None
        self._lock = lock
        self._abandoned = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"timer-{function.name}", daemon=True)

    @property
    def holds_lock(self) -> bool:
        """Whether this runner's listener runs: it holds its lock, or needs none."""
        return self._lock is None or self._lock.held

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def abandon(self) -> None:
        """Stop as a crashed host does: no further run, no renewal, and the lock is not released (it expires
        on its own, so another instance takes over only after the lease period). For tests of failover."""
        self._abandoned.set()
        if self._lock is not None:
            self._lock.abandon()

    def _halted(self) -> bool:
        return self._stop.is_set() or self._abandoned.is_set()

    def _pause(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True when the runner must stop."""
        return self._stop.wait(seconds) or self._abandoned.is_set()

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
        invocation_log(self.function.name).info(
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
        try:
            if self._lock is None or self._acquire():
                self._listen()
        finally:
            if self._lock is not None and not self._abandoned.is_set():
                self._lock.release()  # after the listener stopped: its last run is over

    def _try_lock(self, lock: ListenerLock) -> bool:
        try:
            return lock.try_acquire()
        except Exception as exc:  # storage out of reach: try again at the next poll
            log.warning("timer %s: singleton lock not acquired (%s)", self.function.name, exc)
            return False

    def _acquire(self) -> bool:
        """Take the lock before the listener starts: one try now, then one per recovery interval (none when
        the interval is None) until taken or stopped. True when taken."""
        lock = self._lock
        assert lock is not None
        if self._try_lock(lock):
            return True
        interval = lock.recovery_interval
        log.info(
            "timer %s: another instance holds the singleton lock (%s); %s",
            self.function.name,
            lock.lock_id,
            f"trying again every {interval:g} s" if interval is not None else "not trying again",
        )
        if interval is None:
            return False
        waited = 0.0
        while not self._pause(interval):
            waited += interval
            if self._try_lock(lock):
                log.info("timer %s: took the singleton lock over after %g s", self.function.name, waited)
                return True
        return False

    def _listen(self) -> None:
        """The timer's listener: the missed run or the start-up run first, then the schedule."""
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
        while not self._halted():
            delay = (scheduled - datetime.now(UTC)).total_seconds()
            if delay > 0 and self._pause(min(delay, 1.0)):
                return
            if datetime.now(UTC) < scheduled:
                continue
            self.fire(scheduled)
            following = next_fire_time(self.expression, max(scheduled, datetime.now(UTC) - PAST_DUE_AFTER))
            self._record(scheduled, following)
            scheduled = following


def timer_runners(
    functions: Iterable[TimerFunction],
    stop: threading.Event,
    options: SingletonOptions,
    host_id: str | None = None,
    state_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[TimerRunner]:
    """The runners of a host's timer functions, as singletons when the host has a host id.

    The host id is ``host_id``, else the setting ``AzureFunctionsJobHost__id``, else Core Tools' default for a
    host that keeps state in ``state_dir`` (``local_host.leases.resolve_host_id``). With one, every runner
    takes its listener lock (a lease in ``AzureWebJobsStorage``, host.json ``singleton``) before it runs, and
    keeps its schedule status in that account; instances with the same host id share both. Without one (an
    in-process host given neither), every timer runs here, with no status kept. Raises
    :class:`ConfigurationError` when a host id needs ``AzureWebJobsStorage`` and it is not set.
    """
    functions = list(functions)
    env = os.environ if environ is None else environ
    if not functions:
        return []
    from local_host import leases  # imports the blob client only for hosts that take leases

    identity = leases.resolve_host_id(host_id, state_dir, env)
    if identity is None:
        return [TimerRunner(function, stop) for function in functions]
    connection = env.get("AzureWebJobsStorage")
    if not connection:
        raise ConfigurationError(
            "timer triggers need the app setting AzureWebJobsStorage (their locks and schedule status live there)"
        )
    container = leases.hosts_container(connection)
    locks = leases.BlobLeaseLocks(container)
    monitor = leases.BlobScheduleStatusStore(container, identity)
    log.info(
        "timers run as singletons of host id %s (lock period %g s, recovery polling %s)",
        identity,
        options.listener_lock_period,
        f"{options.listener_lock_recovery_polling_interval:g} s"
        if options.listener_lock_recovery_polling_interval is not None
        else "off",
    )
    return [
        TimerRunner(
            function,
            stop,
            monitor,
            leases.ListenerLock(locks, leases.listener_lock_id(identity, function.name), options, stop.set),
        )
        for function in functions
    ]
