"""The daily cleanup as messages on Azurite: the timer sends one message per subscription, a subscription's
message one per collection, a collection's message cleans a range of its jobs and hands the rest on; every
job is covered by one message, and a message killed half-way, delivered twice or racing a client's DELETE
gives each removed job's slot under maxJobCount back once."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import triggers
from scheduler_core.adapters.azure.clients import queue_client
from scheduler_core.adapters.azure.tables import MAX_BATCH
from scheduler_core.model import ActionName, CollectionState, HistoryEntry, HistoryStatus
from scheduler_core.pipeline import cleanup as cleanup_module
from scheduler_core.pipeline.cleanup import (
    FINISHED_JOB_RETENTION,
    SPREAD,
    CleanupMessage,
    CleanupReport,
    cleanup,
    spread_seconds,
    work,
)
from scheduler_core.ports import Stores
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef, history_row_key
from tests.e2e.conftest import ROOT
from tests.support.harness import Deployment, near_now
from tests.support.http_target import HttpTarget

#: How long a collection without ``historyRetention`` keeps history (the default rule's 60 days).
HISTORY_RETENTION = timedelta(days=60)

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

HOURLY = {"frequency": "Hour", "interval": 1}


@pytest.fixture
def fanout(storage_env: Settings) -> Deployment:
    """The pipeline over Azurite with a cleanup queue of this test's own, in simulated time from just past a
    whole minute of the real clock."""
    settings = replace(storage_env, cleanup_queue=f"cleanup-{uuid.uuid4().hex[:8]}")
    return near_now(settings, azurite=True)


def put_collection(pipeline: Deployment, ref: CollectionRef, sku: str = "Standard") -> None:
    pipeline.services.service.put_collection(ref, {"location": "westus", "properties": {"sku": {"name": sku}}})


def put_job(pipeline: Deployment, ref: JobRef, url: str, *, once: bool = False) -> None:
    """A one-shot job due in 20 s (``once``), or an hourly one starting in an hour."""
    action = {"type": "Http", "request": {"uri": url, "method": "GET"}}
    if once:
        properties: dict[str, Any] = {"startTime": format_instant(pipeline.clock.now + timedelta(seconds=20))}
    else:
        properties = {"startTime": format_instant(pipeline.clock.now + timedelta(hours=1)), "recurrence": HOURLY}
    pipeline.services.service.put_job(ref, {"properties": {**properties, "action": action}})


def add_old_history(pipeline: Deployment, ref: JobRef, recent: int = 2, old: int = 3) -> None:
    """``recent`` history rows of the last days and ``old`` ones older than the 60 days kept."""
    now = pipeline.clock.now
    starts = [now - timedelta(days=i) for i in range(recent)]
    starts += [now - HISTORY_RETENTION - timedelta(days=i + 1) for i in range(old)]
    history: Any = pipeline.services.stores.history  # the Azure adapter's TableHistory
    operations = []
    for i, start in enumerate(starts):
        key = f"{ref.name}{i}"
        row = history_row_key(start, key)
        record = HistoryEntry(key, row, start, start, start, ActionName.MAIN, HistoryStatus.COMPLETED, "", 0, 0)
        operations.append(("upsert", history.entity(ref, record)))
    for begin in range(0, len(operations), MAX_BATCH):
        history.table.submit_transaction(operations[begin : begin + MAX_BATCH])


def history_count(pipeline: Deployment, ref: JobRef) -> int:
    return len(list(pipeline.services.stores.history.list(ref)))


def counter(pipeline: Deployment, ref: CollectionRef) -> int | None:
    record = pipeline.services.stores.collections.get(ref)
    assert record is not None
    return record.job_count


@dataclass
class Jobs:
    """A collection of ``finished`` one-shot jobs that have run and ``live`` hourly ones with old history."""

    collection: CollectionRef
    finished: list[JobRef]
    live: list[JobRef]


def seed(pipeline: Deployment, target: HttpTarget, collection: CollectionRef, finished: int, live: int) -> Jobs:
    """The jobs, named so that finished and live ones alternate by row key."""
    if collection != pipeline.collection:
        put_collection(pipeline, collection)
    done: list[JobRef] = []
    kept: list[JobRef] = []
    for i in range(finished + live):
        ref = JobRef(collection, f"job{i:02d}")
        (done if len(kept) >= live or (i % 2 == 0 and len(done) < finished) else kept).append(ref)
    for ref in done:
        put_job(pipeline, ref, target.base_url, once=True)
    for ref in kept:
        put_job(pipeline, ref, target.base_url)
        add_old_history(pipeline, ref)
    pipeline.run_until(pipeline.clock.now + timedelta(seconds=30))
    service = pipeline.services.service
    assert {service.get_job(ref).state for ref in done} <= {"Completed"}
    service.slots.forget(collection)  # slots reserved ahead go back: the counter is the job count
    assert counter(pipeline, collection) == finished + live
    return Jobs(collection, done, kept)


def after_retention(pipeline: Deployment) -> datetime:
    return pipeline.clock.now + FINISHED_JOB_RETENTION + timedelta(hours=1)


def assert_cleaned(pipeline: Deployment, jobs: Jobs) -> None:
    """Every finished job gone with its history, every live one trimmed to its recent rows, the counter
    exactly the jobs left (each slot given back once)."""
    names = {job.ref.name for job in pipeline.services.service.list_jobs(jobs.collection)}
    assert names == {ref.name for ref in jobs.live}
    for ref in jobs.finished:
        assert history_count(pipeline, ref) == 0
    for ref in jobs.live:
        assert history_count(pipeline, ref) == 0  # 61 days on, even the recent rows are past 60 days
    assert counter(pipeline, jobs.collection) == len(jobs.live)


Send = Callable[[str, int], None]
Step = Callable[[Stores, CleanupMessage, Send], CleanupReport]


def discard(text: str, visibility: int = 0) -> None:
    """A send whose messages nobody runs (the test runs the one message it cares about)."""


def run_messages(
    stores: Stores,
    first: list[str],
    step: Step,
) -> tuple[CleanupReport, list[CleanupMessage]]:
    """Run ``first`` and every message they send, in order (the queue's at-least-once delivery is the
    caller's ``step``): the reports added up and every message run."""
    pending: deque[str] = deque(first)
    total, ran = CleanupReport(), []

    def send(text: str, visibility: int = 0) -> None:
        pending.append(text)

    while pending:
        message = CleanupMessage.from_json(pending.popleft())
        ran.append(message)
        total.add(step(stores, message, send))
    return total, ran


def collection_message(jobs: Jobs, run: datetime) -> str:
    ref = jobs.collection
    return CleanupMessage(format_instant(run), ref.subscription, ref.resource_group, ref.name).to_json()


# -------------------------------------------------------------------------------------------------- the tests


def test_the_timer_sends_a_message_per_subscription_and_those_one_per_collection(
    fanout: Deployment, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real cleanup queue on Azurite and the triggers the function app calls."""
    refs = [
        fanout.collection,
        CollectionRef("sub1", "rg", "second"),
        CollectionRef("sub2", "rg-a", "one"),
        CollectionRef("sub2", "rg-b", "two"),
        CollectionRef("sub3", "rg", "only"),
    ]
    seeded = [seed(fanout, target, ref, finished=1, live=1) for ref in refs]
    fanout.clock.set(after_retention(fanout))
    queue = queue_client(fanout.services.settings, fanout.services.settings.cleanup_queue)

    assert triggers.on_cleanup() == 3  # the timer: one message per subscription, nothing else
    first = list(queue.receive_messages(max_messages=32, visibility_timeout=60))
    messages = [CleanupMessage.from_json(m.content) for m in first]
    assert sorted(m.subscription for m in messages) == ["sub1", "sub2", "sub3"]
    assert {(m.name, m.after, m.until) for m in messages} == {("", "", "")}
    for ref in refs:  # the timer did none of the work
        assert len(fanout.services.service.list_jobs(ref)) == 2
    for message in first:  # each sends its collections' messages, visible later over the cleanup's spread
        triggers.on_cleanup_message(message.content.encode())
        queue.delete_message(message)
    assert queue.get_queue_properties().approximate_message_count == len(refs)
    assert list(queue.receive_messages(max_messages=32)) == []  # none visible yet
    for ref in refs:
        assert len(fanout.services.service.list_jobs(ref)) == 2
    queue.clear_messages()

    monkeypatch.setattr(cleanup_module, "SPREAD", timedelta(0))  # now: every message visible at once
    triggers.on_cleanup()
    ran: list[CleanupMessage] = []
    while batch := list(queue.receive_messages(max_messages=32, visibility_timeout=60)):
        for message in batch:  # as the Functions host: run, then delete
            triggers.on_cleanup_message(message.content.encode())
            ran.append(CleanupMessage.from_json(message.content))
            queue.delete_message(message)
    per_collection = sorted((m.subscription, m.resource_group, m.name) for m in ran if m.name)
    assert per_collection == sorted((r.subscription, r.resource_group, r.name) for r in refs)
    assert len(ran) == 3 + len(refs)
    for jobs in seeded:
        assert_cleaned(fanout, jobs)


def test_a_subscription_with_many_collections_hands_the_rest_on(fanout: Deployment, target: HttpTarget) -> None:
    refs = [fanout.collection] + [CollectionRef("sub1", "rg", f"c{i}") for i in range(6)]
    for ref in refs[1:]:
        put_collection(fanout, ref)
    run = fanout.clock.now
    stores = fanout.services.stores
    report, ran = run_messages(
        stores,
        [CleanupMessage(format_instant(run), "sub1").to_json()],
        lambda s, m, send: work(s, m, send, collections_per_message=3),
    )
    subscription_messages = [m for m in ran if not m.name]
    keys = sorted(ref.row_key for ref in refs)  # c0..c5, jc
    assert [m.after for m in subscription_messages] == ["", keys[2], keys[5]]  # 3 + 3 + 1 collections
    assert sorted(m.name for m in ran if m.name) == sorted(r.name for r in refs)  # each collection once
    assert report.messages_sent == 2 + len(refs)


def test_a_collection_split_into_messages_covers_every_job_once(fanout: Deployment, target: HttpTarget) -> None:
    jobs = seed(fanout, target, fanout.collection, finished=5, live=6)
    run = after_retention(fanout)
    report, ran = run_messages(
        fanout.services.stores,
        [collection_message(jobs, run)],
        lambda s, m, send: work(s, m, send, fanout.services.executor.claims, jobs_per_message=4),
    )
    assert len(ran) == 3  # 11 jobs, 4 per message: the first hands on (job03, end], that one (job07, end]
    assert [(m.after, m.until) for m in ran] == [("", ""), ("job03", ""), ("job07", "")]
    assert report.jobs_seen == 11 and report.jobs_removed == 5
    assert report.history_removed == 6 * 5
    assert_cleaned(fanout, jobs)


def test_a_message_out_of_time_hands_the_rest_of_its_range_on(fanout: Deployment, target: HttpTarget) -> None:
    jobs = seed(fanout, target, fanout.collection, finished=4, live=5)
    ticks = itertools.count()  # a clock that runs 1 s per reading: 3 jobs fit a budget of 2.5 s

    def step(stores: Stores, message: CleanupMessage, send: Send) -> CleanupReport:
        return work(stores, message, send, jobs_per_message=6, budget=2.5, monotonic=lambda: float(next(ticks)))

    report, ran = run_messages(fanout.services.stores, [collection_message(jobs, after_retention(fanout))], step)
    ranges = [(m.after, m.until) for m in ran]
    # the first message hands (job05, end] on at once, cleans 3 of its 6 and hands (job02, job05] on
    assert ranges == [("", ""), ("job05", ""), ("job02", "job05")]
    assert report.jobs_seen == 9 and report.jobs_removed == 4
    assert_cleaned(fanout, jobs)


class WorkerKilled(Exception):
    """What the fault below raises: the worker running the message died there."""


@dataclass
class KillAt:
    """FAULT DOUBLE of a worker dying: wraps a store and raises :class:`WorkerKilled` at the ``at``-th call
    of ``method`` (1-based), once; every other call goes to the real store."""

    store: Any
    method: str
    at: int
    calls: int = 0
    fired: bool = False

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.store, name)
        if name != self.method:
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls == self.at and not self.fired:
                self.fired = True
                raise WorkerKilled(f"killed at call {self.at} of {self.method}")
            return real(*args, **kwargs)

        return call


def redelivering(stores_for_attempt: Callable[[int], Stores], **options: Any) -> Step:
    """A step that delivers a message again when its worker was killed (as the queue does after the
    visibility timeout), with the stores of each attempt (attempt 0: the first delivery)."""
    attempts = itertools.count()

    def step(stores: Stores, message: CleanupMessage, send: Send) -> CleanupReport:
        total = CleanupReport()
        while True:
            try:
                total.add(work(stores_for_attempt(next(attempts)), message, send, **options))
                return total
            except WorkerKilled:
                continue  # its work so far stays done; the message comes back whole

    return step


def test_a_worker_killed_half_way_and_its_message_redelivered_give_each_slot_back_once(
    fanout: Deployment, target: HttpTarget
) -> None:
    jobs = seed(fanout, target, fanout.collection, finished=5, live=5)
    stores = fanout.services.stores
    # Killed at the 4th history trim: after 4 finished jobs of the first 8 were removed and given back.
    fault = KillAt(stores.history, "trim", 4)
    faulty = replace(stores, history=fault)
    claims = fanout.services.executor.claims
    step = redelivering(lambda attempt: faulty if attempt == 0 else stores, claims=claims, jobs_per_message=8)
    report, ran = run_messages(stores, [collection_message(jobs, after_retention(fanout))], step)
    assert fault.fired
    assert [(m.after, m.until) for m in ran] == [("", ""), ("job07", "")]
    # The killed delivery handed (job07, end] on before it died and removed job00, 02, 04, 06 (its report
    # died with it); the redelivery no longer sees them, so it takes the rest whole and removes job08.
    assert report.jobs_removed == 1
    assert_cleaned(fanout, jobs)

    again, _ = run_messages(stores, [collection_message(jobs, after_retention(fanout))], step)
    assert (again.jobs_removed, again.history_removed) == (0, 0)  # a message delivered once more
    assert counter(fanout, jobs.collection) == len(jobs.live)


def test_a_kill_between_a_removal_and_its_give_back_leaves_the_counter_high_never_low(
    fanout: Deployment, target: HttpTarget
) -> None:
    """The one window the cleanup cannot close without a transaction across tables: the job row is gone and
    the worker dies before the counter moves. The slot stays taken (the counter's repair counts the jobs
    when the collection is full); it is never given back twice."""
    jobs = seed(fanout, target, fanout.collection, finished=3, live=2)
    stores = fanout.services.stores
    fault = KillAt(stores.history, "delete_all", 2)  # remove_job: job row deleted, then its history: killed
    faulty = replace(stores, history=fault)
    step = redelivering(lambda attempt: faulty if attempt == 0 else stores)
    report, _ = run_messages(stores, [collection_message(jobs, after_retention(fanout))], step)
    assert fault.fired and report.jobs_removed == 1  # job04; job00 and job02 went with the killed delivery
    names = {job.ref.name for job in fanout.services.service.list_jobs(jobs.collection)}
    assert names == {ref.name for ref in jobs.live}
    assert counter(fanout, jobs.collection) == len(jobs.live) + 1


def test_two_workers_on_one_message_give_each_slot_back_once(fanout: Deployment, target: HttpTarget) -> None:
    jobs = seed(fanout, target, fanout.collection, finished=6, live=3)
    stores, claims = fanout.services.stores, fanout.services.executor.claims
    message = CleanupMessage.from_json(collection_message(jobs, after_retention(fanout)))
    reports: list[CleanupReport] = []
    barrier = threading.Barrier(2)

    def worker() -> None:
        barrier.wait()
        reports.append(work(stores, message, discard, claims))

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(reports) == 2
    assert sum(r.jobs_removed for r in reports) == 6
    assert_cleaned(fanout, jobs)


def test_a_client_delete_racing_a_message_gives_the_slot_back_once(fanout: Deployment, target: HttpTarget) -> None:
    jobs = seed(fanout, target, fanout.collection, finished=3, live=1)
    stores = fanout.services.stores
    raced = jobs.finished[1]

    @dataclass
    class DeleteAfterList:
        """The jobs store, with a client's DELETE of ``raced`` landing right after the cleanup listed the jobs."""

        store: Any

        def __getattr__(self, name: str) -> Any:
            return getattr(self.store, name)

        def list(self, collection: CollectionRef) -> Iterator[Any]:
            listed = self.store.list(collection)
            fanout.services.service.delete_job(raced)  # gives its slot back itself
            return iter(listed)

    racing = replace(stores, jobs=DeleteAfterList(stores.jobs))  # type: ignore[arg-type]
    report = work(racing, CleanupMessage.from_json(collection_message(jobs, after_retention(fanout))), discard)
    assert report.jobs_removed == 2  # the third was the client's to give back
    assert_cleaned(fanout, jobs)


def test_an_abandoned_deletion_is_finished_across_messages(fanout: Deployment, target: HttpTarget) -> None:
    jobs = seed(fanout, target, fanout.collection, finished=2, live=4)
    stores = fanout.services.stores
    existing = stores.collections.get(jobs.collection)
    assert existing is not None
    stores.collections.save(replace(existing, state=CollectionState.DELETED), create=False)  # stopped half-way
    ticks = itertools.count()

    def step(stores: Stores, message: CleanupMessage, send: Send) -> CleanupReport:
        return work(stores, message, send, budget=1.5, monotonic=lambda: float(next(ticks)))

    report, ran = run_messages(stores, [collection_message(jobs, after_retention(fanout))], step)
    assert len(ran) == 3 and report.jobs_seen == 6 and report.collections_removed == 1
    assert stores.collections.get(jobs.collection) is None
    assert list(stores.jobs.list(jobs.collection)) == []
    for ref in jobs.finished + jobs.live:
        assert history_count(fanout, ref) == 0


def test_the_whole_pass_still_runs_in_one_call(fanout: Deployment, target: HttpTarget) -> None:
    """``cleanup()``: the timer's messages and all they send, in the calling thread, small messages too."""
    jobs = seed(fanout, target, fanout.collection, finished=3, live=4)
    other = seed(fanout, target, CollectionRef("sub9", "rg", "other"), finished=2, live=1)
    report = cleanup(
        fanout.services.stores, after_retention(fanout), fanout.services.executor.claims, jobs_per_message=2
    )
    assert (report.jobs_seen, report.jobs_removed) == (10, 5)
    assert_cleaned(fanout, jobs)
    assert_cleaned(fanout, other)


def test_collection_messages_are_spread_evenly_over_the_window() -> None:
    """Where each collection's message lands in :data:`SPREAD` (20 hours): stable, and even enough that the
    cleanup's load on the account is steady (each fifth of the window gets a fifth of 5,000 collections,
    give or take)."""
    refs = [CollectionRef(f"sub{i % 7}", "rg", f"c{i}") for i in range(5000)]
    seconds = [spread_seconds(ref) for ref in refs]
    window = SPREAD.total_seconds()
    assert window == 20 * 3600
    assert all(0 <= s < window for s in seconds)
    assert seconds == [spread_seconds(ref) for ref in refs]  # the same for every delivery
    fifths = [sum(1 for s in seconds if f * window / 5 <= s < (f + 1) * window / 5) for f in range(5)]
    assert all(900 <= n <= 1100 for n in fifths), fifths
    assert spread_seconds(refs[0], timedelta(0)) == 0


def test_the_local_host_runs_the_cleanup_from_the_timer_to_the_last_collection(
    fanout: Deployment, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """function_app's cleanup_collections on the local host (the Functions host's queue semantics, 16 at a
    time) takes every message the timer's message fans out to, until every collection is clean."""
    import function_app

    refs = [fanout.collection, CollectionRef("sub1", "rg", "b"), CollectionRef("sub2", "rg", "c")]
    seeded = [seed(fanout, target, ref, finished=2, live=2) for ref in refs]
    fanout.clock.set(after_retention(fanout))
    settings = fanout.services.settings
    monkeypatch.setenv("SCHEDULER_CLEANUP_QUEUE", settings.cleanup_queue)  # the binding's %SCHEDULER_CLEANUP_QUEUE%
    monkeypatch.setattr(cleanup_module, "SPREAD", timedelta(0))
    queue = queue_client(settings, settings.cleanup_queue)
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"queue"})):
        assert triggers.on_cleanup() == 2
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            left = sum(len(fanout.services.service.list_jobs(ref)) for ref in refs)
            if left == 2 * len(refs) and queue.get_queue_properties().approximate_message_count == 0:
                break
            time.sleep(0.2)
    for jobs in seeded:
        assert_cleaned(fanout, jobs)
    assert queue.get_queue_properties().approximate_message_count == 0
    poison = queue_client(settings, settings.cleanup_queue + "-poison")
    assert poison.get_queue_properties().approximate_message_count == 0
