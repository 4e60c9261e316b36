"""The collection store (:class:`scheduler_core.ports.CollectionStore`) on every adapter."""

from __future__ import annotations

import json
import threading
from dataclasses import FrozenInstanceError, replace
from typing import Any

import pytest

from scheduler_core.api import views
from scheduler_core.definitions import parse_collection
from scheduler_core.errors import AlreadyExistsError, EtagMismatchError, WriteRaceError
from scheduler_core.job_slots import subtract_jobs
from scheduler_core.model import CollectionState, JobCollection, MaxRecurrence, Quota, Sku
from scheduler_core.ports import Stores
from scheduler_core.recurrence import Frequency
from scheduler_core.storage.keys import CollectionRef
from tests.contract.conftest import Backend
from tests.contract.records import COLLECTION, T0, collection


def test_a_created_collection_reads_back_whole_with_its_etag(backend: Backend) -> None:
    stores = backend.stores
    before = backend.clock()
    saved = stores.collections.save(collection(job_count=3), create=True)
    after = backend.clock()
    assert saved.etag
    assert saved == replace(collection(job_count=3), etag=saved.etag)
    got = stores.collections.get(COLLECTION)
    assert got is not None
    assert replace(got, modified_at=None) == saved
    assert backend.stamped_between(got.modified_at, before, after)


def test_names_are_matched_case_insensitively_and_keep_the_clients_spelling(stores: Stores) -> None:
    stores.collections.save(collection(), create=True)
    got = stores.collections.get(CollectionRef("SUB-a", "group-1", "JOBS-ONE"))
    assert got is not None and got.ref == COLLECTION
    with pytest.raises(AlreadyExistsError):
        stores.collections.save(collection(CollectionRef("sub-a", "GROUP-1", "jobs-one")), create=True)


def test_a_missing_collection_is_none(stores: Stores) -> None:
    assert stores.collections.get(COLLECTION) is None


def test_creating_twice_is_a_write_race(stores: Stores) -> None:
    stores.collections.save(collection(), create=True)
    with pytest.raises(AlreadyExistsError) as raised:
        stores.collections.save(collection(max_jobs=5), create=True)
    assert isinstance(raised.value, WriteRaceError)
    got = stores.collections.get(COLLECTION)
    assert got is not None and got.quota.max_job_count == 10


def test_a_replace_guarded_by_the_current_etag_succeeds_and_gives_a_new_one(stores: Stores) -> None:
    first = stores.collections.save(collection(), create=True)
    second = stores.collections.save(replace(first, location="North Europe"), create=False)
    assert second.etag and second.etag != first.etag
    got = stores.collections.get(COLLECTION)
    assert got is not None and (got.location, got.etag) == ("North Europe", second.etag)


def test_a_replace_guarded_by_a_stale_etag_fails_and_changes_nothing(stores: Stores) -> None:
    first = stores.collections.save(collection(), create=True)
    second = stores.collections.save(replace(first, location="North Europe"), create=False)
    with pytest.raises(EtagMismatchError) as raised:
        stores.collections.save(replace(first, location="East US"), create=False)
    assert isinstance(raised.value, WriteRaceError)
    got = stores.collections.get(COLLECTION)
    assert got is not None and (got.location, got.etag) == ("North Europe", second.etag)


def test_a_guarded_replace_of_a_deleted_collection_fails(stores: Stores) -> None:
    first = stores.collections.save(collection(), create=True)
    stores.collections.delete(COLLECTION)
    with pytest.raises(EtagMismatchError):
        stores.collections.save(first, create=False)
    assert stores.collections.get(COLLECTION) is None


def test_a_replace_without_an_etag_is_unconditional_and_creates_a_missing_collection(stores: Stores) -> None:
    created = stores.collections.save(collection(), create=False)
    assert created.etag
    stores.collections.save(replace(collection(), location="East US"), create=False)
    got = stores.collections.get(COLLECTION)
    assert got is not None and got.location == "East US"


def test_the_job_counter_is_written_only_when_known(stores: Stores) -> None:
    stores.collections.save(collection(), create=True)
    got = stores.collections.get(COLLECTION)
    assert got is not None and got.job_count is None
    stores.collections.save(replace(got, job_count=4), create=False)
    got = stores.collections.get(COLLECTION)
    assert got is not None and got.job_count == 4


