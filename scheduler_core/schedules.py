"""The schedule of a stored job (with its jitter and exclusions), and its next execution time as of an instant."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from scheduler_core.model import Job, JobDefinition, JobState
from scheduler_core.recurrence import OccurrenceSeries, compile_adjusted


def definition_schedule(definition: JobDefinition, defined_at: datetime, key: str) -> OccurrenceSeries:
    """The occurrences of ``definition`` written at ``defined_at``, at the instants they fire: with its
    jitter (seeded by ``key``, the job's identity) and exclusions applied (``AdjustedSchedule``)."""
    exclusions = definition.exclusions
    return compile_adjusted(
        definition.start_time,
        definition.recurrence,
        defined_at,
        jitter=definition.jitter_length,
        dates=sorted(exclusions.dates_for(defined_at)) if exclusions is not None else (),
        ranges=exclusions.walls if exclusions is not None else (),
        key=key,
        on_excluded=exclusions.on_excluded if exclusions is not None else "Skip",
    )


def schedule_of(job: Job) -> OccurrenceSeries:
    """The compiled schedule of a stored job (its definition was validated when it was written): the
    instants its occurrences fire at, which its due-index rows and execution messages carry."""
    return definition_schedule(job.definition, job.defined_at, job.ref.identity)


def with_next_execution(job: Job, now: datetime) -> Job:
    """``job`` with ``next_execution_time`` as of ``now``: the first occurrence not yet fired, or none
    when the job is not enabled or its series is over. (The dispatcher does not rewrite jobs as it
    advances them, so this is computed when a job is read.)"""
    if job.state != JobState.ENABLED:
        return replace(job, next_execution_time=None)
    return replace(job, next_execution_time=next_unrun(schedule_of(job), now, job.last_execution_time))


def next_unrun(schedule: OccurrenceSeries, now: datetime, last_run: datetime | None) -> datetime | None:
    """The first occurrence of ``schedule`` at or after ``now`` that is after ``last_run`` (it has run)."""
    if last_run is None or last_run < now:
        return schedule.after(now, inclusive=True)
    return schedule.after(last_run)
