"""Scans and cleanup messages bound their own run time, well under the Functions host's ``functionTimeout``
(10 minutes, whose expiry restarts the worker process and fails every invocation on it): a scan starts rows
for :data:`~scheduler_core.pipeline.dispatch.SCAN_BUDGET` seconds at most and a cleanup message works for
:data:`~scheduler_core.pipeline.cleanup.MESSAGE_BUDGET` at most; what they did not start is handed on (or,
for a scan that already handed the rest of its shard on, left to the next tick's scan), and every row or
collection is still covered once. Time here is a fake monotonic clock that each storage send moves on (a
storage account slowed to 10 s a send)."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest

from scheduler_core import settings
from scheduler_core.model import WATCH
from scheduler_core.pipeline import cleanup
from scheduler_core.pipeline.cleanup import SEND_THREADS, CleanupMessage, work
from scheduler_core.pipeline.dispatch import SCAN_BUDGET, SERIAL_ROWS, Dispatcher
from scheduler_core.pipeline.messages import ScanMessage
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import CollectionRef
from tests.support.harness import COLLECTION, START, Deployment, parsed
from tests.support.jobs import http_action, job_body

HOURLY = {"frequency": "Hour", "interval": 1}
LATER = START + timedelta(minutes=10)
LARGE = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}}


class SlowStorage:
    """A fake monotonic clock (seconds) that each send moves on by ``per_send``: a slow storage account."""

    def __init__(self, per_send: float) -> None:
        self.per_send = per_send
        self.now = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def sent(self) -> None:
        with self._lock:
            self.now += self.per_send


@pytest.fixture
def one_shard(monkeypatch: pytest.MonkeyPatch, memory_env: settings.Settings) -> Deployment:
    """A deployment whose due index has one shard (every job's row is in shard 0000)."""
    monkeypatch.setenv("SCHEDULER_DUE_SHARDS", "1")
    return Deployment.on_memory(settings.load(), collection_body=LARGE)


def slow_dispatcher(deployment: Deployment, slow: SlowStorage, chunk: int = 200) -> Dispatcher:
    """The deployment's dispatcher as production wires it (a scan queue to hand on to), over a slow queue."""
    storage = deployment.storage

    def send(text: str, visibility: int) -> None:
        storage.executions.send(text, visibility)
        slow.sent()

    lookahead = timedelta(seconds=deployment.settings.lookahead_seconds)
    return Dispatcher(
        storage.stores, send, 1, lookahead, storage.claims, send_scan=storage.scans.send, chunk=chunk, monotonic=slow
    )


def hourly_jobs(deployment: Deployment, count: int) -> None:
    for i in range(count):
        deployment.put_job(f"j{i:02d}", job_body(LATER, http_action(f"http://target.example/j{i:02d}"), HOURLY))


def every_job_sent_once(deployment: Deployment, count: int) -> bool:
    sent = Counter(m.job_row for m in parsed(deployment.queued()))
    return sent == Counter({f"j{i:02d}": 1 for i in range(count)})


def test_a_scan_starts_no_row_after_its_budget_and_hands_the_rest_on(one_shard: Deployment) -> None:
    hourly_jobs(one_shard, SERIAL_ROWS)  # one after the other: the order is the rows'
    slow = SlowStorage(per_send=SCAN_BUDGET / 3 + 1)  # the 4th row would start past the budget
    dispatcher = slow_dispatcher(one_shard, slow)
    one_shard.clock.set(LATER - timedelta(seconds=30))
    rows = one_shard.occurrence_entries()

    report = dispatcher.scan("0000", one_shard.clock(), tick="t1")

    assert (report.fired, report.deferred) == (3, SERIAL_ROWS - 3)
    assert slow() <= SCAN_BUDGET + slow.per_send  # the budget, and the one call in flight when it ran out
    [handed] = one_shard.storage.scans.receive()
    assert ScanMessage.from_json(handed.text) == ScanMessage("0000", "t1", after=rows[2].row_key)
    assert [e.row_key for e in one_shard.occurrence_entries() if e.due == LATER] == [r.row_key for r in rows[3:]]
    rest = dispatcher.scan_message(ScanMessage.from_json(handed.text), one_shard.clock())  # a fresh budget
    assert rest.fired == 3
    while handed_on := one_shard.storage.scans.receive():
        for queued in handed_on:
            dispatcher.scan_message(ScanMessage.from_json(queued.text), one_shard.clock())
    assert every_job_sent_once(one_shard, SERIAL_ROWS)
    assert len(one_shard.watch_entries()) == SERIAL_ROWS


def test_a_scan_out_of_time_after_handing_its_shard_on_leaves_its_rows_to_the_next_tick(
    one_shard: Deployment,
) -> None:
    """Its range is bounded by the message it handed on: a further message for its unstarted rows would read
    that message's rows too. The next tick's scan (a minute later at most) sends them."""
    hourly_jobs(one_shard, 12)
    slow = SlowStorage(per_send=SCAN_BUDGET / 3 + 1)
    dispatcher = slow_dispatcher(one_shard, slow, chunk=SERIAL_ROWS)
    one_shard.clock.set(LATER - timedelta(seconds=30))

    report = dispatcher.scan("0000", one_shard.clock(), tick="t1")

    assert (report.fired, report.deferred) == (3, SERIAL_ROWS - 3)
    [handed] = one_shard.storage.scans.receive()  # the rest of the shard only (rows 9-12)
    assert ScanMessage.from_json(handed.text).after == report.handed_on
    dispatcher.scan_message(ScanMessage.from_json(handed.text), one_shard.clock())
    while handed_on := one_shard.storage.scans.receive():
        for queued in handed_on:
            dispatcher.scan_message(ScanMessage.from_json(queued.text), one_shard.clock())
    assert len(parsed(one_shard.queued())) < 12
    one_shard.clock.advance(20)
    slow.per_send = 0  # storage answers again
    dispatcher.scan("0000", one_shard.clock(), tick="t2")  # the next tick
    assert every_job_sent_once(one_shard, 12)


def test_a_concurrent_scan_out_of_time_sends_every_row_once_across_its_hand_ons(one_shard: Deployment) -> None:
    hourly_jobs(one_shard, 40)  # more than SERIAL_ROWS: sent from the dispatcher's pool
    slow = SlowStorage(per_send=2.0)  # 16 sends at once: the budget runs out half-way
    dispatcher = slow_dispatcher(one_shard, slow)
    one_shard.clock.set(LATER - timedelta(seconds=30))

    first = dispatcher.scan("0000", one_shard.clock(), tick="t1")
    scans = [first]
    while handed_on := one_shard.storage.scans.receive():
        for queued in handed_on:
            scans.append(dispatcher.scan_message(ScanMessage.from_json(queued.text), one_shard.clock()))

    assert 0 < first.fired < 40 and first.deferred == 40 - first.fired
    assert sum(s.fired for s in scans) == 40 and len(scans) > 1
    assert every_job_sent_once(one_shard, 40)
    assert sorted(e.job_row for e in one_shard.watch_entries() if e.kind == WATCH) == [f"j{i:02d}" for i in range(40)]


def test_a_subscriptions_cleanup_message_out_of_time_hands_the_rest_of_its_collections_on(
    one_shard: Deployment,
) -> None:
    refs = [CollectionRef("sub1", "rg1", f"c{i:02d}") for i in range(3 * SEND_THREADS - 2)]
    for ref in refs:
        one_shard.service.put_collection(ref, LARGE)
    everyone = sorted([*refs, COLLECTION], key=lambda ref: ref.row_key)
    slow = SlowStorage(per_send=cleanup.MESSAGE_BUDGET / SEND_THREADS / 1.5)  # a batch of sends: 2/3 of the budget
    sent: list[CleanupMessage] = []

    def send(text: str, visibility: int = 0) -> None:
        sent.append(CleanupMessage.from_json(text))
        slow.sent()

    run = format_instant(one_shard.clock.now)
    report = work(one_shard.storage.stores, CleanupMessage(run, "sub1"), send, monotonic=slow)

    assert report.messages_sent == 2 * SEND_THREADS + 1  # two batches (the second started in time), then out
    [rest] = [m for m in sent if not m.name]
    keys = [ref.row_key for ref in everyone]
    assert (rest.after, rest.until) == (keys[2 * SEND_THREADS - 1], keys[-1])
    assert slow() <= cleanup.MESSAGE_BUDGET + slow.per_send * SEND_THREADS  # the budget and a batch in flight
    more: list[CleanupMessage] = []

    def send_more(text: str, visibility: int = 0) -> None:
        more.append(CleanupMessage.from_json(text))

    work(one_shard.storage.stores, rest, send_more)
    names = [m.name for m in sent + more if m.name]
    assert sorted(names) == sorted(ref.name for ref in everyone)  # every collection once
