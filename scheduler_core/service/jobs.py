"""Jobs: create, replace, merge, delete, run on demand, backfill, read with their status and history.

A backfill (``POST .../jobs/{job}/backfill``, api-version 2026-12-01-preview, :class:`Backfills`) runs each
occurrence the job's schedule has in a past window, in order, as the ``backfill`` cause, at most
:data:`~scheduler_core.policies.MAX_BACKFILL` of them, within the limits of the collection's plan
(:func:`~scheduler_core.service.plans.backfill_limits`): outstanding occurrences per job and per collection,
and a rate at which the occurrences of one job start. The window is checked, its occurrences listed and
their places under the limits taken (:meth:`Backfills.reserve`) before anything is sent, so a refused request
(400; 409 for a job that is not enabled, or over a limit) sends nothing and changes nothing stored.

Every write validates fully before it touches storage, so a rejected request changes nothing. A write
follows the design's order: the due-index entry of the new generation first, then the job (ETag-guarded,
or as a create), then the old due-index entry is deleted. The dispatcher ignores entries whose generation
is not the job's, so a crash between two writes loses nothing and fires nothing stale.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from scheduler_core import definitions, policies
from scheduler_core.definitions import Wire
from scheduler_core.errors import (
    ConflictError,
    EtagMismatchError,
    QuotaExceededError,
    SchedulerError,
    StorageError,
    ValidationError,
    WriteRaceError,
)
from scheduler_core.identity import IdentityScope
from scheduler_core.job_slots import JobSlots
from scheduler_core.ledger import ledger_partition, ledger_row, read_ledger
from scheduler_core.model import CLAIM_LEASE, DueEntry, HistoryEntry, Job, JobCollection, JobDefinition, JobState
from scheduler_core.model.calendars import CalendarRules
from scheduler_core.model.job import OverlapPolicy
from scheduler_core.policies import LedgerEntry, backfill_occurrences, past_schedule
from scheduler_core.ports import Clock, Stores
from scheduler_core.schedules import next_unrun, schedule_of, with_next_execution
from scheduler_core.service import plans
from scheduler_core.service.races import Races, StartOver, check_if_match
from scheduler_core.service.reads import ReplayRequest, job_not_found, live_collection, replay
from scheduler_core.service.writes import DueSoon, JobWriter
from scheduler_core.storage.keys import CollectionRef, JobRef

log = logging.getLogger("scheduler_core.service")

RunRequest = Callable[[Job], None]


#: Where a job's calendars are named, for the errors about them.
CALENDARS_FIELD = "properties.recurrence.exclusions.calendars"


#: What a job carries of the calendars it names: their fixed dates (sorted, each once) and their recurring
#: rules (united).
CalendarContent = tuple[tuple[date, ...], CalendarRules]


def calendars_of(definition: JobDefinition, collection: JobCollection) -> CalendarContent | None:
    """The dates and recurring rules of the calendars ``definition`` names, as ``collection`` holds them now;
    None when it names none. A name the collection lacks is a 400 naming it."""
    exclusions = definition.exclusions
    if exclusions is None or not exclusions.calendars:
        return None
    dates: set[date] = set()
    rules = CalendarRules()
    for index, name in enumerate(exclusions.calendars):
        calendar = collection.calendar(name)
        if calendar is None:
            raise ValidationError(
                f"{CALENDARS_FIELD}[{index}]",
                f"names no calendar of job collection '{collection.ref.name}' ('{name[:60]}'; create it first "
                "with PUT .../calendars/{name} and api-version 2026-12-01-preview)",
            )
        dates.update(calendar.dates)
        rules = rules.union(calendar.rules)
    return tuple(sorted(dates)), rules


def carried(definition: JobDefinition) -> CalendarContent | None:
    """What ``definition`` carries of its calendars (None: it names none)."""
    exclusions = definition.exclusions
    if exclusions is None or not exclusions.calendars:
        return None
    return exclusions.calendar_dates, exclusions.calendar_rules


def with_calendars(definition: JobDefinition, content: CalendarContent | None) -> JobDefinition:
    """``definition`` carrying ``content`` as its calendars' dates and rules (unchanged when it names none)."""
    if content is None or definition.exclusions is None:
        return definition
    dates, rules = content
    exclusions = dataclasses.replace(definition.exclusions, calendar_dates=dates, calendar_rules=rules)
    return dataclasses.replace(definition, exclusions=exclusions)


