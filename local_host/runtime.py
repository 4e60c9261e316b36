"""The local host: runs a function app's HTTP, timer and queue triggers as the Functions host would."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import azure.functions as func

from local_host.app_index import AppIndex, HttpFunction, QueueFunction, TimerFunction, index_app
from local_host.hostjson import HostConfig, apply_log_levels, load_host_json
from local_host.http_server import HttpHost, HttpLimits, Preflight
from local_host.queues import QueuePoller, worker_thread_count
from local_host.timers import TimerRunner, timer_runners
from local_host.worker import TIMEOUT_GRACE_SECONDS, ProcessWorker, ThreadWorker, Worker

#: ``plan``: the Functions host's (HTTP and timers on threads of their own), or every invocation on the
#: worker's one pool as the Python worker runs sync functions (``elastic-premium``; see :class:`LocalHost`).
PLANS = ("default", "elastic-premium")
#: ``worker``: invocations on threads of this process, or in a worker process (``local_host/worker.py``).
WORKERS = ("threads", "process")
_F = TypeVar("_F", HttpFunction, TimerFunction, QueueFunction)


class LocalHost:
    """Everything one function app declares, running in this process until :meth:`stop`.

    ``enable`` limits which trigger kinds run (``{"http", "timer", "queue"}``), so tests can drive a
    trigger themselves while the host serves the others. Timers run as singletons of the app's host id
    (``host_id``, else the setting ``AzureFunctionsJobHost__id``, else Core Tools' default derived from
    ``state_dir``): each on the one instance holding its blob lease, its schedule status in
    ``AzureWebJobsStorage``, so a run missed while no instance ran it is made up when a listener starts
    (``local_host/leases.py``); a host with none of the three runs every timer itself and keeps no status.
    ``http_limits`` bound the HTTP server (default: :class:`HttpLimits` with host.json's
    concurrency); ``preflight`` checks requests before their bodies are read (see ``host/preflight.py``).
    Queue functions share one pool of ``worker_threads`` threads, as sync functions share the Python
    worker's pool in Azure (default: ``PYTHON_THREADPOOL_THREAD_COUNT``, see ``local_host/queues.py``).

    Invocations run on a language worker (``local_host/worker.py``) that enforces host.json's
    ``functionTimeout``: an invocation past it fails, and unless it ends within ``timeout_grace`` seconds the
    worker is restarted, failing every invocation in flight on it (their queue messages come back after
    ``visibilityTimeout``, their dequeue count raised), as the Functions host restarts its worker. A worker
    that dies fails its invocations in flight too and is replaced; the host runs on. ``worker="threads"``
    (default) runs the worker's pool in this process, where a restart cannot stop code that runs (its result
    is discarded); ``worker="process"`` runs it in a child process that imports the app as ``worker_app``
    (``module:attribute``, the app given here must be that one) after calling ``worker_init``
    (``module:callable``, optional), and is killed on a restart, as in Azure.

    ``plan="default"`` sends queue invocations to the worker's pool and gives HTTP requests and timers
    threads of their own (with ``worker="threads"`` they run on the HTTP server's and the timers' threads,
    without ``functionTimeout``). ``plan="elastic-premium"`` sends every invocation, HTTP, timer and queue,
    to the one pool of ``worker_threads`` threads, as the Python worker runs every sync function in Azure
    (on an Elastic Premium plan a backlog of queue work then delays API answers and timer ticks).
    """

    def __init__(
        self,
        app: func.FunctionApp,
        host_json: Path | HostConfig,
        host: str = "127.0.0.1",
        port: int = 7071,
        enable: frozenset[str] = frozenset({"http", "timer", "queue"}),
        state_dir: Path | None = None,
        http_limits: HttpLimits | None = None,
        preflight: Preflight | None = None,
        worker_threads: int | None = None,
        host_id: str | None = None,
        plan: str = "default",
        worker: str = "threads",
        worker_app: str | None = None,
        worker_init: str | None = None,
        timeout_grace: float = TIMEOUT_GRACE_SECONDS,
    ) -> None:
        self.index: AppIndex = index_app(app)
        self.worker_threads = worker_thread_count() if worker_threads is None else worker_threads
        self.config = host_json if isinstance(host_json, HostConfig) else load_host_json(host_json)
        apply_log_levels(self.config.log_levels)  # each category host.json names (not the console's default)
        self._stop = threading.Event()
        self.plan = plan
        self.worker = self._make_worker(worker, worker_app, worker_init, timeout_grace)
        limits = http_limits or HttpLimits(
            max_concurrent_requests=self.config.http.max_concurrent_requests,
            max_outstanding_requests=self.config.http.max_outstanding_requests,
        )
        self.http = (
            HttpHost(self._on_worker(self.index.http), self.config.route_prefix, host, port, limits, preflight)
            if "http" in enable
            else None
        )
        timers = self.index.timers if "timer" in enable else ()
        self.timers: list[TimerRunner] = timer_runners(timers, self._stop, self.config.singleton, host_id, state_dir)
        for timer in self.timers:  # the runners invoke their function's handler: the one bound to the worker
            timer.function = self._on_worker([timer.function])[0]
        queues = self._on_worker(self.index.queues, shared=True) if "queue" in enable else []
        # Host-side threads that carry each message in flight (batchSize + newBatchThreshold per queue, and a
        # batch more) through its invocation on the worker and its settlement, as the queue listener's tasks.
        options = self.config.queues
        carriers = len(queues) * (2 * options.batch_size + options.new_batch_threshold)
        self._dispatch = ThreadPoolExecutor(max_workers=carriers, thread_name_prefix="queue") if queues else None
        self.pollers = [QueuePoller(q, self.config.queues, self._stop, self._dispatch) for q in queues]

    def _make_worker(self, kind: str, app: str | None, init: str | None, grace: float) -> Worker:
        """The language worker of ``worker`` (see the class's docstring); its fatal errors stop the host."""
        if self.plan not in PLANS:
            raise ValueError(f"plan must be one of {', '.join(PLANS)}, got {self.plan!r}")
        timeout = self.config.function_timeout
        if kind == "threads":
            return ThreadWorker(self.worker_threads, timeout, grace, on_fatal=self._stop.set)
        if kind == "process":
            if not app:
                raise ValueError("worker='process' needs worker_app, the app's module:attribute")
            return ProcessWorker(app, self.worker_threads, timeout, grace, on_fatal=self._stop.set, init=init)
        raise ValueError(f"worker must be one of {', '.join(WORKERS)}, got {kind!r}")

    def _on_worker(self, functions: Iterable[_F], shared: bool | None = None) -> list[_F]:
        """``functions`` with handlers that run on the worker: on its shared pool (queue functions, and every
        function with ``plan="elastic-premium"``), else on its own lane; HTTP and timer functions of the default
        plan on a worker of threads keep their handlers (run on the server's and the timers' threads)."""
        on_shared = self.plan == "elastic-premium" if shared is None else shared
        if not on_shared and isinstance(self.worker, ThreadWorker):
            return list(functions)
        return [
            dataclasses.replace(f, handler=self.worker.bind(f.name, f.handler, shared=on_shared)) for f in functions
        ]

    @property
    def base_url(self) -> str:
        if self.http is None:
            raise RuntimeError("the HTTP triggers are not enabled in this host")
        return self.http.base_url

    def start(self) -> None:
        self.worker.start()
        for poller in self.pollers:
            poller.start()
        for timer in self.timers:
            timer.start()
        if self.http is not None:  # last: once it answers, everything else runs
            self.http.start()

    def stop(self) -> None:
        self._stop.set()
        if self.http is not None:
            self.http.stop()
        for timer in self.timers:
            timer.join(timeout=10)
        for poller in self.pollers:
            poller.join(timeout=30)
        self.worker.close()  # what has not started fails (its message stays hidden), what runs ends
        if self._dispatch is not None:
            self._dispatch.shutdown(wait=True, cancel_futures=True)

    def wait(self) -> None:
        """Block until :meth:`stop` is called from another thread (or Ctrl-C)."""
        while not self._stop.wait(0.5):
            pass

    def __enter__(self) -> LocalHost:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
