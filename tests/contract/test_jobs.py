"""The job store (:class:`scheduler_core.ports.JobStore`) and :meth:`Stores.remove_job` on every adapter."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from scheduler_core.definitions import job_json, parse_job
from scheduler_core.errors import AlreadyExistsError, EtagMismatchError, WriteRaceError
from scheduler_core.model import Job, JobState
from scheduler_core.model.actions import HttpAction
from scheduler_core.model.job import first_generation
from scheduler_core.ports import Stores
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.contract.records import COLLECTION, DEFINITION_JSON, JOB, T0, definition, due_entry, history_entry, job
from tests.support.jobs import http_action, job_body


def test_a_created_job_reads_back_whole_with_its_etag(stores: Stores) -> None:
    saved = stores.jobs.save(job(), create=True)
    assert saved.etag and saved == replace(job(), etag=saved.etag)
    assert stores.jobs.get(JOB) == saved
    assert stores.jobs.get_by_keys(JOB.partition_key, JOB.row_key) == saved


def test_optional_fields_read_back_as_absent(stores: Stores) -> None:
    minimal = job_body(None, http_action("https://example.org/", method="GET", body=None))
    plain = parse_job(minimal, validate_limits=False).definition  # no start, no recurrence, no secret
    bare = job(
        last_execution_time=None, next_execution_time=None, due=None, counted=(), definition=plain, ended_at=None
    )
    saved = stores.jobs.save(bare, create=True)
    assert stores.jobs.get(JOB) == saved
    ended = stores.jobs.save(replace(bare, state=JobState.COMPLETED, ended_at=T0), create=False, etag=saved.etag)
    got = stores.jobs.get(JOB)
    assert got is not None and (got.state, got.ended_at, got.etag) == (JobState.COMPLETED, T0, ended.etag)


def test_a_missing_job_is_none(stores: Stores) -> None:
    assert stores.jobs.get(JOB) is None
    assert stores.jobs.get_by_keys(JOB.partition_key, JOB.row_key) is None


def test_a_job_read_by_its_ref_has_that_refs_collection_spelling_and_its_stored_name(stores: Stores) -> None:
    stores.jobs.save(job(), create=True)
    asked = JobRef(CollectionRef("SUB-A", "group-1", "jobs-ONE"), "JOB-one")
    got = stores.jobs.get(asked)
    assert got is not None and got.ref == JobRef(asked.collection, "Job-One")
    by_keys = stores.jobs.get_by_keys(asked.partition_key, asked.row_key)
    assert by_keys is not None and by_keys.ref == JOB  # keys carry no spelling: the stored one
    [listed] = stores.jobs.list(asked.collection)
    assert listed.ref == JobRef(asked.collection, "Job-One")


def test_creating_twice_is_a_write_race(stores: Stores) -> None:
    stores.jobs.save(job(), create=True)
    with pytest.raises(AlreadyExistsError) as raised:
        stores.jobs.save(job(JobRef(COLLECTION, "JOB-ONE"), generation=2), create=True)
    assert isinstance(raised.value, WriteRaceError)
    got = stores.jobs.get(JOB)
    assert got is not None and got.generation == 1


def test_a_replace_guarded_by_the_current_etag_succeeds_and_gives_a_new_one(stores: Stores) -> None:
    first = stores.jobs.save(job(), create=True)
    second = stores.jobs.save(replace(first, generation=2), create=False, etag=first.etag)
    assert second.etag and second.etag != first.etag
    got = stores.jobs.get(JOB)
    assert got is not None and (got.generation, got.etag) == (2, second.etag)


def test_a_replace_guarded_by_a_stale_etag_fails_and_changes_nothing(stores: Stores) -> None:
    first = stores.jobs.save(job(), create=True)
    second = stores.jobs.save(replace(first, generation=2), create=False, etag=first.etag)
    with pytest.raises(EtagMismatchError) as raised:
        stores.jobs.save(replace(first, generation=3), create=False, etag=first.etag)
    assert isinstance(raised.value, WriteRaceError)
    got = stores.jobs.get(JOB)
    assert got is not None and (got.generation, got.etag) == (2, second.etag)


def test_a_guarded_replace_of_a_deleted_job_fails(stores: Stores) -> None:
    first = stores.jobs.save(job(), create=True)
    assert stores.jobs.delete(JOB, None)
    with pytest.raises(EtagMismatchError):
        stores.jobs.save(first, create=False, etag=first.etag)
    assert stores.jobs.get(JOB) is None


def test_a_replace_without_an_etag_is_unconditional(stores: Stores) -> None:
    created = stores.jobs.save(job(), create=False)
    assert created.etag
    stores.jobs.save(job(generation=5), create=False)
    got = stores.jobs.get(JOB)
    assert got is not None and got.generation == 5


def test_a_guard_with_an_empty_etag_is_a_callers_bug(stores: Stores) -> None:
    stores.jobs.save(job(), create=True)
    with pytest.raises(ValueError, match=r"(?i)etag"):
        stores.jobs.save(job(generation=2), create=False, etag="")
    with pytest.raises(ValueError, match=r"(?i)etag"):
        stores.jobs.delete(JOB, "")
    got = stores.jobs.get(JOB)
    assert got is not None and got.generation == 1


def test_delete_is_true_once_then_false(stores: Stores) -> None:
    saved = stores.jobs.save(job(), create=True)
    assert stores.jobs.delete(JobRef(COLLECTION, "job-ONE"), saved.etag) is True
    assert stores.jobs.get(JOB) is None
    assert stores.jobs.delete(JOB, saved.etag) is False
    assert stores.jobs.delete(JOB, None) is False


def test_delete_of_a_changed_job_fails_and_keeps_it(stores: Stores) -> None:
    first = stores.jobs.save(job(), create=True)
    second = stores.jobs.save(replace(first, generation=2), create=False, etag=first.etag)
    with pytest.raises(EtagMismatchError):
        stores.jobs.delete(JOB, first.etag)
    got = stores.jobs.get(JOB)
    assert got is not None and got.etag == second.etag
    assert stores.jobs.delete(JOB, None) is True  # any version


def concurrent_deletes(stores: Stores, etags: list[str | None]) -> list[bool]:
    """What each of ``len(etags)`` deletes of :data:`JOB`, started at once, answered."""
    start = threading.Barrier(len(etags))
    results: list[bool] = []

    def remove(etag: str | None) -> None:
        start.wait()
        results.append(stores.jobs.delete(JOB, etag))

    threads = [threading.Thread(target=remove, args=(etag,)) for etag in etags]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_of_concurrent_deletes_exactly_one_removes_the_job(stores: Stores) -> None:
    for generation in (1, 2, 3):
        saved = stores.jobs.save(job(generation=generation), create=True)
        results = concurrent_deletes(stores, [saved.etag, None] * 3)
        assert sorted(results) == [False] * 5 + [True]
        assert stores.jobs.get(JOB) is None


def test_jobs_are_read_many_at_a_time_by_keys(stores: Stores) -> None:
    # Moved from tests/integration/test_azurite_storage.py (every assertion kept).
    collection = CollectionRef("sub", "rg", "jc")
    other = CollectionRef("sub", "rg", "other")
    now = datetime.now(UTC)
    for ref in [JobRef(collection, f"job-{i:02d}") for i in range(40)] + [JobRef(other, "job-03")]:
        record = Job(ref, definition(), JobState("Enabled"), 1, now, now)
        stores.jobs.save(record, create=True)
    wanted = [JobRef(collection, f"job-{i:02d}").row_key for i in range(0, 40, 2)]
    missing = [JobRef(collection, name).row_key for name in ("absent", "job-99", "it's")]
    found = stores.jobs.get_many(collection.identity, wanted + missing + wanted[:3])
    assert sorted(found) == sorted(wanted)  # more keys than one filter may hold; none of the other partition
    assert {job.ref for job in found.values()} == {JobRef(collection, f"job-{i:02d}") for i in range(0, 40, 2)}
    assert all(found[key].etag for key in wanted)
    assert stores.jobs.get_many(collection.identity, []) == {}
    assert stores.jobs.get_many(other.identity, wanted) == {}


def test_list_gives_a_collections_jobs_by_name_case_insensitively_and_count_counts_them(stores: Stores) -> None:
    for name in ["beta", "Alpha", "gamma", "ALPHA-2", "b"]:
        stores.jobs.save(job(JobRef(COLLECTION, name)), create=True)
    stores.jobs.save(job(JobRef(CollectionRef("Sub-A", "Group-1", "other"), "aardvark")), create=True)
    assert [r.ref.name for r in stores.jobs.list(COLLECTION)] == ["Alpha", "ALPHA-2", "b", "beta", "gamma"]
    assert stores.jobs.count(CollectionRef("sub-a", "GROUP-1", "jobs-one")) == 5
    assert stores.jobs.count(CollectionRef("Sub-A", "Group-1", "none")) == 0
    assert stores.jobs.list(CollectionRef("Sub-A", "Group-1", "none")) == []


def test_stored_values_are_copies_of_the_callers_dicts(stores: Stores) -> None:
    headers = {"X-One": "1"}
    record = job()
    main = record.definition.action.main
    assert isinstance(main, HttpAction)
    action = replace(record.definition.action, main=replace(main, headers=headers))
    record = replace(record, definition=replace(record.definition, action=action))
    stores.jobs.save(record, create=True)
    headers["X-One"] = "changed after the write"
    got = stores.jobs.get(JOB)
    assert got is not None and got.definition.action.main == replace(main, headers={"X-One": "1"})


def test_a_definition_reads_back_whole_with_its_secrets_and_as_the_wire_wrote_it(stores: Stores) -> None:
    stores.jobs.save(job(), create=True)
    got = stores.jobs.get(JOB)
    assert got is not None and got.definition == definition()
    properties, secrets = job_json(got.definition, got.state)
    assert json.dumps(properties) == json.dumps(parse_job(DEFINITION_JSON, validate_limits=False).properties)
    assert secrets == {
        "action.request.authentication.password": "pa55",
        "action.errorAction.queueMessage.sasToken": "?sv=1&sig=x",
    }


# ----------------------------------------------------------------------------------------- remove_job


def _with_rows(stores: Stores) -> Job:
    saved = stores.jobs.save(job(), create=True)
    assert saved.due is not None
    stores.due.put(due_entry(T0, saved.due.shard, row_key=saved.due.row_key))
    stores.history.add(JOB, history_entry(T0))
    return saved


def _rows_left(stores: Stores, saved: Job) -> tuple[bool, int, int]:
    assert saved.due is not None
    return (
        stores.jobs.get(JOB) is not None,
        len(list(stores.due.due_before(saved.due.shard, "~"))),
        len(list(stores.history.list(JOB))),
    )


def test_remove_job_deletes_the_job_its_due_entry_and_its_history(stores: Stores) -> None:
    saved = _with_rows(stores)
    assert stores.remove_job(saved) is True
    assert _rows_left(stores, saved) == (False, 0, 0)


def test_remove_job_of_a_job_removed_by_another_writer_removes_its_rows_and_says_so(stores: Stores) -> None:
    saved = _with_rows(stores)
    assert stores.jobs.delete(JOB, None)
    assert stores.remove_job(saved) is False
    assert _rows_left(stores, saved) == (False, 0, 0)


def test_remove_job_of_a_changed_job_removes_nothing_unless_any_version(stores: Stores) -> None:
    saved = _with_rows(stores)
    stores.jobs.save(replace(saved, generation=2), create=False, etag=saved.etag)
    assert stores.remove_job(saved) is False
    assert _rows_left(stores, saved) == (True, 1, 1)
    assert stores.remove_job(saved, any_version=True) is True
    assert _rows_left(stores, saved) == (False, 0, 0)


def test_remove_job_without_the_job_row_removes_the_other_rows(stores: Stores) -> None:
    saved = _with_rows(stores)
    assert stores.remove_job(saved, job_row=False) is True
    assert _rows_left(stores, saved) == (True, 0, 0)


def test_a_job_whose_generation_needs_64_bits_reads_back_whole(stores: Stores) -> None:
    generation = first_generation(T0)  # a job's first generation counts microseconds (about 2**51)
    saved = stores.jobs.save(job(generation=generation), create=True)
    got = stores.jobs.get(JOB)
    assert got == saved and got.generation == generation
    again = stores.jobs.save(replace(saved, generation=generation + 1), create=False, etag=saved.etag)
    assert stores.jobs.get_many(JOB.partition_key, [JOB.row_key]) == {JOB.row_key: again}
