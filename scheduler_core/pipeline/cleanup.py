"""Daily cleanup: history kept for 60 days or the last 1,000 executions per job (whichever is less), jobs
removed 60 days after they completed or faulted, execution claims removed after 8 days, and collection
deletions that stopped half-way finished."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler_core.model import Job
from scheduler_core.ports import Claims, Stores
from scheduler_core.service.slots import subtract_jobs

log = logging.getLogger("scheduler_core.cleanup")

HISTORY_RETENTION = timedelta(days=60)
HISTORY_MAX_ROWS = 1000
FINISHED_JOB_RETENTION = timedelta(days=60)
#: A collection left marked ``Deleted`` this long (its deletion stopped half-way) is deleted by the cleanup.
ABANDONED_DELETION = timedelta(hours=1)
#: Claims guard against duplicate deliveries of an execution message, which a queue may hold for at most
#: 7 days; a day more and no delivery of their message can still come.
CLAIM_RETENTION = timedelta(days=8)


@dataclass
class CleanupReport:
    jobs_removed: int = 0
    collections_removed: int = 0
    history_removed: int = 0
    claims_removed: int = 0


def cleanup(stores: Stores, now: datetime, claims: Claims | None = None) -> CleanupReport:
    """One pass over every job of every collection (``claims``: the execution claims to trim too)."""
    report = CleanupReport()

    def remove(job: Job, *, any_version: bool = False) -> bool:
        """Remove the job's rows; True when this pass removed the job row itself (only then may its slot
        under maxJobCount be given back: a client's DELETE racing with the cleanup gives it back instead)."""
        removed = stores.remove_job(job, any_version=any_version)
        if removed and claims is not None:
            claims.delete_all(job.ref.identity)
        return removed

    for collection_partition in stores.collections.all_partitions():
        for collection in stores.collections.list(collection_partition):
            if collection.deleting:
                if collection.modified_at is None or now - collection.modified_at > ABANDONED_DELETION:
                    for job in stores.jobs.list(collection.ref):
                        remove(job, any_version=True)
                    stores.collections.delete(collection.ref)
                    report.collections_removed += 1
                continue
            removed = report.jobs_removed
            for job in stores.jobs.list(collection.ref):
                if job.ended_at is not None and now - job.ended_at > FINISHED_JOB_RETENTION:
                    if remove(job):
                        report.jobs_removed += 1
                    continue
                if claims is not None:
                    report.claims_removed += claims.delete_older_than(job.ref.identity, now - CLAIM_RETENTION)
                report.history_removed += stores.history.trim(job.ref, now - HISTORY_RETENTION, HISTORY_MAX_ROWS)
            if report.jobs_removed > removed:  # their slots under maxJobCount are free again
                subtract_jobs(stores.collections, collection.ref, report.jobs_removed - removed)
    log.info(
        "cleanup: %d finished jobs removed, %d history rows removed, %d claims removed, %d deletions finished",
        report.jobs_removed,
        report.history_removed,
        report.claims_removed,
        report.collections_removed,
    )
    return report
