"""Scans that fan out: a scan that finds more due rows than one worker should send dispatches its share and
hands the rest of its shard on as a further scan message (the rows after its last row key), so a burst in
one shard spreads over the scan queue's workers; no row is lost or fired twice however the scans of one
shard overlap or repeat, and rows indexed before the number of shards grew still fire."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from scheduler_core import settings
from scheduler_core.errors import StorageError
from scheduler_core.model import WATCH
from scheduler_core.pipeline.dispatch import SERIAL_ROWS, Dispatcher, ScanReport
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.pipeline.messages import ScanMessage
from tests.support.harness import COLLECTION, START, Deployment, parsed
from tests.support.http_target import HttpTarget
from tests.support.jobs import http_action, job_body

HOURLY = {"frequency": "Hour", "interval": 1}
LATER = START + timedelta(minutes=10)
JOBS = 25
CHUNK = 10
#: A collection that holds every job of these tests.
LARGE = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}}


@pytest.fixture
def one_shard(monkeypatch: pytest.MonkeyPatch, memory_env: settings.Settings) -> Deployment:
    """A deployment whose due index has one shard: every job's row is in shard 0000."""
    monkeypatch.setenv("SCHEDULER_DUE_SHARDS", "1")
    return Deployment.on_memory(settings.load(), collection_body=LARGE)


def chunked(deployment: Deployment, chunk: int = CHUNK, shards: int | None = None) -> Dispatcher:
    """A dispatcher over the deployment's stores that hands the rest of a shard on after ``chunk`` rows."""
    return Dispatcher(
        deployment.storage.stores,
        deployment.storage.executions,
        shards or deployment.settings.due_shards,
        timedelta(seconds=deployment.settings.lookahead_seconds),
        deployment.storage.claims,
        send_scan=deployment.storage.scans.send,
        chunk=chunk,
    )


def hourly_jobs(deployment: Deployment, target: HttpTarget, count: int = JOBS) -> None:
    for i in range(count):
        deployment.put_job(f"j{i:02d}", job_body(LATER, http_action(f"{target.base_url}/j{i:02d}"), HOURLY))


def run_handed_on(deployment: Deployment, dispatcher: Dispatcher) -> list[ScanReport]:
    """Run the scan messages in the scan queue (and those they hand on) until none is left."""
    reports = []
    while scans := deployment.storage.scans.receive():
        for queued in scans:
            reports.append(dispatcher.scan_message(ScanMessage.from_json(queued.text), deployment.clock()))
    return reports


def test_a_shard_with_more_due_rows_than_a_chunk_hands_the_rest_on_and_each_row_fires_once(
    one_shard: Deployment, target: HttpTarget
) -> None:
    hourly_jobs(one_shard, target)
    dispatcher = chunked(one_shard)
    one_shard.clock.set(LATER - timedelta(seconds=30))
    rows = one_shard.occurrence_entries()

    first = dispatcher.scan("0000", one_shard.clock(), tick="t1")

    assert first.fired == CHUNK
    assert first.handed_on == rows[CHUNK - 1].row_key
    [handed] = one_shard.storage.scans.peek()
    assert ScanMessage.from_json(handed.text) == ScanMessage("0000", "t1", after=rows[CHUNK - 1].row_key)
    assert handed.visible_at == one_shard.clock.now  # at once: another worker takes the next rows now
    rest = run_handed_on(one_shard, dispatcher)
    assert [r.fired for r in rest] == [CHUNK, JOBS - 2 * CHUNK]
    sent = Counter(m.job_row for m in parsed(one_shard.queued()))
    assert sent == Counter({f"j{i:02d}": 1 for i in range(JOBS)})  # every row once
    assert {e.due for e in one_shard.occurrence_entries()} == {LATER + timedelta(hours=1)}
    assert len(one_shard.occurrence_entries()) == JOBS and len(one_shard.watch_entries()) == JOBS
    one_shard.clock.set(LATER)
    assert [r.outcome for r in one_shard.deliver()] == [Outcome.SUCCEEDED] * JOBS
    assert sorted(r.path for r in target.received) == [f"/j{i:02d}" for i in range(JOBS)]


def test_scans_of_one_shard_that_overlap_or_repeat_send_each_row_once(
    one_shard: Deployment, target: HttpTarget
) -> None:
    hourly_jobs(one_shard, target)
    dispatcher = chunked(one_shard)
    one_shard.clock.set(LATER - timedelta(seconds=30))
    dispatcher.scan("0000", one_shard.clock())  # rows 1-10, the rest handed on
    [handed] = one_shard.storage.scans.receive()

    tick = dispatcher.scan("0000", one_shard.clock())  # the next tick's scan, before the hand-on ran
    chain = dispatcher.scan_message(ScanMessage.from_json(handed.text), one_shard.clock())
    again = dispatcher.scan_message(ScanMessage.from_json(handed.text), one_shard.clock())  # a redelivery
    rest = run_handed_on(one_shard, dispatcher)

    assert (tick.fired, chain.fired, again.fired, sum(r.fired for r in rest)) == (CHUNK, JOBS - 2 * CHUNK, 0, 0)
    assert Counter(m.job_row for m in parsed(one_shard.queued())) == Counter({f"j{i:02d}": 1 for i in range(JOBS)})


