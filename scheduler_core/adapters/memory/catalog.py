"""In-memory job collections and jobs (the :class:`~scheduler_core.ports.CollectionStore` and
:class:`~scheduler_core.ports.JobStore` ports), keyed as the Table adapter keys them."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable
from dataclasses import replace

from scheduler_core.adapters.memory.seam import (
    FaultSeam,
    as_stored,
    faultable,
    new_etag,
    require_etag,
    utc,
    utc_or_none,
)
from scheduler_core.definitions import (
    collection_json,
    job_json,
    read_collection_properties,
    read_collection_retention,
    read_job_definition,
)
from scheduler_core.errors import AlreadyExistsError, EtagMismatchError
from scheduler_core.model import DueSlot, Job, JobCollection, JobState
from scheduler_core.ports import Clock
from scheduler_core.storage.keys import SEPARATOR, CollectionRef, JobRef, escape_key

Key = tuple[str, str]


class MemoryCollections(FaultSeam):
    """Job collections by (subscription key, resource group | name key). ``modified_at`` is the injected
    clock's reading at the last write (what the table's ``Timestamp`` is to the Azure adapter)."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self._clock = clock
        self._rows: dict[Key, JobCollection] = {}
        self._lock = threading.RLock()

    @staticmethod
    def _copy(record: JobCollection) -> JobCollection:
        return replace(record, tags=as_stored(record.tags))

    @faultable
    def get(self, ref: CollectionRef) -> JobCollection | None:
        key = (ref.partition_key, ref.row_key)
        with self._lock:
            stored = self._rows.get(key)
            return None if stored is None else self._copy(stored)

    @faultable
    def list(self, subscription: str, resource_group: str | None = None) -> list[JobCollection]:
        partition = escape_key(subscription)
        prefix = "" if resource_group is None else escape_key(resource_group) + SEPARATOR
        with self._lock:
            return [
                self._copy(self._rows[key])
                for key in sorted(self._rows)
                if key[0] == partition and key[1].startswith(prefix)
            ]

    @faultable
    def all_partitions(self) -> builtins.list[str]:
        with self._lock:
            return sorted({record.ref.subscription for record in self._rows.values()})

    @faultable
    def save(self, record: JobCollection, *, create: bool) -> JobCollection:
        key = (record.ref.partition_key, record.ref.row_key)
        # As the Azure adapter stores it: the plan, state and quota as their canonical JSON, read back.
        properties = as_stored(collection_json(record.sku, record.state, record.quota, record.history_retention))
        sku, state, quota = read_collection_properties(properties)
        stored = replace(
            self._copy(record),
            sku=sku,
            state=state,
            quota=quota,
            history_retention=read_collection_retention(properties),
            created_at=utc(record.created_at),
            modified_at=None,
            etag="",
        )
        with self._lock:
            current = self._rows.get(key)
            if create and current is not None:
                raise AlreadyExistsError("the resource was created by another request at the same time; retry")
            if not create and record.etag and (current is None or current.etag != record.etag):
                raise EtagMismatchError("the resource was changed by another request (ETag mismatch)")
            etag = new_etag()
            self._rows[key] = replace(stored, etag=etag, modified_at=utc(self._clock()))
        return replace(record, etag=etag)

    @faultable
    def set_job_count(self, record: JobCollection, count: int) -> JobCollection:
        key = (record.ref.partition_key, record.ref.row_key)
        require_etag(record.etag)
        with self._lock:
            current = self._rows.get(key)
            if current is None or current.etag != record.etag:
                raise EtagMismatchError("the job collection was changed by another request")
            etag, now = new_etag(), utc(self._clock())
            self._rows[key] = replace(current, job_count=count, etag=etag, modified_at=now)
        return replace(record, etag=etag, job_count=count, modified_at=now)

    @faultable
    def delete(self, ref: CollectionRef) -> None:
        key = (ref.partition_key, ref.row_key)
        with self._lock:
            self._rows.pop(key, None)


class MemoryJobs(FaultSeam):
    """Jobs by (collection identity, job name key). A job read by its ref carries that ref's collection
    spelling and the stored job name, as the Azure adapter's do; read by keys, the stored spellings."""

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[Key, Job] = {}
        self._lock = threading.RLock()

    @staticmethod
    def _copy(record: Job, collection: CollectionRef | None = None) -> Job:
        ref = record.ref if collection is None else JobRef(collection, record.ref.name)
        return replace(record, ref=ref)

    @staticmethod
    def _stored(record: Job, etag: str) -> Job:
        due = record.due if record.due is not None and record.due.shard and record.due.row_key else None
        return replace(
            MemoryJobs._copy(record),
            # As the Azure adapter stores it: the definition as its canonical JSON and secrets, read back.
            definition=read_job_definition(*job_json(record.definition, record.state)),
            state=JobState(record.state),
            generation=int(record.generation),
            defined_at=utc(record.defined_at),
            created_at=utc(record.created_at),
            last_execution_time=utc_or_none(record.last_execution_time),
            next_execution_time=utc_or_none(record.next_execution_time),
            ended_at=utc_or_none(record.ended_at),
            due=None if due is None else DueSlot(due.shard, due.row_key),
            counted=tuple(str(key) for key in record.counted),
            etag=etag,
        )

    @faultable
    def get(self, ref: JobRef) -> Job | None:
        key = (ref.partition_key, ref.row_key)
        with self._lock:
            stored = self._rows.get(key)
            return None if stored is None else self._copy(stored, ref.collection)

    @faultable
    def get_by_keys(self, partition: str, row: str) -> Job | None:
        with self._lock:
            stored = self._rows.get((partition, row))
            return None if stored is None else self._copy(stored)

    @faultable
    def get_many(self, partition: str, rows: Iterable[str]) -> dict[str, Job]:
        wanted = sorted(set(rows))
        with self._lock:
            return {row: self._copy(self._rows[(partition, row)]) for row in wanted if (partition, row) in self._rows}

    @faultable
    def list(self, collection: CollectionRef) -> list[Job]:
        partition = collection.identity
        with self._lock:
            found = [self._copy(record, collection) for key, record in self._rows.items() if key[0] == partition]
        return sorted(found, key=lambda record: record.ref.name.lower())

    @faultable
    def count(self, collection: CollectionRef) -> int:
        partition = collection.identity
        with self._lock:
            return sum(1 for key in self._rows if key[0] == partition)

    @faultable
    def save(self, record: Job, *, create: bool, etag: str | None = None) -> Job:
        key = (record.ref.partition_key, record.ref.row_key)
        if not create and etag is not None:
            require_etag(etag)
        new = new_etag()
        stored = self._stored(record, new)
        with self._lock:
            current = self._rows.get(key)
            if create and current is not None:
                raise AlreadyExistsError("the resource was created by another request at the same time; retry")
            if not create and etag is not None and (current is None or current.etag != etag):
                raise EtagMismatchError("the resource was changed by another request (ETag mismatch)")
            self._rows[key] = stored
        return replace(record, etag=new)

    @faultable
    def delete(self, ref: JobRef, etag: str | None) -> bool:
        key = (ref.partition_key, ref.row_key)
        if etag is not None:
            require_etag(etag)
        with self._lock:
            current = self._rows.get(key)
            if current is None:
                return False
            if etag is not None and current.etag != etag:
                raise EtagMismatchError("the job was changed by another request (ETag mismatch)")
            del self._rows[key]
            return True
