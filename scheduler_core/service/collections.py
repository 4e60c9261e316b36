"""Job collections: create, replace, merge, enable, disable and delete, with the plans' rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from scheduler_core import definitions
from scheduler_core import job_slots as slots
from scheduler_core.definitions import CollectionSpec, Wire
from scheduler_core.errors import ConflictError, QuotaExceededError
from scheduler_core.job_slots import JobSlots
from scheduler_core.model import CollectionState, JobCollection, JobState
from scheduler_core.ports import Clock, Stores
from scheduler_core.service import plans
from scheduler_core.service.races import Races, check_if_match
from scheduler_core.service.reads import collection_not_found, live_collection
from scheduler_core.storage.keys import CollectionRef

if TYPE_CHECKING:
    from scheduler_core.service.jobs import JobService

#: How long after the last write of a collection's job counter another instance may still create jobs
#: with slots it reserved ahead, plus a margin for clocks and for job writes in flight.
DELETE_SETTLE = timedelta(seconds=slots.PREFETCH_TTL + 2)


class CollectionService:
    """The collection operations; ``jobs`` carries state changes and quota checks down to the jobs. A
    deletion waits out slots other instances reserved ahead with ``races.sleep`` (the service's one wait)."""

    def __init__(
        self,
        stores: Stores,
        slots: JobSlots,
        jobs: JobService,
        clock: Clock,
        races: Races,
    ) -> None:
        self.stores = stores
        self.slots = slots
        self.jobs = jobs
        self.clock = clock
        self.races = races

    def get(self, ref: CollectionRef) -> JobCollection:
        return live_collection(self.stores, ref)

    def list(self, subscription: str, resource_group: str | None = None) -> list[JobCollection]:
        return [c for c in self.stores.collections.list(subscription, resource_group) if not c.deleting]

    def put(
        self, ref: CollectionRef, body: Mapping[str, Any], if_match: str | None = None, wire: Wire = Wire.CLASSIC
    ) -> tuple[JobCollection, bool]:
        """Create or replace a collection; returns it and whether it was created. A classic ``wire`` cannot see
        the preview's properties, so its PUT keeps the stored ones (``historyRetention``)."""
        spec = definitions.parse_collection(body, name=ref.name, wire=wire)

        def attempt() -> tuple[JobCollection, bool]:
            existing = self.stores.collections.get(ref)
            if existing is not None and existing.deleting:
                raise ConflictError(
                    f"job collection '{ref.name}' is being deleted; send DELETE again to finish, then create it"
                )
            check_if_match(existing.version if existing else None, if_match, "job collection")
            kept = spec if wire.preview or existing is None else _keep_preview(spec, existing)
            return self._save(ref, kept, existing), existing is None

        return self.races.retrying(f"job collection '{ref.name}'", attempt)

    def patch(
        self, ref: CollectionRef, body: Mapping[str, Any], if_match: str | None = None, wire: Wire = Wire.CLASSIC
    ) -> JobCollection:
        """Merge ``body`` into the stored collection (as ``wire`` sees it) and store the result; the preview's
        properties a classic ``wire`` cannot see are kept."""

        def attempt() -> JobCollection:
            existing = self.get(ref)
            check_if_match(existing.version, if_match, "job collection")
            retention = existing.history_retention if wire.preview else None
            properties = definitions.collection_json(existing.sku, existing.state, existing.quota, retention)
            current = {"location": existing.location, "tags": existing.tags, "properties": properties}
            merged = definitions.merge_collection_patch(current, body)
            spec = definitions.parse_collection(merged, name=ref.name, wire=wire)
            return self._save(ref, spec if wire.preview else _keep_preview(spec, existing), existing)

        return self.races.retrying(f"job collection '{ref.name}'", attempt)

    def set_state(self, ref: CollectionRef, state: str) -> None:
        """Enable or disable a collection and every job in it (final jobs stay as they are). ``state``:
        ``Enabled`` or ``Disabled``."""
        new_state = CollectionState(state)
        if new_state not in (CollectionState.ENABLED, CollectionState.DISABLED):
            raise ValueError(f"a collection is enabled or disabled, not set to {new_state}")

        def attempt() -> JobCollection:
            existing = self.get(ref)
            return self.stores.collections.save(replace(existing, state=new_state), create=False)

        saved = self.races.retrying(f"job collection '{ref.name}'", attempt)
        self.slots.forget(saved.ref)
        self._set_jobs_state(saved.ref, JobState(new_state.value))

    def delete(self, ref: CollectionRef, if_match: str | None = None) -> None:
        """Delete a collection with its jobs, their due-index entries and their history.

        The collection is first marked ``Deleted``: from then on it is not found, and its new ETag makes
        the next job-counter write of every instance fail, so no job can be reserved in it any more. Then
        its jobs are deleted. When its counter was written so recently that another instance may still
        hold job slots reserved ahead (:mod:`scheduler_core.job_slots`), the jobs are listed and
        deleted again once those slots have expired; then the collection row goes. A deletion stopped
        half-way (the process died) is finished by the next DELETE, or by the daily cleanup."""

        def mark() -> tuple[JobCollection, datetime | None]:
            existing = self.stores.collections.get(ref)
            if existing is None:
                raise collection_not_found(ref)
            if existing.deleting:  # a deletion that stopped half-way: finish it
                return existing, existing.modified_at
            check_if_match(existing.version, if_match, "job collection")
            marked = replace(existing, state=CollectionState.DELETED)
            return self.stores.collections.save(marked, create=False), existing.modified_at

        existing, last_write = self.races.retrying(f"job collection '{ref.name}'", mark)
        self.slots.forget(existing.ref, give_back=False)
        self._remove_jobs(existing.ref)
        settled = (last_write or self.clock()) + DELETE_SETTLE
        if settled > self.clock():
            self.races.sleep((settled - self.clock()).total_seconds())
            self._remove_jobs(existing.ref)  # jobs created with slots reserved ahead before the mark
        self.stores.collections.delete(existing.ref)

    # ----------------------------------------------------------------------------------------- helpers

    def _save(self, ref: CollectionRef, spec: CollectionSpec, existing: JobCollection | None) -> JobCollection:
        if plans.is_free(spec) and (existing is None or not plans.is_free(existing)):
            plans.check_free_collections(ref, spec, [c for c in self.list(ref.subscription) if plans.is_free(c)])
        if existing is not None:
            self._check_jobs_fit(ref, spec)
        record = JobCollection(
            ref=existing.ref if existing else ref,
            location=spec.location,
            tags=spec.tags,
            sku=spec.sku,
            state=spec.state,
            quota=spec.quota,
            created_at=existing.created_at if existing else self.clock(),
            etag=existing.etag if existing else "",
            job_count=existing.job_count if existing else 0,
            calendars=existing.calendars if existing else (),
            history_retention=spec.history_retention,
        )
        saved = self.stores.collections.save(record, create=existing is None)
        self.slots.forget(saved.ref)
        if (
            existing is not None
            and existing.state != spec.state
            and spec.state in (CollectionState.ENABLED, CollectionState.DISABLED)
        ):
            self._set_jobs_state(saved.ref, JobState(spec.state.value))
        return saved

    def _check_jobs_fit(self, ref: CollectionRef, spec: CollectionSpec) -> None:
        """A collection update must keep every existing job within the new plan and quota."""
        jobs = self.stores.jobs.list(ref)
        limit = spec.quota.max_job_count
        if len(jobs) > limit:
            raise QuotaExceededError(
                f"properties.quota.maxJobCount: the collection has {len(jobs)} jobs, more than {limit}"
            )
        for job in jobs:
            plans.check_job_fits(job.ref, job.definition, spec)

    def _set_jobs_state(self, ref: CollectionRef, state: JobState) -> None:
        for job in self.stores.jobs.list(ref):
            if not job.state.final and job.state != state:
                self.jobs.set_state(job, state)

    def _remove_jobs(self, ref: CollectionRef) -> None:
        for job in self.stores.jobs.list(ref):
            self.stores.remove_job(job, any_version=True)


def _keep_preview(spec: CollectionSpec, existing: JobCollection) -> CollectionSpec:
    """``spec`` written on the classic wire, with the stored preview properties it could not see."""
    return replace(spec, history_retention=existing.history_retention)
