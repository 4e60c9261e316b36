"""The composition root: the process-wide services the triggers use, created lazily on first use.

``function_app.py`` is imported by the Functions worker to index functions, so nothing here runs at import
time: storage clients and settings are built on the first invocation and reused (the clients are
thread-safe and keep their connection pools).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_core import auth, settings, telemetry
from scheduler_core.actions import ActionRunner
from scheduler_core.api.handler import ApiServices
from scheduler_core.identity import IdentityScope
from scheduler_core.model import CLAIM_LEASE, Job
from scheduler_core.pipeline.dispatch import DepthProbe, Dispatcher, QueueDepths
from scheduler_core.pipeline.execute import Executor
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.ports import ExecutionQueue, MessageSender, Storage, Stores
from scheduler_core.recurrence import format_instant
from scheduler_core.service import SchedulerService

_lock = threading.Lock()

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Services:
    settings: settings.Settings
    stores: Stores
    scans: MessageSender
    executions: MessageSender
    service: SchedulerService
    dispatcher: Dispatcher
    executor: Executor
    api: ApiServices
    clock: Clock


def build(
    config: settings.Settings,
    clock: Clock = utcnow,
    runner: ActionRunner | None = None,
    send_execution: ExecutionQueue | None = None,
    sleep: Callable[[float], None] = time.sleep,
    claim_lease: timedelta = CLAIM_LEASE,
    storage: Storage | None = None,
    depths: DepthProbe | None = None,
) -> Services:
    """Wire the services for ``config``. ``clock``, ``sleep``, ``runner``, ``send_execution`` and
    ``claim_lease`` (how long a worker may hold an attempt before it is taken for dead) are seams for tests;
    ``storage`` replaces the Azure adapters (``scheduler_core.adapters.memory.memory_storage``); ``depths``
    reads the execution and poison queues' depths for the tick's gauges and ``/health`` (default: the Azure
    queues' approximate counts, or the length of an in-memory execution queue)."""
    if storage is None:
        from scheduler_core.adapters.azure import connect  # the deployed adapters (Azure SDKs: loaded on first use)

        storage = connect(config)
        depths = depths or azure_queue_depths(config)
    elif depths is None and hasattr(storage.executions, "__len__"):
        memory_queue: Any = storage.executions
        depths = lambda: QueueDepths(len(memory_queue), None)  # noqa: E731
    stores, claims, scans, executions = storage.stores, storage.claims, storage.scans, storage.executions
    send_execution = send_execution or executions.send
    dispatcher = Dispatcher(
        stores,
        send_execution,
        config.due_shards,
        timedelta(seconds=config.lookahead_seconds),
        claims=claims,
        lease=claim_lease,
        depths=depths,
    )
    if runner is None:
        # Imported here: the senders pull in azure-servicebus, which the indexing of function_app need not load.
        from scheduler_core.actions.registry import default_runner

        runner = default_runner(config)
    executor = Executor(stores, claims, runner, send_execution, dispatcher, clock, sleep=sleep, lease=claim_lease)

    def request_run(job: Job) -> None:
        now = clock()
        message = ExecutionMessage(
            job_partition=job.ref.partition_key,
            job_row=job.ref.row_key,
            generation=job.generation,
            occurrence=format_instant(now),
            cause=Cause.MANUAL,
        )
        send_execution(message.to_json(), 0)
        dispatcher.watch(job, message, now)

    def due_soon(job: Job) -> None:
        dispatcher.dispatch_job(job, clock())

    service = SchedulerService(
        stores,
        config.due_shards,
        clock=clock,
        request_run=request_run,
        due_soon=due_soon,
        lookahead=timedelta(seconds=config.lookahead_seconds),
        sleep=sleep,
        identity=IdentityScope.from_settings(config),
    )
    api = ApiServices(service, auth.parse_keys(config.api_keys))
    return Services(config, stores, scans, executions, service, dispatcher, executor, api, clock)


def poison_queue_name(execution_queue: str) -> str:
    """The queue the Functions host moves an execution message to after its last dequeue."""
    return f"{execution_queue}-poison"


def azure_queue_depths(config: settings.Settings) -> DepthProbe:
    """Approximate message counts of the execution queue and its poison queue (a missing queue counts 0;
    a count that cannot be read is None). One cheap properties call per queue."""
    from scheduler_core.adapters.azure.clients import queue_client

    executions = queue_client(config, config.execution_queue)
    poison = queue_client(config, poison_queue_name(config.execution_queue))

    def count(client: Any) -> int | None:
        try:
            return int(client.get_queue_properties().approximate_message_count or 0)
        except Exception as exc:  # the SDK's errors: only adapters import them
            if getattr(exc, "status_code", None) == 404:
                return 0  # no poison message ever: the host creates the queue with the first one
            return None

    return lambda: QueueDepths(count(executions), count(poison))


_current: list[Services] = []  # at most one element: the services of this process


def services() -> Services:
    """The services for this process (built once, from the settings in the environment)."""
    if not _current:
        with _lock:
            if not _current:
                config = settings.load()
                telemetry.configure(config.appinsights_connection_string, config.otlp_endpoint)
                _current.append(build(config))
    return _current[0]


def api_services() -> ApiServices:
    return services().api


def install(built: Services) -> None:
    """Use ``built`` as this process's services (tests install a clock or an action runner)."""
    with _lock:
        _current[:] = [built]


def reset() -> None:
    """Forget the services, so the next call re-reads the settings (tests change the environment)."""
    with _lock:
        _current.clear()
