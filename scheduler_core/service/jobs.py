"""Jobs: create, replace, merge, delete, run on demand, read with their status and history.

Every write validates fully before it touches storage, so a rejected request changes nothing. A write
follows the design's order: the due-index entry of the new generation first, then the job (ETag-guarded,
or as a create), then the old due-index entry is deleted. The dispatcher ignores entries whose generation
is not the job's, so a crash between two writes loses nothing and fires nothing stale.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from scheduler_core import definitions
from scheduler_core.definitions import JobSpec
from scheduler_core.errors import (
    ConflictError,
    QuotaExceededError,
    SchedulerError,
    StorageError,
    ValidationError,
    WriteRaceError,
)
from scheduler_core.identity import IdentityScope
from scheduler_core.model import DueEntry, DueSlot, HistoryEntry, Job, JobState
from scheduler_core.ports import Clock, Stores
from scheduler_core.recurrence import compile_schedule
from scheduler_core.schedules import next_unrun, with_next_execution
from scheduler_core.service import plans
from scheduler_core.service.races import Races, StartOver, check_if_match
from scheduler_core.service.reads import job_not_found, live_collection, spec_of
from scheduler_core.service.slots import JobSlots
from scheduler_core.storage.keys import CollectionRef, JobRef, due_row_key, shard_of

log = logging.getLogger("scheduler_core.service")

#: The parts of a job's definition that make its series: an edit that keeps them keeps the series (its
#: occurrences so far still count towards ``count``); ``count`` and ``endTime`` bound the series.
SERIES_FIELDS = ("frequency", "interval", "schedule", "timeZone")

RunRequest = Callable[[Job], None]
DueSoon = Callable[[Job], None]


def series_of(properties: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """What identifies a job's series (``None``: the job does not recur, so it has no series to keep)."""
    recurrence = properties.get("recurrence")
    if not isinstance(recurrence, Mapping):
        return None
    return (properties.get("startTime"), *(recurrence.get(name) for name in SERIES_FIELDS))


def surely_not_written(error: BaseException) -> bool:
    """Whether a failed storage write certainly changed nothing (the store refused it), as opposed to a
    failure after which the write may have landed (a cut connection, a timeout, a 5xx)."""
    if isinstance(error, WriteRaceError):
        return True
    return isinstance(error, StorageError) and error.surely_not_applied


def refuse_final(existing: Job | None) -> None:
    """A finished job (``Completed``, ``Faulted``) can only be read and deleted (409)."""
    if existing is not None and existing.state.final:
        raise ConflictError(
            f"job '{existing.ref.name}' is {existing.state}; a finished job cannot be updated, only deleted"
        )