def refuse_final(existing: Job | None) -> None:
    """A finished job (``Completed``, ``Faulted``) can only be read and deleted (409)."""
    if existing is not None and existing.state.final:
        raise ConflictError(
            f"job '{existing.ref.name}' is {existing.state}; a finished job cannot be updated, only deleted"
        )


@dataclass(frozen=True)
class BackfillSends:
    """What a backfill sends (:data:`BackfillRequest`): its ``occurrences`` in order (at most 1,000), the
    instant each may start at the earliest (``starts``: its slot under the plan's rate; a message shows then,
    not before), the ``overlap`` policy they run under (``AllowAll``: each sent for its slot; ``Skip`` and
    ``BufferOne``: the first only, each sending the next when its attempts are over) and the ``backfill`` id
    every message of it carries (its ledger rows are keyed by it)."""

    backfill: str
    occurrences: tuple[datetime, ...]
    starts: tuple[datetime, ...]
    overlap: OverlapPolicy

    @property
    def chained(self) -> bool:
        """Whether the occurrences run one after another (only the first is sent; each sends the next)."""
        return self.overlap is not OverlapPolicy.ALLOW_ALL


#: Sends a backfill's messages (:class:`BackfillSends`) for the job (as read when the backfill was accepted).
BackfillRequest = Callable[[Job, BackfillSends], None]


