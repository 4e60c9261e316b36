"""Watch looks: the writer of a watch entry sends one delayed scan message per shard and 5-s slot, so a dead
worker's attempt is looked at within a slot of its lease's end instead of at the next minute's tick; watch
entries sort after every occurrence's entry, so a scan never reads them; the tick's scan looks at those whose
look was lost. Simulated time on the memory adapter (the deployment of ``tests/decisions``)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

import pytest

from scheduler_core.errors import StorageError
from scheduler_core.model import WATCH, DueEntry
from scheduler_core.model.claim import CLAIM_LEASE
from scheduler_core.pipeline.dispatch import LOOK_LOST_AFTER
from scheduler_core.pipeline.messages import ExecutionMessage, ScanMessage
from scheduler_core.pipeline.watches import WATCH_GRACE, WATCH_KEYS, WATCH_SLOT
from scheduler_core.storage.keys import SEPARATOR, due_row_key
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import http_action, job_body

LATER = START + timedelta(minutes=10)  # aligned to a minute, so to every slot
HOURLY = {"frequency": "Hour", "interval": 1}


def hourly_jobs(deployment: Deployment, target: HttpTarget, count: int, start: datetime = LATER) -> None:
    for i in range(count):
        deployment.put_job(f"j{i:02d}", job_body(start, http_action(f"{target.base_url}/j{i:02d}"), HOURLY))


def looks(deployment: Deployment) -> list[tuple[ScanMessage, datetime]]:
    """The watch looks in the scan queue (not yet run), with when each shows."""
    return [
        (message, queued.visible_at)
        for queued in deployment.storage.scans.peek()
        if (message := ScanMessage.from_json(queued.text)).watch
    ]


def test_a_scan_sends_one_look_per_shard_and_slot_delayed_to_the_end_of_the_slot_its_watch_entries_fall_due(
    deployment: Deployment, target: HttpTarget
) -> None:
    hourly_jobs(deployment, target, 6)
    deployment.clock.set(LATER - timedelta(seconds=30))
    assert deployment.scan().fired == 6

    watches = deployment.watch_entries()
    assert len(watches) == 6 and {w.due for w in watches} == {LATER + CLAIM_LEASE + WATCH_GRACE}
    slot = LATER + timedelta(seconds=20)  # LATER + 17 s, rounded up to the 5-s slot
    sent = looks(deployment)
    assert Counter((m.shard, visible) for m, visible in sent) == Counter(
        {(w.shard, slot): 1 for w in watches}  # one per shard holding one of them, however many it holds
    )
    assert deployment.scan().fired == 0 and len(looks(deployment)) == len(sent)  # a scan that writes none sends none


def test_a_process_sends_the_look_of_a_shard_and_slot_once_and_a_look_that_cannot_be_sent_is_sent_by_the_next_writer(
    deployment: Deployment, target: HttpTarget
) -> None:
    watches = deployment.dispatcher.watches
    now = LATER
    deployment.clock.set(now)
    entry = DueEntry("0003", f"{WATCH_KEYS}x", "p", "r", 1, now + timedelta(seconds=3), kind=WATCH)
    deployment.storage.scans.fail_next("send", StorageError("storage answered 503", 503))
    assert watches.schedule([entry], now) == 0  # not sent: logged, and not remembered as sent
    assert watches.schedule([entry], now) == 1
    assert watches.schedule([entry], now) == 0  # this process sent that slot's look already
    later = DueEntry("0003", f"{WATCH_KEYS}y", "p", "r", 1, now + timedelta(seconds=5, microseconds=1), kind=WATCH)
    assert watches.schedule([later], now) == 1  # the next slot
    [(first, shown), (second, shown_later)] = looks(deployment)
    assert (first.shard, shown, second.shard, shown_later) == ("0003", now + WATCH_SLOT, "0003", now + 2 * WATCH_SLOT)


def test_watch_entries_sort_after_every_occurrence_so_a_chunked_scan_reads_only_occurrences(
    deployment: Deployment, target: HttpTarget
) -> None:
    hourly_jobs(deployment, target, 4)
    deployment.clock.set(LATER - timedelta(seconds=30))
    deployment.scan()
    [entry] = [w for w in deployment.watch_entries() if w.job_row == "j00"]
    assert entry.row_key.startswith(WATCH_KEYS)
    occurrences = deployment.occurrence_entries()
    assert all(o.row_key < entry.row_key for o in occurrences)
    # A scan's horizon is a due time: it reads the next occurrences, never the watch entries due before it.
    deployment.clock.set(LATER + timedelta(seconds=30))
    read = list(deployment.storage.due.due_before(entry.shard, "9999"))
    assert all(row.kind != WATCH for row in read)


def test_a_watch_entry_written_before_watch_keys_is_still_looked_at_by_a_scan(
    deployment: Deployment, target: HttpTarget
) -> None:
    """Rows of the previous layout (the due time first) are read and looked at by the scans, as before."""
    hourly_jobs(deployment, target, 1)
    deployment.clock.set(LATER - timedelta(seconds=30))
    deployment.scan()
    [entry] = deployment.watch_entries()
    old_key = entry.row_key[len(WATCH_KEYS) :]
    assert old_key.startswith(due_row_key(entry.due, deployment.job("j00").ref.identity, entry.generation))
    assert f"{SEPARATOR}{WATCH}{SEPARATOR}" in old_key
    deployment.storage.due.delete(entry.shard, entry.row_key)
    deployment.storage.due.put(DueEntry(**{**entry.__dict__, "row_key": old_key}))
    deployment.clock.set(entry.due)
    [message] = deployment.take()  # taken by a worker that dies before claiming it
    assert ExecutionMessage.from_json(message.to_json()).job_row == "j00"
    assert deployment.scan().rescued == 1  # looked at as before: unclaimed, sent again
    assert [w.row_key.startswith(WATCH_KEYS) for w in deployment.watch_entries()] == [True]  # in the new layout


def test_the_ticks_scan_looks_at_watch_entries_whose_look_was_lost_but_not_at_those_due_just_now(
    deployment: Deployment, target: HttpTarget
) -> None:
    hourly_jobs(deployment, target, 1)
    deployment.clock.set(LATER - timedelta(seconds=30))
    deployment.scan()
    deployment.storage.scans.receive()  # the looks are lost
    [entry] = deployment.watch_entries()
    deployment.clock.set(LATER)
    deployment.take()  # its message lost on its way to a worker: nobody claims it
    deployment.clock.set(entry.due + LOOK_LOST_AFTER - timedelta(seconds=1))
    assert deployment.scan().rescued == 0  # its look may be running now
    deployment.clock.set(entry.due + LOOK_LOST_AFTER)
    assert deployment.scan().rescued == 1
    assert [m.job_row for m in deployment.take()] == ["j00"]


def test_a_look_reads_only_the_watch_entries_due_by_then_and_fires_nothing(
    deployment: Deployment, target: HttpTarget
) -> None:
    hourly_jobs(deployment, target, 3)
    deployment.clock.set(LATER - timedelta(seconds=30))
    deployment.scan()
    before = deployment.occurrence_entries()
    deployment.clock.set(LATER + timedelta(hours=1))  # every next occurrence overdue: only a scan fires them
    deployment.take()  # taken by workers that die before claiming: the watches find them unclaimed
    report = deployment.look_now()
    assert (report.fired, report.rescued) == (0, 3) and deployment.occurrence_entries() == before
    assert [ExecutionMessage.from_json(q.text).occurrence_time for q in deployment.queued()] == [LATER] * 3


@pytest.mark.parametrize("late", [timedelta(seconds=30), timedelta(minutes=10)])
def test_the_watch_of_a_run_sent_late_is_due_a_lease_after_it_was_sent_not_after_its_occurrence(
    deployment: Deployment, target: HttpTarget, late: timedelta
) -> None:
    """A coalesced run after downtime is sent at once: its watch looks at it a lease after that, when a worker
    has had its chance to claim it (dated from its occurrence, the scan's own look would send it twice)."""
    hourly_jobs(deployment, target, 1)
    deployment.clock.set(LATER + late)
    report = deployment.scan()
    assert report.fired == 1 and report.rescued == 0
    [entry] = deployment.watch_entries()
    assert entry.due == LATER + late + CLAIM_LEASE + WATCH_GRACE
    assert len(deployment.queued()) == 1
