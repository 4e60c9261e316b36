"""Table Storage adapters of the store ports (:mod:`scheduler_core.ports`): job collections, jobs, the due
index and history.

Each store wraps one table and speaks in domain values (:mod:`scheduler_core.model`), never in raw
entities. Optimistic concurrency uses the table's ETags: a write that names an ETag fails with
:class:`~scheduler_core.errors.EtagMismatchError` when the row changed since it was read, and a
create fails with :class:`~scheduler_core.errors.AlreadyExistsError` when the row exists (both are
:class:`~scheduler_core.errors.WriteRaceError`, the one error a concurrency loop retries). Every other
failure of the SDK leaves as :class:`~scheduler_core.errors.StorageError` (:mod:`.errors`).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import (
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.data.tables import (
    EdmType,
    EntityProperty,
    TableTransactionError,
    UpdateMode,
)

from scheduler_core.adapters.azure.errors import translated
from scheduler_core.adapters.azure.rest import Table, TableService
from scheduler_core.definitions import (
    calendars_json,
    collection_json,
    job_json,
    read_calendars,
    read_collection_properties,
    read_collection_retention,
    read_job_definition,
)
from scheduler_core.errors import AlreadyExistsError, EtagMismatchError
from scheduler_core.model import (
    ActionName,
    DueEntry,
    DueSlot,
    HistoryEntry,
    HistoryStatus,
    Job,
    JobCollection,
    JobDefinition,
    JobState,
)
from scheduler_core.model.history import HistoryRetention, Trigger
from scheduler_core.ports import Stores
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import SEPARATOR, CollectionRef, JobRef, escape_key
from scheduler_core.storage.names import (
    CLAIMS_TABLE,
    COLLECTIONS_TABLE,
    DUE_INDEX_TABLE,
    HISTORY_TABLE,
    JOBS_TABLE,
)

#: Version of the persisted job and collection entities (bumped when their shape changes).
SCHEMA_VERSION = 1
#: Table Storage accepts at most 100 operations in one batch transaction.
MAX_BATCH = 100
#: A batch upsert that writes the entity whole (a due-index entry is all its properties, as in the memory adapter).
_REPLACE = {"mode": UpdateMode.REPLACE}
#: Table Storage returns at most 1,000 entities per page of a query.
MAX_PAGE = 1000
#: Row keys per query of :meth:`TableJobs.get_many` (a filter may hold at most 15 comparisons, and one of
#: them names the partition).
MAX_FILTER_KEYS = 14


def _aware(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value))


def _int64(value: int) -> int | EntityProperty:
    """An integer as a table property: Int32 when it fits (as rows written before held it), else Int64
    (a job's generation counts microseconds, :func:`~scheduler_core.model.job.first_generation`)."""
    return value if -(2**31) <= value < 2**31 else EntityProperty(value, EdmType.INT64)


def _int(value: Any) -> int:
    """An integer property read back (the SDK gives an Int64 as an ``EntityProperty``)."""
    return int(value.value if isinstance(value, EntityProperty) else value)


#: Stored definitions kept read (:func:`_definition`): a fire reads its job twice (the scan and the attempt)
#: and a recurring job's definition is the same text fire after fire.
DEFINITIONS_KEPT = 2048


@functools.lru_cache(maxsize=DEFINITIONS_KEPT)
def _definition(definition: str, secrets: str) -> JobDefinition:
    """The definition stored as ``definition`` (and ``secrets``), read once per text: a definition is a frozen
    value, so one stored text always reads to the same one."""
    return read_job_definition(json.loads(definition), json.loads(secrets))


def _tried(once: bool) -> dict[str, Any]:
    """A read's per-call options: ``once``, tried once (``retry_total=0``: a probe's read); else the client's."""
    return {"retry_total": 0} if once else {}


def _etag(entity: Any) -> str:
    return str(entity.metadata["etag"])


def delete_rows(table: Table, partition: str, keys: list[str]) -> None:
    """Delete rows of one partition in batch transactions (≤ 100 operations each). A batch that fails
    because a row is already gone is retried row by row; missing rows are fine."""
    for start in range(0, len(keys), MAX_BATCH):
        chunk = keys[start : start + MAX_BATCH]
        try:
            table.submit_transaction([("delete", {"PartitionKey": partition, "RowKey": k}) for k in chunk])
        except TableTransactionError:
            for key in chunk:
                with contextlib.suppress(ResourceNotFoundError):
                    table.delete_entity(partition, key)


def _write(table: Table, entity: dict[str, Any], etag: str | None, create: bool) -> str:
    """Create or replace ``entity``; returns the new ETag. ``etag`` guards a replace (``"*"`` = exists)."""
    try:
        if create:
            result = table.create_entity(entity)
        elif etag is None:
            result = table.upsert_entity(entity, mode=UpdateMode.REPLACE)
        else:
            result = table.update_entity(
                entity, mode=UpdateMode.REPLACE, etag=etag, match_condition=MatchConditions.IfNotModified
            )
    except ResourceExistsError:
        raise AlreadyExistsError("the resource was created by another request at the same time; retry") from None
    except (ResourceModifiedError, ResourceNotFoundError):
        raise EtagMismatchError("the resource was changed by another request (ETag mismatch)") from None
    return str(result["etag"])


# --------------------------------------------------------------------------------------------- collections


@translated
class TableCollections:
    """``JobCollections``: PartitionKey = subscription, RowKey = resource group | collection name."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def _record(self, entity: Any) -> JobCollection:
        ref = CollectionRef(entity["Subscription"], entity["ResourceGroup"], entity["Name"])
        properties = json.loads(entity["Properties"])
        sku, state, quota = read_collection_properties(properties)
        return JobCollection(
            ref=ref,
            location=entity["Location"],
            tags=json.loads(entity.get("Tags") or "{}"),
            sku=sku,
            state=state,
            quota=quota,
            created_at=_aware(entity.get("CreatedAt")) or datetime.now(UTC),
            etag=_etag(entity),
            job_count=entity.get("JobCount"),
            modified_at=_aware(entity.metadata.get("timestamp")),
            calendars=read_calendars(json.loads(entity.get("Calendars") or "[]")),
            history_retention=read_collection_retention(properties),
        )

    def get(self, ref: CollectionRef) -> JobCollection | None:
        try:
            return self._record(self.table.get_entity(ref.partition_key, ref.row_key))
        except ResourceNotFoundError:
            return None

    def list(self, subscription: str, resource_group: str | None = None) -> list[JobCollection]:
        partition = escape_key(subscription)
        if resource_group is None:
            rows = self.table.query_entities("PartitionKey eq @p", parameters={"p": partition})
        else:
            prefix = escape_key(resource_group) + SEPARATOR
            rows = self.table.query_entities(
                "PartitionKey eq @p and RowKey ge @lo and RowKey lt @hi",
                parameters={"p": partition, "lo": prefix, "hi": prefix[:-1] + chr(ord(SEPARATOR) + 1)},
            )
        return [self._record(row) for row in rows]

    def all_partitions(self) -> builtins.list[str]:
        """Every subscription that has collections (the cleanup walks them all)."""
        rows = self.table.query_entities("PartitionKey ne ''", select=["Subscription"])
        return sorted({str(row["Subscription"]) for row in rows})

    def save(self, record: JobCollection, *, create: bool) -> JobCollection:
        entity = {
            "PartitionKey": record.ref.partition_key,
            "RowKey": record.ref.row_key,
            "SchemaVersion": SCHEMA_VERSION,
            "Subscription": record.ref.subscription,
            "ResourceGroup": record.ref.resource_group,
            "Name": record.ref.name,
            "Location": record.location,
            "Tags": json.dumps(record.tags),
            "Properties": json.dumps(collection_json(record.sku, record.state, record.quota, record.history_retention)),
            "CreatedAt": record.created_at,
        }
        if record.job_count is not None:
            entity["JobCount"] = record.job_count
        if record.calendars:  # api-version 2026-12-01-preview; at most 1,000 dates in all (13 KB)
            entity["Calendars"] = json.dumps(calendars_json(record.calendars))
        etag = _write(self.table, entity, None if create else record.etag or None, create)
        return replace(record, etag=etag)

    def set_job_count(self, record: JobCollection, count: int) -> JobCollection:
        """Set the collection's job counter, guarded by the record's ETag (412 if it changed meanwhile)."""
        entity = {"PartitionKey": record.ref.partition_key, "RowKey": record.ref.row_key, "JobCount": count}
        try:
            result = self.table.update_entity(
                entity, mode=UpdateMode.MERGE, etag=record.etag, match_condition=MatchConditions.IfNotModified
            )
        except (ResourceModifiedError, ResourceNotFoundError):
            raise EtagMismatchError("the job collection was changed by another request") from None
        return replace(record, etag=str(result["etag"]), job_count=count, modified_at=datetime.now(UTC))

    def delete(self, ref: CollectionRef) -> None:
        with contextlib.suppress(ResourceNotFoundError):
            self.table.delete_entity(ref.partition_key, ref.row_key)


# ---------------------------------------------------------------------------------------------------- jobs

#: Tries of a job's delete whose connection fails before an answer (:meth:`TableJobs.delete`).
DELETE_TRIES = 3


@translated
class TableJobs:
    """``Jobs``: PartitionKey = collection identity, RowKey = job name. Secrets sit in their own property,
    never copied into ``Definition``, so nothing that serialises a definition can leak them."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def _record(self, entity: Any, collection: CollectionRef | None = None) -> Job:
        shard, due_key = entity.get("DueShard"), entity.get("DueRowKey")
        if collection is None:
            collection = CollectionRef(entity["Subscription"], entity["ResourceGroup"], entity["Collection"])
        return Job(
            ref=JobRef(collection, entity["Name"]),
            definition=_definition(entity["Definition"], entity.get("Secrets") or "{}"),
            state=JobState(entity["State"]),
            generation=_int(entity["Generation"]),
            defined_at=_aware(entity["DefinedAt"]) or datetime.now(UTC),
            created_at=_aware(entity["CreatedAt"]) or datetime.now(UTC),
            execution_count=int(entity.get("ExecutionCount", 0)),
            failure_count=int(entity.get("FailureCount", 0)),
            faulted_count=int(entity.get("FaultedCount", 0)),
            last_execution_time=_aware(entity.get("LastExecutionTime")),
            last_outcome=str(entity.get("LastOutcome") or ""),
            next_execution_time=_aware(entity.get("NextExecutionTime")),
            due=DueSlot(shard, due_key) if shard and due_key else None,
            ended_at=_aware(entity.get("EndedAt")),
            etag=_etag(entity),
            counted=tuple(str(key) for key in json.loads(entity.get("Counted") or "[]")),
            # the policies' state (api-version 2026-12-01-preview); a row written before them has none
            running=str(entity.get("Running") or ""),
            waiting=str(entity.get("Waiting") or ""),
            paused=str(entity.get("Paused") or ""),
        )

    def get(self, ref: JobRef) -> Job | None:
        try:
            return self._record(self.table.get_entity(ref.partition_key, ref.row_key), ref.collection)
        except ResourceNotFoundError:
            return None

    def get_by_keys(self, partition: str, row: str) -> Job | None:
        """The job stored under these keys (as named by a due-index row or a queue message)."""
        try:
            return self._record(self.table.get_entity(partition, row))
        except ResourceNotFoundError:
            return None

    def get_many(self, partition: str, rows: Iterable[str]) -> dict[str, Job]:
        """The jobs of one partition with these row keys, by row key (missing jobs are absent). One query
        per :data:`MAX_FILTER_KEYS` keys instead of one read per job."""
        wanted = sorted(set(rows))
        found: dict[str, Job] = {}
        for start in range(0, len(wanted), MAX_FILTER_KEYS):
            chunk = wanted[start : start + MAX_FILTER_KEYS]
            parameters = {"p": partition, **{f"r{i}": key for i, key in enumerate(chunk)}}
            keys = " or ".join(f"RowKey eq @r{i}" for i in range(len(chunk)))
            # The SDK finds @names between spaces, so the parentheses stand apart from them.
            for entity in self.table.query_entities(f"PartitionKey eq @p and ( {keys} )", parameters=parameters):
                found[entity["RowKey"]] = self._record(entity)
        return found

    def list(self, collection: CollectionRef) -> list[Job]:
        rows = self.table.query_entities("PartitionKey eq @p", parameters={"p": collection.identity})
        return sorted((self._record(row, collection) for row in rows), key=lambda r: r.ref.name.lower())

    def count(self, collection: CollectionRef) -> int:
        rows = self.table.query_entities("PartitionKey eq @p", parameters={"p": collection.identity}, select=["RowKey"])
        return sum(1 for _ in rows)

    def save(self, record: Job, *, create: bool, etag: str | None = None) -> Job:
        """Create (fails if it exists) or replace guarded by ``etag`` (``None`` = unconditional)."""
        new_etag = _write(self.table, self.entity(record), etag, create)
        return replace(record, etag=new_etag)

    @staticmethod
    def entity(record: Job) -> dict[str, Any]:
        """The table entity of a job record."""
        definition, secrets = job_json(record.definition, record.state)
        entity: dict[str, Any] = {
            "PartitionKey": record.ref.partition_key,
            "RowKey": record.ref.row_key,
            "SchemaVersion": SCHEMA_VERSION,
            "Name": record.ref.name,
            "Subscription": record.ref.collection.subscription,
            "ResourceGroup": record.ref.collection.resource_group,
            "Collection": record.ref.collection.name,
            "Definition": json.dumps(definition),
            "Secrets": json.dumps(secrets),
            "State": record.state,
            "Generation": _int64(record.generation),
            "DefinedAt": record.defined_at,
            "CreatedAt": record.created_at,
            "ExecutionCount": record.execution_count,
            "FailureCount": record.failure_count,
            "FaultedCount": record.faulted_count,
        }
        optional = {
            "LastExecutionTime": record.last_execution_time,
            "LastOutcome": record.last_outcome or None,
            "NextExecutionTime": record.next_execution_time,
            "EndedAt": record.ended_at,
            "DueShard": record.due.shard if record.due else None,
            "DueRowKey": record.due.row_key if record.due else None,
            "Counted": json.dumps(list(record.counted)) if record.counted else None,
            "Running": record.running or None,
            "Waiting": record.waiting or None,
            "Paused": record.paused or None,
        }
        entity.update({k: v for k, v in optional.items() if v is not None})
        return entity

    def delete(self, ref: JobRef, etag: str | None) -> bool | None:
        """Delete the job if it still has ``etag`` (``None``: whatever its version): True when this call
        removed it, False when it was already gone, None when it is gone and this call cannot tell (below).
        Raises :class:`EtagMismatchError` when it was changed meanwhile.

        A single delete cannot tell "removed" from "already gone" (the SDK hides the 404), so the delete
        is sent as a one-operation transaction, which fails when the row is missing: of two concurrent
        deletes exactly one sees True, and only that one may give the job's slot back.

        A transaction is a POST, which the storage client does not send again when its connection fails
        (most often a kept-alive connection the server closed just as it was reused). This call sends it
        again, up to :data:`DELETE_TRIES` tries in all. A later try that finds the row gone after a try whose
        answer was lost cannot tell whether that try removed it or another call did, and answers None: the
        slot is then not given back (a collection's job counter one too high is repaired by the counter
        itself, ``job_slots.py``) and never twice."""
        operation = ("delete", {"PartitionKey": ref.partition_key, "RowKey": ref.row_key})
        options = {} if etag is None else {"etag": etag, "match_condition": MatchConditions.IfNotModified}
        tries, answer_lost = 1, False
        while True:
            try:
                self.table.submit_transaction([(*operation, options)])
                return True
            except TableTransactionError as error:
                if error.status_code == 404:
                    return None if answer_lost else False
                if error.status_code == 412:
                    raise EtagMismatchError("the job was changed by another request (ETag mismatch)") from None
                raise
            except (ServiceRequestError, ServiceResponseError) as error:
                if tries == DELETE_TRIES:
                    raise
                tries += 1
                # not sent (a request error): it did not land; sent with no answer: it may have landed
                answer_lost = answer_lost or isinstance(error, ServiceResponseError)


# ----------------------------------------------------------------------------------------------- due index


@translated
class TableDueIndex:
    """``DueIndex``: PartitionKey = shard, RowKey = due time | job identity | generation."""

    def __init__(self, table: Table) -> None:
        self.table = table

    @staticmethod
    def _entity(row: DueEntry) -> dict[str, Any]:
        entity: dict[str, Any] = {
            "PartitionKey": row.shard,
            "RowKey": row.row_key,
            "JobPartition": row.job_partition,
            "JobRow": row.job_row,
            "Generation": _int64(row.generation),
            "Due": row.due,
        }
        if row.message is not None:
            entity["Message"] = row.message
        if row.kind:
            entity["Kind"] = row.kind
        if row.checks:
            entity["Checks"] = row.checks
        if row.held:
            entity["Held"] = True
        if row.shards:
            entity["Shards"] = row.shards
        return entity

    def put(self, row: DueEntry) -> None:
        self.table.upsert_entity(self._entity(row), mode=UpdateMode.REPLACE)  # the entry whole, as written

    def advance(self, shard: str, moves: list[tuple[str, DueEntry | None]], puts: Iterable[DueEntry] = ()) -> None:
        """Replace rows of one shard: each ``(old row key, new row or None)`` deletes the old row and writes
        the new one in the same batch transaction, so a job never has two live rows; ``puts`` are further
        rows written in the same batches (watchdog rows: no round trip of their own). Batches hold at most
        100 operations. A batch that fails because a row is already gone (another scan moved it) is applied
        row by row."""
        units: list[list[tuple[Any, ...]]] = []
        for old_key, new_row in moves:
            unit: list[tuple[Any, ...]] = [("delete", {"PartitionKey": shard, "RowKey": old_key})]
            if new_row is not None:
                unit.append(("upsert", self._entity(new_row), _REPLACE))
            units.append(unit)
        units.extend([("upsert", self._entity(row), _REPLACE)] for row in puts)
        batch: list[list[tuple[Any, ...]]] = []
        for unit in units:
            if sum(len(u) for u in batch) + len(unit) > MAX_BATCH:
                self._submit(shard, batch)
                batch = []
            batch.append(unit)
        if batch:
            self._submit(shard, batch)

    def _submit(self, shard: str, units: list[list[tuple[Any, ...]]]) -> None:
        try:
            self.table.submit_transaction([operation for unit in units for operation in unit])
        except (TableTransactionError, ResourceNotFoundError):
            for unit in units:
                for kind, entity, *_ in reversed(unit):  # the new row first, then the old one goes
                    if kind == "upsert":
                        self.table.upsert_entity(entity, mode=UpdateMode.REPLACE)
                    else:
                        self.delete(shard, entity["RowKey"])

    def delete(self, shard: str, row_key: str) -> None:
        with contextlib.suppress(ResourceNotFoundError):
            self.table.delete_entity(shard, row_key)

    def delete_many(self, rows: list[tuple[str, str]]) -> None:
        """Delete rows in batch transactions per shard (≤ 100 operations each); missing rows are fine."""
        by_shard: dict[str, list[str]] = {}
        for shard, key in rows:
            by_shard.setdefault(shard, []).append(key)
        for shard, keys in by_shard.items():
            delete_rows(self.table, shard, keys)

    def due_before(
        self, shard: str, before: str, after: str = "", limit: int | None = None, *, once: bool = False
    ) -> Iterator[DueEntry]:
        """Rows of ``shard`` whose row key sorts before ``before`` (a formatted due time) and after ``after``,
        oldest first, at most ``limit`` (read in pages of at most that many); ``once``: ``retry_total=0``."""
        query = "PartitionKey eq @p and RowKey lt @b" + (" and RowKey gt @a" if after else "")
        options = _tried(once)
        rows = self.table.query_entities(
            query,
            parameters={"p": shard, "b": before, "a": after} if after else {"p": shard, "b": before},
            results_per_page=min(limit, MAX_PAGE) if limit else None,
            **options,
        )
        for row in itertools.islice(rows, limit):
            yield DueEntry(
                shard=row["PartitionKey"],
                row_key=row["RowKey"],
                job_partition=row["JobPartition"],
                job_row=row["JobRow"],
                generation=_int(row["Generation"]),
                due=_aware(row["Due"]) or datetime.now(UTC),
                message=row.get("Message"),
                written_at=_aware(row.metadata.get("timestamp")),
                kind=str(row.get("Kind") or ""),
                checks=int(row.get("Checks") or 0),
                held=row.get("Held") is True,
                shards=int(row.get("Shards") or 0),
            )


# ------------------------------------------------------------------------------------------------- history

#: The property of an execution claim's row that holds the row key of the history entry written with it
#: (:meth:`~scheduler_core.adapters.azure.claims.TableClaims.record`).
HISTORY_KEY = "HistoryKey"
#: The properties of a history entry, in a ``JobHistory`` row and in a claim's row that holds one.
HISTORY_PROPERTIES = (
    "ExecutionId",
    "StartTime",
    "EndTime",
    "ExpectedExecutionTime",
    "ActionName",
    "Status",
    "Message",
    "RetryCount",
    "RepeatCount",
    "Trigger",
    "DueTime",
    "FlowWait",
)
#: The properties of a claim (what is left of a claim's row when its history entry is trimmed).
CLAIM_PROPERTIES = ("State", "Worker", "Token", "LeaseUntil", "ClaimedAt", "CompletedAt")


def _trigger(value: Any) -> Trigger:
    """A history row's ``Trigger`` (absent, as in every row written before it: ``Scheduled``)."""
    try:
        return Trigger(str(value)) if value else Trigger.SCHEDULED
    except ValueError:
        return Trigger.SCHEDULED


def _status(row: Any) -> HistoryStatus:
    """A history row's ``Status`` (one this code does not know counts as not failed)."""
    try:
        return HistoryStatus(str(row.get("Status")))
    except ValueError:
        return HistoryStatus.COMPLETED


@translated
class TableHistory:
    """``JobHistory``: PartitionKey = job identity, RowKey = inverted start time | execution id; and the
    entries written with their claims in ``Executions`` (same partition, the entry's row key in
    ``HistoryKey``): both are the job's history, listed together in row-key order (newest first)."""

    def __init__(self, table: Table, claims: Table | None = None) -> None:
        self.table = table
        self.claims = claims

    def add(self, job: JobRef, record: HistoryEntry) -> None:
        """Write a history row (an upsert: writing the same record again leaves one row)."""
        self.table.upsert_entity(self.entity(job, record))

    def add_if_absent(self, job: JobRef, record: HistoryEntry) -> bool:
        """Write a history row unless a row with its key exists (which is kept). Returns whether it wrote.
        (Only ``JobHistory`` is looked at: an entry written with its claim completed that claim, and a
        completed claim is never taken over, so no holder's entry written there is written again here.)"""
        try:
            self.table.create_entity(self.entity(job, record))
        except ResourceExistsError:
            return False
        return True

    @staticmethod
    def entity(job: JobRef, record: HistoryEntry) -> dict[str, Any]:
        """The table entity of a history record."""
        entity: dict[str, Any] = {
            "PartitionKey": job.identity,
            "RowKey": record.row_key,
            "ExecutionId": record.execution_id,
            "StartTime": record.start_time,
            "ActionName": record.action_name,
            "Status": record.status,
            "Message": record.message,
            "RetryCount": record.retry_count,
            "RepeatCount": record.repeat_count,
        }
        if record.end_time is not None:
            entity["EndTime"] = record.end_time
        if record.expected_execution_time is not None:
            entity["ExpectedExecutionTime"] = record.expected_execution_time
        if record.trigger is not Trigger.SCHEDULED:  # the default is not written: such a row is as it always was
            entity["Trigger"] = str(record.trigger)
        if record.due_time is not None:
            entity["DueTime"] = record.due_time
        if record.flow_wait is not None:
            entity["FlowWait"] = record.flow_wait.total_seconds()  # a double: seconds
        return entity

    @staticmethod
    def _record(row: Any, key: str) -> HistoryEntry:
        return HistoryEntry(
            execution_id=row["ExecutionId"],
            row_key=key,
            start_time=_aware(row["StartTime"]) or datetime.now(UTC),
            end_time=_aware(row.get("EndTime")),
            expected_execution_time=_aware(row.get("ExpectedExecutionTime")),
            action_name=ActionName(row["ActionName"]),
            status=HistoryStatus(row["Status"]),
            message=row.get("Message", ""),
            retry_count=int(row.get("RetryCount", 0)),
            repeat_count=int(row.get("RepeatCount", 0)),
            trigger=_trigger(row.get("Trigger")),
            due_time=_aware(row.get("DueTime")),
            flow_wait=timedelta(seconds=float(row["FlowWait"])) if row.get("FlowWait") is not None else None,
        )

    def _claim_rows(self, job: JobRef, select: list[str] | None = None, **options: Any) -> list[Any]:
        """The rows of the job's claims that hold a history entry (history keys start with a digit); ``options``:
        the client's per-call options."""
        if self.claims is None:
            return []
        rows = self.claims.query_entities(
            f"PartitionKey eq @p and {HISTORY_KEY} ge @lo",
            parameters={"p": job.identity, "lo": "0"},
            select=select,
            **options,
        )
        return [row for row in rows if row.get(HISTORY_KEY)]

    def list(self, job: JobRef, *, once: bool = False) -> Iterator[HistoryEntry]:
        """Newest first: the ``JobHistory`` rows and the entries held by claims, merged by row key; ``once``:
        ``retry_total=0``."""
        options = _tried(once)
        entries: dict[str, HistoryEntry] = {}
        for row in self._claim_rows(job, **options):
            entries[row[HISTORY_KEY]] = self._record(row, row[HISTORY_KEY])
        for row in self.table.query_entities("PartitionKey eq @p", parameters={"p": job.identity}, **options):
            entries.setdefault(row["RowKey"], self._record(row, row["RowKey"]))
        for key in sorted(entries):
            yield entries[key]

    def trim(self, job: JobRef, retention: HistoryRetention, now: datetime) -> int:
        """Delete the entries ``retention`` removes at ``now``. Returns how many. An entry held by a claim is
        taken off the claim's row, which stays (done) until the claims are trimmed. (An entry whose start
        time cannot be read counts as started ``now``.)"""
        found: dict[str, tuple[datetime, HistoryStatus, str | None]] = {}  # key -> (start, status, claim row)
        for row in self._claim_rows(job, select=["RowKey", HISTORY_KEY, "StartTime", "Status"]):
            found[row[HISTORY_KEY]] = (_aware(row.get("StartTime")) or now, _status(row), str(row["RowKey"]))
        for row in self.table.query_entities(
            "PartitionKey eq @p", parameters={"p": job.identity}, select=["RowKey", "StartTime", "Status"]
        ):
            found.setdefault(row["RowKey"], (_aware(row.get("StartTime")) or now, _status(row), None))
        doomed = retention.doomed(((key, start, status) for key, (start, status, _) in found.items()), now)
        in_history = [key for key in doomed if found[key][2] is None]
        in_claims = [claim for key in doomed if (claim := found[key][2]) is not None]
        self._forget(job, in_history, in_claims)
        return len(doomed)

    def delete_all(self, job: JobRef) -> None:
        keys = [
            row["RowKey"]
            for row in self.table.query_entities(
                "PartitionKey eq @p", parameters={"p": job.identity}, select=["RowKey"]
            )
        ]
        claims = [str(row["RowKey"]) for row in self._claim_rows(job, select=["RowKey", HISTORY_KEY])]
        self._forget(job, keys, claims)

    def _forget(self, job: JobRef, history_keys: builtins.list[str], claim_rows: builtins.list[str]) -> None:
        """Delete ``JobHistory`` rows, and take the entries off claim rows (their claims stay: a late
        delivery of a done attempt is still dropped)."""
        delete_rows(self.table, job.identity, history_keys)
        if not claim_rows or self.claims is None:
            return
        claims = self.claims
        for start in range(0, len(claim_rows), MAX_BATCH):
            chunk = claim_rows[start : start + MAX_BATCH]
            rows = claims.query_entities(
                "PartitionKey eq @p and RowKey ge @lo and RowKey le @hi",
                parameters={"p": job.identity, "lo": min(chunk), "hi": max(chunk)},
                select=["RowKey", *CLAIM_PROPERTIES],
            )
            wanted = set(chunk)
            stripped: builtins.list[tuple[dict[str, Any], dict[str, Any]]] = [
                (
                    {"PartitionKey": job.identity, "RowKey": row["RowKey"]}
                    | {name: row[name] for name in CLAIM_PROPERTIES if name in row},
                    {"mode": UpdateMode.REPLACE, "etag": _etag(row), "match_condition": MatchConditions.IfNotModified},
                )
                for row in rows
                if row["RowKey"] in wanted
            ]
            try:
                claims.submit_transaction([("update", row, options) for row, options in stripped])
            except TableTransactionError:  # one changed or went meanwhile: the others one by one
                for row, options in stripped:
                    with contextlib.suppress(ResourceNotFoundError, ResourceModifiedError):
                        claims.update_entity(row, **options)


def table_stores(service: TableService, settings: Settings, history: TableService | None = None) -> Stores:
    """The stores of one deployment, over the tables named by ``settings``; ``history``: the service of the
    history tables' own account (``Settings.history_storage``), None: ``service``'s."""

    def table(base: str, owner: TableService = service) -> Table:
        return owner.get_table_client(settings.table_name(base))

    history_tables = history or service
    return Stores(
        collections=TableCollections(table(COLLECTIONS_TABLE)),
        jobs=TableJobs(table(JOBS_TABLE)),
        due=TableDueIndex(table(DUE_INDEX_TABLE)),
        history=TableHistory(table(HISTORY_TABLE, history_tables), table(CLAIMS_TABLE, history_tables)),
    )