def test_a_replace_is_whole_so_a_record_without_a_counter_leaves_none(stores: Stores) -> None:
    counted = stores.collections.save(collection(job_count=4), create=True)
    stores.collections.save(replace(counted, job_count=None), create=False)
    got = stores.collections.get(COLLECTION)
    assert got is not None and got.job_count is None


def test_a_guard_with_an_empty_etag_is_a_callers_bug(stores: Stores) -> None:
    saved = stores.collections.save(collection(job_count=1), create=True)
    with pytest.raises(ValueError, match=r"(?i)etag"):
        stores.collections.set_job_count(replace(saved, etag=""), 2)
    got = stores.collections.get(COLLECTION)
    assert got is not None and got.job_count == 1


def test_set_job_count_sets_the_counter_only_and_is_guarded(backend: Backend) -> None:
    stores = backend.stores
    first = stores.collections.save(collection(job_count=1), create=True)
    before = backend.clock()
    counted = stores.collections.set_job_count(first, 5)
    after = backend.clock()
    assert (counted.job_count, counted.location) == (5, first.location)
    assert counted.etag and counted.etag != first.etag
    assert counted.modified_at is not None and before <= counted.modified_at <= after + backend.slack
    got = stores.collections.get(COLLECTION)
    assert got is not None
    assert (got.job_count, got.etag, got.sku, got.state, got.quota, got.tags) == (
        5,
        counted.etag,
        first.sku,
        first.state,
        first.quota,
        first.tags,
    )
    with pytest.raises(EtagMismatchError):
        stores.collections.set_job_count(first, 9)  # stale
    stores.collections.delete(COLLECTION)
    with pytest.raises(EtagMismatchError):
        stores.collections.set_job_count(counted, 9)  # gone
    assert stores.collections.get(COLLECTION) is None


def test_subtract_jobs_takes_off_the_counter_never_below_zero(stores: Stores) -> None:
    stores.collections.save(collection(job_count=5), create=True)
    assert subtract_jobs(stores.collections, COLLECTION, 2)
    got = stores.collections.get(COLLECTION)
    assert got is not None and got.job_count == 3
    assert subtract_jobs(stores.collections, COLLECTION, 10)
    got = stores.collections.get(COLLECTION)
    assert got is not None and got.job_count == 0


def test_subtract_jobs_without_a_counter_or_a_collection_is_done(stores: Stores) -> None:
    assert subtract_jobs(stores.collections, COLLECTION, 1)  # no collection
    saved = stores.collections.save(collection(), create=True)
    assert subtract_jobs(stores.collections, COLLECTION, 1)  # no counter: nothing written
    got = stores.collections.get(COLLECTION)
    assert got is not None and (got.job_count, got.etag) == (None, saved.etag)


