"""Timer triggers as singletons: blob leases in ``AzureWebJobsStorage``, as the Functions host takes them.

In Azure a timer trigger runs on one instance of the app at a time. Its listener is a singleton listener
(``[Singleton(Mode = SingletonMode.Listener)]`` on ``TimerListener``, azure-webjobs-sdk-extensions
``src/WebJobs.Extensions/Extensions/Timers/Listener/TimerListener.cs``), and the WebJobs SDK makes it so:

* ``SingletonListener.StartAsync`` (azure-webjobs-sdk ``src/Microsoft.Azure.WebJobs.Host/Singleton/
  SingletonListener.cs``) tries once to take the lock ``<hostId>/Host.Functions.<function>.Listener``. The
  instance that gets it starts the timer's listener (so ``RunOnStartup`` and a past-due run happen there only,
  when that listener starts). An instance that does not get it starts nothing and tries again every
  ``listenerLockRecoveryPollingInterval``; when it gets the lock, it starts the listener then.
* The lock is a lease on the blob ``locks/<lockId>`` of the container ``azure-webjobs-hosts``
  (``BlobLeaseDistributedLockManager``, ``src/Microsoft.Azure.WebJobs.Host.Storage/Singleton/``), of
  ``listenerLockPeriod`` seconds. It is free when the blob is missing (created then) or its lease is
  available, expired or broken; a 409 means another instance holds it.
* ``SingletonManager`` renews the lease every half period; a renewal that fails with a 5xx is tried again
  sooner (half the last interval, at least 1 s: ``LinearSpeedupStrategy``); any other failure (the lease was
  lost, or storage could not be reached at all) is thrown to the host's exception handler, and the Functions
  host's (``WebScriptHostExceptionHandler``, azure-functions-host) logs "An unhandled exception has occurred.
  Host is shutting down." and stops the application.
* Stopping the listener gracefully stops the timer first, then releases the lease (404 and 409 ignored), so
  another instance takes over at its next poll. A process that dies leaves the lease to expire: the timer is
  down for at most ``listenerLockPeriod`` + ``listenerLockRecoveryPollingInterval``.

The local host does all of the above against the Azurite (or account) of ``AzureWebJobsStorage``
(:class:`BlobLeaseLocks`, :class:`ListenerLock`). For a lost lease it stops the host's triggers (the host's
stop event is set: timers and queue pollers stop, :meth:`LocalHost.wait` returns, so ``python -m local_host``
exits); its HTTP server serves until the host is stopped. The schedule monitor's status lives in the same
container, ``timers/<hostId>/Host.Functions.<function>/status`` (:class:`BlobScheduleStatusStore`, as
``StorageScheduleMonitor``), so the instance that takes a timer over sees the run its predecessor missed.

The host id names the app: instances with one host id share their timers' locks. It is the setting
``AzureFunctionsJobHost__id`` when set, else (Core Tools' default, ``ScriptHostIdProvider``) the machine's
name and a stable hash of where the app runs from: for the local host, the directory that holds its state
(``<root>/.run/host`` by default, so one id per project checkout, as Core Tools' one per app folder).
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from azure.core.exceptions import AzureError, HttpResponseError, ResourceExistsError, ResourceNotFoundError

from local_host.hostjson import SingletonOptions
from local_host.schedule_status import ScheduleStatus
from scheduler_core.errors import ConfigurationError

if TYPE_CHECKING:  # azure-storage-blob is imported by the hosts that take leases only
    from azure.storage.blob import BlobClient, BlobLeaseClient, ContainerClient

log = logging.getLogger("local_host")

#: The container of the host's own blobs (``HostContainerNames.Hosts``): locks and timer statuses.
HOSTS_CONTAINER = "azure-webjobs-hosts"
#: The type the Functions host generates to hold an app's functions: a function's full name is
#: ``Host.Functions.<name>``, which names its listener lock and its timer status.
FUNCTIONS_TYPE = "Host.Functions"
#: The setting of an explicit host id (``AzureFunctionsJobHost:id`` in the host's configuration).
HOST_ID_SETTING = "AzureFunctionsJobHost__id"
#: Host ids are at most 32 characters (``ScriptConstants.MaximumHostIdLength``).
MAX_HOST_ID_LENGTH = 32
_HOST_ID = re.compile(r"^[a-z0-9](?:[a-z0-9]|-(?!-))*$")
#: Bounds of each storage call of a lock (the SDK's own default is 300 s): a renewal must finish well within
#: the lease period, or the lease can expire while the call hangs.
CONNECT_TIMEOUT_SECONDS = 5
READ_TIMEOUT_SECONDS = 10
#: The shortest wait between two renewals after 5xx failures (``SingletonManager.MinimumLeaseRenewalInterval``).
MIN_RENEWAL_INTERVAL = 1.0


def check_host_id(host_id: str) -> str:
    """``host_id`` if the Functions host accepts it (1 to 32 lowercase letters, digits and single dashes, not
    starting or ending with a dash); else :class:`ConfigurationError`."""
    if not 0 < len(host_id) <= MAX_HOST_ID_LENGTH or not _HOST_ID.match(host_id) or host_id.endswith("-"):
        raise ConfigurationError(
            f"host id {host_id!r}: 1 to 32 lowercase letters, digits and dashes (no leading, trailing or double dash)"
        )
    return host_id


def default_host_id(state_dir: Path) -> str:
    """Core Tools' host id for an app run from ``state_dir``'s project: ``<machine>-<hash>``, lowercase, 32
    characters at most. The machine name is shortened so that the hash always fits (Core Tools cuts the whole
    id at 32 characters, which on a long machine name can cut the hash that tells two folders apart)."""
    machine = "".join(c for c in socket.gethostname() if c.isascii() and c.isalnum()).lower() or "localhost"
    digest = str(zlib.crc32(str(state_dir.resolve()).encode("utf-8")))
    return f"{machine[: MAX_HOST_ID_LENGTH - len(digest) - 1]}-{digest}"


def resolve_host_id(host_id: str | None, state_dir: Path | None, environ: Mapping[str, str]) -> str | None:
    """The host id of a host: ``host_id`` if given, else the setting :data:`HOST_ID_SETTING`, else Core Tools'
    default for a host that keeps state in ``state_dir``; None for a host with neither (in-process test
    hosts: no other instance shares its timers, which then run unconditionally, as before)."""
    if host_id is not None:
        return check_host_id(host_id)
    configured = environ.get(HOST_ID_SETTING)
    if configured:
        return check_host_id(configured)
    return default_host_id(state_dir) if state_dir is not None else None


def listener_lock_id(host_id: str, function_name: str) -> str:
    """The lock of a timer function's listener: ``<hostId>/Host.Functions.<name>.Listener``
    (``SingletonManager.FormatLockId`` + ``SingletonListener``)."""
    return f"{host_id}/{FUNCTIONS_TYPE}.{function_name}.Listener"


def lock_blob_name(lock_id: str) -> str:
    """The blob leased for ``lock_id``: ``locks/<lockId>`` (``BlobLeaseDistributedLockManager.GetLockPath``)."""
    return f"locks/{lock_id}"


def status_blob_name(host_id: str, function_name: str) -> str:
    """The timer status blob: ``timers/<hostId>/Host.Functions.<name>/status`` (``StorageScheduleMonitor``)."""
    return f"timers/{host_id}/{FUNCTIONS_TYPE}.{function_name}/status"


def hosts_container(connection_string: str) -> ContainerClient:
    """The ``azure-webjobs-hosts`` container of the account of ``connection_string``, each call bounded."""
    from azure.storage.blob import BlobServiceClient, LinearRetry

    service = BlobServiceClient.from_connection_string(
        connection_string,
        connection_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
        retry_policy=LinearRetry(backoff=1, retry_total=2, random_jitter_range=1),
    )
    return service.get_container_client(HOSTS_CONTAINER)


def next_renewal_delay(period: float, last: float, renewed: bool) -> float:
    """Seconds until the next renewal of a lease of ``period`` seconds, after a wait of ``last`` ended with a
    renewal that ``renewed`` or failed with a 5xx: half the period after a success; after a failure half the
    last wait, at least :data:`MIN_RENEWAL_INTERVAL` (``LinearSpeedupStrategy`` with divisor 2), so that a
    lease under a passing storage fault is tried several times before it can expire."""
    if renewed:
        return period / 2
    return max(last / 2, MIN_RENEWAL_INTERVAL)


class LockLostError(Exception):
    """A renewal failed otherwise than with a 5xx: the lease is lost (or storage is out of reach)."""


class BlobLeaseLocks:
    """Locks as blob leases in one container: ``BlobLeaseDistributedLockManager``'s acquire, renew, release."""

    def __init__(self, container: ContainerClient) -> None:
        self.container = container

    def try_lock(self, lock_id: str, period: float) -> BlobLeaseClient | None:
        """The lease of ``lock_id`` for ``period`` seconds, or None when another holder has it. The blob's
        lease state is read first (a lease held elsewhere is not asked for: no 409 to log); a missing blob is
        created (and the container with it), then leased."""
        from azure.storage.blob import BlobLeaseClient

        blob = self.container.get_blob_client(lock_blob_name(lock_id))
        try:
            state = blob.get_blob_properties().lease.state
        except ResourceNotFoundError:
            self._create(blob)
        else:
            if state not in ("available", "expired", "broken"):
                return None
        try:
            lease = BlobLeaseClient(blob)
            lease.acquire(lease_duration=round(period))
        except HttpResponseError as exc:
            if exc.status_code == 409:
                return None
            raise
        return lease

    def _create(self, blob: BlobClient) -> None:
        """An empty lock blob (an existing or leased one is left alone), creating the container if need be."""
        for attempt in (1, 2):
            try:
                blob.upload_blob(b"", overwrite=False)
                return
            except ResourceExistsError:
                return
            except HttpResponseError as exc:
                if exc.status_code == 412:  # leased by another holder meanwhile
                    return
                if exc.status_code != 404 or attempt == 2:
                    raise
            with contextlib.suppress(ResourceExistsError):
                self.container.create_container()

    @staticmethod
    def renew(lease: BlobLeaseClient) -> bool:
        """Renew ``lease``: True when renewed, False after a 5xx (try again sooner); :class:`LockLostError`
        for any other failure, as ``SingletonLockHandle.RenewAsync`` throws then."""
        try:
            lease.renew()
        except HttpResponseError as exc:
            if exc.status_code is not None and 500 <= exc.status_code < 600:
                log.warning("singleton lock renewal failed with %s; trying again sooner", exc.status_code)
                return False
            code = getattr(exc, "error_code", None) or exc.reason
            raise LockLostError(f"{exc.status_code}: {code}") from exc
        except AzureError as exc:
            raise LockLostError(f"storage unreachable: {exc.__class__.__name__}: {exc.message}") from exc
        return True

    @staticmethod
    def release(lease: BlobLeaseClient) -> bool:
        """Release ``lease``: True when released or nothing was left to release (a missing blob, or a lease now
        held by another: 404, 409); False, logged, when storage failed (the lease then expires on its own)."""
        try:
            lease.release()
        except HttpResponseError as exc:
            if exc.status_code in (404, 409):
                return True
            log.warning("singleton lock not released (%s); it expires on its own", exc.status_code)
            return False
        except AzureError as exc:
            log.warning("singleton lock not released (%s); it expires on its own", exc.__class__.__name__)
            return False
        return True


