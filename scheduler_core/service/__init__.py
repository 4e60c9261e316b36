"""The scheduler's management operations over the ports, split by noun:

- :mod:`.collections`: job collections (:class:`CollectionService`);
- :mod:`.jobs`: jobs (:class:`JobService`), and the write order that keeps the due index consistent;
- :mod:`.calendars`: a collection's named calendars (:class:`CalendarService`, api-version 2026-12-01-preview);
- :mod:`.plans`: the plans' rules and the collections' quotas applied to jobs;
- :mod:`.races`: the one concurrency rule: start over when a write race is lost, never on a final error.

Each collection's job counter (``maxJobCount`` exact across instances) is :mod:`scheduler_core.job_slots`'s.

:class:`SchedulerService` is what the API calls: one object with every operation. Plain Python (no HTTP,
no Azure Functions, no Azure SDK).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_core.definitions import Wire
from scheduler_core.identity import IdentityScope
from scheduler_core.job_slots import JobSlots
from scheduler_core.model import HistoryEntry, Job, JobCollection
from scheduler_core.model.collection import Calendar
from scheduler_core.ports import Clock, Stores
from scheduler_core.service.calendars import CalendarService
from scheduler_core.service.collections import CollectionService
from scheduler_core.service.jobs import BackfillRequest, JobService, RunRequest
from scheduler_core.service.races import Races
from scheduler_core.service.reads import ReplayRequest
from scheduler_core.service.writes import DueSoon
from scheduler_core.storage.keys import CollectionRef, JobRef

__all__ = ["CalendarService", "CollectionService", "JobService", "SchedulerService"]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class SchedulerService:
    """Every management operation. ``clock`` and ``sleep`` are seams for tests; ``request_run`` starts an
    immediate execution; ``request_backfill`` sends a backfill's occurrences; ``request_replay`` runs an
    occurrence again; ``due_soon`` dispatches a job
    due within ``lookahead`` at once."""

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
        request_backfill: BackfillRequest | None = None,
        request_replay: ReplayRequest | None = None,
    ) -> None:
        self.stores = stores
        self.shards = shards
        self.clock = clock
        self.races = Races(sleep)
        self.slots = JobSlots(stores, clock)
        self.jobs = JobService(
            stores,
            self.slots,
            shards,
            clock,
            self.races,
            identity,
            request_run,
            due_soon,
            lookahead,
            request_backfill,
            request_replay,
        )
        self.collections = CollectionService(stores, self.slots, self.jobs, clock, self.races)
        self.calendars = CalendarService(stores, self.slots, self.jobs, self.races)

    @property
    def sleep(self) -> Callable[[float], None]:
        """How the service waits (between lost write races, and for reserved slots to expire)."""
        return self.races.sleep

    @sleep.setter
    def sleep(self, sleep: Callable[[float], None]) -> None:
        self.races.sleep = sleep

    # ----------------------------------------------------------------------------------- collections

    def get_collection(self, ref: CollectionRef) -> JobCollection:
        return self.collections.get(ref)

    def list_collections(self, subscription: str, resource_group: str | None = None) -> list[JobCollection]:
        return self.collections.list(subscription, resource_group)

    def put_collection(
        self, ref: CollectionRef, body: Mapping[str, Any], if_match: str | None = None, wire: Wire = Wire.CLASSIC
    ) -> tuple[JobCollection, bool]:
        return self.collections.put(ref, body, if_match, wire)

    def patch_collection(
        self, ref: CollectionRef, body: Mapping[str, Any], if_match: str | None = None, wire: Wire = Wire.CLASSIC
    ) -> JobCollection:
        return self.collections.patch(ref, body, if_match, wire)

    def delete_collection(self, ref: CollectionRef, if_match: str | None = None) -> None:
        self.collections.delete(ref, if_match)

    def set_collection_state(self, ref: CollectionRef, state: str) -> None:
        self.collections.set_state(ref, state)

    # ------------------------------------------------------------------------------------------ jobs

    def get_job(self, ref: JobRef) -> Job:
        return self.jobs.get(ref)

    def list_jobs(self, ref: CollectionRef) -> list[Job]:
        return self.jobs.list(ref)

    def put_job(
        self, ref: JobRef, body: Mapping[str, Any], if_match: str | None = None, wire: Wire = Wire.CLASSIC
    ) -> tuple[Job, bool]:
        return self.jobs.put(ref, body, if_match, wire)

    def patch_job(
        self, ref: JobRef, body: Mapping[str, Any], if_match: str | None = None, wire: Wire = Wire.CLASSIC
    ) -> Job:
        return self.jobs.patch(ref, body, if_match, wire)

    def delete_job(self, ref: JobRef, if_match: str | None = None) -> None:
        self.jobs.delete(ref, if_match)

    def run_job(self, ref: JobRef) -> None:
        self.jobs.run(ref)

    def backfill_job(self, ref: JobRef, body: Mapping[str, Any]) -> int:
        """Run each occurrence of a past window (api-version 2026-12-01-preview); how many were sent."""
        return self.jobs.backfill(ref, body)

    def rerun_job(self, ref: JobRef, execution_id: str) -> tuple[datetime, str]:
        """Run a history entry's occurrence again now (api-version 2026-12-01-preview): the occurrence and the
        execution id of the replay's first attempt."""
        return self.jobs.rerun(ref, execution_id)

    def list_history(self, ref: JobRef) -> list[HistoryEntry]:
        return self.jobs.history(ref)

    def job_occurrences(
        self, ref: JobRef, after: datetime | None = None, top: int = 10
    ) -> tuple[list[tuple[datetime, datetime]], bool]:
        """The next ``top`` occurrences of a job as (scheduled, fires at), and whether more follow."""
        return self.jobs.occurrences(ref, after, top)

    # ------------------------------------------------------------------------- calendars (preview)

    def list_calendars(self, ref: CollectionRef) -> tuple[Calendar, ...]:
        return self.calendars.list(ref)

    def get_calendar(self, ref: CollectionRef, name: str) -> Calendar:
        return self.calendars.get(ref, name)

    def put_calendar(self, ref: CollectionRef, name: str, body: Mapping[str, Any]) -> tuple[Calendar, bool]:
        return self.calendars.put(ref, name, body)

    def delete_calendar(self, ref: CollectionRef, name: str) -> None:
        self.calendars.delete(ref, name)
