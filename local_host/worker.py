"""The local host's language worker: where function invocations run, and what happens when one runs too long
or the worker dies.

In Azure the Functions host runs no Python: it sends each invocation to a language worker process (the Python
worker), which runs every sync function on one ``ThreadPoolExecutor`` of ``PYTHON_THREADPOOL_THREAD_COUNT``
threads (azure-functions-python-worker ``dispatcher.py``: ``_sync_call_tp``, ``run_in_executor``). The host
side of that is modelled here:

- **functionTimeout** (host.json): the WebJobs executor fails an invocation that runs past it with a
  ``FunctionTimeoutException`` (``FunctionExecutor.TryHandleTimeoutAsync``), so its trigger settles it as
  failed (a queue message is released: visible again after ``visibilityTimeout``, its dequeue count raised by
  the next receive). The host's ``WebScriptHostExceptionHandler.OnTimeoutExceptionAsync`` then waits the
  timeout's grace period (``TimeoutAttribute.GracePeriod``, 2 s) for the invocation to end; if it does not,
  it calls ``RestartWorkerWithInvocationIdAsync``: the worker channel running that invocation is disposed
  (its process killed) and a new one started (azure-functions-host ``RpcFunctionInvocationDispatcher``:
  ``DisposeAndRestartWorkerChannel``). The current host passes the timeout exception on, and
  ``JobHostRpcWorkerChannelManager.ShutdownChannelIfExistsAsync`` calls ``GrpcWorkerChannel.TryFailExecutions``
  with it: every invocation in flight on that worker fails at once. (Before, in the 4.x releases of 2024,
  no exception was passed and the others failed only at their own timeouts; either way none of them
  completes.) Invocations sent while the new worker starts wait for it.
- **A worker crash is not a host crash**: the worker process's exit is a ``WorkerProcessExitException``
  (``WorkerProcess.OnProcessExited``) published as a ``WorkerErrorEvent``; the dispatcher fails the
  invocations in flight on it (``TryFailExecutions``) and starts a new worker. Only more than
  ``ErrorEventsThreshold`` (3 per worker process) such errors within 30 minutes
  (``WorkerRestartErrorIntervalThresholdInMinutes``) stop the host ("Exceeded language worker restart retry
  count"). A timeout's restart is not counted.

Two workers implement this:

- :class:`ThreadWorker` (the default): the invocations run in this process on one pool of
  ``PYTHON_THREADPOOL_THREAD_COUNT`` threads. A "restart" fails every invocation in flight and starts a new
  pool; the threads of the old one cannot be killed and run on, their results discarded (logged "late result
  discarded"). Cheap, and what the app sees of the host is the same (failed invocations, released messages),
  but code that was running keeps running: use :class:`ProcessWorker` where that matters.
- :class:`ProcessWorker`: the invocations run in a child process (:func:`main` of this module) that
  imports the app by its ``module:attribute`` name and runs it as the Python worker does; a timeout's
  restart or a crash kills it mid-call, exactly as in Azure.

Each worker has two lanes: the shared pool (``PYTHON_THREADPOOL_THREAD_COUNT`` threads) and, for HTTP and
timer functions when the host does not send them to the shared pool (``plan="default"``, see
``local_host/runtime.py``), a pool of their own.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import itertools
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import uuid
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import azure.functions as func
from azure.functions.queue import QueueMessage as FunctionQueueMessage
from azure.functions.timer import TimerRequest

from scheduler_core.errors import ConfigurationError

log = logging.getLogger("local_host")

#: ``TimeoutAttribute.GracePeriod``'s default (WebJobs SDK): after a timeout, how long the host waits for the
#: timed-out invocation to end before it restarts the worker running it.
TIMEOUT_GRACE_SECONDS = 2.0
#: ``ErrorEventsThreshold`` (3 x the worker process count, one here) worker errors within
#: ``WorkerRestartErrorIntervalThresholdInMinutes`` (30) stop the host.
WORKER_ERRORS_THRESHOLD = 3
WORKER_ERRORS_WINDOW_SECONDS = 30 * 60
#: Threads of the lane of HTTP and timer functions that do not share the worker's pool.
OWN_LANE_THREADS = 256
#: How long a new worker process may take to import the app and say it is ready.
WORKER_START_SECONDS = 120.0
#: How long :meth:`Worker.close` waits for the invocations that are running to end.
CLOSE_SECONDS = 30.0
#: How a worker process starts (``-c`` rather than ``-m local_host.worker``: the package imports this module).
_CHILD_ENTRY = "import sys; from local_host.worker import main; main(sys.argv[1:])"


class FunctionTimeoutError(Exception):
    """The invocation ran past host.json's ``functionTimeout`` (the host's ``FunctionTimeoutException``)."""


class WorkerLostError(Exception):
    """The worker running the invocation died or was restarted: the invocation failed without a result."""


class HostStoppingError(Exception):
    """The host stopped before the invocation started: it never ran (its trigger leaves it unsettled)."""


class FunctionFailedError(Exception):
    """The function raised in a worker process; the message carries the worker's traceback."""