class ListenerLock:
    """One listener's lock: taken with :meth:`try_acquire`, renewed in a thread of its own every half period
    while held, given back with :meth:`release` (or left to expire with :meth:`abandon`, as by a crash).

    A renewal that fails otherwise than with a 5xx calls ``on_lost`` once (the host stops): the rule that an
    instance which may no longer hold the lock does not go on as if it did."""

    def __init__(
        self, locks: BlobLeaseLocks, lock_id: str, options: SingletonOptions, on_lost: Callable[[], None]
    ) -> None:
        self.locks = locks
        self.lock_id = lock_id
        self.options = options
        self._on_lost = on_lost
        self._lease: BlobLeaseClient | None = None
        self._renewing: threading.Event | None = None
        self._renewer: threading.Thread | None = None

    @property
    def held(self) -> bool:
        """Whether this instance holds the lease (as far as it knows: until a renewal says otherwise)."""
        return self._lease is not None

    @property
    def recovery_interval(self) -> float | None:
        """How often an instance without the lock tries again (None: never)."""
        return self.options.listener_lock_recovery_polling_interval

    def try_acquire(self) -> bool:
        """Take the lock if it is free, and start renewing it; False when another instance holds it."""
        lease = self.locks.try_lock(self.lock_id, self.options.listener_lock_period)
        if lease is None:
            log.debug("unable to acquire singleton lock (%s)", self.lock_id)
            return False
        self._lease = lease
        self._renewing = threading.Event()
        self._renewer = threading.Thread(
            target=self._renew, args=(lease, self._renewing), name=f"lease-{self.lock_id}", daemon=True
        )
        self._renewer.start()
        log.info("singleton lock acquired (%s)", self.lock_id)
        return True

    def _renew(self, lease: BlobLeaseClient, stopped: threading.Event) -> None:
        period = self.options.listener_lock_period
        delay = next_renewal_delay(period, period, renewed=True)
        while not stopped.wait(delay):
            try:
                renewed = self.locks.renew(lease)
            except LockLostError as exc:
                if stopped.is_set():  # released or abandoned meanwhile: nothing is lost
                    return
                log.error(
                    "singleton lock renewal failed for blob '%s' (%s). An unhandled exception has occurred. "
                    "Host is shutting down.",
                    lock_blob_name(self.lock_id),
                    exc,
                )
                self._on_lost()
                return
            delay = next_renewal_delay(period, delay, renewed)

    def _stop_renewing(self) -> BlobLeaseClient | None:
        lease, self._lease = self._lease, None
        if self._renewing is not None:
            self._renewing.set()
        return lease

    def release(self) -> None:
        """Stop renewing and give the lease back, so that another instance takes the lock at its next poll."""
        lease = self._stop_renewing()
        if self._renewer is not None and self._renewer is not threading.current_thread():
            self._renewer.join(timeout=READ_TIMEOUT_SECONDS * 3)
        if lease is not None and self.locks.release(lease):
            log.info("singleton lock released (%s)", self.lock_id)

    def abandon(self) -> None:
        """Stop renewing without giving the lease back, as a host that crashed: it expires on its own."""
        self._stop_renewing()


