"""The scheduler's management operations: job collections and jobs, over the table stores.

Plain Python (no HTTP, no Azure Functions). Every write validates fully before it touches storage, so a
rejected request changes nothing. Job writes follow the design's order: the due-index row of the new
generation first, then the job (ETag-guarded), then the old due-index row is deleted. The dispatcher
ignores rows whose generation is not the job's, so a crash between two writes loses nothing and fires
nothing stale.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from scheduler_core import definitions, job_slots
from scheduler_core.definitions import CollectionSpec, JobSpec
from scheduler_core.errors import (
    ConflictError,
    EtagMismatchError,
    NotFoundError,
    PreconditionFailedError,
    QuotaExceededError,
    SchedulerError,
    StorageError,
    ValidationError,
    WriteRaceError,
)
from scheduler_core.identity import IdentityScope
from scheduler_core.job_slots import JobSlots
from scheduler_core.model import CollectionState, DueEntry, DueSlot, HistoryEntry, Job, JobCollection, JobState
from scheduler_core.ports import Stores
from scheduler_core.recurrence import compile_schedule
from scheduler_core.schedules import next_unrun, with_next_execution
from scheduler_core.storage.keys import CollectionRef, JobRef, due_row_key, shard_of

log = logging.getLogger("scheduler_core.service")

#: How long after the last write of a collection's job counter another instance may still create jobs
#: with slots it reserved ahead, plus a margin for clocks and for job writes in flight.
DELETE_SETTLE = timedelta(seconds=job_slots.PREFETCH_TTL + 2)
#: How often an operation starts over when another writer changed a row between its read and its write
#: (only when the client sent no If-Match: with If-Match the client gets 412 instead). Between attempts
#: it waits a random time up to :data:`RACE_BACKOFF` doubled per attempt, at most :data:`RACE_BACKOFF_CAP`.
RACE_ATTEMPTS = 30
RACE_BACKOFF = 0.005
RACE_BACKOFF_CAP = 0.25
#: Free collections: retries at most hourly (plan limit).
FREE_MIN_RETRY_INTERVAL = 3600.0
#: The retry interval of a Free collection's job that names none (written in the job's duration style).
FREE_DEFAULT_RETRY_INTERVAL = timedelta(hours=1)
#: Subscriptions may hold at most one Free collection (plan limit).
MAX_FREE_COLLECTIONS = 1

#: The parts of a job's definition that make its series: an edit that keeps them keeps the series (its
#: occurrences so far still count towards ``count``); ``count`` and ``endTime`` bound the series.
SERIES_FIELDS = ("frequency", "interval", "schedule", "timeZone")

T = TypeVar("T")
Clock = Callable[[], datetime]
RunRequest = Callable[[Job], None]
DueSoon = Callable[[Job], None]


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _collection_not_found(ref: CollectionRef) -> NotFoundError:
    return NotFoundError(f"job collection '{ref.name}' was not found in resource group '{ref.resource_group}'")


class _StartOver(Exception):
    """This attempt must start over from a fresh read (raised inside :meth:`SchedulerService._retrying`)."""


def _series(properties: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """What identifies a job's series (``None``: the job does not recur, so it has no series to keep)."""
    recurrence = properties.get("recurrence")
    if not isinstance(recurrence, Mapping):
        return None
    return (properties.get("startTime"), *(recurrence.get(name) for name in SERIES_FIELDS))