@dataclass
class _Invocation:
    id: str
    function: str
    generation: int
    future: Future[Any] = field(default_factory=Future)
    #: Set when the worker reports the invocation's end, or the worker running it is gone.
    ended: threading.Event = field(default_factory=threading.Event)


def resolve(spec: str) -> Any:
    """The object named ``module:attribute`` (``module`` alone: the module)."""
    module_name, _, attribute = spec.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in filter(None, attribute.split(".")):
        target = getattr(target, part)
    return target


class Worker(ABC):
    """Runs invocations and fails them when they time out or their worker goes (see the module's docstring).

    ``threads``: the shared pool's size (``PYTHON_THREADPOOL_THREAD_COUNT``); ``function_timeout``: host.json's
    ``functionTimeout`` in seconds (None: no limit); ``grace``: the timeout's grace period; ``on_fatal``:
    called once when worker errors exceed the host's threshold (the host stops).
    """

    def __init__(
        self,
        threads: int,
        function_timeout: float | None,
        grace: float = TIMEOUT_GRACE_SECONDS,
        on_fatal: Callable[[], None] | None = None,
    ) -> None:
        self.threads = threads
        self.function_timeout = function_timeout
        self.grace = grace
        self._on_fatal = on_fatal
        self._lock = threading.Condition()
        self._pending: dict[str, _Invocation] = {}
        self.generation = 0
        self.restarts = 0
        self._errors: deque[float] = deque()
        self._closing = False

    # ------------------------------------------------------------------------------------------ contract

    def bind(self, function_name: str, handler: Callable[..., Any], shared: bool = True) -> Callable[[Any], Any]:
        """A handler that runs ``function_name`` on this worker (its shared pool, or the own lane)."""

        def on_worker(request: Any) -> Any:
            return self.invoke(function_name, handler, request, shared)

        on_worker.__name__ = getattr(handler, "__name__", function_name)
        return on_worker

    def invoke(self, function_name: str, handler: Callable[..., Any], request: Any, shared: bool = True) -> Any:
        """Run one invocation and return its result; raise what it raised, :class:`FunctionTimeoutError`
        past ``function_timeout``, :class:`WorkerLostError` when its worker goes first."""
        invocation = self._submit(function_name, handler, request, shared)
        try:
            return invocation.future.result(timeout=self.function_timeout)
        except FutureTimeout:
            pass
        message = f"Timeout value of {self.function_timeout:g} s was exceeded by function: {function_name}"
        if self._fail(invocation, FunctionTimeoutError(message)):
            log.error("function=%s invocation %s: %s", function_name, invocation.id, message)
            threading.Thread(
                target=self._after_timeout, args=(invocation,), name="function-timeout", daemon=True
            ).start()
        return invocation.future.result()  # the timeout, unless the result came first

    def start(self) -> None:  # noqa: B027 (a worker of threads has nothing to start)
        """Start the first worker."""

    @abstractmethod
    def close(self) -> None:
        """Fail what has not started (:class:`HostStoppingError`), wait a while for what runs, end the worker."""

    @property
    def in_flight(self) -> int:
        """Invocations sent to the worker that it has not finished (for tests)."""
        with self._lock:
            return len(self._pending)

    # ------------------------------------------------------------------------------------ subclass hooks

    @abstractmethod
    def _submit(self, function_name: str, handler: Callable[..., Any], request: Any, shared: bool) -> _Invocation:
        """Register an invocation in :attr:`_pending` under the current generation and send it to the worker."""

    @abstractmethod
    def _replace(self, generation: int) -> None:
        """Tear down the worker of ``generation`` (already superseded) and bring up the next."""

    # --------------------------------------------------------------------------------------- shared logic

    def _register(self, function_name: str) -> _Invocation:
        invocation = _Invocation(uuid.uuid4().hex, function_name, self.generation)
        self._pending[invocation.id] = invocation
        return invocation

    def _fail(self, invocation: _Invocation, error: BaseException) -> bool:
        """Fail an invocation that has no outcome yet; False if it had one."""
        try:
            invocation.future.set_exception(error)
        except InvalidStateError:
            return False
        return True

    def _finish(self, invocation: _Invocation, result: Any = None, error: BaseException | None = None) -> None:
        """The worker reported the invocation's end: give its outcome, unless it already has one (then discard)."""
        with self._lock:
            self._pending.pop(invocation.id, None)
        invocation.ended.set()
        try:
            if error is not None:
                invocation.future.set_exception(error)
            else:
                invocation.future.set_result(result)
        except InvalidStateError:
            log.warning(
                "function=%s invocation %s ended after it had failed (timeout or worker restart): "
                "late result discarded",
                invocation.function,
                invocation.id,
            )

    def _after_timeout(self, invocation: _Invocation) -> None:
        """``OnTimeoutExceptionAsync``: wait the grace period, then restart the worker still running it."""
        if invocation.ended.wait(self.grace):
            return
        log.warning(
            "A function timeout has occurred. Restarting worker process executing invocationId '%s'.", invocation.id
        )
        self.restart(invocation.generation, f"invocation {invocation.id} of {invocation.function} timed out")

    def restart(self, generation: int, reason: str) -> bool:
        """Fail every invocation in flight on the worker of ``generation`` and start a new worker; False when
        that worker was already replaced."""
        with self._lock:
            if generation != self.generation or self._closing:
                return False
            victims = [i for i in self._pending.values() if i.generation == generation]
            for invocation in victims:
                del self._pending[invocation.id]
            self.generation += 1
            self.restarts += 1
        for invocation in victims:
            invocation.ended.set()
            if self._fail(invocation, WorkerLostError(f"the worker running it was restarted: {reason}")):
                log.error(
                    "function=%s invocation %s failed: its worker was restarted (%s)",
                    invocation.function,
                    invocation.id,
                    reason,
                )
        self._replace(generation)
        log.warning("Restart of language worker process(es) completed (%d invocations failed).", len(victims))
        return True

    def _worker_error(self, generation: int, reason: str) -> None:
        """A worker died on its own (``WorkerErrorEvent``): count it, then restart, or stop the host."""
        now = time.monotonic()
        with self._lock:
            self._errors.append(now)
            while self._errors and now - self._errors[0] > WORKER_ERRORS_WINDOW_SECONDS:
                self._errors.popleft()
            fatal = len(self._errors) > WORKER_ERRORS_THRESHOLD
        log.error("language worker error: %s", reason)
        self.restart(generation, reason)
        if fatal and self._on_fatal is not None:
            log.error(
                "Exceeded language worker restart retry count (%d errors in %d minutes). Shutting down the host.",
                len(self._errors),
                WORKER_ERRORS_WINDOW_SECONDS // 60,
            )
            self._on_fatal()


