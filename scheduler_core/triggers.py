"""What each Azure Functions trigger does, in plain Python: ``function_app.py`` calls these and nothing else."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

from scheduler_core import settings
from scheduler_core.errors import ConfigurationError

# The pipeline and the composition root are imported by the functions below, on their first call: the
# Functions worker imports this module (through function_app.py) to index the app, and that import is part
# of every cold start (docs/operations.md, "Cold start").

log = logging.getLogger("scheduler_core.triggers")


def on_dispatch_tick(past_due: bool = False) -> int:
    """Timer: one scan message per due-index shard. Returns how many were sent."""
    from scheduler_core.wiring import services

    s = services()
    if not s.take_over():
        log.info("dispatch tick: this region is the standby (docs/regions.md); nothing dispatched")
        return 0
    if past_due:
        log.warning("dispatch tick is past due; missed occurrences are picked up by the scans (coalesced)")

    return s.dispatcher.tick(s.scans.send, s.clock())


def on_scan(body: bytes) -> None:
    """Queue (scan): dispatch the due rows of one shard, or of the rest of one that another scan handed on, or
    look at a shard's due watch entries (a watch look)."""
    from scheduler_core.pipeline.messages import ScanMessage
    from scheduler_core.wiring import services

    s = services()
    message = ScanMessage.from_json(body)
    if not s.active():  # sent before this region stopped being active: its rows stay for the active region's tick
        log.info("scan: this region is the standby (docs/regions.md); nothing dispatched")
        return
    s.dispatcher.scan_message(message, s.clock())


def on_region_beat() -> bool:
    """Timer (every 15 s, registered only with a witness): renew this region's holding of the witness's lease,
    or try to acquire it (docs/regions.md). Returns whether the region is active."""
    from scheduler_core.wiring import services

    s = services()
    if s.region is None:
        return True
    active = s.region.beat()
    if active and not s.active():  # taken from another region: build the due index and dispatch now, not at the minute
        _take_over_aside()
    return active


_takeover_thread: threading.Thread | None = None
_takeover_lock = threading.Lock()


def _take_over_aside() -> None:
    """Run a dispatch tick (which builds the due index first) on a thread of its own, one at a time: the beat must
    not wait for it, or the holding it renews every 15 s could outlast its fence while the index is built."""
    global _takeover_thread  # noqa: PLW0603 - one takeover thread per process
    with _takeover_lock:
        if _takeover_thread is not None and _takeover_thread.is_alive():
            return
        _takeover_thread = threading.Thread(target=_tick_quietly, name="region-takeover", daemon=True)
        _takeover_thread.start()


def _tick_quietly() -> None:
    try:
        on_dispatch_tick()
    except Exception:
        log.exception("region takeover: the tick failed; the dispatch timer's next tick tries again")


def on_region_replicate() -> int | None:
    """Timer (every 10 s, registered only with a witness and a peer): while this region is the standby and the other
    holds the lease, copy what the other wrote since the last sweep (while neither holds it, as during a hand-back,
    neither copies: the region that handed back may still be counting its last runs); while this region is active,
    hand the lease back to the primary region when its copy has been current long enough (docs/regions.md). Rows
    copied; None: nothing copied."""
    from scheduler_core.wiring import services

    s = services()
    if s.region is None:
        return None
    if s.region.check():  # active: nothing to copy; hand the lease back to the primary region when it is time
        if s.handback is not None:
            s.handback.check()
        return None
    if s.replicator is None or not s.region.state().other_holds:
        return None  # the other region is not active either (a hand-back under way): it is no source to copy
    report = s.replicator.sweep()
    if report.copied or report.deleted:
        log.info("replication: %d rows copied, %d deleted", report.copied, report.deleted)
    return report.copied


def regions_configured() -> bool:
    """Whether the settings name a witness (read when the app is indexed: the region's timer exists only then)."""
    return _configured(settings.WITNESS_CONNECTION, "blob")


def replication_configured() -> bool:
    """Whether the settings name a witness and a peer (the standby's copy's timer exists only then)."""
    return regions_configured() and _configured(settings.PEER_CONNECTION, "table")


def _configured(connection: str, service: str) -> bool:
    return bool(settings.raw(connection) or settings.raw(f"{connection}__{service}ServiceUri"))


def on_execution(body: bytes) -> None:
    """Queue (executions): run one attempt of one occurrence."""
    from scheduler_core.pipeline.messages import ExecutionMessage
    from scheduler_core.wiring import services

    s = services()
    s.executor.execute(ExecutionMessage.from_json(body))  # the executor logs the attempt (one INFO line)


