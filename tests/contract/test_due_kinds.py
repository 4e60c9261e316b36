"""The due index's typed entries (``model/due.py``) on every adapter: each kind reads back as itself, and
every shape an earlier version stored reads as its kind.

The stored shapes: an occurrence (no message, no kind), a retry parked with its message (no kind: parked
retries were stored before kinds existed), a watch (kind ``watch``, with its message; under the old key
layout, keyed like an occurrence), the tick's heartbeat and shards record, a backfill ledger row and a kind
this version does not know (left alone: ``typed`` gives None)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from scheduler_core.model import (
    DueEntry,
    HeartbeatEntry,
    OccurrenceEntry,
    ParkedEntry,
    ShardsEntry,
    TypedEntry,
    WatchEntry,
    typed,
)
from scheduler_core.storage.keys import due_row_key
from tests.contract.conftest import Backend
from tests.contract.records import JOB, T0, due_entry

KEY = due_row_key(T0, JOB.identity, 3)
MESSAGE = '{"v": 1, "job_row": "j"}'
JOB_COLUMNS = ("0001", KEY, JOB.partition_key, JOB.row_key, 3, T0)

TYPED: list[TypedEntry] = [
    OccurrenceEntry(*JOB_COLUMNS),
    ParkedEntry("0001", KEY + "|retry2main", JOB.partition_key, JOB.row_key, 3, T0, MESSAGE),
    WatchEntry("0001", "watch|" + KEY + "|watch|a", JOB.partition_key, JOB.row_key, 3, T0, MESSAGE, 2, True),
    HeartbeatEntry("health", "dispatch-tick", T0),
    ShardsEntry("health", "shards|0016", T0, 16),
]


def read_back(backend: Backend, entry: DueEntry) -> DueEntry:
    backend.stores.due.put(entry)
    [got] = [row for row in backend.stores.due.due_before(entry.shard, "~") if row.row_key == entry.row_key]
    return got


@pytest.mark.parametrize("entry", TYPED, ids=lambda entry: type(entry).__name__)
def test_each_kind_reads_back_as_itself(backend: Backend, entry: TypedEntry) -> None:
    got = typed(read_back(backend, entry.entry()))
    assert got is not None and type(got) is type(entry)
    if isinstance(got, (OccurrenceEntry, ParkedEntry, WatchEntry)):
        assert got.written_at is not None  # stamped by the store, for the abandoned-write rule
        got = replace(got, written_at=None)
    assert got == entry


def test_the_shapes_earlier_versions_stored_read_as_their_kind(backend: Backend) -> None:
    occurrence = typed(read_back(backend, due_entry(T0, generation=3)))
    assert isinstance(occurrence, OccurrenceEntry) and occurrence.due == T0 and occurrence.generation == 3
    parked = typed(read_back(backend, due_entry(T0 + timedelta(seconds=1), message=MESSAGE, suffix="|retry1main")))
    assert isinstance(parked, ParkedEntry) and parked.message == MESSAGE
    old_watch = due_entry(T0 + timedelta(seconds=2), message=MESSAGE, kind="watch", suffix="|watch|a")  # old keys
    watch = typed(read_back(backend, old_watch))
    assert isinstance(watch, WatchEntry) and (watch.checks, watch.held, watch.message) == (0, False, MESSAGE)
    beat = DueEntry("health", "dispatch-tick", "", "", 0, T0, kind="heartbeat")
    assert typed(read_back(backend, beat)) == HeartbeatEntry("health", "dispatch-tick", T0)


@pytest.mark.parametrize("kind", ["backfill", "backfill-tail", "a-kind-from-a-newer-version"])
def test_kinds_a_scan_does_not_know_are_left_alone(backend: Backend, kind: str) -> None:
    assert typed(read_back(backend, due_entry(T0, message="{}", kind=kind))) is None
