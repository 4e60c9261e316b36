"""overlapPolicy (api-version 2026-12-01-preview) end to end: AllowAll runs an occurrence while the one
before it still retries; Skip records it as ``Skipped``; BufferOne runs the waiting one as soon as the one
ahead finishes and skips a later one; the last occurrence is never skipped, so the job ends; an unfinished
occurrence counts only until its chain could have ended, and one waiting behind a lost one runs when the next
comes.

The real service, dispatcher and executor in simulated time on the memory adapter
(:class:`tests.support.harness.Deployment`), with a real HTTP target on 127.0.0.1 that answers as told. Each
test makes an occurrence unfinished the way it happens in production: its call fails and a retry is pending
when the next occurrence is due (or the job's row says it is running). With real host processes and a worker
killed, or storage lost: ``test_overlap_worker_killed.py``, ``test_overlap_storage_lost.py``."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from scheduler_core.api import views
from scheduler_core.model import HistoryStatus, JobState
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.recurrence import format_instant
from tests.e2e.policies.scenario import MINUTE, T0, by_occurrence, put, rows
from tests.support.harness import Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, fixed_retries

pytestmark = [pytest.mark.e2e]


def test_allow_all_runs_an_occurrence_while_the_previous_one_retries(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([500, 200])
    put(deployment, target, {"frequency": "Minute", "count": 3}, fixed_retries(1, "PT90S"))
    deployment.run_until(T0 + 4 * MINUTE)
    assert by_occurrence(deployment) == {
        T0: ["Failed/0", "Completed/1"],
        T0 + MINUTE: ["Completed/0"],  # ran at T0+1m, while T0's retry was pending
        T0 + 2 * MINUTE: ["Completed/0"],
    }
    assert deployment.job("j").running == ""  # the default keeps no state


def test_skip_records_the_overlapping_occurrence_as_skipped(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([500, 200])
    put(deployment, target, {"frequency": "Minute", "count": 3}, fixed_retries(1, "PT90S"), overlapPolicy="Skip")
    deployment.run_until(T0 + 4 * MINUTE)
    assert by_occurrence(deployment) == {
        T0: ["Failed/0", "Completed/1"],
        T0 + MINUTE: ["Skipped/0"],
        T0 + 2 * MINUTE: ["Completed/0"],  # T0's retry succeeded at T0+90s: no overlap any more
    }
    [skipped] = [row for row in rows(deployment) if row.status == HistoryStatus.SKIPPED]
    assert f"the occurrence of {format_instant(T0)} was still running" in skipped.message
    assert "overlapPolicy Skip" in skipped.message
    assert len(target.received) == 3  # two calls of T0, one of T0+2m
    job = deployment.job("j")
    assert job.state == JobState.COMPLETED and job.running == ""
    listed = views.history(job.ref, skipped)
    assert listed["properties"]["status"] == "Skipped"


def test_buffer_one_runs_the_waiting_occurrence_when_the_previous_finishes_and_skips_a_later_one(
    deployment: Deployment, target: HttpTarget
) -> None:
    target.answer([500, 200])
    recurrence = {"frequency": "Minute", "count": 4}
    put(deployment, target, recurrence, fixed_retries(1, "PT150S"), overlapPolicy="BufferOne")
    deployment.run_until(T0 + 5 * MINUTE)
    assert by_occurrence(deployment) == {
        T0: ["Failed/0", "Completed/1"],
        T0 + MINUTE: ["Completed/0"],
        T0 + 2 * MINUTE: ["Skipped/0"],
        T0 + 3 * MINUTE: ["Completed/0"],
    }
    history = rows(deployment)
    retried = next(row for row in history if row.retry_count == 1)
    waited = next(row for row in history if row.expected_execution_time == T0 + MINUTE)
    assert retried.start_time > T0 + 2 * MINUTE  # so T0+2m came while T0+1m waited
    assert (
        retried.end_time is not None and waited.start_time >= retried.end_time
    )  # it waited for T0's retry, then ran at once
    assert waited.start_time < T0 + 3 * MINUTE
    skipped = next(row for row in history if row.status == HistoryStatus.SKIPPED)
    assert "already waits" in skipped.message and "BufferOne" in skipped.message
    job = deployment.job("j")
    assert job.state == JobState.COMPLETED and (job.running, job.waiting) == ("", "")


def test_the_last_occurrence_is_never_skipped_so_the_job_ends(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([500, 200])
    put(deployment, target, {"frequency": "Minute", "count": 2}, fixed_retries(1, "PT90S"), overlapPolicy="Skip")
    deployment.run_until(T0 + 4 * MINUTE)
    assert by_occurrence(deployment) == {T0: ["Failed/0", "Completed/1"], T0 + MINUTE: ["Completed/0"]}
    assert deployment.job("j").state == JobState.COMPLETED


def test_an_unfinished_occurrence_lost_long_ago_overlaps_nothing(deployment: Deployment, target: HttpTarget) -> None:
    put(deployment, target, {"frequency": "Minute", "count": 2}, NO_RETRY, overlapPolicy="Skip")
    job = deployment.job("j")
    lost = f"{job.generation}|{format_instant(T0 - timedelta(hours=1))}"  # a chain whose message was lost
    deployment.storage.jobs.save(replace(job, running=lost), create=False, etag=job.etag)
    deployment.run_until(T0 + 3 * MINUTE)
    assert by_occurrence(deployment) == {T0: ["Completed/0"], T0 + MINUTE: ["Completed/0"]}


def test_an_unfinished_occurrence_still_within_its_chain_overlaps(deployment: Deployment, target: HttpTarget) -> None:
    put(deployment, target, {"frequency": "Minute", "count": 3}, NO_RETRY, overlapPolicy="Skip")
    job = deployment.job("j")
    recent = f"{job.generation}|{format_instant(T0 - 10 * MINUTE)}"  # within 2 + 2 + 20 minutes
    deployment.storage.jobs.save(replace(job, running=recent), create=False, etag=job.etag)
    deployment.run_until(T0 + 4 * MINUTE)
    assert by_occurrence(deployment) == {T0: ["Skipped/0"], T0 + MINUTE: ["Skipped/0"]}
    assert '"occurrence":"' + format_instant(T0 + 2 * MINUTE) in deployment.job("j").waiting  # the last one waits


def test_a_waiting_occurrence_behind_a_lost_one_runs_when_the_next_comes(
    deployment: Deployment, target: HttpTarget
) -> None:
    put(deployment, target, {"frequency": "Minute", "count": 2}, NO_RETRY, overlapPolicy="BufferOne")
    job = deployment.job("j")
    lost = f"{job.generation}|{format_instant(T0 - timedelta(hours=1))}"
    waiting = ExecutionMessage(job.ref.partition_key, job.ref.row_key, job.generation, format_instant(T0 - MINUTE))
    deployment.storage.jobs.save(replace(job, running=lost, waiting=waiting.to_json()), create=False, etag=job.etag)
    deployment.run_until(T0 + 3 * MINUTE)
    # T0 finds the lost one expired: the one waiting behind it runs, and T0 waits for it (BufferOne)
    assert by_occurrence(deployment) == {
        T0 - MINUTE: ["Completed/0"],
        T0: ["Completed/0"],
        T0 + MINUTE: ["Completed/0"],
    }
    assert deployment.job("j").state == JobState.COMPLETED