class Backfills:
    """Backfills of jobs. ``request`` sends the occurrences (None: this deployment cannot backfill); ``races``
    retries the reservation of their places under the plan's limits when another backfill of the
    collection took places at the same time; ``lease`` is the executor's claim lease (how long an attempt
    may hold its occurrence: :func:`~scheduler_core.policies.backfill_lifetime`)."""

    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        request: BackfillRequest | None = None,
        races: Races | None = None,
        lease: timedelta = CLAIM_LEASE,
    ) -> None:
        self.stores = stores
        self.clock = clock
        self.request = request
        self.races = races or Races()
        self.lease = lease

    def plan(self, ref: JobRef, body: Mapping[str, Any]) -> tuple[Job, list[datetime], OverlapPolicy]:
        """The job, the occurrences of the window and their overlap policy (nothing sent)."""
        job = self.stores.jobs.get(ref)
        if job is None:
            raise job_not_found(ref)
        spec = definitions.parse_backfill(body, self.clock())
        if job.state != JobState.ENABLED:
            raise ConflictError(
                f"job '{job.ref.name}' is {job.state}; only an enabled job can be backfilled"
                + ("" if job.state.final else " (enable it first)")
            )
        occurrences = backfill_occurrences(past_schedule(job, spec.start), spec.start, spec.end, field="endTime")
        return job, occurrences, spec.overlap_policy or job.definition.overlap_policy

    def backfill(self, ref: JobRef, body: Mapping[str, Any]) -> int:
        """Backfill the job: how many occurrences were sent (0 when the window holds none). A backfill over
        the plan's limits is a 409 ``QuotaExceeded`` naming the limit (:meth:`reserve`), and sends nothing."""
        job, occurrences, policy = self.plan(ref, body)
        if occurrences:
            if self.request is None:
                raise SchedulerError("backfill is not available in this deployment")
            self.request(job, self.reserve(job, occurrences, policy))
        return len(occurrences)

    def reserve(self, job: Job, occurrences: Sequence[datetime], policy: OverlapPolicy) -> BackfillSends:
        """Take the places of a backfill's ``occurrences`` of ``job`` under its collection's plan limits
        (:func:`~scheduler_core.service.plans.backfill_limits`), and their start slots; nothing is sent.

        Exact across instances: the collection's ledger (:mod:`scheduler_core.pipeline.counters`) is read after
        the collection row, the decision made over it (:func:`~scheduler_core.policies.live_backfills`,
        :func:`~scheduler_core.policies.check_backfill_limits`,
        :func:`~scheduler_core.policies.backfill_slots`), the backfill's rows written, and then the
        collection row written back unchanged, guarded by the ETag read first. Every reservation commits that
        way, and writes its rows before: so one that commits decided over a ledger holding the rows of every
        reservation that committed before it. One that finds the row changed (another backfill, or any write
        of the collection) deletes its rows and starts over (:class:`~scheduler_core.service.races.Races`).
        A refusal (409 ``QuotaExceeded`` naming the limit and its value) writes nothing; so does a reservation
        that fails. Once committed, the rows that no longer count are removed."""
        backfill = uuid.uuid4().hex[:16]
        chain = policy is not OverlapPolicy.ALLOW_ALL
        lifetime = policies.backfill_lifetime(job.definition.action.retry_policy, self.lease)
        partition = job.ref.partition_key  # the collection's identity: its jobs' partition
        shard = ledger_partition(partition)

        def attempt() -> BackfillSends:
            collection = live_collection(self.stores, job.ref.collection)
            limits = plans.backfill_limits(collection)
            now = self.clock()
            live, dead = self._ledger(partition, now)
            policies.check_backfill_limits(
                limits,
                job.ref.name,
                collection.ref.name,
                policies.outstanding_backfills(live, job.ref.row_key),
                policies.outstanding_backfills(live),
                len(occurrences),
            )
            paced = policies.backfill_slots(live, job.ref.row_key, len(occurrences), limits, now)
            slots = paced.slots
            deadlines = policies.backfill_deadlines(slots, chain, lifetime)
            entries = [
                LedgerEntry(job.ref.row_key, backfill, occurrence, job.generation, slot, deadline, chain, limits.gap)
                for occurrence, slot, deadline in zip(occurrences, slots, deadlines, strict=True)
            ]
            tail = LedgerEntry(job.ref.row_key, backfill, None, job.generation, paced.paced_until, paced.paced_until)
            rows = [ledger_row(partition, entry) for entry in (*entries, tail)]
            try:
                self.stores.due.advance(shard, [], rows)
                self._commit(collection)
            except BaseException:
                self._remove(shard, rows)  # nothing was sent: no place is taken
                raise
            if dead:
                with contextlib.suppress(StorageError):  # removed by the next backfill otherwise
                    self.stores.due.delete_many([(shard, entry.key) for entry in dead])
            return BackfillSends(backfill, tuple(occurrences), tuple(slots), policy)

        return self.races.retrying(f"the backfills of job collection '{job.ref.collection.name}'", attempt)

    def outstanding(self, ref: CollectionRef, job: str | None = None) -> int:
        """How many backfill occurrences of the collection (of its job named ``job``) are outstanding now (sent,
        not yet run to completion), as the limits count them. Reads only."""
        live, _ = self._ledger(ref.identity, self.clock())
        return policies.outstanding_backfills(live, JobRef(ref, job).row_key if job is not None else None)

    def _ledger(self, partition: str, now: datetime) -> tuple[list[LedgerEntry], list[LedgerEntry]]:
        """The rows of the ledger of the collection whose jobs' partition is ``partition`` that count at ``now``,
        and those that no longer do, decided over the jobs they name as they are now (a row is dead only
        when its occurrence can never run, or its deadline has passed: it never comes back to life)."""
        entries = read_ledger(self.stores.due, partition)
        named = sorted({entry.job_row for entry in entries if entry.occurrence is not None})
        jobs = self.stores.jobs.get_many(partition, named) if named else {}
        return policies.live_backfills(entries, jobs, now)

    def _commit(self, collection: JobCollection) -> None:
        """Write the collection row back as read, guarded by its ETag (:class:`EtagMismatchError` when it changed
        since): the one write that orders reservations. Its job counter is all that is written when it has
        one (a merge of the same value)."""
        if collection.job_count is not None:
            self.stores.collections.set_job_count(collection, collection.job_count)
        else:
            self.stores.collections.save(collection, create=False)

    def _remove(self, shard: str, rows: Sequence[DueEntry]) -> None:
        """Take back the rows of a reservation that did not commit (best effort: left behind, they count only
        until their deadline)."""
        with contextlib.suppress(Exception):
            self.stores.due.delete_many([(shard, row.row_key) for row in rows])