def _surely_not_written(error: BaseException) -> bool:
    """Whether a failed storage write certainly changed nothing (the store refused it), as opposed to a
    failure after which the write may have landed (a cut connection, a timeout, a 5xx)."""
    if isinstance(error, WriteRaceError):
        return True
    return isinstance(error, StorageError) and error.surely_not_applied


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
        identity: IdentityScope | None = None,
    ) -> None:
        self.stores = stores
        self.identity = identity
        self.shards = shards
        self.clock = clock
        self._request_run = request_run
        self._due_soon = due_soon
        self.lookahead = lookahead
        self.sleep = sleep
        self.slots = JobSlots(stores, clock)

    # ------------------------------------------------------------------------------------- collections

    def get_collection(self, ref: CollectionRef) -> JobCollection:
        record = self.stores.collections.get(ref)
        if record is None or record.deleting:
            raise _collection_not_found(ref)
        return record

    def list_collections(self, subscription: str, resource_group: str | None = None) -> list[JobCollection]:
        return [c for c in self.stores.collections.list(subscription, resource_group) if not c.deleting]

    def put_collection(
        self, ref: CollectionRef, body: Mapping[str, Any], if_match: str | None = None
    ) -> tuple[JobCollection, bool]:
        spec = definitions.parse_collection(body, name=ref.name)

        def attempt() -> tuple[JobCollection, bool]:
            existing = self.stores.collections.get(ref)
            if existing is not None and existing.deleting:
                raise ConflictError(
                    f"job collection '{ref.name}' is being deleted; send DELETE again to finish, then create it"
                )
            check_if_match(existing.etag if existing else None, if_match, "job collection")
            return self._save_collection(ref, spec, existing), existing is None

        return self._retrying(f"job collection '{ref.name}'", if_match, attempt)

    def patch_collection(
        self, ref: CollectionRef, body: Mapping[str, Any], if_match: str | None = None
    ) -> JobCollection:
        def attempt() -> JobCollection:
            existing = self.get_collection(ref)
            check_if_match(existing.etag, if_match, "job collection")
            current = {"location": existing.location, "tags": existing.tags, "properties": existing.properties}
            spec = definitions.parse_collection(definitions.merge_collection_patch(current, body), name=ref.name)
            return self._save_collection(ref, spec, existing)

        return self._retrying(f"job collection '{ref.name}'", if_match, attempt)

    def _save_collection(
        self, ref: CollectionRef, spec: CollectionSpec, existing: JobCollection | None
    ) -> JobCollection:
        if spec.sku == "Free" and (existing is None or existing.properties["sku"]["name"] != "Free"):
            others = [c for c in self.list_collections(ref.subscription) if c.properties["sku"]["name"] == "Free"]
            if len(others) >= MAX_FREE_COLLECTIONS:
                raise QuotaExceededError(
                    f"properties.sku.name: subscription '{ref.subscription}' already has a Free job collection "
                    f"(the Free plan allows {MAX_FREE_COLLECTIONS})"
                )
        if existing is not None:
            self._check_jobs_fit(ref, spec)
        record = JobCollection(
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
        if (
            existing is not None
            and existing.state != spec.state
            and spec.state in (CollectionState.ENABLED, CollectionState.DISABLED)
        ):
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

        def mark() -> tuple[JobCollection, datetime | None]:
            existing = self.stores.collections.get(ref)
            if existing is None:
                raise _collection_not_found(ref)
            if existing.deleting:  # a deletion that stopped half-way: finish it
                return existing, existing.modified_at
            check_if_match(existing.etag, if_match, "job collection")
            marked = replace(existing, properties={**existing.properties, "state": CollectionState.DELETED})
            return self.stores.collections.save(marked, create=False), existing.modified_at

        existing, last_write = self._retrying(f"job collection '{ref.name}'", if_match, mark)
        self.slots.forget(existing.ref, give_back=False)
        self._remove_jobs(existing.ref)
        settled = (last_write or self.clock()) + DELETE_SETTLE
        if settled > self.clock():
            self.sleep((settled - self.clock()).total_seconds())
            self._remove_jobs(existing.ref)  # jobs created with slots reserved ahead before the mark
        self.stores.collections.delete(existing.ref)

    def _remove_jobs(self, ref: CollectionRef) -> None:
        for job in self.stores.jobs.list(ref):
            self.stores.remove_job(job, any_version=True)

    def set_collection_state(self, ref: CollectionRef, state: str) -> None:
        """Enable or disable a collection and every job in it (final jobs stay as they are)."""

        def attempt() -> JobCollection:
            existing = self.get_collection(ref)
            properties = {**existing.properties, "state": state}
            return self.stores.collections.save(replace(existing, properties=properties), create=False)

        saved = self._retrying(f"job collection '{ref.name}'", None, attempt)
        self.slots.forget(saved.ref)
        self._set_jobs_state(saved.ref, state)

    def _set_jobs_state(self, ref: CollectionRef, state: str) -> None:
        for job in self.stores.jobs.list(ref):
            if job.state.final or job.state == state:
                continue

            def attempt(job_ref: JobRef = job.ref) -> None:
                current = self.stores.jobs.get(job_ref)
                if current is None or current.state.final or current.state == state:
                    return
                properties = {**current.properties, "state": state}
                self._write_job(current.ref, self._spec_of(replace(current, properties=properties)), current)

            self._retrying(f"job '{job.ref.name}'", None, attempt)

    # -------------------------------------------------------------------------------------------- jobs

    @staticmethod
    def _job_not_found(ref: JobRef) -> NotFoundError:
        return NotFoundError(f"job '{ref.name}' was not found in job collection '{ref.collection.name}'")

    def _stored_job(self, ref: JobRef) -> Job:
        record = self.stores.jobs.get(ref)
        if record is None:
            raise self._job_not_found(ref)
        return record

    def get_job(self, ref: JobRef) -> Job:
        """The job with its status as of now (next execution time computed from its schedule)."""
        return with_next_execution(self._stored_job(ref), self.clock())

    def list_jobs(self, ref: CollectionRef) -> list[Job]:
        collection = self.get_collection(ref)
        now = self.clock()
        return [with_next_execution(job, now) for job in self.stores.jobs.list(collection.ref)]

    def put_job(self, ref: JobRef, body: Mapping[str, Any], if_match: str | None = None) -> tuple[Job, bool]:
        """Create or replace a job. Returns the stored job and whether it was created.

        A create costs three storage round trips: the ETag-guarded reservation on the collection row
        (which also proves the collection is still the one this process last saw, so it need not be read
        again), the due-index row, and the job row. Two unconditional PUTs of one name racing each other
        are a create and a replace, or two replaces: the last writer wins."""
        collection = self.slots.known(ref.collection) or self.get_collection(ref.collection)
        ref = JobRef(collection.ref, ref.name)
        first = True

        def attempt() -> tuple[Job, bool]:
            nonlocal collection, first
            # Hot path: most PUTs create, so the first attempt does not read the job; a create that finds
            # the job exists (or a full collection) starts over and reads it.
            optimistic, first = first and if_match is None, False
            existing = None if optimistic else self.stores.jobs.get(ref)
            check_if_match(existing.etag if existing else None, if_match, "job")
            self._refuse_final(existing)
            try:
                spec = definitions.parse_job(
                    body, previous=self._spec_of(existing) if existing else None, identity=self.identity
                )
            except ValidationError:
                if optimistic:  # may be a replace that keeps a stored secret: read the job and parse again
                    raise _StartOver from None
                raise
            limits = self._collection_spec(collection)
            spec = self._plan_defaults(spec, body, limits)
            self._check_job_against_collection(ref, spec, limits)
            if existing is not None:
                return self._write_job(ref, spec, existing), False
            reserved = self.slots.reserve(collection, limits)
            if reserved is None:  # the collection changed since this process last saw it: start again
                collection = self.get_collection(ref.collection)
                raise _StartOver
            if not reserved:
                if optimistic:
                    raise _StartOver
                raise QuotaExceededError(
                    f"job collection '{ref.collection.name}' already has {limits.max_job_count} jobs, "
                    f"its quota.maxJobCount"
                )
            return self._write_job(ref, spec, None, not_written=lambda: self.slots.release(ref.collection)), True

        return self._retrying(f"job '{ref.name}'", if_match, attempt)

    def patch_job(self, ref: JobRef, body: Mapping[str, Any], if_match: str | None = None) -> Job:
        """Merge ``body`` into the stored job (JSON merge semantics) and store the result."""
        collection = self.get_collection(ref.collection)
        ref = JobRef(collection.ref, ref.name)
        limits = self._collection_spec(collection)

        def attempt() -> Job:
            existing = self._stored_job(ref)
            check_if_match(existing.etag, if_match, "job")
            self._refuse_final(existing)
            merged = definitions.merge_patch({"properties": existing.properties}, body)
            spec = definitions.parse_job(merged, previous=self._spec_of(existing), identity=self.identity)
            spec = self._plan_defaults(spec, merged, limits)
            self._check_job_against_collection(ref, spec, limits)
            return self._write_job(ref, spec, existing)

        return self._retrying(f"job '{ref.name}'", if_match, attempt)

    def delete_job(self, ref: JobRef, if_match: str | None = None) -> None:
        """Delete a job and its rows. Of concurrent deletes of one job exactly one removes it (and gives
        its place under ``maxJobCount`` back); the others find it gone (404)."""

        def attempt() -> None:
            existing = self._stored_job(ref)
            check_if_match(existing.etag, if_match, "job")
            if not self.stores.jobs.delete(existing.ref, existing.etag):
                raise self._job_not_found(ref)  # another request deleted it between our read and delete
            self.stores.remove_job(existing, job_row=False)
            self.slots.release(existing.ref.collection)

        self._retrying(f"job '{ref.name}'", if_match, attempt)

    def run_job(self, ref: JobRef) -> None:
        """Fire the job now, outside its schedule (its schedule is not changed)."""
        job = self._stored_job(ref)
        if self._request_run is None:
            raise SchedulerError("running jobs on demand is not available in this deployment")
        self._request_run(job)

    def list_history(self, ref: JobRef) -> list[HistoryEntry]:
        job = self._stored_job(ref)
        return list(self.stores.history.list(job.ref))

    # ----------------------------------------------------------------------------------------- helpers

    def _retrying(self, what: str, if_match: str | None, attempt: Callable[[], T]) -> T:
        """Run ``attempt`` (which reads, decides and writes) until no concurrent writer beats it.

        Only a lost write race (:class:`WriteRaceError`: the row changed since it was read, or was created
        meanwhile) starts it over, after a short random wait; with the client's ``If-Match`` an ETag
        mismatch is the client's 412 instead. Every other error is final and is raised as it is: a quota,
        a validation error or a conflict with the stored state is never retried or re-worded."""
        for n in range(RACE_ATTEMPTS):
            try:
                return attempt()
            except _StartOver:
                continue  # not contention: this process's view was stale, start over at once
            except EtagMismatchError:
                if if_match is not None:
                    raise
            except WriteRaceError:
                pass
            self.sleep(random.uniform(0, min(RACE_BACKOFF * 2**n, RACE_BACKOFF_CAP)))
        raise ConflictError(f"{what} is being changed by many requests at the same time; retry")

    @staticmethod
    def _refuse_final(existing: Job | None) -> None:
        if existing is not None and existing.state.final:
            raise ConflictError(
                f"job '{existing.ref.name}' is {existing.state}; a finished job cannot be updated, only deleted"
            )

    @staticmethod
    def _spec_of(job: Job) -> JobSpec:
        return definitions.parse_job(
            {"properties": definitions.restore_secrets(job.properties, job.secrets)}, validate_limits=False
        )

    @staticmethod
    def _collection_spec(collection: JobCollection) -> CollectionSpec:
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
            interval = definitions.format_duration(FREE_DEFAULT_RETRY_INTERVAL, spec.duration_style)
            target["retryPolicy"] = {**policy, "retryInterval": interval}
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

    def _write_job(
        self,
        ref: JobRef,
        spec: JobSpec,
        existing: Job | None,
        not_written: Callable[[], None] | None = None,
    ) -> Job:
        """Store ``spec`` as the next generation of the job (its due-index row first, then the job row,
        guarded by ``existing``'s ETag, or as a create).

        An edit of a recurring job that keeps its series (:data:`SERIES_FIELDS` and ``startTime``) keeps
        the instant the series was defined, so occurrences already run still count towards ``count``;
        any other edit starts a new series now. When the write fails, nothing it wrote stays behind:
        ``not_written`` is called (a create gives its reserved slot back) and the new due-index row is
        removed, unless the job row may have been written after all and cannot be read to tell (then the
        dispatcher removes the row as abandoned and the collection's job counter is repaired from a
        count once it says the collection is full)."""
        now = self.clock()
        generation = existing.generation + 1 if existing else 1
        series = _series(existing.properties) if existing is not None else None
        keeps_series = existing is not None and series is not None and series == _series(spec.properties)
        defined_at = existing.defined_at if existing is not None and keeps_series else now
        state = JobState(spec.state)
        next_time = None
        if state == JobState.ENABLED:
            last_run = existing.last_execution_time if existing is not None and keeps_series else None
            next_time = next_unrun(compile_schedule(spec.start_time, spec.recurrence, defined_at), now, last_run)
            if next_time is None:
                state = JobState.COMPLETED
        record = Job(
            ref=ref,
            properties={**spec.properties, "state": state},
            secrets=dict(spec.secrets),
            state=state,
            generation=generation,
            defined_at=defined_at,
            created_at=existing.created_at if existing else now,
            execution_count=existing.execution_count if existing else 0,
            failure_count=existing.failure_count if existing else 0,
            faulted_count=existing.faulted_count if existing else 0,
            last_execution_time=existing.last_execution_time if existing else None,
            counted=existing.counted if existing else (),
            next_execution_time=next_time,
            ended_at=now if state.final else None,
        )
        due: DueSlot | None = None
        try:
            if next_time is not None:
                shard = shard_of(ref.identity, self.shards)
                row_key = due_row_key(next_time, ref.identity, generation)
                due = DueSlot(shard, row_key)
                self.stores.due.put(DueEntry(shard, row_key, ref.partition_key, ref.row_key, generation, next_time))
            record = replace(record, due=due)
            saved = self.stores.jobs.save(record, create=existing is None, etag=existing.etag if existing else None)
        except BaseException as error:
            written = self._landed(record) if not _surely_not_written(error) else False
            if written is False:
                new = due
                if new is not None:
                    self._quietly(lambda: self.stores.due.delete(new.shard, new.row_key), "due-index row")
                if not_written is not None:
                    self._quietly(not_written, "reserved job slot")
            if written is not True:
                raise
            log.warning("job %s: the write reported %r but landed", ref.identity, type(error).__name__)
            saved = self._stored_job(ref)
        old = existing.due if existing is not None else None
        if old is not None and old != due:
            self._quietly(lambda: self.stores.due.delete(old.shard, old.row_key), "old due-index row")
        due_soon = self._due_soon
        if next_time is not None and due_soon is not None and next_time - now < self.lookahead:
            # The scan that covers this occurrence has already run: dispatch it now, at its second. Should
            # that fail, the next scan still finds the row (then it runs late rather than never).
            self._quietly(lambda: due_soon(saved), "immediate dispatch")
        return saved

    def _landed(self, record: Job) -> bool | None:
        """After a write failed in a way that may have landed: whether the job now holds ``record``'s
        generation and definition (None: storage cannot be read to tell)."""
        try:
            stored = self.stores.jobs.get(record.ref)
        except Exception:
            return None
        return stored is not None and stored.generation == record.generation and stored.properties == record.properties

    @staticmethod
    def _quietly(action: Callable[[], object], what: str) -> None:
        """Tidy-up after the essential write: failures are logged, not raised (each has a repair path)."""
        try:
            action()
        except Exception:
            log.warning("could not tidy up the %s (repaired later)", what, exc_info=True)
