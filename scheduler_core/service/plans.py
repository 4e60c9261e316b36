"""The plans' rules (:class:`~scheduler_core.model.Sku`: Free, Standard, P10Premium, P20Premium) and a
collection's :class:`~scheduler_core.model.Quota`, applied to jobs: how often a job may recur
(``quota.maxRecurrence``), what a Free collection forbids (outbound authentication, retries more often
than hourly), its default retry interval, how many Free collections a subscription may hold, and its limits
on backfills (:func:`backfill_limits`). Pure functions over typed values (:class:`Terms`); the plans' own
limits are :attr:`Sku.limits <scheduler_core.model.Sku.limits>`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Protocol

from scheduler_core.errors import QuotaExceededError
from scheduler_core.model import JobCollection, JobDefinition, Quota, Sku
from scheduler_core.model.retry import DEFAULT_RETRY_INTERVAL
from scheduler_core.policies import MAX_BACKFILL, BackfillLimits
from scheduler_core.recurrence import validate_against_quota
from scheduler_core.storage.keys import CollectionRef, JobRef

#: Free collections: retries at most hourly (plan limit).
FREE_MIN_RETRY_INTERVAL = 3600.0
#: The retry interval of a Free collection's job that names none (written in the job's duration style).
FREE_DEFAULT_RETRY_INTERVAL = timedelta(hours=1)
#: Subscriptions may hold at most one Free collection (plan limit).
MAX_FREE_COLLECTIONS = 1

#: Each plan's limits on backfills (api-version 2026-12-01-preview): outstanding backfill occurrences (sent,
#: not yet run to completion) per job and per collection, and how fast the occurrences of one job start.
#:
#: * Free: 10 outstanding (per job and per collection), 1 start a minute per job. A Free job runs at most
#:   hourly; a backfill there re-runs the hours a target missed, a few at a time, at a pace no target notices.
#: * Standard and P10Premium: one whole backfill (:data:`~scheduler_core.policies.MAX_BACKFILL`)
#:   outstanding per job, two per collection, 10 starts a second per job.
#: * P20Premium (1,000 jobs): as Standard per job, 5,000 per collection, 20 starts a second per job.
BACKFILL_LIMITS: dict[Sku, BackfillLimits] = {
    Sku.FREE: BackfillLimits("Free", 10, 10, 1, timedelta(minutes=1)),
    Sku.STANDARD: BackfillLimits("Standard", MAX_BACKFILL, 2 * MAX_BACKFILL, 10, timedelta(seconds=1)),
    Sku.P10_PREMIUM: BackfillLimits("P10Premium", MAX_BACKFILL, 2 * MAX_BACKFILL, 10, timedelta(seconds=1)),
    Sku.P20_PREMIUM: BackfillLimits("P20Premium", MAX_BACKFILL, 5 * MAX_BACKFILL, 20, timedelta(seconds=1)),
}


class Terms(Protocol):
    """What the plan rules read of a collection: its plan and its quota. A stored
    :class:`~scheduler_core.model.JobCollection` has them, and so does a validated
    :class:`~scheduler_core.definitions.CollectionSpec` (a collection about to be written)."""

    @property
    def sku(self) -> Sku: ...

    @property
    def quota(self) -> Quota: ...


def is_free(collection: Terms) -> bool:
    return collection.sku is Sku.FREE


def check_free_collections(ref: CollectionRef, collection: Terms, others: Sequence[JobCollection]) -> None:
    """A subscription may hold :data:`MAX_FREE_COLLECTIONS` Free collections: ``others`` are its Free
    collections other than ``ref`` as stored (call when ``ref`` becomes ``collection``)."""
    if is_free(collection) and len(others) >= MAX_FREE_COLLECTIONS:
        raise QuotaExceededError(
            f"properties.sku.name: subscription '{ref.subscription}' already has a Free job collection "
            f"(the Free plan allows {MAX_FREE_COLLECTIONS})"
        )


def default_retry_interval(collection: Terms) -> timedelta:
    """The retry interval of a job that names none: an hour in a Free collection (the plan's minimum, so
    that a job without a retry policy is accepted there), else the usual default."""
    return FREE_DEFAULT_RETRY_INTERVAL if is_free(collection) else DEFAULT_RETRY_INTERVAL


def check_job_fits(ref: JobRef, definition: JobDefinition, collection: Terms) -> None:
    """A job must keep to its collection's ``maxRecurrence`` and its plan's limits (409 QuotaExceeded)."""
    label = f"job '{ref.name}'" if ref.name else "the job"
    limit = collection.quota.max_recurrence
    if not validate_against_quota(definition.recurrence, limit.frequency, limit.interval):
        raise QuotaExceededError(
            f"properties.recurrence: {label} recurs more often than the collection's quota.maxRecurrence "
            f"allows (at most once every {limit.interval} {limit.frequency.lower()}(s))"
        )
    if is_free(collection):
        if definition.action.uses_authentication:
            raise QuotaExceededError(
                f"properties.action.request.authentication: {label} uses outbound authentication, "
                "which the Free plan does not allow"
            )
        if any(seconds < FREE_MIN_RETRY_INTERVAL for seconds in definition.action.retry_intervals()):
            raise QuotaExceededError(
                f"properties.action.retryPolicy.retryInterval: {label} retries more often than hourly, "
                "which the Free plan does not allow"
            )


def backfill_limits(collection: Terms) -> BackfillLimits:
    """The limits on the backfills of ``collection``'s jobs: its plan's (:data:`BACKFILL_LIMITS`)."""
    return BACKFILL_LIMITS[collection.sku]
