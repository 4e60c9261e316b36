"""The scheduler's management operations: job collections and jobs, over the table stores.

Plain Python (no HTTP, no Azure Functions). Every write validates fully before it touches storage, so a
rejected request changes nothing. Job writes follow the design's order: the due-index row of the new
generation first, then the job (ETag-guarded), then the old due-index row is deleted. The dispatcher
ignores rows whose generation is not the job's, so a crash between two writes loses nothing and fires
nothing stale.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_core import definitions, job_slots
from scheduler_core.definitions import CollectionSpec, JobSpec
from scheduler_core.errors import (
    ConflictError,
    NotFoundError,
    PreconditionFailedError,
    QuotaExceededError,
    SchedulerError,
    ValidationError,
)
from scheduler_core.job_slots import JobSlots
from scheduler_core.recurrence import compile_schedule
from scheduler_core.schedules import with_next_execution
from scheduler_core.storage.keys import CollectionRef, JobRef, due_row_key, shard_of
from scheduler_core.storage.tables import (
    DELETED,
    CollectionRecord,
    DueRow,
    DueSlot,
    HistoryRecord,
    JobRecord,
    Stores,
)

log = logging.getLogger("scheduler_core.service")

FINAL_STATES = frozenset({"Completed", "Faulted"})
#: How long after the last write of a collection's job counter another instance may still create jobs
#: with slots it reserved ahead, plus a margin for clocks and for job writes in flight.
DELETE_SETTLE = timedelta(seconds=job_slots.PREFETCH_TTL + 2)
#: How often a write is retried when another writer changed the row between our read and our write
#: (only when the client sent no If-Match: with If-Match the client gets 412 instead).
WRITE_ATTEMPTS = 4
#: Attempts of an ETag-guarded counter update under contention.
COUNTER_ATTEMPTS = 50
#: Free collections: retries at most hourly (plan limit).
FREE_MIN_RETRY_INTERVAL = 3600.0
#: The retry interval of a Free collection's job that names none.
FREE_DEFAULT_RETRY_INTERVAL = "PT1H"
#: Subscriptions may hold at most one Free collection (plan limit).
MAX_FREE_COLLECTIONS = 1

Clock = Callable[[], datetime]
RunRequest = Callable[[JobRecord], None]
DueSoon = Callable[[JobRecord], None]


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _collection_not_found(ref: CollectionRef) -> NotFoundError:
    return NotFoundError(f"job collection '{ref.name}' was not found in resource group '{ref.resource_group}'")


def check_if_match(etag: str | None, if_match: str | None, what: str) -> None:
    """Honour an ``If-Match`` header against the stored ETag (``None`` = the resource does not exist)."""
    if if_match is None:
        return
    if etag is None:
        raise PreconditionFailedError(f"If-Match was given but the {what} does not exist")
    if if_match.strip() != "*" and if_match.strip() != etag:
        raise PreconditionFailedError(f"If-Match does not match the current ETag of the {what}")


class SchedulerService:
    """Management operations. ``clock`` is injectable; ``request_run`` starts an immediate execution."""

    def __init__(
        self,
        stores: Stores,
        shards: int,
        clock: Clock = _utcnow,
        request_run: RunRequest | None = None,
        due_soon: DueSoon | None = None,
        lookahead: timedelta = timedelta(seconds=60),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.stores = stores
        self.shards = shards
        self.clock = clock
        self._request_run = request_run
        self._due_soon = due_soon
        self.lookahead = lookahead
        self.sleep = sleep
        self.slots = JobSlots(stores, clock)

    # ------------------------------------------------------------------------------------- collections

    def get_collection(self, ref: CollectionRef) -> CollectionRecord:
        record = self.stores.collections.get(ref)
        if record is None or record.deleting:
            raise _collection_not_found(ref)
        return record

    def list_collections(self, subscription: str, resource_group: str | None = None) -> list[CollectionRecord]:
        return [c for c in self.stores.collections.list(subscription, resource_group) if not c.deleting]

    def put_collection(
        self, ref: CollectionRef, body: Mapping[str, Any], if_match: str | None = None
    ) -> tuple[CollectionRecord, bool]:
        spec = definitions.parse_collection(body, name=ref.name)
        for _ in range(COUNTER_ATTEMPTS):
            existing = self.stores.collections.get(ref)
            if existing is not None and existing.deleting:
                raise ConflictError(
                    f"job collection '{ref.name}' is being deleted; send DELETE again to finish, then create it"
                )
            check_if_match(existing.etag if existing else None, if_match, "job collection")
            try:
                return self._save_collection(ref, spec, existing), existing is None
            except (PreconditionFailedError, ConflictError):
                if if_match is not None:
                    raise
        raise ConflictError(f"job collection '{ref.name}' is being changed by many requests; retry")

    def patch_collection(
        self, ref: CollectionRef, body: Mapping[str, Any], if_match: str | None = None
    ) -> CollectionRecord:
        for _ in range(COUNTER_ATTEMPTS):
            existing = self.get_collection(ref)
            check_if_match(existing.etag, if_match, "job collection")
            current = {"location": existing.location, "tags": existing.tags, "properties": existing.properties}
            spec = definitions.parse_collection(definitions.merge_collection_patch(current, body), name=ref.name)
            try:
                return self._save_collection(ref, spec, existing)
            except PreconditionFailedError:
                if if_match is not None:
                    raise
        raise ConflictError(f"job collection '{ref.name}' is being changed by many requests; retry")

    def _save_collection(
        self, ref: CollectionRef, spec: CollectionSpec, existing: CollectionRecord | None
    ) -> CollectionRecord:
        if spec.sku == "Free" and (existing is None or existing.properties["sku"]["name"] != "Free"):
            others = [c for c in self.list_collections(ref.subscription) if c.properties["sku"]["name"] == "Free"]
            if len(others) >= MAX_FREE_COLLECTIONS:
                raise QuotaExceededError(
                    f"properties.sku.name: subscription '{ref.subscription}' already has a Free job collection "
                    f"(the Free plan allows {MAX_FREE_COLLECTIONS})"
                )
        if existing is not None:
            self._check_jobs_fit(ref, spec)
        record = CollectionRecord(
            ref=existing.ref if existing else ref,
            location=spec.location,
            tags=spec.tags,
            properties=spec.properties,
            created_at=existing.created_at if existing else self.clock(),
            etag=existing.etag if existing else "",
            job_count=existing.job_count if existing else 0,
        )
        saved = self.stores.collections.save(record, create=existing is None)
        self.slots.forget(saved.ref)
        if existing is not None and existing.state != spec.state and spec.state in ("Enabled", "Disabled"):
            self._set_jobs_state(saved.ref, spec.state)
        return saved

    def _check_jobs_fit(self, ref: CollectionRef, spec: CollectionSpec) -> None:
        """A collection update must keep every existing job within the new plan and quota."""
        jobs = self.stores.jobs.list(ref)
        if len(jobs) > spec.max_job_count:
            raise QuotaExceededError(
                f"properties.quota.maxJobCount: the collection has {len(jobs)} jobs, more than {spec.max_job_count}"
            )
        for job in jobs:
            self._check_job_against_collection(job.ref, self._spec_of(job), spec)

    def delete_collection(self, ref: CollectionRef, if_match: str | None = None) -> None:
        """Delete a collection with its jobs, their due-index rows and their history.

        The collection is first marked ``Deleted``: from then on it is not found, and its new ETag makes
        the next job-counter write of every instance fail, so no job can be reserved in it any more. Then
        its jobs are deleted. When its counter was written so recently that another instance may still
        hold job slots reserved ahead (:mod:`scheduler_core.job_slots`), the jobs are listed and deleted
        again once those slots have expired; then the collection row goes. A deletion stopped half-way
        (the process died) is finished by the next DELETE, or by the daily cleanup."""
        last_write: datetime | None = None
        for _ in range(COUNTER_ATTEMPTS):
            existing = self.stores.collections.get(ref)
            if existing is None:
                raise _collection_not_found(ref)
            last_write = existing.modified_at
            if existing.deleting:  # a deletion that stopped half-way: finish it
                break
            check_if_match(existing.etag, if_match, "job collection")
            try:
                marked = replace(existing, properties={**existing.properties, "state": DELETED})
                existing = self.stores.collections.save(marked, create=False)
                break
            except PreconditionFailedError:
                if if_match is not None:
                    raise
        else:
            raise ConflictError(f"job collection '{ref.name}' is being changed by many requests; retry")
        self.slots.forget(existing.ref, give_back=False)
        self._remove_jobs(existing.ref)
        settled = (last_write or self.clock()) + DELETE_SETTLE
        if settled > self.clock():
            self.sleep((settled - self.clock()).total_seconds())
            self._remove_jobs(existing.ref)  # jobs created with slots reserved ahead before the mark
        self.stores.collections.delete(existing.ref)

    def _remove_jobs(self, ref: CollectionRef) -> None:
        for job in self.stores.jobs.list(ref):
            self.stores.remove_job(job)

    def set_collection_state(self, ref: CollectionRef, state: str) -> None:
        """Enable or disable a collection and every job in it (final jobs stay as they are)."""
        for _ in range(COUNTER_ATTEMPTS):
            existing = self.get_collection(ref)
            properties = {**existing.properties, "state": state}
            try:
                saved = self.stores.collections.save(replace(existing, properties=properties), create=False)
            except PreconditionFailedError:
                continue
            self.slots.forget(saved.ref)
            self._set_jobs_state(saved.ref, state)
            return
        raise ConflictError(f"job collection '{ref.name}' is being changed by many requests; retry")

    def _set_jobs_state(self, ref: CollectionRef, state: str) -> None:
        for job in self.stores.jobs.list(ref):
            if job.state in FINAL_STATES or job.state == state:
                continue
            for _ in range(WRITE_ATTEMPTS):
                current = self.stores.jobs.get(job.ref)
                if current is None or current.state in FINAL_STATES or current.state == state:
                    break
                properties = {**current.properties, "state": state}
                try:
                    self._write_job(current.ref, self._spec_of(replace(current, properties=properties)), current)
                    break
                except (PreconditionFailedError, ConflictError):
                    continue

    # -------------------------------------------------------------------------------------------- jobs

    def _stored_job(self, ref: JobRef) -> JobRecord:
        record = self.stores.jobs.get(ref)
        if record is None:
            raise NotFoundError(f"job '{ref.name}' was not found in job collection '{ref.collection.name}'")
        return record

    def get_job(self, ref: JobRef) -> JobRecord:
        """The job with its status as of now (next execution time computed from its schedule)."""
        return with_next_execution(self._stored_job(ref), self.clock())

    def list_jobs(self, ref: CollectionRef) -> list[JobRecord]:
        collection = self.get_collection(ref)
        now = self.clock()
        return [with_next_execution(job, now) for job in self.stores.jobs.list(collection.ref)]

    def put_job(self, ref: JobRef, body: Mapping[str, Any], if_match: str | None = None) -> tuple[JobRecord, bool]:
        """Create or replace a job. Returns the stored job and whether it was created.

        A create costs three storage round trips: the ETag-guarded reservation on the collection row
        (which also proves the collection is still the one this process last saw, so it need not be read
        again), the due-index row, and the job row."""
        collection = self.slots.known(ref.collection) or self.get_collection(ref.collection)
        limits = self._collection_spec(collection)
        ref = JobRef(collection.ref, ref.name)
        for attempt in range(WRITE_ATTEMPTS):
            # Hot path: most PUTs create, so the first attempt does not read the job; a create that finds
            # the job exists (or a full collection) goes round again and reads it.
            optimistic = attempt == 0 and if_match is None
            existing = None if optimistic else self.stores.jobs.get(ref)
            check_if_match(existing.etag if existing else None, if_match, "job")
            self._refuse_final(existing)
            try:
                spec = definitions.parse_job(body, previous=self._spec_of(existing) if existing else None)
            except ValidationError:
                if optimistic:  # may be a replace that keeps a stored secret: read the job and parse again
                    continue
                raise
            spec = self._plan_defaults(spec, body, limits)
            self._check_job_against_collection(ref, spec, limits)
            if existing is None:
                reserved = self.slots.reserve(collection, limits)
                if reserved is None:  # the collection changed since this process last saw it: start again
                    collection = self.get_collection(ref.collection)
                    limits = self._collection_spec(collection)
                    continue
                if not reserved:
                    if optimistic:
                        continue
                    raise QuotaExceededError(
                        f"job collection '{collection.ref.name}' already has {limits.max_job_count} jobs, "
                        f"its quota.maxJobCount"
                    )
                try:
                    return self._write_job(ref, spec, None), True
                except ConflictError:
                    self.slots.release(collection.ref)
                    continue
            try:
                return self._write_job(ref, spec, existing), False
            except (PreconditionFailedError, ConflictError):
                if if_match is not None:
                    raise
        raise ConflictError(f"job '{ref.name}' is being changed by other requests; retry")

    def patch_job(self, ref: JobRef, body: Mapping[str, Any], if_match: str | None = None) -> JobRecord:
        """Merge ``body`` into the stored job (JSON merge semantics) and store the result."""
        collection = self.get_collection(ref.collection)
        ref = JobRef(collection.ref, ref.name)
        for _ in range(WRITE_ATTEMPTS):
            existing = self._stored_job(ref)
            check_if_match(existing.etag, if_match, "job")
            self._refuse_final(existing)
            merged = definitions.merge_patch({"properties": existing.properties}, body)
            spec = definitions.parse_job(merged, previous=self._spec_of(existing))
            spec = self._plan_defaults(spec, merged, self._collection_spec(collection))
            self._check_job_against_collection(ref, spec, self._collection_spec(collection))
            try:
                return self._write_job(ref, spec, existing)
            except (PreconditionFailedError, ConflictError):
                if if_match is not None:
                    raise
        raise ConflictError(f"job '{ref.name}' is being changed by other requests; retry")

    def delete_job(self, ref: JobRef, if_match: str | None = None) -> None:
        existing = self._stored_job(ref)
        check_if_match(existing.etag, if_match, "job")
        self.stores.jobs.delete(existing.ref, etag=existing.etag if if_match else None)
        self.stores.remove_job(existing, job_row=False)
        self.slots.release(existing.ref.collection)

    def run_job(self, ref: JobRef) -> None:
        """Fire the job now, outside its schedule (its schedule is not changed)."""
        job = self._stored_job(ref)
        if self._request_run is None:
            raise SchedulerError("running jobs on demand is not available in this deployment")
        self._request_run(job)

    def list_history(self, ref: JobRef) -> list[HistoryRecord]:
        job = self._stored_job(ref)
        return list(self.stores.history.list(job.ref))

    # ----------------------------------------------------------------------------------------- helpers

    @staticmethod
    def _refuse_final(existing: JobRecord | None) -> None:
        if existing is not None and existing.state in FINAL_STATES:
            raise ConflictError(
                f"job '{existing.ref.name}' is {existing.state}; a finished job cannot be updated, only deleted"
            )

    @staticmethod
    def _spec_of(job: JobRecord) -> JobSpec:
        return definitions.parse_job(
            {"properties": definitions.restore_secrets(job.properties, job.secrets)}, validate_limits=False
        )

    @staticmethod
    def _collection_spec(collection: CollectionRecord) -> CollectionSpec:
        body = {"location": collection.location, "tags": collection.tags, "properties": collection.properties}
        return definitions.parse_collection(body, name=collection.ref.name)

    @staticmethod
    def _plan_defaults(spec: JobSpec, body: Mapping[str, Any], limits: CollectionSpec) -> JobSpec:
        """In a Free collection a retry interval the client did not give is an hour (the plan's
        minimum), not the usual 30 seconds, so that a job without a retry policy is accepted there."""
        if limits.sku != "Free":
            return spec
        given = body.get("properties") if isinstance(body, Mapping) else None
        given_action = given.get("action") if isinstance(given, Mapping) else None
        action = dict(spec.properties.get("action") or {})
        changed = False
        for key in ("main", "errorAction"):
            target = action if key == "main" else dict(action.get("errorAction") or {})
            source = given_action if key == "main" else (given_action or {}).get("errorAction")
            policy = target.get("retryPolicy")
            if not target or not isinstance(policy, Mapping) or policy.get("retryType") == "None":
                continue
            given_policy = source.get("retryPolicy") if isinstance(source, Mapping) else None
            if isinstance(given_policy, Mapping) and "retryInterval" in given_policy:
                continue
            target["retryPolicy"] = {**policy, "retryInterval": FREE_DEFAULT_RETRY_INTERVAL}
            changed = True
            if key == "errorAction":
                action["errorAction"] = target
        if not changed:
            return spec
        return replace(spec, properties={**spec.properties, "action": action})

    @staticmethod
    def _check_job_against_collection(ref: JobRef, spec: JobSpec, limits: CollectionSpec) -> None:
        label = f"job '{ref.name}'" if ref.name else "the job"
        if definitions.recurrence_exceeds_quota(spec.recurrence, limits.max_recurrence):
            frequency, interval = limits.max_recurrence
            raise QuotaExceededError(
                f"properties.recurrence: {label} recurs more often than the collection's quota.maxRecurrence "
                f"allows (at most once every {interval} {frequency.lower()}(s))"
            )
        if limits.sku == "Free":
            if spec.uses_authentication:
                raise QuotaExceededError(
                    f"properties.action.request.authentication: {label} uses outbound authentication, "
                    "which the Free plan does not allow"
                )
            if any(seconds < FREE_MIN_RETRY_INTERVAL for seconds in definitions.retry_intervals(spec)):
                raise QuotaExceededError(
                    f"properties.action.retryPolicy.retryInterval: {label} retries more often than hourly, "
                    "which the Free plan does not allow"
                )

    def _write_job(self, ref: JobRef, spec: JobSpec, existing: JobRecord | None) -> JobRecord:
        now = self.clock()
        generation = existing.generation + 1 if existing else 1
        state = spec.state
        next_time = None
        if state == "Enabled":
            next_time = compile_schedule(spec.start_time, spec.recurrence, now).next_occurrence(now)
            if next_time is None:
                state = "Completed"
        due: DueSlot | None = None
        if next_time is not None:
            shard = shard_of(ref.identity, self.shards)
            row_key = due_row_key(next_time, ref.identity, generation)
            self.stores.due.put(DueRow(shard, row_key, ref.partition_key, ref.row_key, generation, next_time))
            due = DueSlot(shard, row_key)
        record = JobRecord(
            ref=ref,
            properties={**spec.properties, "state": state},
            secrets=dict(spec.secrets),
            state=state,
            generation=generation,
            defined_at=now,
            created_at=existing.created_at if existing else now,
            execution_count=existing.execution_count if existing else 0,
            failure_count=existing.failure_count if existing else 0,
            faulted_count=existing.faulted_count if existing else 0,
            last_execution_time=existing.last_execution_time if existing else None,
            next_execution_time=next_time,
            due=due,
            ended_at=now if state in FINAL_STATES else None,
        )
        try:
            saved = self.stores.jobs.save(record, create=existing is None, etag=existing.etag if existing else None)
        except SchedulerError:
            if due is not None:
                self.stores.due.delete(due.shard, due.row_key)
            raise
        if existing is not None and existing.due is not None and existing.due != due:
            self.stores.due.delete(existing.due.shard, existing.due.row_key)
        if next_time is not None and self._due_soon is not None and next_time - now < self.lookahead:
            # The scan that covers this occurrence has already run: dispatch it now, at its second.
            self._due_soon(saved)
        return saved