def test_subtract_jobs_under_contention_loses_no_subtraction(stores: Stores) -> None:
    stores.collections.save(collection(job_count=20), create=True)
    start = threading.Barrier(8)
    results: list[bool] = []

    def subtract() -> None:
        start.wait()
        results.append(subtract_jobs(stores.collections, COLLECTION, 1, attempts=200))

    threads = [threading.Thread(target=subtract) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 8
    got = stores.collections.get(COLLECTION)
    assert got is not None and got.job_count == 12


def test_delete_removes_the_collection_and_a_missing_one_is_fine(stores: Stores) -> None:
    stores.collections.save(collection(), create=True)
    stores.collections.delete(CollectionRef("sub-a", "group-1", "jobs-one"))
    assert stores.collections.get(COLLECTION) is None
    stores.collections.delete(COLLECTION)


def test_list_gives_a_subscriptions_collections_in_key_order(stores: Stores) -> None:
    names = [("rg-b", "one"), ("RG", "zeta"), ("rg", "Alpha"), ("rg2", "x"), ("rg-b", "Alpha")]
    for group, name in names:
        stores.collections.save(collection(CollectionRef("Sub-A", group, name)), create=True)
    stores.collections.save(collection(CollectionRef("Sub-B", "rg", "other")), create=True)
    listed = [(c.ref.resource_group, c.ref.name) for c in stores.collections.list("sub-a")]
    # Row key order: escaped, lower-cased "group|name" ("-" and digits sort before the separator "|").
    assert listed == [("rg-b", "Alpha"), ("rg-b", "one"), ("rg2", "x"), ("rg", "Alpha"), ("RG", "zeta")]
    assert all(c.etag for c in stores.collections.list("SUB-A"))
    assert stores.collections.list("Sub-C") == []


def test_list_of_a_resource_group_is_that_group_only_not_a_name_prefix(stores: Stores) -> None:
    for group, name in [("rg", "a"), ("RG", "b"), ("rg2", "c"), ("rg-x", "d"), ("r", "e")]:
        stores.collections.save(collection(CollectionRef("Sub-A", group, name)), create=True)
    assert [c.ref.name for c in stores.collections.list("Sub-A", "Rg")] == ["a", "b"]
    assert [c.ref.name for c in stores.collections.list("Sub-A", "r")] == ["e"]
    assert stores.collections.list("Sub-A", "none") == []


def test_all_partitions_names_every_subscription_with_collections_sorted(stores: Stores) -> None:
    assert stores.collections.all_partitions() == []
    for subscription, name in [("sub-b", "x"), ("Sub-A", "y"), ("Sub-A", "z"), ("sub-c", "w")]:
        stores.collections.save(collection(CollectionRef(subscription, "rg", name)), create=True)
    assert stores.collections.all_partitions() == ["Sub-A", "sub-b", "sub-c"]
    stores.collections.delete(CollectionRef("sub-c", "rg", "w"))
    assert stores.collections.all_partitions() == ["Sub-A", "sub-b"]


def test_stored_values_are_copies_of_the_callers_dicts(stores: Stores) -> None:
    record = collection()
    stores.collections.save(record, create=True)
    record.tags["team"] = "changed after the write"
    got = stores.collections.get(COLLECTION)
    assert got is not None
    got.tags["tier"] = "changed after the read"
    with pytest.raises(FrozenInstanceError):  # the plan and quota cannot be changed in place at all
        got.quota.max_job_count = 99  # type: ignore[misc]
    again = stores.collections.get(COLLECTION)
    assert again is not None and again.tags == collection().tags
    assert (again.sku, again.state, again.quota) == (collection().sku, collection().state, collection().quota)


#: A collection's definition with every field set, as a client may write it (any casing), and the exact
#: ``properties`` the API answered for it before collections were typed (and the Azure adapter stored).
FULL_BODY: dict[str, Any] = {
    "location": "North Europe",
    "tags": {"team": "ops", "cost-centre": "42"},
    "properties": {
        "sku": {"name": "p20premium"},
        "state": "disabled",
        "quota": {"maxJobOccurrence": 100, "maxRecurrence": {"interval": 2, "frequency": "hour"}, "maxJobCount": 7},
    },
}
FULL_PROPERTIES = (
    '{"sku": {"name": "P20Premium"}, "state": "Disabled", '
    '"quota": {"maxJobCount": 7, "maxRecurrence": {"frequency": "Hour", "interval": 2}, "maxJobOccurrence": 100}}'
)


def test_a_collection_with_every_field_set_reads_back_equal_and_answers_the_same_json(backend: Backend) -> None:
    spec = parse_collection(FULL_BODY, name="Jobs-One")
    assert (spec.sku, spec.state, spec.quota) == (
        Sku.P20_PREMIUM,
        CollectionState.DISABLED,
        Quota(7, MaxRecurrence(Frequency.HOUR, 2), max_job_occurrence=100),
    )
    record = JobCollection(
        ref=COLLECTION,
        location=spec.location,
        tags=spec.tags,
        sku=spec.sku,
        state=spec.state,
        quota=spec.quota,
        created_at=T0,
        job_count=3,
    )
    saved = backend.stores.collections.save(record, create=True)
    got = backend.stores.collections.get(COLLECTION)
    assert got is not None
    assert replace(got, modified_at=None) == saved == replace(record, etag=saved.etag)
    answered = views.collection(got)
    assert json.dumps(answered["properties"]) == FULL_PROPERTIES
    assert json.dumps(answered) == json.dumps(
        {
            "id": COLLECTION.resource_id,
            "type": "Microsoft.Scheduler/jobCollections",
            "name": "Jobs-One",
            "location": "North Europe",
            "tags": {"team": "ops", "cost-centre": "42"},
            "properties": json.loads(FULL_PROPERTIES),
        }
    )
    if backend.name == "azurite":  # the table row keeps the format of the rows written before (they read back)
        from scheduler_core.adapters.azure.tables import TableCollections

        collections = backend.stores.collections
        assert isinstance(collections, TableCollections)
        row = collections.table.get_entity(COLLECTION.partition_key, COLLECTION.row_key)
        assert row["Properties"] == FULL_PROPERTIES
