"""The schedule of a stored job, and its next execution time as of an instant."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from scheduler_core.model import Job, JobState
from scheduler_core.recurrence import CompiledSchedule, compile_schedule


def schedule_of(job: Job) -> CompiledSchedule:
    """The compiled schedule of a stored job (its definition was validated when it was written)."""
    definition = job.definition
    return compile_schedule(definition.start_time, definition.recurrence, job.defined_at)


def with_next_execution(job: Job, now: datetime) -> Job:
    """``job`` with ``next_execution_time`` as of ``now``: the first occurrence not yet fired, or none
    when the job is not enabled or its series is over. (The dispatcher does not rewrite jobs as it
    advances them, so this is computed when a job is read.)"""
    if job.state != JobState.ENABLED:
        return replace(job, next_execution_time=None)
    return replace(job, next_execution_time=next_unrun(schedule_of(job), now, job.last_execution_time))


def next_unrun(schedule: CompiledSchedule, now: datetime, last_run: datetime | None) -> datetime | None:
    """The first occurrence of ``schedule`` at or after ``now`` that is after ``last_run`` (it has run)."""
    if last_run is None or last_run < now:
        return schedule.after(now, inclusive=True)
    return schedule.after(last_run)