class JobService:
    """The job operations. ``request_run`` starts an immediate execution; ``due_soon`` dispatches a job
    whose next occurrence is within ``lookahead`` (the scan that covers it has already run);
    ``request_backfill`` sends a backfill's occurrences (:class:`Backfills`)."""

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
        request_backfill: BackfillRequest | None = None,
        request_replay: ReplayRequest | None = None,
    ) -> None:
        self.stores = stores
        self.slots = slots
        self.request_replay = request_replay
        self.shards = shards
        self.clock = clock
        self.races = races
        self.identity = identity
        self.request_run = request_run
        self.writer = JobWriter(stores, shards, clock, due_soon, lookahead)
        self.backfills = Backfills(stores, clock, request_backfill, races)

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

    def put(
        self, ref: JobRef, body: Mapping[str, Any], if_match: str | None = None, wire: Wire = Wire.CLASSIC
    ) -> tuple[Job, bool]:
        """Create or replace a job (``wire``: the request's, see :func:`definitions.parse_job`). Returns the
        stored job and whether it was created.

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
            check_if_match(existing.version if existing else None, if_match, "job")
            refuse_final(existing)
            try:
                spec = definitions.parse_job(
                    body,
                    previous=existing.definition if existing else None,
                    now=self.clock(),
                    identity=self.identity,
                    default_retry_interval=plans.default_retry_interval(collection),
                    wire=wire,
                )
            except ValidationError:
                if optimistic:  # may be a replace that keeps a stored secret: read the job and parse again
                    raise StartOver from None
                raise
            definition = spec.definition
            if definition.exclusions is not None and definition.exclusions.calendars:
                collection = live_collection(self.stores, ref.collection)  # the calendars as they are now
                definition = with_calendars(definition, calendars_of(definition, collection))
            plans.check_job_fits(ref, definition, collection)
            if existing is not None:
                return self._written(self.writer.write(ref, definition, spec.state, existing), existing), False
            reserved = self.slots.reserve(collection)
            if reserved is None:  # the collection changed since this process last saw it: start again
                collection = live_collection(self.stores, ref.collection)
                raise StartOver
            if not reserved:
                if optimistic:
                    raise StartOver
                raise QuotaExceededError(
                    f"job collection '{ref.collection.name}' already has {collection.quota.max_job_count} jobs, "
                    f"its quota.maxJobCount"
                )
            release = functools.partial(self.slots.release, ref.collection)
            return self._written(self.writer.write(ref, definition, spec.state, None, not_written=release), None), True

        return self.races.retrying(f"job '{ref.name}'", attempt)

    def patch(
        self, ref: JobRef, body: Mapping[str, Any], if_match: str | None = None, wire: Wire = Wire.CLASSIC
    ) -> Job:
        """Merge ``body`` into the stored job as ``wire`` shows it (JSON merge semantics) and store the
        result (a classic PATCH keeps the preview properties, as a classic PUT does)."""
        collection = live_collection(self.stores, ref.collection)
        ref = JobRef(collection.ref, ref.name)

        def attempt() -> Job:
            existing = self.stored(ref)
            check_if_match(existing.version, if_match, "job")
            refuse_final(existing)
            properties = definitions.job_wire(existing.definition, existing.state, wire)
            merged = definitions.merge_patch({"properties": properties}, body)
            spec = definitions.parse_job(
                merged,
                previous=existing.definition,
                now=self.clock(),
                identity=self.identity,
                default_retry_interval=plans.default_retry_interval(collection),
                wire=wire,
            )
            definition = spec.definition
            if definition.exclusions is not None and definition.exclusions.calendars:
                definition = with_calendars(
                    definition, calendars_of(definition, live_collection(self.stores, ref.collection))
                )
            plans.check_job_fits(ref, definition, collection)
            return self._written(self.writer.write(ref, definition, spec.state, existing), existing)

        return self.races.retrying(f"job '{ref.name}'", attempt)

    def _written(self, job: Job, previous: Job | None) -> Job:
        """A job just written; when it names calendars and one changed while it was being written (a
        calendar PUT that listed the jobs before this one was stored), it is written again with their dates
        as they are now. When one it names is gone (a calendar DELETE that listed the jobs before this one
        was stored), the write is undone (``previous`` restored, or a created job removed) and the request is
        a 400 naming the calendar: no job is left naming a calendar that does not exist."""
        exclusions = job.definition.exclusions
        if exclusions is None or not exclusions.calendars:
            return job
        try:
            current = calendars_of(job.definition, live_collection(self.stores, job.ref.collection))
        except ValidationError:
            self._undo(job, previous)
            raise
        except SchedulerError:
            return job  # the collection gone
        if current == carried(job.definition):
            return job
        return self.refresh_calendars(job.ref) or job

    def _undo(self, job: Job, previous: Job | None) -> None:
        """Take back the write of ``job`` (ETag-guarded: a later write by another request stays)."""
        if previous is None:
            if self.stores.remove_job(job):
                self.slots.release(job.ref.collection)
            return
        with contextlib.suppress(EtagMismatchError, WriteRaceError):  # written again meanwhile: that write stands
            self.writer.write(job.ref, previous.definition, previous.state, job)

    def refresh_calendars(self, ref: JobRef) -> Job | None:
        """Write the job again with the dates and rules its calendars hold now, when they changed (a calendar was
        PUT). A finished job, or one that names no calendar, is left as it is. Returns the job written
        (None: nothing to write)."""

        def attempt() -> Job | None:
            current = self.stores.jobs.get(ref)
            if current is None or current.state.final:
                return None
            collection = live_collection(self.stores, ref.collection)
            try:
                content = calendars_of(current.definition, collection)
            except ValidationError:
                return None  # the job names a calendar deleted meanwhile: it keeps the dates it has
            if content is None or content == carried(current.definition):
                return None
            return self.writer.write(current.ref, with_calendars(current.definition, content), current.state, current)

        return self.races.retrying(f"job '{ref.name}'", attempt)

    def occurrences(
        self, ref: JobRef, after: datetime | None, top: int
    ) -> builtins.tuple[builtins.list[tuple[datetime, datetime]], bool]:
        """The job's next ``top`` occurrences as (scheduled instant, instant it fires at: jitter applied),
        excluded ones left out, and whether more follow. Without ``after``: from the first not yet run as
        of now (whether or not the job is enabled); with it: those firing after ``after``. A finished job
        has none."""
        job = self.stored(ref)
        if job.state.final:
            return [], False
        schedule = schedule_of(job)
        first = next_unrun(schedule, self.clock(), job.last_execution_time) if after is None else schedule.after(after)
        fires = schedule.occurrences(first, top + 1) if first is not None else []
        return [(schedule.nominal(fire), fire) for fire in fires[:top]], len(fires) > top

    def set_state(self, job: Job, state: JobState) -> None:
        """Enable or disable one job (a finished one stays as it is), as its collection was."""

        def attempt() -> None:
            current = self.stores.jobs.get(job.ref)
            if current is None or current.state.final or current.state == state:
                return
            self.writer.write(current.ref, current.definition, state, current)

        self.races.retrying(f"job '{job.ref.name}'", attempt)

    def delete(self, ref: JobRef, if_match: str | None = None) -> None:
        """Delete a job and its rows. Of concurrent deletes of one job exactly one removes it (and gives
        its place under ``maxJobCount`` back); the others find it gone (404)."""

        def attempt() -> None:
            existing = self.stored(ref)
            check_if_match(existing.version, if_match, "job")
            removed = self.stores.jobs.delete(existing.ref, existing.etag)
            if removed is False:
                raise job_not_found(ref)  # another request deleted it between our read and delete
            self.stores.remove_job(existing, job_row=False)
            if removed:  # None: gone after a lost answer, perhaps by this call: the slot stays taken (repaired)
                self.slots.release(existing.ref.collection)

        self.races.retrying(f"job '{ref.name}'", attempt)

    def run(self, ref: JobRef) -> None:
        """Fire the job now, outside its schedule (its schedule is not changed)."""
        job = self.stored(ref)
        if self.request_run is None:
            raise SchedulerError("running jobs on demand is not available in this deployment")
        self.request_run(job)

    def backfill(self, ref: JobRef, body: Mapping[str, Any]) -> int:
        """Run each occurrence of a past window (api-version 2026-12-01-preview); how many were sent."""
        return self.backfills.backfill(ref, body)

    def rerun(self, ref: JobRef, execution_id: str) -> tuple[datetime, str]:
        """Run a history entry's occurrence again now (:func:`~scheduler_core.service.reads.replay`)."""
        return replay(self.stores, self.stored(ref), execution_id, self.request_replay)