class ThreadWorker(Worker):
    """The worker as a pool of threads in this process (see the module's docstring for what a restart can
    and cannot do here). Its shared pool's threads are named ``worker_<n>``."""

    def __init__(
        self,
        threads: int,
        function_timeout: float | None,
        grace: float = TIMEOUT_GRACE_SECONDS,
        on_fatal: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(threads, function_timeout, grace, on_fatal)
        self._shared, self._own = self._pools()
        self._retired: list[ThreadPoolExecutor] = []

    def _pools(self) -> tuple[ThreadPoolExecutor, ThreadPoolExecutor]:
        return (
            ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="worker"),
            ThreadPoolExecutor(max_workers=OWN_LANE_THREADS, thread_name_prefix="function"),
        )

    def _submit(self, function_name: str, handler: Callable[..., Any], request: Any, shared: bool) -> _Invocation:
        from local_host.http_server import invoke

        def run() -> None:
            try:
                result = invoke(handler, request)
            except BaseException as error:  # the function's failure is the invocation's outcome
                self._finish(invocation, error=error)
            else:
                self._finish(invocation, result)

        with self._lock:
            if self._closing:
                raise HostStoppingError("the host is stopping")
            invocation = self._register(function_name)
            task = (self._shared if shared else self._own).submit(run)
        task.add_done_callback(lambda done: self._cancelled(invocation) if done.cancelled() else None)
        return invocation

    def _cancelled(self, invocation: _Invocation) -> None:
        with self._lock:
            self._pending.pop(invocation.id, None)
        invocation.ended.set()
        self._fail(invocation, HostStoppingError("the host stopped before the invocation started"))

    def _replace(self, generation: int) -> None:
        with self._lock:
            old = (self._shared, self._own)
            self._shared, self._own = self._pools()
        for pool in old:  # its running threads cannot be stopped: they run on, their results discarded
            pool.shutdown(wait=False, cancel_futures=True)
            self._retired.append(pool)

    def close(self) -> None:
        with self._lock:
            self._closing = True
            pools = (self._shared, self._own)
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)
        for pool in self._retired:
            pool.shutdown(wait=False, cancel_futures=True)


