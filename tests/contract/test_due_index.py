"""The due index (:class:`scheduler_core.ports.DueIndex`) on every adapter."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from scheduler_core.model import WATCH, DueEntry
from scheduler_core.model.job import first_generation
from scheduler_core.storage.keys import JobRef, format_due
from tests.contract.conftest import Backend
from tests.contract.records import COLLECTION, T0, due_entry

#: A bound after every formatted due time.
END = "~"


def keys(entries: list[DueEntry]) -> list[str]:
    return [entry.row_key for entry in entries]


def scan(backend: Backend, shard: str = "0001", before: str = END) -> list[DueEntry]:
    return list(backend.stores.due.due_before(shard, before))


def test_an_entry_reads_back_whole_stamped_with_when_it_was_written(backend: Backend) -> None:
    entry = due_entry(T0, message='{"v": 1}', kind=WATCH, checks=2, held=True, shards=48)
    before = backend.clock()
    backend.stores.due.put(entry)
    after = backend.clock()
    [got] = scan(backend)
    assert replace(got, written_at=None) == entry
    assert backend.stamped_between(got.written_at, before, after)
    plain = due_entry(T0 + timedelta(seconds=1))
    backend.stores.due.put(plain)
    assert replace(scan(backend)[1], written_at=None) == plain  # message None, kind "", checks 0, not held


def test_put_is_an_upsert_stamped_anew(backend: Backend) -> None:
    backend.stores.due.put(due_entry(T0, checks=1, held=True, shards=32))
    before = backend.clock()
    backend.stores.due.put(due_entry(T0, checks=2, message="m"))
    after = backend.clock()
    [got] = scan(backend)
    assert (got.checks, got.message, got.held, got.shards) == (2, "m", False, 0)
    assert backend.stamped_between(got.written_at, before, after)


def test_due_before_gives_one_shards_entries_strictly_before_the_bound_oldest_first(backend: Backend) -> None:
    dues = [T0 + timedelta(seconds=s) for s in (30, 0, 10, 20, 40)]
    for index, due in enumerate(dues):
        backend.stores.due.put(due_entry(due, job=JobRef(COLLECTION, f"job-{index}")))
    backend.stores.due.put(due_entry(T0, "0002"))
    bound = format_due(T0 + timedelta(seconds=30))
    got = scan(backend, before=bound)
    assert [entry.due for entry in got] == [T0, T0 + timedelta(seconds=10), T0 + timedelta(seconds=20)]
    assert keys(got) == sorted(keys(got))
    everything = scan(backend)
    assert [entry.due for entry in everything] == sorted(dues)
    assert [entry.shard for entry in everything] == ["0001"] * 5
    assert scan(backend, before=format_due(T0)) == []  # the bound itself is excluded
    assert scan(backend, "0003") == []


def test_advance_moves_entries_and_writes_puts(backend: Backend) -> None:
    old = due_entry(T0)
    gone = due_entry(T0, job=JobRef(COLLECTION, "ended"))
    kept = due_entry(T0 + timedelta(hours=2), job=JobRef(COLLECTION, "other"))
    for entry in (old, gone, kept):
        backend.stores.due.put(entry)
    new = due_entry(T0 + timedelta(hours=1), generation=1)
    watch = due_entry(T0 + timedelta(minutes=5), suffix="|watch", kind=WATCH, message="m")
    backend.stores.due.advance("0001", [(old.row_key, new), (gone.row_key, None)], [watch])
    got = scan(backend)
    assert sorted(keys(got)) == sorted([new.row_key, watch.row_key, kept.row_key])
    assert [replace(entry, written_at=None) for entry in got] == [watch, new, kept]


def test_advance_over_an_entry_another_scan_moved_writes_the_new_one(backend: Backend) -> None:
    old = due_entry(T0)
    backend.stores.due.put(old)
    first = due_entry(T0 + timedelta(hours=1))
    backend.stores.due.advance("0001", [(old.row_key, first)])
    again = due_entry(T0 + timedelta(hours=1), suffix="|again")
    backend.stores.due.advance("0001", [(old.row_key, again), ("no-such-key", None)])
    assert keys(scan(backend)) == [first.row_key, again.row_key]


def test_advance_handles_more_entries_than_one_batch_holds(backend: Backend) -> None:
    olds = [due_entry(T0, job=JobRef(COLLECTION, f"job-{i:03d}")) for i in range(120)]
    for entry in olds:
        backend.stores.due.put(entry)
    news = [
        due_entry(T0 + timedelta(hours=1), job=JobRef(COLLECTION, f"job-{i:03d}"), generation=2) for i in range(120)
    ]
    extra = due_entry(T0, suffix="|watch", kind=WATCH)
    backend.stores.due.advance("0001", [(o.row_key, n) for o, n in zip(olds, news, strict=True)], [extra])
    assert sorted(keys(scan(backend))) == sorted([*keys(news), extra.row_key])


def test_advance_with_nothing_to_do_is_fine(backend: Backend) -> None:
    backend.stores.due.advance("0001", [])
    assert scan(backend) == []


def test_delete_removes_one_entry_and_a_missing_one_is_fine(backend: Backend) -> None:
    first, second = due_entry(T0), due_entry(T0, suffix="|2")
    backend.stores.due.put(first)
    backend.stores.due.put(second)
    backend.stores.due.delete("0001", first.row_key)
    backend.stores.due.delete("0001", first.row_key)
    backend.stores.due.delete("0009", second.row_key)  # another shard: not this entry
    assert keys(scan(backend)) == [second.row_key]


def test_delete_many_removes_entries_of_several_shards_missing_ones_fine(backend: Backend) -> None:
    entries = [due_entry(T0, shard, suffix=f"|{i}") for shard in ("0001", "0002") for i in range(3)]
    for entry in entries:
        backend.stores.due.put(entry)
    doomed = [(e.shard, e.row_key) for e in entries if not e.row_key.endswith("|1")]
    backend.stores.due.delete_many([*doomed, ("0001", "absent"), ("0007", "absent")])
    assert [e.row_key[-2:] for e in scan(backend, "0001")] == ["|1"]
    assert [e.row_key[-2:] for e in scan(backend, "0002")] == ["|1"]
    backend.stores.due.delete_many([])


def test_an_entry_of_a_generation_beyond_32_bits_reads_back_whole_also_when_moved(backend: Backend) -> None:
    generation = first_generation(T0)  # a job's first generation counts microseconds (about 2**51)
    entry = due_entry(T0, generation=generation)
    backend.stores.due.put(entry)
    [got] = scan(backend)
    assert replace(got, written_at=None) == entry and got.generation == generation
    moved = due_entry(T0 + timedelta(hours=1), generation=generation)
    backend.stores.due.advance("0001", [(entry.row_key, moved)])
    assert [(e.row_key, e.generation) for e in scan(backend)] == [(moved.row_key, generation)]


def test_due_before_reads_a_range_after_a_row_key_and_at_most_a_limit(backend: Backend) -> None:
    dues = [T0 + timedelta(seconds=s) for s in range(7)]
    for index, due in enumerate(dues):
        backend.stores.due.put(due_entry(due, job=JobRef(COLLECTION, f"job-{index}")))
    every = scan(backend)
    first = list(backend.stores.due.due_before("0001", END, limit=3))
    assert keys(first) == keys(every)[:3]
    rest = list(backend.stores.due.due_before("0001", END, after=first[-1].row_key, limit=3))
    assert keys(rest) == keys(every)[3:6]
    bound = format_due(dues[5])
    assert keys(list(backend.stores.due.due_before("0001", bound, after=rest[0].row_key))) == keys(every)[4:5]
    assert list(backend.stores.due.due_before("0001", END, after=every[-1].row_key)) == []
