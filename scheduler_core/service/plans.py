"""The plans' rules (``sku``: Free, Standard, P10Premium, P20Premium) and a collection's quotas, applied to
jobs: how often a job may recur (``quota.maxRecurrence``), what a Free collection forbids (outbound
authentication, retries more often than hourly), its default retry interval, and how many Free
collections a subscription may hold. Pure functions over validated definitions."""

from __future__ import annotations

from datetime import timedelta

from scheduler_core import definitions
from scheduler_core.definitions import CollectionSpec
from scheduler_core.errors import QuotaExceededError
from scheduler_core.model import JobCollection, JobDefinition
from scheduler_core.model.retry import DEFAULT_RETRY_INTERVAL
from scheduler_core.storage.keys import CollectionRef, JobRef

#: Free collections: retries at most hourly (plan limit).
FREE_MIN_RETRY_INTERVAL = 3600.0
#: The retry interval of a Free collection's job that names none (written in the job's duration style).
FREE_DEFAULT_RETRY_INTERVAL = timedelta(hours=1)
#: Subscriptions may hold at most one Free collection (plan limit).
MAX_FREE_COLLECTIONS = 1


def limits_of(collection: JobCollection) -> CollectionSpec:
    """The validated definition of a stored collection: its plan and quotas."""
    body = {"location": collection.location, "tags": collection.tags, "properties": collection.properties}
    return definitions.parse_collection(body, name=collection.ref.name)


def is_free(collection: JobCollection) -> bool:
    return bool(collection.properties["sku"]["name"] == "Free")


def check_free_collections(ref: CollectionRef, spec: CollectionSpec, others: list[JobCollection]) -> None:
    """A subscription may hold :data:`MAX_FREE_COLLECTIONS` Free collections: ``others`` are its Free
    collections other than ``ref`` as stored (call only when ``ref`` becomes Free)."""
    if spec.sku == "Free" and len(others) >= MAX_FREE_COLLECTIONS:
        raise QuotaExceededError(
            f"properties.sku.name: subscription '{ref.subscription}' already has a Free job collection "
            f"(the Free plan allows {MAX_FREE_COLLECTIONS})"
        )


def default_retry_interval(limits: CollectionSpec) -> timedelta:
    """The retry interval of a job that names none: an hour in a Free collection (the plan's minimum, so
    that a job without a retry policy is accepted there), else the usual default."""
    return FREE_DEFAULT_RETRY_INTERVAL if limits.sku == "Free" else DEFAULT_RETRY_INTERVAL


def check_job_fits(ref: JobRef, definition: JobDefinition, limits: CollectionSpec) -> None:
    """A job must keep to its collection's ``maxRecurrence`` and its plan's limits (409 QuotaExceeded)."""
    label = f"job '{ref.name}'" if ref.name else "the job"
    if definitions.recurrence_exceeds_quota(definition.recurrence, limits.max_recurrence):
        frequency, interval = limits.max_recurrence
        raise QuotaExceededError(
            f"properties.recurrence: {label} recurs more often than the collection's quota.maxRecurrence "
            f"allows (at most once every {interval} {frequency.lower()}(s))"
        )
    if limits.sku == "Free":
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