class JobService:
    """The job operations. ``request_run`` starts an immediate execution; ``due_soon`` dispatches a job
    whose next occurrence is within ``lookahead`` (the scan that covers it has already run)."""

    def __init__(
        self,
        stores: Stores,
        slots: JobSlots,
        shards: int,
        clock: Clock,
        races: Races,
        identity: IdentityScope | None = None,
        request_run: RunRequest | None = None,
        due_soon: DueSoon | None = None,
        lookahead: timedelta = timedelta(seconds=60),
    ) -> None:
        self.stores = stores
        self.slots = slots
        self.shards = shards
        self.clock = clock
        self.races = races
        self.identity = identity
        self.request_run = request_run
        self.due_soon = due_soon
        self.lookahead = lookahead

    # ------------------------------------------------------------------------------------------ reads

    def stored(self, ref: JobRef) -> Job:
        """The job as stored (404 when it does not exist)."""
        record = self.stores.jobs.get(ref)
        if record is None:
            raise job_not_found(ref)
        return record

    def get(self, ref: JobRef) -> Job:
        """The job with its status as of now (next execution time computed from its schedule)."""
        return with_next_execution(self.stored(ref), self.clock())

    def list(self, ref: CollectionRef) -> list[Job]:
        collection = live_collection(self.stores, ref)
        now = self.clock()
        return [with_next_execution(job, now) for job in self.stores.jobs.list(collection.ref)]

    def history(self, ref: JobRef) -> builtins.list[HistoryEntry]:
        job = self.stored(ref)
        return list(self.stores.history.list(job.ref))

    # ----------------------------------------------------------------------------------------- writes

    def put(self, ref: JobRef, body: Mapping[str, Any], if_match: str | None = None) -> tuple[Job, bool]:
        """Create or replace a job. Returns the stored job and whether it was created.

        A create costs three storage round trips: the ETag-guarded reservation on the collection row
        (which also proves the collection is still the one this process last saw, so it need not be read
        again), the due-index entry, and the job row. Two unconditional PUTs of one name racing each
        other are a create and a replace, or two replaces: the last writer wins."""
        collection = self.slots.known(ref.collection) or live_collection(self.stores, ref.collection)
        ref = JobRef(collection.ref, ref.name)
        first = True

        def attempt() -> tuple[Job, bool]:
            nonlocal collection, first
            # Hot path: most PUTs create, so the first attempt does not read the job; a create that finds
            # the job exists (or a full collection) starts over and reads it.
            optimistic, first = first and if_match is None, False
            existing = None if optimistic else self.stores.jobs.get(ref)
            check_if_match(existing.etag if existing else None, if_match, "job")
            refuse_final(existing)
            try:
                spec = definitions.parse_job(
                    body, previous=spec_of(existing) if existing else None, identity=self.identity
                )
            except ValidationError:
                if optimistic:  # may be a replace that keeps a stored secret: read the job and parse again
                    raise StartOver from None
                raise
            limits = plans.limits_of(collection)
            spec = plans.with_plan_defaults(spec, body, limits)
            plans.check_job_fits(ref, spec, limits)
            if existing is not None:
                return self.write(ref, spec, existing), False
            reserved = self.slots.reserve(collection, limits)
            if reserved is None:  # the collection changed since this process last saw it: start again
                collection = live_collection(self.stores, ref.collection)
                raise StartOver
            if not reserved:
                if optimistic:
                    raise StartOver
                raise QuotaExceededError(
                    f"job collection '{ref.collection.name}' already has {limits.max_job_count} jobs, "
                    f"its quota.maxJobCount"
                )
            return self.write(ref, spec, None, not_written=lambda: self.slots.release(ref.collection)), True

        return self.races.retrying(f"job '{ref.name}'", if_match, attempt)

    def patch(self, ref: JobRef, body: Mapping[str, Any], if_match: str | None = None) -> Job:
        """Merge ``body`` into the stored job (JSON merge semantics) and store the result."""
        collection = live_collection(self.stores, ref.collection)
        ref = JobRef(collection.ref, ref.name)
        limits = plans.limits_of(collection)

        def attempt() -> Job:
            existing = self.stored(ref)
            check_if_match(existing.etag, if_match, "job")
            refuse_final(existing)
            merged = definitions.merge_patch({"properties": existing.properties}, body)
            spec = definitions.parse_job(merged, previous=spec_of(existing), identity=self.identity)
            spec = plans.with_plan_defaults(spec, merged, limits)
            plans.check_job_fits(ref, spec, limits)
            return self.write(ref, spec, existing)

        return self.races.retrying(f"job '{ref.name}'", if_match, attempt)

    def set_state(self, job: Job, state: JobState) -> None:
        """Enable or disable one job (a finished one stays as it is), as its collection was."""

        def attempt() -> None:
            current = self.stores.jobs.get(job.ref)
            if current is None or current.state.final or current.state == state:
                return
            properties = {**current.properties, "state": state}
            self.write(current.ref, spec_of(replace(current, properties=properties)), current)

        self.races.retrying(f"job '{job.ref.name}'", None, attempt)

    def delete(self, ref: JobRef, if_match: str | None = None) -> None:
        """Delete a job and its rows. Of concurrent deletes of one job exactly one removes it (and gives
        its place under ``maxJobCount`` back); the others find it gone (404)."""

        def attempt() -> None:
            existing = self.stored(ref)
            check_if_match(existing.etag, if_match, "job")
            if not self.stores.jobs.delete(existing.ref, existing.etag):
                raise job_not_found(ref)  # another request deleted it between our read and delete
            self.stores.remove_job(existing, job_row=False)
            self.slots.release(existing.ref.collection)

        self.races.retrying(f"job '{ref.name}'", if_match, attempt)

    def run(self, ref: JobRef) -> None:
        """Fire the job now, outside its schedule (its schedule is not changed)."""
        job = self.stored(ref)
        if self.request_run is None:
            raise SchedulerError("running jobs on demand is not available in this deployment")
        self.request_run(job)

    # ------------------------------------------------------------------------------ the write itself

    def write(
        self, ref: JobRef, spec: JobSpec, existing: Job | None, not_written: Callable[[], None] | None = None
    ) -> Job:
        """Store ``spec`` as the next generation of the job (its due-index entry first, then the job row,
        guarded by ``existing``'s ETag, or as a create).

        An edit of a recurring job that keeps its series (:data:`SERIES_FIELDS` and ``startTime``) keeps
        the instant the series was defined, so occurrences already run still count towards ``count``;
        any other edit starts a new series now. When the write fails, nothing it wrote stays behind:
        ``not_written`` is called (a create gives its reserved slot back) and the new due-index entry is
        removed, unless the job row may have been written after all and cannot be read to tell (then the
        dispatcher removes the entry as abandoned and the collection's job counter is repaired from a
        count once it says the collection is full)."""
        now = self.clock()
        record = self._next_generation(ref, spec, existing, now)
        due: DueSlot | None = None
        try:
            if record.next_execution_time is not None:
                due = self._put_due_entry(record)
            record = replace(record, due=due)
            saved = self.stores.jobs.save(record, create=existing is None, etag=existing.etag if existing else None)
        except BaseException as error:
            written = self._landed(record) if not surely_not_written(error) else False
            if written is False:
                new = due
                if new is not None:
                    self._quietly(lambda: self.stores.due.delete(new.shard, new.row_key), "due-index entry")
                if not_written is not None:
                    self._quietly(not_written, "reserved job slot")
            if written is not True:
                raise
            log.warning("job %s: the write reported %r but landed", ref.identity, type(error).__name__)
            saved = self.stored(ref)
        old = existing.due if existing is not None else None
        if old is not None and old != due:
            self._quietly(lambda: self.stores.due.delete(old.shard, old.row_key), "old due-index entry")
        due_soon, next_time = self.due_soon, record.next_execution_time
        if next_time is not None and due_soon is not None and next_time - now < self.lookahead:
            # The scan that covers this occurrence has already run: dispatch it now, at its second. Should
            # that fail, the next scan still finds the entry (then it runs late rather than never).
            self._quietly(lambda: due_soon(saved), "immediate dispatch")
        return saved

    def _next_generation(self, ref: JobRef, spec: JobSpec, existing: Job | None, now: datetime) -> Job:
        """The record ``spec`` is stored as: the next generation, its series kept or started now, its next
        occurrence (``Completed`` when it has none), counters carried over."""
        generation = existing.generation + 1 if existing else 1
        series = series_of(existing.properties) if existing is not None else None
        keeps_series = existing is not None and series is not None and series == series_of(spec.properties)
        defined_at = existing.defined_at if existing is not None and keeps_series else now
        state = JobState(spec.state)
        next_time = None
        if state == JobState.ENABLED:
            last_run = existing.last_execution_time if existing is not None and keeps_series else None
            next_time = next_unrun(compile_schedule(spec.start_time, spec.recurrence, defined_at), now, last_run)
            if next_time is None:
                state = JobState.COMPLETED
        return Job(
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

    def _put_due_entry(self, record: Job) -> DueSlot:
        assert record.next_execution_time is not None
        ref, when = record.ref, record.next_execution_time
        shard = shard_of(ref.identity, self.shards)
        row_key = due_row_key(when, ref.identity, record.generation)
        self.stores.due.put(DueEntry(shard, row_key, ref.partition_key, ref.row_key, record.generation, when))
        return DueSlot(shard, row_key)

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
