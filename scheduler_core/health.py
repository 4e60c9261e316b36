"""``GET /health`` (anonymous): is this instance able to work, and how is the fleet doing.

- **503** only for a problem of *this instance*: its settings do not load, or its storage cannot be reached
  (one cheap table query, tried once: the dispatch heartbeat row) or does not answer within :data:`HEALTH_DEADLINE`. App
  Service's health check restarts or replaces an instance that keeps answering 503, the cure for exactly these.
- **200** otherwise, with fleet-wide conditions as ``warnings`` (restarting this instance would not cure
  them, and restarting every instance would make them worse): the dispatch tick is late (its heartbeat,
  written by whichever instance ran the timer, is older than :data:`TICK_LATE_AFTER`, or missing), poison
  messages are present. The alert rules (docs/deploy.md) page a person for those.

The body is JSON: ``status`` (healthy, degraded, unhealthy), ``version``, ``checked_at``, ``storage``,
``last_tick`` and ``tick_age_seconds``, ``execution_queue_depth`` and ``poison_queue_length`` (over every execution
queue, ``SCHEDULER_EXECUTION_QUEUE_COUNT``), ``execution_queues`` (each queue's name, depth and poison length),
``cleanup_queue`` (the daily cleanup's queue: name, depth, poison length; a poison message there is a warning too),
``history_storage`` (only when the history tables have an account of their own, ``SchedulerHistoryStorage``: one
query there, and 503 when it fails, as for ``storage``; likewise 503 with ``execution_storage`` "unreachable" when
the execution queues have an account of their own and a queue's depth cannot be read there), ``region`` (only with
a witness, docs/regions.md: its name, ``active``, ``epoch``, and a standby's ``replication``, with a warning when its
copy is behind; a standby's late tick is no warning: the active region ticks), ``warnings``, ``reason`` (503 only).
No secret, no connection string, no foreign exception text (a standby's replication error is the service's own
message). Any method but GET and HEAD is an ARM 405 with ``Allow: GET, HEAD``; ``Cache-Control: no-store`` and
``nosniff`` come with every answer of the app (:func:`scheduler_core.triggers.http_answer`).
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from scheduler_core import __version__
from scheduler_core.api.messages import READ_METHODS, ApiResponse, MethodNotAllowed
from scheduler_core.queue_depths import ExecutionQueueDepth, QueueDepths, total_depths
from scheduler_core.recurrence import format_instant
from scheduler_core.regions.replication import ReplicationState
from scheduler_core.storage.keys import CollectionRef, JobRef

if TYPE_CHECKING:
    from scheduler_core.wiring import Services

log = logging.getLogger("scheduler_core.health")

#: The dispatch timer ticks every minute; a heartbeat older than this is a warning (the tick alert fires
#: after 3 minutes as well).
TICK_LATE_AFTER = timedelta(minutes=3)
#: A standby's copy older than this is reported behind (it sweeps every 10 s).
REPLICATION_BEHIND_AFTER = timedelta(seconds=60)
#: How long (seconds) a check waits for its storage probes. Storage clients retry for much longer (a hung
#: storage account kept a check waiting 86 s); App Service's health check and a person at ``/health`` need an
#: answer within a few seconds, and an instance whose storage hangs cannot work either.
HEALTH_DEADLINE = 5.0
ROUTE = "health"
#: The job whose history a health check reads in the history tables' own account (no job has this name).
PROBE_JOB = JobRef(CollectionRef("health", "probe", "probe"), "health-probe")
#: The threads the storage probes run on (a probe of hung storage holds one until its clients give up).
_PROBES = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="health")
_FLIGHT_LOCK = threading.Lock()
#: The probes in flight, per deployment's services (kept with them, so that an id is not reused meanwhile).
_FLIGHTS: dict[int, tuple[Services, concurrent.futures.Future[tuple[int, dict[str, Any]]]]] = {}


def _answer(status: int, body: dict[str, Any]) -> ApiResponse:
    return ApiResponse(status, json.dumps(body, indent=None).encode(), {"Content-Type": "application/json"})


def check(services: Callable[[], Services]) -> tuple[int, dict[str, Any]]:
    """The health status code and body (see the module's docstring). The storage probes answer within
    :data:`HEALTH_DEADLINE`: storage that does not answer by then is ``unresponsive`` (503)."""
    body: dict[str, Any] = {"status": "healthy", "version": __version__, "warnings": []}
    try:
        s = services()
    except Exception as exc:  # settings that do not load: this instance cannot work
        log.warning("health: services not available: %s", type(exc).__name__)
        body.update(status="unhealthy", reason="configuration: the settings do not load")
        return 503, body
    now = s.clock()
    body["checked_at"] = format_instant(now)
    try:
        status, found = _in_flight(s, now).result(timeout=HEALTH_DEADLINE)
    except concurrent.futures.TimeoutError:
        log.warning("health: storage did not answer within %g s", HEALTH_DEADLINE)
        body.update(
            status="unhealthy",
            storage="unresponsive",
            reason=f"storage: no answer within {HEALTH_DEADLINE:g} s (hung or unreachable)",
        )
        return 503, body
    body.update(found, warnings=[*body["warnings"], *found.get("warnings", [])])
    if status == 200 and body["warnings"]:
        body["status"] = "degraded"
    return status, body


def _in_flight(s: Services, now: datetime) -> concurrent.futures.Future[tuple[int, dict[str, Any]]]:
    """The storage probes of ``s``: the ones in flight when a check of ``s`` already runs them (a check that
    finds storage hung never starts a second probe that would hang as well), else new ones."""
    with _FLIGHT_LOCK:
        running = _FLIGHTS.get(id(s))
        if running is None or running[1].done():
            running = (s, _PROBES.submit(_probe_storage, s, now))
            _FLIGHTS[id(s)] = running
        for key in [key for key, (_, flight) in _FLIGHTS.items() if flight.done() and key != id(s)]:
            del _FLIGHTS[key]
        return running[1]


def _probe_storage(s: Services, now: datetime) -> tuple[int, dict[str, Any]]:
    """What storage says: the status and the body's storage fields (the tick, the queues, the warnings)."""
    from scheduler_core.pipeline.ticks import last_tick

    body: dict[str, Any] = {"status": "healthy", "warnings": []}
    try:
        # One query on the due-index table, tried once: the client's retries of refused connections (0, 1.6 and
        # 3.2 s) would make unreachable storage answer as unresponsive on a loaded instance.
        tick = last_tick(s.stores, once=True)
    except Exception as exc:
        log.warning("health: storage not reachable: %s", type(exc).__name__)
        body.update(status="unhealthy", storage="unreachable", reason="storage: the tables cannot be reached")
        return 503, body
    body["storage"] = "reachable"
    if not _history_reachable(s, body):
        return 503, body
    _report_tick(tick, now, body, warn=_report_region(s, body, now))
    if not _report_queues(s, body):
        return 503, body
    return 200, body


def _history_reachable(s: Services, body: dict[str, Any]) -> bool:
    """False (and ``body`` marked unhealthy) when the history tables have an account of their own that
    cannot be queried; True otherwise, with ``history_storage`` "reachable" when they have one."""
    if s.settings.history_storage is None:
        return True
    try:
        # the history tables queried (a point read would take a missing table for a missing row), each once
        next(iter(s.stores.history.list(PROBE_JOB, once=True)), None)  # both tables, one query each
    except Exception as exc:
        log.warning("health: history storage not reachable: %s", type(exc).__name__)
        body.update(
            status="unhealthy",
            history_storage="unreachable",
            reason="storage: the history tables (SchedulerHistoryStorage) cannot be reached",
        )
        return False
    body["history_storage"] = "reachable"
    return True


def _report_region(s: Services, body: dict[str, Any], now: datetime) -> bool:
    """``region`` in ``body`` when a witness is set (docs/regions.md): its name, whether it is active and its
    epoch. Whether this deployment dispatches (always without a witness)."""
    if s.region is None:
        return True
    active = s.active()
    state = s.region.state()
    body["region"] = {"name": state.region, "active": active, "epoch": state.epoch}
    if s.replicator is not None and not active:
        _report_replication(s.replicator.bookmarks.replication(), now, body)
    return active


def _report_replication(copied: ReplicationState, now: datetime, body: dict[str, Any]) -> None:
    """The standby's copy under ``region.replication``: when its last sweep finished, how old that is, and the
    last sweep's failure; a warning when it is older than :data:`REPLICATION_BEHIND_AFTER` (the link to the active
    region's storage is down, or the copy's timer does not run)."""
    age = (now - copied.swept_at).total_seconds() if copied.swept_at is not None else None
    body["region"]["replication"] = {
        "swept_at": format_instant(copied.swept_at) if copied.swept_at is not None else None,
        "age_seconds": round(age, 1) if age is not None else None,
        "error": copied.error,
    }
    if age is None or age > REPLICATION_BEHIND_AFTER.total_seconds():
        since = "never copied" if age is None else f"last copied {age:.0f} s ago"
        why = f": {copied.error}" if copied.error else ""
        body["warnings"].append(f"replication: behind, {since} from the active region{why}")


def _report_tick(tick: datetime | None, now: datetime, body: dict[str, Any], warn: bool = True) -> None:
    """``last_tick`` and ``tick_age_seconds`` in ``body``, and (``warn``: this deployment dispatches) a warning
    when the tick is late or missing."""
    body["last_tick"] = format_instant(tick) if tick is not None else None
    age = (now - tick).total_seconds() if tick is not None else None
    body["tick_age_seconds"] = round(age, 1) if age is not None else None
    if not warn:
        return
    if tick is None:
        body["warnings"].append("dispatch tick: never recorded")
    elif age is not None and age > TICK_LATE_AFTER.total_seconds():
        body["warnings"].append(f"dispatch tick: last one {age:.0f} s ago (expected every 60 s)")


def _report_queues(s: Services, body: dict[str, Any]) -> bool:
    """The execution and cleanup queues in ``body``, with a warning per queue holding poison messages.
    False (and ``body`` marked unhealthy) when the execution queues have an account of their own whose
    depths cannot be read."""
    depths = _queue_depths(s, body)
    if s.settings.execution_storage is not None and (depths is None or depths.executions is None):
        log.warning("health: the execution queues' storage not reachable")
        body.update(
            status="unhealthy",
            execution_storage="unreachable",
            reason="storage: the execution queues (SchedulerExecutionStorage) cannot be reached",
        )
        return False
    body["execution_queue_depth"] = depths.executions if depths is not None else None
    body["execution_queue_due"] = depths.due if depths is not None else None
    body["execution_queue_staged"] = depths.staged if depths is not None else None
    body["poison_queue_length"] = depths.poison if depths is not None else None
    if depths is not None and depths.poison:
        body["warnings"].append(f"poison queue: {depths.poison} message(s) (see docs/operations.md)")
    cleanup = _cleanup_queue(s)
    if cleanup is not None:
        body["cleanup_queue"] = {"name": cleanup.name, "depth": cleanup.depth, "poison": cleanup.poison}
        if cleanup.poison:
            body["warnings"].append(
                f"cleanup poison queue: {cleanup.poison} message(s): the cleanup of their collections failed"
            )
    return True


def _queue_depths(s: Services, body: dict[str, Any]) -> QueueDepths | None:
    """The execution queues' depths, all queues together; with several queues, ``execution_queues`` in the
    body lists each (name, depth, poison) so that one queue falling behind shows."""
    if s.execution_depths is None:
        return s.dispatcher.sample_depths()
    try:
        queues = s.execution_depths()
    except Exception as exc:
        log.warning("health: queue depths not read: %s", type(exc).__name__)
        return None
    body["execution_queues"] = [
        {"name": q.name, "depth": q.depth, "due": q.due, "staged": q.staged, "poison": q.poison} for q in queues
    ]
    return total_depths(queues)


def _cleanup_queue(s: Services) -> ExecutionQueueDepth | None:
    """The cleanup queue's depth and poison length (None: not available, e.g. the memory adapter)."""
    if s.cleanup_depth is None:
        return None
    try:
        return s.cleanup_depth()
    except Exception as exc:
        log.warning("health: cleanup queue depth not read: %s", type(exc).__name__)
        return None


def serve(method: str, services: Callable[[], Services]) -> ApiResponse:
    """Answer ``GET``/``HEAD /health``; any other method is an ARM 405 error with ``Allow``."""
    if method.upper() not in READ_METHODS:
        refusal = MethodNotAllowed("/health answers GET and HEAD only", READ_METHODS, code="MethodNotAllowed")
        return ApiResponse.error(refusal)
    status, body = check(services)
    return _answer(status, body)