def test_a_hand_on_that_cannot_be_sent_leaves_the_rest_to_the_next_scan(
    one_shard: Deployment, target: HttpTarget
) -> None:
    hourly_jobs(one_shard, target)
    dispatcher = chunked(one_shard)
    one_shard.clock.set(LATER - timedelta(seconds=30))
    one_shard.storage.scans.fail_next("send", StorageError("storage unreachable"))

    report = dispatcher.scan("0000", one_shard.clock())

    assert (report.fired, report.handed_on) == (CHUNK, "")
    assert one_shard.storage.scans.peek() == []
    assert len([e for e in one_shard.occurrence_entries() if e.due == LATER]) == JOBS - CHUNK  # still indexed
    one_shard.clock.advance(20)
    dispatcher.scan("0000", one_shard.clock())
    run_handed_on(one_shard, dispatcher)
    assert Counter(m.job_row for m in parsed(one_shard.queued())) == Counter({f"j{i:02d}": 1 for i in range(JOBS)})


def test_a_dispatcher_without_a_scan_queue_dispatches_every_row_concurrently(
    one_shard: Deployment, target: HttpTarget
) -> None:
    hourly_jobs(one_shard, target)
    assert JOBS > SERIAL_ROWS  # the rows are sent from the dispatcher's pool
    one_shard.clock.set(LATER - timedelta(seconds=30))
    storage = one_shard.storage
    lookahead = timedelta(seconds=one_shard.settings.lookahead_seconds)
    dispatcher = Dispatcher(storage.stores, storage.executions, 1, lookahead, storage.claims, chunk=CHUNK)

    report = dispatcher.scan("0000", one_shard.clock())

    assert (report.fired, report.handed_on) == (JOBS, "")
    assert Counter(m.job_row for m in parsed(one_shard.queued())) == Counter({f"j{i:02d}": 1 for i in range(JOBS)})
    assert len(one_shard.watch_entries()) == JOBS


def test_a_row_that_fails_in_a_concurrent_scan_stays_indexed_and_the_others_fire(
    one_shard: Deployment, target: HttpTarget
) -> None:
    hourly_jobs(one_shard, target)
    one_shard.clock.set(LATER - timedelta(seconds=30))
    one_shard.storage.executions.fail_next("send", StorageError("storage answered 503", 503))

    report = one_shard.dispatcher.scan("0000", one_shard.clock())

    assert report.fired == JOBS - 1
    [left] = [e for e in one_shard.occurrence_entries() if e.due == LATER]
    assert len(one_shard.watch_entries()) == JOBS - 1  # none for the row that failed
    one_shard.dispatcher.scan("0000", one_shard.clock())
    assert Counter(m.job_row for m in parsed(one_shard.queued())) == Counter({f"j{i:02d}": 1 for i in range(JOBS)})
    assert left.job_row in {m.job_row for m in parsed(one_shard.queued())}


def test_rows_indexed_before_the_number_of_shards_grew_still_fire(deployment: Deployment, target: HttpTarget) -> None:
    deployment.service.put_collection(COLLECTION, LARGE)  # room for more jobs than the Standard one
    hourly_jobs(deployment, target, 12)
    shards_before = {e.shard for e in deployment.occurrence_entries()}
    grown = chunked(deployment, shards=2 * deployment.settings.due_shards)
    deployment.clock.set(LATER - timedelta(seconds=30))

    fired = sum(grown.scan(f"{s:04d}", deployment.clock()).fired for s in range(grown.shards))

    assert fired == 12
    assert {e.shard for e in deployment.occurrence_entries()} == shards_before  # each row moves within its shard
    assert all(e.kind == WATCH for e in deployment.watch_entries())


def test_a_scan_message_names_the_rest_of_a_shard_only_when_it_is_one() -> None:
    whole = ScanMessage("0003", "2026-01-01T00:00:00Z")
    assert whole.to_json() == '{"shard":"0003","tick":"2026-01-01T00:00:00Z","v":1}'  # as it always was
    rest = ScanMessage("0003", "2026-01-01T00:00:00Z", after="2026-01-01T00:00:10.000000Z|abc|0000000000000001")
    assert ScanMessage.from_json(rest.to_json()) == rest
    assert ScanMessage.from_json(whole.to_json()) == whole