# ----------------------------------------------------------------------------------- the worker process


def encode_request(request: Any) -> dict[str, Any]:
    """A trigger's request as plain values, to send to a worker process."""
    if isinstance(request, func.HttpRequest):
        return {
            "kind": "http",
            "method": request.method,
            "url": request.url,
            "headers": dict(request.headers),
            "params": dict(request.params),
            "route_params": dict(request.route_params),
            "body": request.get_body(),
        }
    if isinstance(request, FunctionQueueMessage):
        return {
            "kind": "queue",
            "id": request.id,
            "body": request.get_body(),
            "dequeue_count": request.dequeue_count,
            "expiration_time": request.expiration_time,
            "insertion_time": request.insertion_time,
            "time_next_visible": request.time_next_visible,
            "pop_receipt": request.pop_receipt,
        }
    if isinstance(request, TimerRequest):
        return {
            "kind": "timer",
            "past_due": request.past_due,
            "schedule_status": request.schedule_status,
            "schedule": request.schedule,
        }
    raise TypeError(f"the worker process cannot carry a {type(request).__name__}")


def decode_request(values: dict[str, Any]) -> Any:
    """The request :func:`encode_request` encoded."""
    values = dict(values)
    kind = values.pop("kind")
    if kind == "http":
        method, url = values.pop("method"), values.pop("url")
        return func.HttpRequest(method, url, **values)
    if kind == "queue":
        return FunctionQueueMessage(**values)  # type: ignore[no-untyped-call]
    return TimerRequest(**values)


def encode_result(result: Any) -> Any:
    """A function's return value as plain values (an ``HttpResponse`` as its parts)."""
    if isinstance(result, func.HttpResponse):
        return {
            "http_response": {
                "body": result.get_body(),
                "status_code": result.status_code,
                "headers": dict(result.headers),
                "mimetype": result.mimetype,
                "charset": result.charset,
            }
        }
    return {"value": result}


def decode_result(values: Any) -> Any:
    if "http_response" in values:
        return func.HttpResponse(**values["http_response"])
    return values["value"]


@dataclass
class _Channel:
    """One worker process and the connection to it."""

    generation: int
    process: subprocess.Popen[bytes]
    connection: Connection
    send_lock: threading.Lock = field(default_factory=threading.Lock)
    ready: threading.Event = field(default_factory=threading.Event)
    closing: bool = False

    def send(self, message: object) -> None:
        with self.send_lock:
            self.connection.send(message)

    def kill(self) -> None:
        self.closing = True
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        with contextlib.suppress(OSError):
            self.connection.close()


