"""History (:class:`scheduler_core.ports.History`) on every adapter."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from scheduler_core.model import ActionName, HistoryStatus
from scheduler_core.model.history import HistoryRetention, Keep, Trigger
from scheduler_core.model.retry import Duration
from scheduler_core.ports import Stores
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.contract.records import COLLECTION, JOB, T0, history_entry

OTHER = JobRef(COLLECTION, "other")
#: The age limit of the rules :func:`trim` builds.
AGE = timedelta(days=60)


def trim(stores: Stores, job: JobRef, older_than: datetime, keep: int) -> int:
    """Trim by the default rule's shape: entries that started before ``older_than`` and all but the newest
    ``keep`` (of both kinds together) go."""
    each = Keep(Duration(AGE), keep)
    return stores.history.trim(job, HistoryRetention(each, each, total=keep), older_than + AGE)


def test_an_entry_reads_back_whole(stores: Stores) -> None:
    entry = history_entry(T0, action_name=ActionName.ERROR, status=HistoryStatus.FAILED, retry_count=2)
    stores.history.add(JOB, entry)
    assert list(stores.history.list(JOB)) == [entry]
    bare = history_entry(T0 + timedelta(seconds=1), "exec-2", end_time=None, expected_execution_time=None)
    stores.history.add(JOB, bare)
    assert list(stores.history.list(JOB)) == [bare, entry]


def test_entries_are_listed_newest_first_per_job(stores: Stores) -> None:
    entries = [history_entry(T0 + timedelta(minutes=m), f"exec-{m}") for m in (3, 1, 4, 0, 2)]
    for entry in entries:
        stores.history.add(JOB, entry)
    stores.history.add(OTHER, history_entry(T0 + timedelta(days=1), "other"))
    listed = list(stores.history.list(JobRef(CollectionRef("SUB-A", "group-1", "jobs-one"), "JOB-ONE")))
    assert [entry.execution_id for entry in listed] == ["exec-4", "exec-3", "exec-2", "exec-1", "exec-0"]
    assert list(stores.history.list(JobRef(COLLECTION, "none"))) == []


def test_adding_the_same_entry_again_leaves_one_with_the_last_values(stores: Stores) -> None:
    entry = history_entry(T0)
    stores.history.add(JOB, entry)
    stores.history.add(JOB, replace(entry, status=HistoryStatus.FAILED, message="again"))
    assert list(stores.history.list(JOB)) == [replace(entry, status=HistoryStatus.FAILED, message="again")]


def test_add_if_absent_writes_once_and_keeps_the_first(stores: Stores) -> None:
    entry = history_entry(T0)
    assert stores.history.add_if_absent(JOB, entry) is True
    assert stores.history.add_if_absent(JOB, replace(entry, message="second")) is False
    assert list(stores.history.list(JOB)) == [entry]
    assert stores.history.add_if_absent(OTHER, replace(entry, message="other job")) is True


def test_trim_deletes_entries_started_before_a_bound(stores: Stores) -> None:
    for minute in range(6):
        stores.history.add(JOB, history_entry(T0 + timedelta(minutes=minute), f"exec-{minute}"))
    assert trim(stores, JOB, T0 + timedelta(minutes=2), keep=100) == 2
    assert [e.execution_id for e in stores.history.list(JOB)] == ["exec-5", "exec-4", "exec-3", "exec-2"]


def test_trim_keeps_only_the_newest_entries(stores: Stores) -> None:
    for minute in range(6):
        stores.history.add(JOB, history_entry(T0 + timedelta(minutes=minute), f"exec-{minute}"))
    stores.history.add(OTHER, history_entry(T0, "other"))
    assert trim(stores, JOB, T0 - timedelta(days=1), keep=2) == 4
    assert [e.execution_id for e in stores.history.list(JOB)] == ["exec-5", "exec-4"]
    assert trim(stores, JOB, T0 + timedelta(minutes=5, seconds=1), keep=1) == 2  # kept by count, not by age
    assert list(stores.history.list(JOB)) == []
    assert trim(stores, JOB, T0, keep=0) == 0
    assert [e.execution_id for e in stores.history.list(OTHER)] == ["other"]


def test_trim_deletes_what_either_rule_deletes(stores: Stores) -> None:
    for minute in range(6):
        stores.history.add(JOB, history_entry(T0 + timedelta(minutes=minute), f"exec-{minute}"))
    assert trim(stores, JOB, T0 + timedelta(minutes=3), keep=4) == 3  # count: 1, 0; age: 2, 1, 0
    assert [e.execution_id for e in stores.history.list(JOB)] == ["exec-5", "exec-4", "exec-3"]


def test_trim_counts_and_ages_failed_entries_apart_from_the_others(stores: Stores) -> None:
    statuses = ["Completed", "Failed", "Skipped", "Failed", "Completed", "Failed"]  # exec-0 (oldest) .. exec-5
    for minute, status in enumerate(statuses):
        stores.history.add(JOB, history_entry(T0 + timedelta(minutes=minute), f"exec-{minute}", status=status))
    rule = HistoryRetention(succeeded=Keep(None, 2), failed=Keep(Duration(timedelta(minutes=2)), 10))
    assert stores.history.trim(JOB, rule, T0 + timedelta(minutes=5, seconds=30)) == 3  # exec-0; exec-1, exec-3
    assert [e.execution_id for e in stores.history.list(JOB)] == ["exec-5", "exec-4", "exec-2"]


def test_delete_all_removes_one_jobs_entries(stores: Stores) -> None:
    for minute in range(3):
        stores.history.add(JOB, history_entry(T0 + timedelta(minutes=minute), f"exec-{minute}"))
    stores.history.add(OTHER, history_entry(T0, "other"))
    stores.history.delete_all(JOB)
    assert list(stores.history.list(JOB)) == []
    assert len(list(stores.history.list(OTHER))) == 1
    stores.history.delete_all(JOB)


def test_an_entrys_trigger_reads_back_and_defaults_to_scheduled(stores: Stores) -> None:
    backfill = history_entry(T0, "exec-b", trigger=Trigger.BACKFILL)
    manual = history_entry(T0 + timedelta(seconds=1), "exec-m", trigger=Trigger.MANUAL)
    scheduled = history_entry(T0 + timedelta(seconds=2), "exec-s")
    for entry in (backfill, manual, scheduled):
        stores.history.add(JOB, entry)
    assert [entry.trigger for entry in stores.history.list(JOB)] == [
        Trigger.SCHEDULED,
        Trigger.MANUAL,
        Trigger.BACKFILL,
    ]
    assert stores.history.add_if_absent(
        JOB, history_entry(T0 - timedelta(seconds=1), "exec-x", trigger=Trigger.BACKFILL)
    )
    assert next(e for e in stores.history.list(JOB) if e.execution_id == "exec-x").trigger is Trigger.BACKFILL


def test_an_entrys_due_time_reads_back_and_is_none_when_not_written(stores: Stores) -> None:
    retry = history_entry(T0, "exec-r", retry_count=1, due_time=T0 - timedelta(milliseconds=250))
    first = history_entry(T0 + timedelta(seconds=1), "exec-f")
    for entry in (retry, first):
        stores.history.add(JOB, entry)
    read = {entry.execution_id: entry.due_time for entry in stores.history.list(JOB)}
    assert read == {"exec-r": T0 - timedelta(milliseconds=250), "exec-f": None}
