"""The local host: runs a function app's HTTP, timer and queue triggers as the Functions host would."""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType

import azure.functions as func

from local_host.app_index import AppIndex, index_app
from local_host.hostjson import HostConfig, load_host_json
from local_host.http_server import HttpHost, HttpLimits, Preflight
from local_host.queues import QueuePoller, worker_pool, worker_thread_count
from local_host.timers import ScheduleStatusStore, TimerRunner


class LocalHost:
    """Everything one function app declares, running in this process until :meth:`stop`.

    ``enable`` limits which trigger kinds run (``{"http", "timer", "queue"}``), so tests can drive a
    trigger themselves while the host serves the others. ``state_dir`` is where the host keeps what must
    outlive it (timers' schedule status, so that a run missed while it was down is made up at start-up);
    None keeps nothing. ``http_limits`` bound the HTTP server (default: :class:`HttpLimits` with host.json's
    concurrency); ``preflight`` checks requests before their bodies are read (see ``host/preflight.py``).
    Queue functions share one pool of ``worker_threads`` threads, as sync functions share the Python
    worker's pool in Azure (default: ``PYTHON_THREADPOOL_THREAD_COUNT``, see ``local_host/queues.py``).
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
    ) -> None:
        self.index: AppIndex = index_app(app)
        self.worker_threads = worker_thread_count() if worker_threads is None else worker_threads
        self.config = host_json if isinstance(host_json, HostConfig) else load_host_json(host_json)
        self._stop = threading.Event()
        limits = http_limits or HttpLimits(
            max_concurrent_requests=self.config.http.max_concurrent_requests,
            max_outstanding_requests=self.config.http.max_outstanding_requests,
        )
        self.http = (
            HttpHost(self.index.http, self.config.route_prefix, host, port, limits, preflight)
            if "http" in enable
            else None
        )
        monitor = ScheduleStatusStore(state_dir / "timers") if state_dir is not None else None
        self.timers = [TimerRunner(t, self._stop, monitor) for t in self.index.timers] if "timer" in enable else []
        queues = self.index.queues if "queue" in enable else []
        self._worker_pool = worker_pool(self.worker_threads) if queues else None
        self.pollers = [QueuePoller(q, self.config.queues, self._stop, self._worker_pool) for q in queues]

    @property
    def base_url(self) -> str:
        if self.http is None:
            raise RuntimeError("the HTTP triggers are not enabled in this host")
        return self.http.base_url

    def start(self) -> None:
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
        if self._worker_pool is not None:
            self._worker_pool.shutdown(wait=True, cancel_futures=True)

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