class ProcessWorker(Worker):
    """The worker as a child process (:func:`main`) that imports ``app`` (``module:attribute``
    of the FunctionApp) with this process's ``sys.path`` and environment, runs ``init`` (``module:callable``,
    optional) once, and runs the invocations it is sent; killed and replaced on a timeout's restart, replaced
    when it dies. Its output goes to this process's standard error."""

    def __init__(
        self,
        app: str,
        threads: int,
        function_timeout: float | None,
        grace: float = TIMEOUT_GRACE_SECONDS,
        on_fatal: Callable[[], None] | None = None,
        init: str | None = None,
    ) -> None:
        super().__init__(threads, function_timeout, grace, on_fatal)
        self.app = app
        self.init = init
        self._channel: _Channel | None = None

    @property
    def pid(self) -> int | None:
        """The current worker process's id (None while none runs)."""
        channel = self._channel
        return channel.process.pid if channel is not None and channel.ready.is_set() else None

    def start(self) -> None:
        """Start the worker process; :class:`ConfigurationError` if it cannot load the app."""
        try:
            self._channel = self._spawn(self.generation)
        except WorkerLostError as error:
            raise ConfigurationError(f"the worker process of {self.app} did not start: {error}") from error

    def _spawn(self, generation: int) -> _Channel:
        ours, theirs = socket.socketpair()
        command = [sys.executable, "-c", _CHILD_ENTRY, "--fd", str(theirs.fileno()), "--app", self.app]
        command += ["--threads", str(self.threads)]
        if self.init:
            command += ["--init", self.init]
        env = dict(os.environ)  # the app settings as they are now, and this process's import path
        env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        try:
            process = subprocess.Popen(command, pass_fds=(theirs.fileno(),), env=env)
        finally:
            theirs.close()
        channel = _Channel(generation, process, Connection(ours.detach()))
        if not channel.connection.poll(WORKER_START_SECONDS):
            channel.kill()
            raise WorkerLostError(f"the worker process did not start within {WORKER_START_SECONDS:g} s")
        try:
            hello = channel.connection.recv()
        except (EOFError, OSError) as error:
            channel.kill()
            raise WorkerLostError(f"the worker process exited while starting (code {process.poll()})") from error
        if hello[0] != "ready":
            channel.kill()
            raise WorkerLostError(f"the worker process could not load the app: {hello[1]}")
        channel.ready.set()
        threading.Thread(target=self._read, args=(channel,), name=f"worker-channel-{generation}", daemon=True).start()
        log.info("Worker process started and initialized (pid %d, %d threads).", process.pid, self.threads)
        return channel

    def _submit(self, function_name: str, handler: Callable[..., Any], request: Any, shared: bool) -> _Invocation:
        payload = encode_request(request)
        deadline = time.monotonic() + WORKER_START_SECONDS
        with self._lock:
            while True:  # invocations sent while a worker restarts wait for the new one
                if self._closing:
                    raise HostStoppingError("the host is stopping")
                channel = self._channel
                if channel is not None and channel.generation == self.generation and channel.ready.is_set():
                    break
                if not self._lock.wait(timeout=max(0.0, deadline - time.monotonic())):
                    raise WorkerLostError("no language worker is running")
            invocation = self._register(function_name)
        try:
            channel.send(("invoke", invocation.id, function_name, shared, payload))
        except (OSError, ValueError) as error:  # the worker is dying: its reader restarts it
            with self._lock:
                self._pending.pop(invocation.id, None)
            self._fail(invocation, WorkerLostError(f"the worker process is gone ({error})"))
        return invocation

    def _read(self, channel: _Channel) -> None:
        while True:
            try:
                message = channel.connection.recv()
            except (EOFError, OSError):
                break
            if message[0] != "done":
                continue
            _, invocation_id, ok, payload = message
            with self._lock:
                invocation = self._pending.get(invocation_id)
            if invocation is None:
                continue
            if ok:
                self._finish(invocation, decode_result(payload))
            elif payload == HostStoppingError.__name__:
                self._finish(invocation, error=HostStoppingError("the host stopped before the invocation started"))
            else:
                self._finish(invocation, error=FunctionFailedError(payload))
        if channel.closing:
            return
        code = channel.process.wait()
        self._worker_error(channel.generation, f"the worker process {channel.process.pid} exited with code {code}")

    def _replace(self, generation: int) -> None:
        with self._lock:
            old, self._channel = self._channel, None
        if old is not None:
            old.kill()
        for attempt in itertools.count(1):
            try:
                channel = self._spawn(self.generation)
            except WorkerLostError as error:
                log.error("language worker start failed (attempt %d): %s", attempt, error)
                if attempt >= WORKER_ERRORS_THRESHOLD or self._closing:
                    if self._on_fatal is not None:
                        self._on_fatal()
                    return
                time.sleep(1.0)
                continue
            with self._lock:
                self._channel = channel
                self._lock.notify_all()
            return

    def close(self) -> None:
        with self._lock:
            self._closing = True
            channel = self._channel
            self._lock.notify_all()
        if channel is None:
            return
        channel.closing = True
        with contextlib.suppress(OSError, ValueError):
            channel.send(("stop",))
        try:
            channel.process.wait(timeout=CLOSE_SECONDS)
        except subprocess.TimeoutExpired:
            log.warning("the worker process did not stop within %g s: killed", CLOSE_SECONDS)
        channel.kill()
        with self._lock:
            left = list(self._pending.values())
            self._pending.clear()
        for invocation in left:
            invocation.ended.set()
            self._fail(invocation, HostStoppingError("the host stopped"))


