"""The write of a job's next generation, in the design's order: its due-index entry first, then the job
row (ETag-guarded, or as a create), then the old entry goes. The dispatcher ignores entries whose
generation is not the job's, so a crash between two writes loses nothing and fires nothing stale; a write
that fails leaves nothing behind."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from scheduler_core.errors import StorageError, WriteRaceError
from scheduler_core.model import DueSlot, Job, JobDefinition, JobState, OccurrenceEntry
from scheduler_core.model.job import first_generation
from scheduler_core.ports import Clock, Stores
from scheduler_core.schedules import definition_schedule, next_unrun
from scheduler_core.storage.keys import JobRef, shard_of

log = logging.getLogger("scheduler_core.service")

DueSoon = Callable[[Job], None]


def surely_not_written(error: BaseException) -> bool:
    """Whether a failed storage write certainly changed nothing (the store refused it), as opposed to a
    failure after which the write may have landed (a cut connection, a timeout, a 5xx)."""
    if isinstance(error, WriteRaceError):
        return True
    return isinstance(error, StorageError) and error.surely_not_applied


class JobWriter:
    """Writes jobs. ``due_soon`` dispatches a job whose next occurrence is within ``lookahead`` (the scan
    that covers it has already run)."""

    def __init__(
        self,
        stores: Stores,
        shards: int,
        clock: Clock,
        due_soon: DueSoon | None = None,
        lookahead: timedelta = timedelta(seconds=60),
    ) -> None:
        self.stores = stores
        self.shards = shards
        self.clock = clock
        self.due_soon = due_soon
        self.lookahead = lookahead

    def write(
        self,
        ref: JobRef,
        definition: JobDefinition,
        state: JobState,
        existing: Job | None,
        not_written: Callable[[], None] | None = None,
    ) -> Job:
        """Store ``definition`` in ``state`` as the next generation of the job (its due-index entry first,
        then the job row, guarded by ``existing``'s ETag, or as a create).

        An edit of a recurring job that keeps its series (:attr:`JobDefinition.series`) keeps the instant
        the series was defined, so occurrences already run still count towards ``count``; any other edit
        starts a new series now. When the write fails, nothing it wrote stays behind:
        ``not_written`` is called (a create gives its reserved slot back) and the new due-index entry is
        removed, unless the job row may have been written after all and cannot be read to tell (then the
        dispatcher removes the entry as abandoned and the collection's job counter is repaired from a
        count once it says the collection is full)."""
        now = self.clock()
        record = self._next_generation(ref, definition, state, existing, now)
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
            landed = self.stores.jobs.get(ref)
            if landed is None:  # deleted meanwhile by another request
                raise
            saved = landed
        old = existing.due if existing is not None else None
        if old is not None and old != due:
            self._quietly(lambda: self.stores.due.delete(old.shard, old.row_key), "old due-index entry")
        due_soon, next_time = self.due_soon, record.next_execution_time
        if next_time is not None and due_soon is not None and next_time - now < self.lookahead:
            # The scan that covers this occurrence has already run: dispatch it now, at its second. Should
            # that fail, the next scan still finds the entry (then it runs late rather than never).
            self._quietly(lambda: due_soon(saved), "immediate dispatch")
        return saved

    def _next_generation(
        self, ref: JobRef, definition: JobDefinition, state: JobState, existing: Job | None, now: datetime
    ) -> Job:
        """The record ``definition`` is stored as: the next generation, its series kept or started now, its
        next occurrence (``Completed`` when it has none), counters carried over."""
        generation = existing.generation + 1 if existing else first_generation(now)
        series = existing.definition.series if existing is not None else None
        keeps_series = existing is not None and series is not None and series == definition.series
        defined_at = existing.defined_at if existing is not None and keeps_series else now
        next_time = None
        if state == JobState.ENABLED:
            last_run = existing.last_execution_time if existing is not None and keeps_series else None
            schedule = definition_schedule(definition, defined_at, ref.identity)
            next_time = next_unrun(schedule, now, last_run)
            if next_time is None:
                state = JobState.COMPLETED
        return Job(
            ref=ref,
            definition=definition,
            state=state,
            generation=generation,
            defined_at=defined_at,
            created_at=existing.created_at if existing else now,
            execution_count=existing.execution_count if existing else 0,
            failure_count=existing.failure_count if existing else 0,
            faulted_count=existing.faulted_count if existing else 0,
            last_execution_time=existing.last_execution_time if existing else None,
            last_outcome=existing.last_outcome if existing else "",
            counted=existing.counted if existing else (),
            next_execution_time=next_time,
            ended_at=now if state.final else None,
        )

    def _put_due_entry(self, record: Job) -> DueSlot:
        assert record.next_execution_time is not None
        entry = OccurrenceEntry.of(
            shard_of(record.ref.identity, self.shards), record.ref, record.generation, record.next_execution_time
        )
        self.stores.due.put(entry.entry())
        return DueSlot(entry.shard, entry.row_key)

    def _landed(self, record: Job) -> bool | None:
        """After a write failed in a way that may have landed: whether the job now holds ``record``'s
        generation and definition (None: storage cannot be read to tell)."""
        try:
            stored = self.stores.jobs.get(record.ref)
        except Exception:
            return None
        return (
            stored is not None
            and stored.generation == record.generation
            and (stored.definition, stored.state) == (record.definition, record.state)
        )

    @staticmethod
    def _quietly(action: Callable[[], object], what: str) -> None:
        """Tidy-up after the essential write: failures are logged, not raised (each has a repair path)."""
        try:
            action()
        except Exception:
            log.warning("could not tidy up the %s (repaired later)", what, exc_info=True)
