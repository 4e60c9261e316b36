"""Daily cleanup: history kept by the collection's rule (its ``historyRetention``; by default 60 days or the last
1,000 executions per job, whichever is less), jobs
removed 60 days after they completed or faulted, execution claims removed after 8 days, and collection
deletions that stopped half-way finished.

It has the shape of the dispatch, so that no call runs long and scale-out parallelises it:

- the timer (:func:`start`) only reads which subscriptions have collections and sends one
  :class:`CleanupMessage` per subscription to the cleanup queue;
- a subscription's message (:func:`work`) sends one message per collection of the subscription, at most
  :data:`COLLECTIONS_PER_MESSAGE` of them, handing the rest on as a further message (the collections after
  the last one it took, by row key) before it sends its own, and the rest of its own range (``after``,
  ``until``] when it runs past :data:`MESSAGE_BUDGET`; each collection's message becomes visible at
  its own second of :data:`SPREAD`, so the cleanup's load on the storage account stays steady;
- a collection's message cleans the jobs of its range of row keys (``after``, ``until``]: one holding more
  than :data:`JOBS_PER_MESSAGE` first hands the jobs past its first :data:`JOBS_PER_MESSAGE` on as a further
  message, so that other workers take them meanwhile, and one that runs past :data:`MESSAGE_BUDGET` hands
  the rest of its own range on too. The ranges never overlap, so every job is covered by one message.

Every rule compares with the instant of the run (``run``, the timer's now, carried by every message), so a
message delivered late or twice decides no differently from the first delivery. Each step is idempotent:
trimming twice removes nothing the second time, and a finished job's slot under ``maxJobCount`` is given
back only by the call whose guarded delete removed its row (``Stores.remove_job``), so a redelivered
message, two workers on one message and a client's DELETE racing the cleanup give it back once. The slot
is given back right after that delete: a worker killed between the two loses that one slot (the counter
stays one too high, never too low), which the counter's repair corrects when the collection is full
(``job_slots.py``).

:func:`cleanup` runs a whole pass in the calling thread, messages and hand-ons included (tests, tools).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta

from scheduler_core.errors import ValidationError
from scheduler_core.job_slots import subtract_jobs
from scheduler_core.model import Job, JobCollection
from scheduler_core.model.history import DEFAULT_RETENTION, HistoryRetention
from scheduler_core.ports import Claims, Stores
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import CollectionRef

log = logging.getLogger("scheduler_core.cleanup")

FINISHED_JOB_RETENTION = timedelta(days=60)
#: A collection left marked ``Deleted`` this long (its deletion stopped half-way) is deleted by the cleanup.
ABANDONED_DELETION = timedelta(hours=1)
#: Claims guard against duplicate deliveries of an execution message, which a queue may hold for at most
#: 7 days; a day more and no delivery of their message can still come.
CLAIM_RETENTION = timedelta(days=8)

#: Collections a subscription's message sends messages for; it hands the rest on.
COLLECTIONS_PER_MESSAGE = 500
#: Jobs one collection message cleans at most (a few seconds at two or three requests each); a collection
#: holds at most 1,000 jobs (P20Premium), so its jobs go out as up to 4 messages that run in parallel.
JOBS_PER_MESSAGE = 250
#: How long (seconds) one message works before it hands the rest of its range on: it starts no job (a
#: collection's message) and no batch of sends (a subscription's) after it. A message then ends within this
#: and the storage calls in flight (each bounded by the storage clients' timeouts and retries): well under the
#: Functions host's ``functionTimeout`` (10 minutes), whose expiry would restart the worker process.
MESSAGE_BUDGET = 60.0
#: Messages the timer and a subscription's message have in flight at once.
SEND_THREADS = 8
#: A collection's message becomes visible at a second of this window after its subscription's message ran
#: (a stable hash of the collection picks it), so that the cleanup of many collections adds a small steady
#: load to the storage account instead of as much as the scale controller's instances can send at once: ten
#: million jobs at about 6.6 requests each over 20 hours are about 920 requests/s, under 5% of an account
#: (docs/capacity.md). Under a day, so that a collection's cleanups do not overlap; queue messages may be
#: delayed by at most 7 days.
SPREAD = timedelta(hours=20)

#: The ``kind`` of a cleanup message (the queue holds nothing else; the field makes a stray message plain).
KIND = "cleanup"
VERSION = 1

Send = Callable[[str, int], None]  # (message text, visibility in whole seconds): a MessageSender's send


@dataclass(frozen=True)
class CleanupMessage:
    """Clean one subscription's collections (``name`` empty) or one collection's jobs in the row-key range
    (``after``, ``until``] (empty: unbounded); for a subscription, ``after`` and ``until`` are collection row
    keys. ``run`` is the instant every retention rule compares with."""

    run: str
    subscription: str
    resource_group: str = ""
    name: str = ""
    after: str = ""
    until: str = ""
    kind: str = KIND
    v: int = VERSION

    @property
    def collection(self) -> CollectionRef | None:
        return CollectionRef(self.subscription, self.resource_group, self.name) if self.name else None

    @property
    def run_time(self) -> datetime:
        return datetime.fromisoformat(self.run.replace("Z", "+00:00"))

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v != ""}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> CleanupMessage:
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("kind") != KIND or data.get("v") != VERSION:
                raise ValidationError("message", f"not a cleanup message of version {VERSION}")

            def value(key: str) -> str:
                return str(data.get(key) or "")

            message = cls(
                run=str(data["run"]),
                subscription=value("subscription"),
                resource_group=value("resource_group"),
                name=value("name"),
                after=value("after"),
                until=value("until"),
            )
            message.run_time  # noqa: B018 - checks the instant
            return message
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValidationError("message", f"not a cleanup message: {exc}") from None


@dataclass
class CleanupReport:
    jobs_removed: int = 0
    collections_removed: int = 0
    history_removed: int = 0
    claims_removed: int = 0
    jobs_seen: int = 0  # jobs this call covered (trimmed, removed or found gone)
    messages_sent: int = 0  # messages sent: per subscription or collection, and the rests handed on

    def add(self, other: CleanupReport) -> None:
        self.jobs_removed += other.jobs_removed
        self.collections_removed += other.collections_removed
        self.history_removed += other.history_removed
        self.claims_removed += other.claims_removed
        self.jobs_seen += other.jobs_seen
        self.messages_sent += other.messages_sent


def _send_all(send: Send, messages: list[tuple[CleanupMessage, int]]) -> None:
    """Send ``messages`` (each with its visibility in seconds), up to :data:`SEND_THREADS` at once (each send
    is a round trip)."""
    if len(messages) <= 1:
        for message, visibility in messages:
            send(message.to_json(), visibility)
        return
    with ThreadPoolExecutor(min(SEND_THREADS, len(messages)), thread_name_prefix="cleanup-send") as pool:
        for future in [pool.submit(send, message.to_json(), visibility) for message, visibility in messages]:
            future.result()


def spread_seconds(ref: CollectionRef, spread: timedelta | None = None) -> int:
    """When a collection's message becomes visible, in seconds after it is sent: a stable hash of the
    collection over :data:`SPREAD` (0 when the spread is 0)."""
    window = int((SPREAD if spread is None else spread).total_seconds())
    if window <= 0:
        return 0
    digest = hashlib.sha256(ref.identity.encode()).digest()
    return int.from_bytes(digest[:8], "big") % window


def start(stores: Stores, now: datetime, send: Send) -> int:
    """The timer: one message per subscription that has collections. Returns how many were sent."""
    run = format_instant(now)
    messages = [(CleanupMessage(run, subscription), 0) for subscription in stores.collections.all_partitions()]
    _send_all(send, messages)
    log.info("cleanup: %d subscription messages sent for the run of %s", len(messages), run)
    return len(messages)


def work(
    stores: Stores,
    message: CleanupMessage,
    send: Send,
    claims: Claims | None = None,
    *,
    jobs_per_message: int = JOBS_PER_MESSAGE,
    collections_per_message: int = COLLECTIONS_PER_MESSAGE,
    budget: float = MESSAGE_BUDGET,
    monotonic: Callable[[], float] = time.monotonic,
) -> CleanupReport:
    """One cleanup message (the cleanup queue's function). ``claims``: the execution claims to trim too."""
    ref = message.collection
    deadline = monotonic() + budget
    if ref is None:
        return _subscription(stores, message, send, collections_per_message, deadline, monotonic)
    report = CleanupReport()
    collection = stores.collections.get(ref)
    if collection is None:
        return report  # deleted meanwhile, its jobs with it
    if collection.deleting:
        _finish_deletion(stores, collection, message, send, claims, report, deadline, monotonic)
    else:
        retention = collection.history_retention or DEFAULT_RETENTION
        _clean_jobs(stores, message, retention, send, claims, report, deadline, monotonic, jobs_per_message)
    return report


def _subscription(
    stores: Stores,
    message: CleanupMessage,
    send: Send,
    limit: int,
    deadline: float,
    monotonic: Callable[[], float],
) -> CleanupReport:
    """Send a message per collection of the subscription in (``message.after``, ``message.until``] (up to
    ``limit``; the rest handed on first), :data:`SEND_THREADS` at a time; past ``deadline`` the collections not
    yet sent for are handed on as the range after the last one sent."""
    report = CleanupReport()
    collections = sorted(
        (c for c in stores.collections.list(message.subscription) if _in_range(c.ref.row_key, message)),
        key=lambda c: c.ref.row_key,
    )
    if not collections:
        return report
    mine = collections[: max(1, limit)]
    if len(collections) > len(mine):  # the rest first, so that another worker sends them meanwhile
        send(replace(message, after=mine[-1].ref.row_key).to_json(), 0)
        report.messages_sent += 1
    run = message.run
    refs = [c.ref for c in mine]
    for start in range(0, len(refs), SEND_THREADS):
        if start and monotonic() > deadline:  # out of time: the rest of this message's range goes on
            send(replace(message, after=refs[start - 1].row_key, until=refs[-1].row_key).to_json(), 0)
            report.messages_sent += 1
            return report
        batch = refs[start : start + SEND_THREADS]
        _send_all(
            send, [(CleanupMessage(run, r.subscription, r.resource_group, r.name), spread_seconds(r)) for r in batch]
        )
        report.messages_sent += len(batch)
    return report


def _in_range(key: str, message: CleanupMessage) -> bool:
    return key > message.after and (not message.until or key <= message.until)


def _remove(stores: Stores, claims: Claims | None, job: Job, *, any_version: bool = False) -> bool:
    """Remove the job's rows; True when this call removed the job row itself (only then may its slot under
    maxJobCount be given back: a client's DELETE or another delivery racing with it gives it back instead)."""
    removed = stores.remove_job(job, any_version=any_version)
    if removed and claims is not None:
        claims.delete_all(job.ref.identity)
    return removed


def _clean_jobs(
    stores: Stores,
    message: CleanupMessage,
    retention: HistoryRetention,
    send: Send,
    claims: Claims | None,
    report: CleanupReport,
    deadline: float,
    monotonic: Callable[[], float],
    jobs_per_message: int,
) -> None:
    ref = message.collection
    assert ref is not None
    now = message.run_time
    jobs = sorted((j for j in stores.jobs.list(ref) if _in_range(j.ref.row_key, message)), key=lambda j: j.ref.row_key)
    mine = jobs[: max(1, jobs_per_message)]
    if len(jobs) > len(mine):  # the rest of the range first, so that another worker cleans it meanwhile
        send(replace(message, after=mine[-1].ref.row_key).to_json(), 0)
        report.messages_sent += 1
        message = replace(message, until=mine[-1].ref.row_key)
    for i, job in enumerate(mine):
        if i and monotonic() > deadline:  # out of time: the rest of this message's range goes on
            send(replace(message, after=mine[i - 1].ref.row_key).to_json(), 0)
            report.messages_sent += 1
            return
        report.jobs_seen += 1
        if job.ended_at is not None and now - job.ended_at > FINISHED_JOB_RETENTION:
            if _remove(stores, claims, job):
                report.jobs_removed += 1
                # Given back at once, by the one call that removed the row (see the module docstring).
                if not subtract_jobs(stores.collections, ref, 1):
                    log.warning("job collection %s: job counter not decremented (repaired when it is full)", ref)
            continue
        if claims is not None:
            report.claims_removed += claims.delete_older_than(job.ref.identity, now - CLAIM_RETENTION)
        report.history_removed += stores.history.trim(job.ref, retention, now)


def _finish_deletion(
    stores: Stores,
    collection: JobCollection,
    message: CleanupMessage,
    send: Send,
    claims: Claims | None,
    report: CleanupReport,
    deadline: float,
    monotonic: Callable[[], float],
) -> None:
    """A collection marked deleted an hour ago: its jobs, then its row (no slot is given back: the counter
    goes with the row). A message out of time sends itself on: the jobs it removed are gone."""
    now = message.run_time
    if collection.modified_at is not None and now - collection.modified_at <= ABANDONED_DELETION:
        return  # its deletion may still be running
    for i, job in enumerate(stores.jobs.list(collection.ref)):
        if i and monotonic() > deadline:
            send(message.to_json(), 0)
            report.messages_sent += 1
            return
        report.jobs_seen += 1
        _remove(stores, claims, job, any_version=True)
    stores.collections.delete(collection.ref)
    report.collections_removed += 1


def cleanup(
    stores: Stores,
    now: datetime,
    claims: Claims | None = None,
    *,
    jobs_per_message: int = JOBS_PER_MESSAGE,
    collections_per_message: int = COLLECTIONS_PER_MESSAGE,
) -> CleanupReport:
    """A whole pass in this thread: :func:`start`, then every message it and its messages send, in order."""
    pending: deque[str] = deque()

    def send(text: str, visibility: int = 0) -> None:
        pending.append(text)

    report = CleanupReport(messages_sent=start(stores, now, send))
    while pending:
        report.add(
            work(
                stores,
                CleanupMessage.from_json(pending.popleft()),
                send,
                claims,
                jobs_per_message=jobs_per_message,
                collections_per_message=collections_per_message,
            )
        )
    log.info(
        "cleanup: %d finished jobs removed, %d history rows removed, %d claims removed, %d deletions finished",
        report.jobs_removed,
        report.history_removed,
        report.claims_removed,
        report.collections_removed,
    )
    return report