# ------------------------------------------------------------------------------- the worker process side


def _serve(connection: Connection, app_spec: str, threads: int, init: str | None) -> None:
    """The worker process: load the app, say ready, run invocations until told to stop or the host goes."""
    from local_host.app_index import index_app, load_app
    from local_host.http_server import invoke

    try:
        index = index_app(load_app(app_spec))
        if init:
            resolve(init)()
    except Exception as error:
        traceback.print_exc()
        connection.send(("failed", f"{type(error).__name__}: {error}"))
        return
    handlers: dict[str, Callable[..., Any]] = {f.name: f.handler for f in index.http}
    handlers |= {f.name: f.handler for f in index.timers}
    handlers |= {f.name: f.handler for f in index.queues}
    shared = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="worker")
    own = ThreadPoolExecutor(max_workers=OWN_LANE_THREADS, thread_name_prefix="function")
    send_lock = threading.Lock()
    tasks: dict[str, Future[None]] = {}

    def send(message: object) -> None:
        with send_lock:
            try:
                connection.send(message)
            except (OSError, ValueError):  # the host is gone
                os._exit(0)

    def run(invocation_id: str, name: str, payload: dict[str, Any]) -> None:
        try:
            result = encode_result(invoke(handlers[name], decode_request(payload)))
        except BaseException as error:
            logging.getLogger("local_host.worker").exception("function=%s invocation %s raised", name, invocation_id)
            send(("done", invocation_id, False, f"{type(error).__name__}: {error}"))
        else:
            try:
                send(("done", invocation_id, True, result))
            except Exception:  # a value that does not pickle: the function's result is not used
                send(("done", invocation_id, True, encode_result(None)))
        finally:
            tasks.pop(invocation_id, None)

    send(("ready", os.getpid()))
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):  # the host is gone: so is its worker, mid-call or not
            os._exit(0)
        if message[0] == "invoke":
            _, invocation_id, name, on_shared, payload = message
            tasks[invocation_id] = (shared if on_shared else own).submit(run, invocation_id, name, payload)
        elif message[0] == "stop":
            break
    waiting = {i: t for i, t in list(tasks.items()) if t.cancel()}
    for invocation_id in waiting:
        send(("done", invocation_id, False, HostStoppingError.__name__))
    shared.shutdown(wait=True)
    own.shutdown(wait=True)
    os._exit(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="local_host.worker", description="the local host's worker process")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--init")
    args = parser.parse_args(argv)
    logging.Formatter.converter = time.gmtime
    from scheduler_core import settings

    logging.basicConfig(
        level=settings.log_level() or logging.INFO,  # the host's console level, passed on (SCHEDULER_LOG_LEVEL)
        format=f"%(asctime)s.%(msecs)03dZ %(levelname)s worker[{os.getpid()}] %(threadName)s %(name)s: %(message)s",
        datefmt="%Y-%m-%dT%H:%M:%S",
    )
    # The Azure SDK's and urllib3's loggers are left as the Functions Python worker leaves them (inheriting
    # INFO): the app quiets them itself (telemetry.quiet_libraries), as it must in Azure.
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the host's to handle: it stops its worker
    _serve(Connection(args.fd), args.app, args.threads, args.init)