def on_cleanup() -> int:
    """Timer (daily): one cleanup message per subscription that has collections (the work is done by
    :func:`on_cleanup_message`, in parallel). Returns how many were sent."""
    from scheduler_core.pipeline.cleanup import start
    from scheduler_core.wiring import services

    s = services()
    return start(s.stores, s.clock(), s.cleanups.send)


def on_cleanup_message(body: bytes) -> None:
    """Queue (cleanup): a subscription's collections, or one collection's jobs (handing any rest on)."""
    from scheduler_core.pipeline.cleanup import CleanupMessage, work
    from scheduler_core.wiring import services

    s = services()
    assert s.claims is not None
    report = work(s.stores, CleanupMessage.from_json(body), s.cleanups.send, s.claims)
    if report.jobs_seen or report.collections_removed:
        log.info(
            "cleanup: %d jobs covered, %d removed, %d history rows and %d claims removed, %d deletions finished",
            report.jobs_seen,
            report.jobs_removed,
            report.history_removed,
            report.claims_removed,
            report.collections_removed,
        )


#: The function of execution queue 0 (the one queue of a deployment with ``SCHEDULER_EXECUTION_QUEUE_COUNT``
#: 1); queue ``i`` is consumed by ``execute_occurrence_<i>``.
EXECUTION_FUNCTION = "execute_occurrence"


@dataclass(frozen=True)
class ExecutionFunction:
    """One queue-triggered execution function: its name, its queue binding (a ``%SETTING%`` expression) and its
    trigger's storage connection (``SchedulerExecutionStorage`` when the execution queues have an account of
    their own, else ``AzureWebJobsStorage``)."""

    index: int
    name: str
    queue_binding: str
    connection: str = settings.HOST_CONNECTION


def execution_functions() -> list[ExecutionFunction]:
    """The execution functions ``function_app.py`` declares: one per execution queue.

    Read when the app is indexed (the Functions worker imports ``function_app.py`` with the app settings in
    its environment; a change of setting restarts the app, which indexes it again). A count that does not
    load declares queue 0's function alone and logs the error: the app still indexes, its first invocation
    fails on the same error (``settings.load``) and ``GET /health`` answers 503."""
    try:
        count = settings.execution_queue_count()
    except ConfigurationError as exc:
        log.error("%s; declaring the function of execution queue 0 only", exc.message)
        count = 1
    connection = settings.execution_connection()
    return [
        ExecutionFunction(i, execution_function_name(i), settings.execution_queue_binding(i), connection)
        for i in range(count)
    ]


def execution_function_name(index: int) -> str:
    """The name of the function consuming execution queue ``index``."""
    return EXECUTION_FUNCTION if index == 0 else f"{EXECUTION_FUNCTION}_{index}"


# ------------------------------------------------------------------------------------------ HTTP answers

#: The headers every HTTP answer of the app carries, whatever its route and status (the management API,
#: ``/health``, ``/openapi``, ``/dashboard``; errors, 401, 403, 404, 405 included): the declared
#: Content-Type is the only one a browser may use, and no browser or proxy keeps a copy. A success (2xx,
#: 304) that sets its own ``Cache-Control`` keeps it: the public OpenAPI documents and the dashboard's page
#: and assets, which hold no secret and are revalidated by their ETag.
ANSWER_HEADERS: Mapping[str, str] = MappingProxyType({"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"})


class HttpMessage(Protocol):
    """What an HTTP route of ``scheduler_core`` answers (``ApiResponse``, ``health``'s answer)."""

    @property
    def status(self) -> int: ...

    @property
    def body(self) -> bytes: ...

    @property
    def headers(self) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class HttpAnswer:
    """An answer as ``function_app.py`` hands it to the Functions host: every header set."""

    status: int
    body: bytes
    headers: dict[str, str]


def answer_headers(status: int, headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with :data:`ANSWER_HEADERS` (names matched without regard to case): ``nosniff`` always;
    ``Cache-Control: no-store`` unless a success (2xx, 304) names its own. The one rule for the app's answers,
    and for the local host's own refusals, which stand in for them."""
    out = {name: value for name, value in headers.items() if name.lower() != "x-content-type-options"}
    out["X-Content-Type-Options"] = ANSWER_HEADERS["X-Content-Type-Options"]
    own_cache = [name for name in out if name.lower() == "cache-control"]
    if not own_cache or not (200 <= status < 300 or status == 304):
        for name in own_cache:
            del out[name]
        out["Cache-Control"] = ANSWER_HEADERS["Cache-Control"]
    return out


def http_answer(message: HttpMessage) -> HttpAnswer:
    """Every HTTP answer of the app, as ``function_app.py`` returns it: ``message`` with
    :func:`answer_headers`. Each HTTP function passes its route's answer through here, and only here."""
    return HttpAnswer(message.status, message.body, answer_headers(message.status, message.headers))
