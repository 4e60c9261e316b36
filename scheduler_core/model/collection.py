"""Job collections: a named group of jobs with a plan (:class:`Sku`), a :class:`Quota` and a state.

The plans' limits (scheduler-plans-billing.md) are the model's: :attr:`Sku.limits` is the quota a
collection gets when it names none, and the most a quota of that plan may allow. The rules that apply them
to jobs (recurrence, the Free plan's rules) are in :mod:`scheduler_core.service.plans`; the ARM JSON of a
collection (``JobCollectionProperties``) is written and read in :mod:`scheduler_core.definitions`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timedelta
from enum import StrEnum

from scheduler_core.model.calendars import CalendarRules
from scheduler_core.model.history import HistoryRetention
from scheduler_core.model.states import CollectionState
from scheduler_core.recurrence import Frequency, nominal_gap
from scheduler_core.storage.keys import CollectionRef


@dataclass(frozen=True)
class MaxRecurrence:
    """``quota.maxRecurrence``: a job of the collection may recur at most once every ``interval`` units of
    ``frequency``."""

    frequency: Frequency
    interval: int

    @property
    def gap(self) -> timedelta:
        """The shortest gap between two occurrences it allows (a month counts as 28 days, a year as 365)."""
        return nominal_gap(self.frequency, self.interval)


@dataclass(frozen=True)
class Quota:
    """``quota``: how many jobs the collection may hold (``max_job_count``), how often they may recur
    (``max_recurrence``), and ``max_job_occurrence`` (kept and answered as written; None: not set)."""

    max_job_count: int
    max_recurrence: MaxRecurrence
    max_job_occurrence: int | None = None


class Sku(StrEnum):
    """A collection's plan (``sku.name``). Its limits are :attr:`limits`."""

    FREE = "Free"
    """At most 5 jobs, recurring at most hourly; no outbound authentication, no retries more often than
    hourly, and one Free collection per subscription."""
    STANDARD = "Standard"
    """At most 50 jobs, recurring at most every minute. The plan of a collection that names none."""
    P10_PREMIUM = "P10Premium"
    """At most 50 jobs, recurring at most every minute (2014-08-01-preview's ``Premium``)."""
    P20_PREMIUM = "P20Premium"
    """At most 1,000 jobs, recurring at most every minute."""

    @property
    def limits(self) -> Quota:
        """The plan's quota: what a collection of this plan gets when it names none, and the most its quota
        may allow (a quota may only be set lower)."""
        return _PLAN_LIMITS[self]


_PLAN_LIMITS: dict[Sku, Quota] = {
    Sku.FREE: Quota(5, MaxRecurrence(Frequency.HOUR, 1)),
    Sku.STANDARD: Quota(50, MaxRecurrence(Frequency.MINUTE, 1)),
    Sku.P10_PREMIUM: Quota(50, MaxRecurrence(Frequency.MINUTE, 1)),
    Sku.P20_PREMIUM: Quota(1000, MaxRecurrence(Frequency.MINUTE, 1)),
}


@dataclass(frozen=True, slots=True)
class Calendar:
    """A named calendar of a collection (api-version 2026-12-01-preview): local ``dates``, and the dates its
    recurring ``rules`` name every year, that the jobs naming it in ``recurrence.exclusions.calendars``
    skip, each in the job's own time zone. ``name`` is spelled as created (names match without regard to
    case)."""

    name: str
    dates: tuple[date, ...]
    rules: CalendarRules = field(default_factory=CalendarRules)


@dataclass(frozen=True)
class JobCollection:
    """A stored job collection: its plan (``sku``), ``state`` and ``quota``, and what the service keeps
    about it. ``etag`` is the stored row's version it was read at (an ETag-guarded write fails when it
    changed; the job counter's moves and calendar writes change it too); :attr:`version` is the collection's
    version as clients see it. ``calendars`` are its named calendars, in the order of their names
    (case-insensitive). ``history_retention`` is its ``historyRetention`` (None: not set, the default rule
    :data:`~scheduler_core.model.history.DEFAULT_RETENTION`)."""

    ref: CollectionRef
    location: str
    tags: dict[str, str]
    sku: Sku
    state: CollectionState
    quota: Quota
    created_at: datetime
    etag: str = ""
    job_count: int | None = None  # jobs in the collection (None: not known, count them)
    modified_at: datetime | None = None  # when the row was last written (the table's Timestamp)
    calendars: tuple[Calendar, ...] = ()
    history_retention: HistoryRetention | None = None

    @property
    def version(self) -> str:
        """The ETag clients see: it changes when what the collection's PUT and PATCH set does (location, tags,
        plan, state, quota, history retention) and only then, so creating or deleting a job in it (the job
        counter) or writing one of its calendars (resources of their own) does not make an edit started before
        it a 412. A collection deleted and created again has another (its creation time is part of it)."""
        shown = [self.created_at, self.location, sorted(self.tags.items()), self.sku, self.state, asdict(self.quota)]
        if self.history_retention is not None:  # absent from the digest when not set: older ETags stay
            shown.append(asdict(self.history_retention))
        digest = hashlib.sha256(json.dumps(shown, sort_keys=True, default=str).encode()).hexdigest()[:20]
        return f'W/"{digest}"'

    def calendar(self, name: str) -> Calendar | None:
        """The calendar called ``name`` (without regard to case), or None."""
        lowered = name.lower()
        return next((item for item in self.calendars if item.name.lower() == lowered), None)

    @property
    def deleting(self) -> bool:
        """Marked for deletion (hidden from clients) while its jobs are being deleted."""
        return self.state == CollectionState.DELETED
