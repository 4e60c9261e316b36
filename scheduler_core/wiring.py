"""The composition root: the process-wide services the triggers use, created lazily on first use.

``function_app.py`` is imported by the Functions worker to index functions, so nothing here runs at import
time: storage clients and settings are built on the first invocation and reused (the clients are
thread-safe and keep their connection pools).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_core import auth, settings, telemetry
from scheduler_core.actions import ActionRunner
from scheduler_core.api.handler import ApiServices, ManagementApi
from scheduler_core.identity import IdentityScope
from scheduler_core.model import CLAIM_LEASE, Job
from scheduler_core.pipeline.dispatch import Dispatcher
from scheduler_core.pipeline.execute import Executor
from scheduler_core.pipeline.stream import HistoryStream, StreamedClaims, StreamedHistory
from scheduler_core.ports import Claims, ExecutionQueue, FlowLimits, MessageSender, Storage, Stores
from scheduler_core.queue_depths import DepthProbe, ExecutionDepths, ExecutionQueueDepth, QueueDepths, total_depths
from scheduler_core.queue_router import ExecutionRouter
from scheduler_core.regions import Bookmarks, HandBack, RegionRole, Replicator, Takeover, Witness
from scheduler_core.service import SchedulerService
from scheduler_core.service.jobs import BackfillSends

_lock = threading.Lock()

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Services:
    settings: settings.Settings
    stores: Stores
    scans: MessageSender
    executions: MessageSender  # execution queue 0 (the only one when SCHEDULER_EXECUTION_QUEUE_COUNT is 1)
    service: SchedulerService
    dispatcher: Dispatcher
    executor: Executor
    api: ApiServices
    clock: Clock
    #: The cleanup queue (``SCHEDULER_CLEANUP_QUEUE``): the daily cleanup's timer and work messages.
    cleanups: MessageSender
    #: Every execution queue, queue 0 first (``settings.execution_queues``).
    execution_queues: tuple[MessageSender, ...] = ()
    #: What the pipeline sends execution messages through: the router over ``execution_queues``.
    send_execution: ExecutionQueue | None = None
    #: The depth of each execution queue and its poison queue (None: not available).
    execution_depths: ExecutionDepths | None = None
    #: The depth of the cleanup queue and of its poison queue (None: not available).
    cleanup_depth: Callable[[], ExecutionQueueDepth] | None = None
    #: The attempts' claims (the cleanup removes old ones).
    claims: Claims | None = None
    #: This region's role (docs/regions.md); None: no witness, the app is active alone.
    region: RegionRole | None = None
    #: This region's due index at a takeover (with a witness).
    takeover: Takeover | None = None
    #: The standby's copy of the peer region's catalog (with a witness and ``SchedulerPeer``).
    replicator: Replicator | None = None
    #: The automatic hand-back to the primary region (with a peer and ``SCHEDULER_REGION_PRIMARY``).
    handback: HandBack | None = None

    def active(self) -> bool:
        """Whether this deployment dispatches and accepts writes now: always without a witness, else while its
        region is active and its due index is built for the epoch (:meth:`take_over`)."""
        return _active(self.region, self.takeover)

    def take_over(self) -> bool:
        """Whether this deployment dispatches now, building its due index first when its region has taken the
        lease from another region (:meth:`Takeover.prepare`; the dispatch tick and the region's beat call it)."""
        if self.region is None:
            return True
        if not self.region.check():
            return False
        if self.takeover is None:
            return True
        epoch = self.region.state().epoch
        self.takeover.prepare(epoch)
        return self.takeover.ready(epoch)  # not yet while it waits for the other region's last runs


def _executor(
    config: settings.Settings,
    storage: _Storage,
    runner: ActionRunner | None,
    dispatcher: Dispatcher,
    clock: Clock,
    sleep: Callable[[float], None],
    claim_lease: timedelta,
) -> Executor:
    """The executor: its attempts are the dispatcher's, its senders ``runner`` (default: the deployment's)."""
    if runner is None:
        # Imported here: the senders pull in azure-servicebus, which the indexing of function_app need not load.
        from scheduler_core.actions.registry import default_runner

        runner = default_runner(config)
    return Executor(
        storage.stores,
        storage.claims,
        runner,
        dispatcher.attempts,
        clock,
        sleep=sleep,
        lease=claim_lease,
        app_host=config.app_host_name,  # for @{historyUrl}
        flow=storage.flow,
        stream=storage.stream,
    )


def build(
    config: settings.Settings,
    clock: Clock = utcnow,
    runner: ActionRunner | None = None,
    send_execution: ExecutionQueue | None = None,
    sleep: Callable[[float], None] = time.sleep,
    claim_lease: timedelta = CLAIM_LEASE,
    storage: Storage | None = None,
    depths: DepthProbe | None = None,
    execution_queues: Sequence[MessageSender] | None = None,
    cleanup_queue: MessageSender | None = None,
    history_stream: MessageSender | None = None,
    witness: Witness | None = None,
    bookmarks: Bookmarks | None = None,
) -> Services:
    """Wire the services for ``config``. ``clock``, ``sleep``, ``runner``, ``send_execution`` and ``claim_lease``
    (how long a worker may hold an attempt before it is taken for dead) are seams for tests; ``storage`` replaces
    the Azure adapters (``scheduler_core.adapters.memory.memory_storage``); ``depths`` reads the execution and poison
    queues' depths for the tick's gauges and ``/health`` (default: the Azure queues' approximate counts, or the
    length of an in-memory execution queue). Execution messages go through an
    :class:`~scheduler_core.queue_router.ExecutionRouter` over the deployment's ``SCHEDULER_EXECUTION_QUEUE_COUNT``
    queues (``settings.execution_queues``; with the Azure adapters, one Storage queue each), unless
    ``send_execution`` replaces it; ``execution_queues`` gives the queues' senders (queue 0 first) over another
    ``storage`` (default: that storage's one execution queue). ``cleanup_queue`` is the cleanup's queue (default: the
    Storage queue ``config.cleanup_queue``, or an in-memory queue over another ``storage``); ``history_stream`` the
    queue every history record is sent to (default: ``config.history_stream_queue`` in ``config.history_stream``'s
    account when that is set, else none); ``witness`` and ``bookmarks``: :func:`_regions`."""
    wired = _queues(config, storage, clock, depths, execution_queues, cleanup_queue)
    storage, queues = _streamed(config, wired.storage, history_stream), wired.executions
    stores, claims, scans = storage.stores, storage.claims, storage.scans
    send_execution = send_execution or ExecutionRouter(
        [queue.send for queue in queues], [getattr(queue, "behind", None) for queue in queues]
    )
    dispatcher = _dispatcher(config, storage, send_execution, wired.depths, claim_lease)
    executor = _executor(config, storage, runner, dispatcher, clock, sleep, claim_lease)
    service = _service(config, stores, dispatcher, clock, sleep)
    gate = auth.gate_from_settings(config)  # API keys, Entra ID tokens, roles
    regions = _regions(config, witness, stores, clock, bookmarks, wired.azure)
    api = ApiServices(service, gate.keys, gate, functools.partial(_active, regions.region, regions.takeover))
    return Services(
        config,
        stores,
        scans,
        queues[0],
        service,
        dispatcher,
        executor,
        api,
        clock,
        execution_queues=queues,
        send_execution=send_execution,
        execution_depths=wired.execution_depths,
        cleanups=wired.cleanups,
        cleanup_depth=wired.cleanup_depth,
        claims=claims,
        region=regions.region,
        takeover=regions.takeover,
        replicator=regions.replicator,
        handback=regions.handback,
    )


def _active(region: RegionRole | None, takeover: Takeover | None) -> bool:
    """Whether a deployment dispatches and accepts writes (:meth:`Services.active`)."""
    if region is None:
        return True
    if not region.check():
        return False
    return takeover is None or takeover.ready(region.state().epoch)


@dataclass
class _Regions:
    """This deployment's part in two regions (the :class:`Services` fields of the same names)."""

    region: RegionRole | None = None
    takeover: Takeover | None = None
    replicator: Replicator | None = None
    handback: HandBack | None = None


def _regions(
    config: settings.Settings,
    witness: Witness | None,
    stores: Stores,
    clock: Clock,
    bookmarks: Bookmarks | None,
    azure: bool,
) -> _Regions:
    """With a witness (``witness``, default: the blob ``config.witness_blob`` in ``config.witness``'s account when
    that is set; else none: the app is active alone), the region's role and its due index's takeover, with its
    records in ``bookmarks`` (default: the ``Regions`` table, or memory over storage that is not Azure's); with a
    peer too (``config.peer``; Azure storage only), the standby's replicator and the automatic hand-back."""
    if witness is None and config.witness is not None:
        from scheduler_core.adapters.azure.witness import blob_witness  # azure-storage-blob, only with a witness

        witness = blob_witness(config.witness, *config.witness_blob)
    if witness is None:
        return _Regions()
    region = RegionRole(config.region_name, witness)
    replicator = handback = None
    if azure:
        from scheduler_core.adapters.azure.clients import table_service
        from scheduler_core.adapters.azure.replica import TableBookmarks, TableReplica, peer_tables

        own = table_service(config)
        bookmarks = bookmarks or TableBookmarks(own, config)
        if config.peer is not None:
            peer_service = peer_tables(config.peer)
            replicator = Replicator(TableReplica(peer_service, config), TableReplica(own, config), bookmarks, clock)
            primary_copy = TableBookmarks(peer_service, config).replication  # the primary's record, in its storage
            handback = HandBack(region, config.primary_region, config.handback_after, primary_copy, clock)
    elif bookmarks is None:
        from scheduler_core.adapters.memory.bookmarks import MemoryBookmarks

        bookmarks = MemoryBookmarks()
    lookahead = timedelta(seconds=config.lookahead_seconds)
    takeover = Takeover(stores, bookmarks, config.due_shards, clock, replicator, lookahead)
    return _Regions(region, takeover, replicator, handback)


def _dispatcher(
    config: settings.Settings,
    storage: _Storage,
    send_execution: ExecutionQueue,
    depths: DepthProbe | None,
    claim_lease: timedelta,
) -> Dispatcher:
    """The dispatcher: it sends attempts through ``send_execution``, hands a large scan's rest on and sends the
    watch looks of the watch entries it writes on the scan queue, and holds back the resend of an unclaimed
    attempt while its execution queue is behind."""
    return Dispatcher(
        storage.stores,
        send_execution,
        config.due_shards,
        timedelta(seconds=config.lookahead_seconds),
        claims=storage.claims,
        lease=claim_lease,
        depths=depths,
        send_scan=storage.scans.send,
        send_look=storage.scans.send,
        behind=send_execution.behind if isinstance(send_execution, ExecutionRouter) else None,
        flow=storage.flow,
    )


@dataclass(frozen=True)
class _Storage:
    """The ports the pipeline is wired with: a deployment's storage, its history and claims streamed when the
    history stream is on (``stream``; None: off)."""

    stores: Stores
    claims: Claims
    scans: MessageSender
    executions: MessageSender
    flow: FlowLimits
    stream: HistoryStream | None = None


def _streamed(config: settings.Settings, storage: Storage, sender: MessageSender | None) -> _Storage:
    """``storage``, its history and claims wrapped to stream every record when the history stream is on."""
    if sender is None and config.history_stream is not None:
        from scheduler_core.adapters.azure.clients import queue_client
        from scheduler_core.adapters.azure.queues import message_queue

        sender = message_queue(queue_client(config, config.history_stream_queue, account=config.history_stream))
    if sender is None:
        return _Storage(storage.stores, storage.claims, storage.scans, storage.executions, storage.flow)
    stream = HistoryStream(sender)
    stores = dataclasses.replace(storage.stores, history=StreamedHistory(storage.stores.history, stream))
    claims = StreamedClaims(storage.claims, stream)
    return _Storage(stores, claims, storage.scans, storage.executions, storage.flow, stream)


@dataclass(frozen=True)
class _Queues:
    """The storage and the queues :func:`build` wires: the execution queues' senders (queue 0 first), the
    cleanup queue, and the probes of their depths (None: not available); ``azure``: the storage is Azure's."""

    storage: Storage
    executions: tuple[MessageSender, ...]
    cleanups: MessageSender
    depths: DepthProbe | None
    execution_depths: ExecutionDepths | None
    cleanup_depth: Callable[[], ExecutionQueueDepth] | None
    azure: bool


def _queues(
    config: settings.Settings,
    storage: Storage | None,
    clock: Clock,
    depths: DepthProbe | None,
    execution_queues: Sequence[MessageSender] | None,
    cleanup_queue: MessageSender | None,
) -> _Queues:
    """The Azure adapters and queues of ``config`` (no ``storage``), or the queues over ``storage``."""
    azure = storage is None
    execution_depths: ExecutionDepths | None = None
    cleanup_depth: Callable[[], ExecutionQueueDepth] | None = None
    if storage is None:
        from scheduler_core.adapters.azure import connect  # the deployed adapters (Azure SDKs: loaded on first use)
        from scheduler_core.adapters.azure.depths import (
            azure_cleanup_depth,
            azure_cleanup_queue,
            azure_execution_depths,
            azure_execution_queues,
        )

        storage = connect(config)
        if execution_queues is None:
            execution_queues = azure_execution_queues(config, storage.executions)
        execution_depths = azure_execution_depths(config)
        if cleanup_queue is None:
            cleanup_queue = azure_cleanup_queue(config)
        cleanup_depth = azure_cleanup_depth(config)
    else:
        if cleanup_queue is None:
            from scheduler_core.adapters.memory.queues import MemoryQueue

            cleanup_queue = MemoryQueue(clock)
        if depths is None and hasattr(storage.executions, "__len__"):
            memory_queue: Any = storage.executions
            depths = lambda: QueueDepths(len(memory_queue), None)  # noqa: E731
    queues = tuple(execution_queues) if execution_queues else (storage.executions,)
    if depths is None and execution_depths is not None:
        probe = execution_depths
        depths = lambda: total_depths(probe())  # noqa: E731
    return _Queues(storage, queues, cleanup_queue, depths, execution_depths, cleanup_depth, azure)


def _service(
    config: settings.Settings, stores: Stores, dispatcher: Dispatcher, clock: Clock, sleep: Callable[[float], None]
) -> SchedulerService:
    """The management service, whose runs on demand and backfills go through the dispatcher's attempts and
    whose jobs due within the lookahead are dispatched at once."""
    attempts = dispatcher.attempts

    def request_run(job: Job) -> None:
        attempts.run_now(job, clock())

    def request_backfill(job: Job, sends: BackfillSends) -> None:
        attempts.start_backfill(job, sends.backfill, sends.occurrences, sends.starts, sends.chained, clock())

    def request_replay(job: Job, occurrence: datetime) -> str:
        return attempts.replay(job, occurrence, clock()).stable_execution_id()

    def due_soon(job: Job) -> None:
        dispatcher.dispatch_job(job, clock())

    return SchedulerService(
        stores,
        config.due_shards,
        clock=clock,
        request_run=request_run,
        request_backfill=request_backfill,
        request_replay=request_replay,
        due_soon=due_soon,
        lookahead=timedelta(seconds=config.lookahead_seconds),
        sleep=sleep,
        identity=IdentityScope.from_settings(config),
    )


_current: list[Services] = []  # at most one element: the services of this process


def services() -> Services:
    """The services for this process (built once, from the settings in the environment)."""
    if not _current:
        with _lock:
            if not _current:
                config = settings.load()
                telemetry.configure(config.appinsights_connection_string, config.otlp_endpoint)
                telemetry.set_log_level(config.log_level)
                telemetry.quiet_libraries()
                _current.append(build(config))
    return _current[0]


def api_services() -> ApiServices:
    return services().api


_api: list[ManagementApi] = []


def management_api() -> ManagementApi:
    """The management API of this process, over :func:`api_services` (made on the first request)."""
    if not _api:
        with _lock:
            if not _api:
                _api.append(ManagementApi(api_services))
    return _api[0]


def install(built: Services) -> None:
    """Use ``built`` as this process's services (tests install a clock or an action runner)."""
    with _lock:
        _current[:] = [built]


def reset() -> None:
    """Forget the services, so the next call re-reads the settings (tests change the environment)."""
    with _lock:
        _current.clear()