class BlobScheduleStatusStore:
    """Timer schedule statuses as blobs ``timers/<hostId>/Host.Functions.<name>/status`` (as the Functions
    host's ``StorageScheduleMonitor``): shared by every instance of the app, so the instance that takes a
    timer over reads the run the previous holder missed. Reads and writes are best effort, as there: a read
    that fails is logged and treated as no status, a write that fails is logged."""

    def __init__(self, container: ContainerClient, host_id: str) -> None:
        self.container = container
        self.host_id = host_id

    def _blob(self, function_name: str) -> BlobClient:
        return self.container.get_blob_client(status_blob_name(self.host_id, function_name))

    def load(self, function_name: str) -> ScheduleStatus | None:
        """The stored status, or None when there is none (or it cannot be read: treated as new)."""
        try:
            text = self._blob(function_name).download_blob().readall()
            return ScheduleStatus.from_json(text.decode("utf-8"))
        except ResourceNotFoundError:
            return None
        except (AzureError, ValueError, KeyError, TypeError) as exc:
            log.warning("timer %s: unreadable schedule status (%s); starting afresh", function_name, exc)
            return None

    def save(self, function_name: str, status: ScheduleStatus) -> None:
        """Write the status (the container is created when missing); a failure is logged, not raised."""
        blob = self._blob(function_name)
        try:
            try:
                blob.upload_blob(status.to_json().encode("utf-8"), overwrite=True)
            except ResourceNotFoundError:
                with contextlib.suppress(ResourceExistsError):
                    self.container.create_container()
                blob.upload_blob(status.to_json().encode("utf-8"), overwrite=True)
        except AzureError as exc:
            log.error("timer %s: failed to update the timer trigger status (%s)", function_name, exc)
