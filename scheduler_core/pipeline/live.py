"""Whether an execution message's job still wants its attempt: the job read that starts every attempt, and why a
message is dropped when its job has moved on (deleted, finished, disabled, edited; a notification removed; a
deadline met)."""

from __future__ import annotations

from scheduler_core import policies
from scheduler_core.model import Job, JobState
from scheduler_core.model.actions import NotificationKind
from scheduler_core.pipeline.durable import durably
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.pipeline.outcomes import ExecutionReport, action_of, stale
from scheduler_core.pipeline.reporting import Stale
from scheduler_core.pipeline.stream import HistoryStream
from scheduler_core.ports import Stores

__all__ = ["live_job", "stream_again"]


def live_job(stores: Stores, message: ExecutionMessage, stream: HistoryStream | None) -> Job | ExecutionReport:
    """The job the message names, or why the message is stale (deleted, changed, not enabled). Storage errors
    are waited out here too: a message that failed would stay hidden for the queue's processing lease (10
    minutes), its occurrence that much late. A message dropped because its job moved on may be the re-delivery
    of an attempt whose worker died after recording it: with the history stream on, its records are sent again
    (:func:`stream_again`)."""
    job = durably("job read", lambda: stores.jobs.get_by_keys(message.job_partition, message.job_row))
    if job is None:
        return stale(message, Stale.DELETED, "job deleted")
    if not message.survives_edits:
        # The state first: disabling a job also bumps its generation, and "disabled" is the better reason.
        if job.state != JobState.ENABLED:
            reason = Stale.DISABLED if job.state == JobState.DISABLED else Stale.FINISHED
            stream_again(stores, stream, job, message.stable_execution_id())
            return stale(message, reason, f"job is {job.state}")
        if job.generation != message.generation:
            stream_again(stores, stream, job, message.stable_execution_id())
            return stale(message, Stale.EDITED, "job changed since dispatch")
    if message.notification is not None and action_of(job, message) is None:
        return stale(message, Stale.EDITED, f"the job's {message.notification} notification was removed")
    if message.notification is NotificationKind.DEADLINE:
        if job.generation != message.generation:
            return stale(message, Stale.EDITED, "job changed since its occurrence was dispatched")
        rows = durably("history read", lambda: list(stores.history.list(job.ref)))
        if policies.succeeded(rows, message.occurrence_time):
            return stale(message, Stale.MET, "the occurrence succeeded before its deadline")
    return job


def stream_again(stores: Stores, stream: HistoryStream | None, job: Job, execution_id: str) -> None:
    """With the history ``stream`` on (None: off), send the records of one attempt of ``job`` again."""
    if stream is not None:
        durably("history stream", lambda: stream.again(stores.history, job.ref, execution_id))
