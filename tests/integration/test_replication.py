"""The standby's copy of the active region's catalog (``scheduler_core/regions/replication.py``) on Azurite: two
regions' tables (one Azurite, a table prefix each), the active one written through the service as the API writes
it, the standby's :class:`Replicator` sweeping. A copy reads back as the same jobs and collections (secrets,
counters, calendars), later writes and deletes follow, and a peer out of reach fails a sweep within seconds, keeps
its place and loses nothing."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from scheduler_core import wiring
from scheduler_core.adapters.azure.clients import table_service
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.azure.replica import TableBookmarks, TableReplica, peer_tables
from scheduler_core.regions import Replicator
from scheduler_core.regions.replication import KEYS_EVERY
from scheduler_core.settings import Settings, StorageAccount
from scheduler_core.storage.keys import CollectionRef, JobRef
from scheduler_core.storage.names import JOBS_TABLE
from tests.support.harness import STANDARD
from tests.support.jobs import every, http_job

COLLECTION = CollectionRef("sub", "rg", "jc")


def with_secret(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with Basic authentication on its request (a secret: stored apart, never answered)."""
    body["properties"]["action"]["request"]["authentication"] = {"type": "Basic", "username": "u", "password": "pa55"}
    return body


@dataclass
class Regions:
    active: wiring.Services
    standby: wiring.Services
    replicator: Replicator
    standby_settings: Settings


@pytest.fixture
def regions(storage_env: Settings) -> Regions:
    active = wiring.build(storage_env)
    provision(storage_env)
    other = dataclasses.replace(storage_env, table_prefix=f"{storage_env.table_prefix}b")
    provision(other)
    standby = wiring.build(other)
    own = table_service(other)
    replicator = Replicator(
        TableReplica(table_service(storage_env), storage_env),
        TableReplica(own, other),
        TableBookmarks(own, other),
        lambda: datetime.now(UTC),
    )
    return Regions(active, standby, replicator, other)


def test_a_first_sweep_copies_every_collection_and_job_as_it_reads_in_the_active_region(regions: Regions) -> None:
    service = regions.active.service
    service.put_collection(COLLECTION, STANDARD)
    url = "http://target.example/hook"
    for name in ("one", "two"):
        service.put_job(JobRef(COLLECTION, name), with_secret(http_job(url, recurrence=every("Hour"))))
    job = regions.active.stores.jobs.get(JobRef(COLLECTION, "one"))
    assert job is not None
    counted = replace(job, execution_count=7, failure_count=2, last_execution_time=datetime(2026, 1, 2, tzinfo=UTC))
    regions.active.stores.jobs.save(counted, create=False, etag=job.etag)

    report = regions.replicator.sweep()
    assert report.error == "" and report.copied == 3

    copied = regions.standby.stores
    original, copy = regions.active.stores.collections.get(COLLECTION), copied.collections.get(COLLECTION)
    assert original is not None and copy is not None
    # As stored, but for what the storage stamps on a write: its ETag and time (a collection's modifiedAt).
    assert dataclasses.replace(copy, etag=original.etag, modified_at=original.modified_at) == original
    for name in ("one", "two"):
        ref = JobRef(COLLECTION, name)
        mine, theirs = regions.active.stores.jobs.get(ref), copied.jobs.get(ref)
        assert mine is not None and theirs is not None
        assert dataclasses.replace(theirs, etag=mine.etag) == mine  # secrets, counters and generation alike
    assert copied.jobs.get(JobRef(COLLECTION, "one")).execution_count == 7  # type: ignore[union-attr]
    assert list(copied.due.due_before("0000", "~")) == []  # the index is not copied: it is built at a takeover


def test_later_writes_follow_at_the_next_sweep_and_deletes_at_a_key_sweep(regions: Regions) -> None:
    service = regions.active.service
    service.put_collection(COLLECTION, STANDARD)
    url = "http://target.example/hook"
    for name in ("kept", "edited", "deleted"):
        service.put_job(JobRef(COLLECTION, name), http_job(url, recurrence=every("Hour")))
    assert regions.replicator.sweep().copied == 4

    service.patch_job(JobRef(COLLECTION, "edited"), {"properties": {"state": "Disabled"}})
    service.delete_job(JobRef(COLLECTION, "deleted"))
    report = regions.replicator.sweep()
    assert report.error == ""
    standby = regions.standby.stores.jobs
    assert standby.get(JobRef(COLLECTION, "edited")).state.value == "Disabled"  # type: ignore[union-attr]
    # A sweep re-reads the rows of the last OVERLAP (30 s): "kept" is copied again, harmlessly.
    sweeps = 1
    while standby.get(JobRef(COLLECTION, "deleted")) is not None:
        assert sweeps <= KEYS_EVERY, "a delete was not copied within a key sweep"
        assert regions.replicator.sweep().error == ""
        sweeps += 1
    assert standby.get(JobRef(COLLECTION, "kept")) is not None


def test_a_peer_out_of_reach_fails_the_sweep_quickly_and_the_next_goes_on_from_its_place(regions: Regions) -> None:
    service = regions.active.service
    service.put_collection(COLLECTION, STANDARD)
    service.put_job(JobRef(COLLECTION, "first"), http_job("http://target.example/a", recurrence=every("Hour")))
    assert regions.replicator.sweep().error == ""
    own = table_service(regions.standby_settings)
    bookmarks = TableBookmarks(own, regions.standby_settings)
    place = bookmarks.replication().cursors[JOBS_TABLE]

    gone = StorageAccount(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
        "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
        "TableEndpoint=http://127.0.0.1:9/devstoreaccount1;"
    )
    cut = Replicator(
        TableReplica(peer_tables(gone), regions.standby_settings),
        TableReplica(own, regions.standby_settings),
        bookmarks,
        lambda: datetime.now(UTC),
    )
    began = time.monotonic()
    report = cut.sweep()
    took = time.monotonic() - began
    assert report.error and took < 15, (report, took)
    state = bookmarks.replication()
    assert state.cursors[JOBS_TABLE] == place and state.error == report.error and state.failed_at is not None

    service.put_job(JobRef(COLLECTION, "second"), http_job("http://target.example/b", recurrence=every("Hour")))
    assert regions.replicator.sweep().error == ""  # the link is back
    assert regions.standby.stores.jobs.get(JobRef(COLLECTION, "second")) is not None
    assert bookmarks.replication().error == "" and bookmarks.replication().cursors[JOBS_TABLE] > place


def test_a_catalog_larger_than_a_batch_is_copied_whole_in_batches_of_one_partition(
    regions: Regions, storage_env: Settings
) -> None:
    peer = table_service(storage_env).get_table_client(storage_env.table_name(JOBS_TABLE))
    for partition in ("p1", "p2"):
        rows = [{"PartitionKey": partition, "RowKey": f"j{index:04d}", "Body": "x" * 100} for index in range(130)]
        for start in range(0, len(rows), 100):
            peer.submit_transaction([("upsert", row) for row in rows[start : start + 100]])
    report = regions.replicator.sweep()
    assert report.error == "" and report.copied == 260
    own = TableReplica(table_service(regions.standby_settings), regions.standby_settings)
    assert own.keys(JOBS_TABLE) == {(partition, f"j{index:04d}") for partition in ("p1", "p2") for index in range(130)}
