"""A collection's named calendars (api-version 2026-12-01-preview): list, read, create or replace, delete.

A calendar lives on its collection's row (``JobCollection.calendars``), so it costs no table of its own and
goes with its collection. The jobs that name a calendar carry its dates (their schedule needs no read of
the collection when the dispatcher fires them): a PUT of a calendar writes each of them again (a new
generation, the series and counters kept) once the calendar is stored, and a job written at the same time
checks the calendars again after its own write (:meth:`JobService._written`). A calendar that an
unfinished job names cannot be deleted (409).

A delete and a job write that names the calendar may run at the same time. Each writes first and checks
the other after: the delete removes the calendar, then lists the jobs that name it and, finding one, puts the
calendar back and answers 409; the job write stores the job, then reads the calendars again and, finding
one gone, undoes its write and answers 400. With storage that orders writes, at least one of the two sees
the other, so no job is left naming a calendar that does not exist (both may be refused: retry).
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Mapping
from typing import Any

from scheduler_core import definitions
from scheduler_core.errors import ConflictError, NotFoundError
from scheduler_core.job_slots import JobSlots
from scheduler_core.model import JobCollection
from scheduler_core.model.collection import Calendar
from scheduler_core.ports import Stores
from scheduler_core.service.jobs import JobService
from scheduler_core.service.races import Races
from scheduler_core.service.reads import live_collection
from scheduler_core.storage.keys import CollectionRef, JobRef


def calendar_not_found(ref: CollectionRef, name: str) -> NotFoundError:
    return NotFoundError(f"calendar '{name}' was not found in job collection '{ref.name}'")


class CalendarService:
    """The calendar operations of a collection."""

    def __init__(self, stores: Stores, slots: JobSlots, jobs: JobService, races: Races) -> None:
        self.stores = stores
        self.slots = slots
        self.jobs = jobs
        self.races = races

    def list(self, ref: CollectionRef) -> tuple[Calendar, ...]:
        return live_collection(self.stores, ref).calendars

    def get(self, ref: CollectionRef, name: str) -> Calendar:
        calendar = live_collection(self.stores, ref).calendar(name)
        if calendar is None:
            raise calendar_not_found(ref, name)
        return calendar

    def put(self, ref: CollectionRef, name: str, body: Mapping[str, Any]) -> tuple[Calendar, bool]:
        """Create or replace a calendar; returns it and whether it was created. The jobs that name it are
        then written again with its new dates."""
        dates, rules = definitions.parse_calendar_body(body)

        def attempt() -> tuple[JobCollection, Calendar, bool]:
            collection = live_collection(self.stores, ref)
            existing = collection.calendar(name)
            calendar = Calendar(existing.name if existing is not None else name, dates, rules)
            definitions.check_calendar_limits(ref.name, name, dates, collection.calendars)
            others = [item for item in collection.calendars if item.name.lower() != name.lower()]
            calendars = tuple(sorted([*others, calendar], key=lambda item: item.name.lower()))
            saved = self.stores.collections.save(dataclasses.replace(collection, calendars=calendars), create=False)
            return saved, calendar, existing is None

        saved, calendar, created = self.races.retrying(f"calendar '{name}'", attempt)
        self.slots.forget(saved.ref)  # its row's ETag changed
        # a created calendar too: a job may name it already (written while an earlier one of that name was
        # being deleted, before this rule), and it must carry these dates
        self._refresh_jobs(saved.ref, calendar.name)
        return calendar, created

    def delete(self, ref: CollectionRef, name: str) -> None:
        """Delete a calendar that no unfinished job names (409 naming those jobs otherwise).

        The jobs are listed before the calendar is removed (the usual refusal changes nothing) and again
        after: a job written meanwhile to name it puts the calendar back, and the delete is a 409."""
        removed: list[Calendar] = []

        def attempt() -> JobCollection:
            collection = live_collection(self.stores, ref)
            calendar = collection.calendar(name)
            if calendar is None:
                raise calendar_not_found(ref, name)
            self._refuse_if_used(collection.ref, name)
            calendars = tuple(item for item in collection.calendars if item.name.lower() != name.lower())
            saved = self.stores.collections.save(dataclasses.replace(collection, calendars=calendars), create=False)
            removed[:] = [calendar]
            return saved

        saved = self.races.retrying(f"calendar '{name}'", attempt)
        self.slots.forget(saved.ref)
        try:
            self._refuse_if_used(saved.ref, name)
        except ConflictError:
            self._restore(saved.ref, removed[0])
            raise

    def _refuse_if_used(self, ref: CollectionRef, name: str) -> None:
        users = self._users(ref, name)
        if users:
            shown = ", ".join(f"'{job}'" for job in users[:5]) + (" and more" if len(users) > 5 else "")
            raise ConflictError(
                f"calendar '{name}' is named by job(s) {shown} in recurrence.exclusions.calendars; "
                "remove it from them first"
            )

    def _restore(self, ref: CollectionRef, calendar: Calendar) -> None:
        """Put back a calendar a delete removed while a job was written to name it (unless one of that name
        was created meanwhile)."""

        def attempt() -> None:
            collection = self.stores.collections.get(ref)
            if collection is None or collection.deleting or collection.calendar(calendar.name) is not None:
                return
            calendars = tuple(sorted([*collection.calendars, calendar], key=lambda item: item.name.lower()))
            self.stores.collections.save(dataclasses.replace(collection, calendars=calendars), create=False)

        self.races.retrying(f"calendar '{calendar.name}'", attempt)
        self.slots.forget(ref)

    def _users(self, ref: CollectionRef, name: str) -> builtins.list[str]:
        """The unfinished jobs of the collection that name the calendar ``name``."""
        lowered = name.lower()
        return [
            job.ref.name
            for job in self.stores.jobs.list(ref)
            if not job.state.final
            and job.definition.exclusions is not None
            and any(item.lower() == lowered for item in job.definition.exclusions.calendars)
        ]

    def _refresh_jobs(self, ref: CollectionRef, name: str) -> None:
        for job in self._users(ref, name):
            self.jobs.refresh_calendars(JobRef(ref, job))
