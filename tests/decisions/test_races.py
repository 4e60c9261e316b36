"""The one concurrency rule (``scheduler_core/races.py``): an attempt that loses its write race runs again
from a fresh read, within its bound; what is not a lost race is never retried.

Each test drives ``race`` with an attempt that really reads and writes a row of the memory job store under
its ETag while a second writer changes the row between the two, in simulated time (``sleep`` and ``timer``
share one clock)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler_core.adapters.memory.catalog import MemoryJobs
from scheduler_core.errors import ConflictError, EtagMismatchError, NotFoundError
from scheduler_core.model import Job
from scheduler_core.races import Backoff, Bound, RacesLost, StartOver, race
from scheduler_core.service.races import RACE_ATTEMPTS, Races
from tests.support.harness import START, Deployment
from tests.support.jobs import http_action, job_body
from tests.support.waiting import FakeTime


@pytest.fixture
def stored(deployment: Deployment) -> tuple[MemoryJobs, Job]:
    job = deployment.put_job("raced", job_body(START, http_action("http://127.0.0.1:9/")))
    jobs = deployment.storage.jobs
    assert isinstance(jobs, MemoryJobs)
    return jobs, job


def _writer(jobs: MemoryJobs, job: Job, beaten: int) -> tuple[list[int], object]:
    """An attempt that reads the job, and writes its ``failure_count`` + 1 under the ETag it read; the first
    ``beaten`` times another writer changes the row between the read and the write."""
    tries: list[int] = []

    def attempt() -> Job:
        current = jobs.get_by_keys(job.ref.partition_key, job.ref.row_key)
        assert current is not None
        tries.append(len(tries))
        if len(tries) <= beaten:
            jobs.save(replace(current, execution_count=current.execution_count + 1), create=False)  # the other writer
        return jobs.save(replace(current, failure_count=current.failure_count + 1), create=False, etag=current.etag)

    return tries, attempt


def test_a_lost_race_runs_again_from_a_fresh_read_until_it_wins(stored: tuple[MemoryJobs, Job]) -> None:
    jobs, job = stored
    tries, attempt = _writer(jobs, job, beaten=3)
    clock = FakeTime()
    written = race(attempt, Backoff(Bound(tries=10, first=0.01, cap=0.04), sleep=clock.sleep, timer=clock.timer))
    assert len(tries) == 4
    assert written.failure_count == job.failure_count + 1  # once, over the other writer's three changes
    assert written.execution_count == job.execution_count + 3
    assert len(clock.slept) == 3 and all(0 <= pause <= 0.04 for pause in clock.slept)


def test_past_its_tries_the_race_is_lost_and_nothing_of_it_is_written(stored: tuple[MemoryJobs, Job]) -> None:
    jobs, job = stored
    tries, attempt = _writer(jobs, job, beaten=100)
    with pytest.raises(RacesLost) as lost:
        race(attempt, Bound(tries=5))
    assert len(tries) == 5 and lost.value.lost == 5
    current = jobs.get_by_keys(job.ref.partition_key, job.ref.row_key)
    assert current is not None and current.failure_count == job.failure_count


def test_a_time_budget_bounds_the_race_however_many_tries(stored: tuple[MemoryJobs, Job]) -> None:
    jobs, job = stored
    tries, attempt = _writer(jobs, job, beaten=1000)
    clock = FakeTime()
    waits = Backoff(Bound(budget=10.0, first=0.5, cap=2.0), sleep=clock.sleep, timer=clock.timer, jitter=max)
    with pytest.raises(RacesLost) as lost:
        race(attempt, waits)
    assert clock.now <= 10.0
    assert clock.slept[:3] == [0.5, 1.0, 2.0] and set(clock.slept[3:]) == {2.0}  # doubled, then capped
    assert lost.value.lost == len(tries)


def test_start_over_runs_again_at_once_and_counts_as_a_try() -> None:
    calls: list[int] = []
    clock = FakeTime()

    def attempt() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise StartOver
        return "done"

    assert race(attempt, Backoff(Bound(tries=3, first=1.0, cap=1.0), sleep=clock.sleep)) == "done"
    assert clock.slept == []
    calls.clear()
    with pytest.raises(RacesLost):
        race(attempt, Bound(tries=2))
    assert len(calls) == 2


def test_errors_that_are_not_lost_races_are_raised_at_once() -> None:
    calls: list[int] = []

    def missing() -> None:
        calls.append(1)
        raise NotFoundError("gone")

    with pytest.raises(NotFoundError):
        race(missing, Bound(tries=10))

    def mismatch() -> None:
        calls.append(1)
        raise EtagMismatchError("the client's If-Match")

    with pytest.raises(EtagMismatchError):
        race(mismatch, Bound(tries=10), lambda error: not isinstance(error, EtagMismatchError))
    assert len(calls) == 2


def test_the_service_answers_409_after_its_bound(stored: tuple[MemoryJobs, Job]) -> None:
    jobs, job = stored
    tries, attempt = _writer(jobs, job, beaten=1000)
    clock = FakeTime()
    with pytest.raises(ConflictError, match="being changed by many requests"):
        Races(clock.sleep).retrying("job 'raced'", attempt)
    assert len(tries) == RACE_ATTEMPTS
