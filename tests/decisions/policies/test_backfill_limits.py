"""The plans' limits on backfills (``POST .../jobs/{job}/backfill``, api-version 2026-12-01-preview), in
simulated time on the memory adapter: the management API in process, the real dispatcher, executor and
watchdog, and a real HTTP target.

* Outstanding backfill occurrences (sent, not yet run to completion) per job and per collection: a backfill
  over either limit is a 409 ``QuotaExceeded`` naming the limit and its value, and nothing stored changes;
  racing backfills never take more than the limit, and never make more calls.
* The rate: the occurrences of one job start at most 1 a minute (Free), 10 a second (Standard).
* The count returns to 0 when the occurrences are over, also when one fails and is retried, runs its error
  action, loses its worker, is dropped as stale, or is lost for good (then after its deadline).
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from scheduler_core import policies
from scheduler_core.definitions import Wire
from scheduler_core.errors import QuotaExceededError
from scheduler_core.ledger import OCCURRENCE_KIND, ledger_partition
from scheduler_core.model import CLAIM_LEASE, HistoryStatus, JobState, Sku
from scheduler_core.model.history import Trigger
from scheduler_core.model.retry import RetryPolicy
from scheduler_core.policies import BackfillLimits, LedgerEntry
from scheduler_core.recurrence import format_instant
from scheduler_core.service.plans import BACKFILL_LIMITS
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import JobRef
from tests.support.backfills import JOB_PATH, LATER, post, window
from tests.support.harness import COLLECTION, START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, fixed_retries

MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
#: How long a backfill occurrence of a job without retries may live (``policies.backfill_lifetime``).
LIFETIME = policies.backfill_lifetime(RetryPolicy.never(), CLAIM_LEASE)


class WorkerDied(BaseException):
    """The process stopped: nothing catches it (it is not an ``Exception``)."""


def deployment_of(memory_env: Settings, sku: str) -> Deployment:
    """A deployment whose collection has the plan ``sku``, the simulated time :data:`LATER` (a day after
    :data:`START`, so the day before is the past a backfill runs)."""
    deployment = Deployment.on_memory(
        memory_env, collection_body={"location": "westus", "properties": {"sku": {"name": sku}}}
    )
    deployment.clock.set(LATER)
    return deployment


def put_job(
    deployment: Deployment,
    name: str,
    target: HttpTarget,
    frequency: str = "Hour",
    retry: dict[str, Any] | None = None,
    error: bool = False,
) -> None:
    """A job ``name`` recurring each ``frequency`` from :data:`START`, calling the target at ``/<name>`` (its
    error action at ``/<name>-error``); the scheduled occurrence due as it is written is run and forgotten. The
    collection's job slots that the create reserved ahead are given back at once (:mod:`scheduler_core.job_slots`
    gives them back 2 s later otherwise, a write of the collection row that :func:`stored` would see in the
    middle of a test)."""
    action: dict[str, Any] = {
        "type": "Http",
        "request": {"uri": f"{target.base_url}/{name}", "method": "POST", "body": "ping"},
        "retryPolicy": retry or NO_RETRY,
    }
    if error:
        action["errorAction"] = {
            "type": "Http",
            "request": {"uri": f"{target.base_url}/{name}-error", "method": "POST"},
        }
    body = {
        "properties": {"startTime": format_instant(START), "action": action, "recurrence": {"frequency": frequency}}
    }
    deployment.service.put_job(JobRef(COLLECTION, name), body, wire=Wire.PREVIEW)
    deployment.deliver()
    with target.lock:
        target.received.clear()
    deployment.service.slots.give_back_ahead()  # now, not by a timer in the middle of a test


def backfill(deployment: Deployment, name: str, start: float, end: float, **extra: Any) -> tuple[int, dict[str, Any]]:
    """POST a backfill of job ``name`` over hours ``start`` to ``end`` after :data:`START` (the API's answer)."""
    return post(deployment, window(start, end, **extra), path=JOB_PATH[: -len("j")] + name + "/backfill")


def minutes(deployment: Deployment, name: str, first: int, count: int, **extra: Any) -> tuple[int, dict[str, Any]]:
    """POST a backfill of ``count`` occurrences of the minutely job ``name`` from minute ``first``."""
    return backfill(deployment, name, first / 60, (first + count) / 60, **extra)


def outstanding(deployment: Deployment, job: str | None = None) -> int:
    return deployment.service.jobs.backfills.outstanding(COLLECTION, job)


def ledger(deployment: Deployment) -> list[Any]:
    """The ledger's rows as stored (every row of the collection's ledger partition)."""
    return list(deployment.storage.due.due_before(ledger_partition(COLLECTION.identity), "~"))


def occurrence_rows(deployment: Deployment) -> list[Any]:
    return [row for row in ledger(deployment) if row.kind == OCCURRENCE_KIND]


def stored(deployment: Deployment) -> tuple[Any, ...]:
    """What a refused backfill must not change: the ledger, the queue, every due-index entry, the collection
    row (its ETag) and the jobs (theirs)."""
    collection = deployment.storage.collections.get(COLLECTION)
    assert collection is not None
    jobs = sorted((job.ref.name, job.etag) for job in deployment.storage.jobs.list(COLLECTION))
    return (ledger(deployment), deployment.queued(), deployment.due_entries(), collection.etag, jobs)


def calls(target: HttpTarget, path: str) -> int:
    with target.lock:
        return sum(1 for received in target.received if received.path == path)


def settle(deployment: Deployment, span: timedelta) -> None:
    deployment.run_until(deployment.clock.now + span, tick=timedelta(seconds=10))


def backfill_starts(deployment: Deployment, name: str) -> list[datetime]:
    rows = deployment.history(name)
    return sorted(row.start_time for row in rows if row.trigger is Trigger.BACKFILL)


def offsets(deployment: Deployment) -> list[float]:
    """When each queued backfill message shows, in seconds after now, in send order."""
    now = deployment.clock.now
    return [(m.visible_at - now).total_seconds() for m in deployment.queued() if '"backfill"' in m.text]


@pytest.fixture
def free(memory_env: Settings, target: HttpTarget) -> Deployment:
    deployment = deployment_of(memory_env, "Free")
    put_job(deployment, "a", target)
    put_job(deployment, "b", target)
    return deployment


@pytest.fixture
def standard(memory_env: Settings, target: HttpTarget) -> Deployment:
    deployment = deployment_of(memory_env, "Standard")
    put_job(deployment, "m", target, "Minute")
    return deployment


# -------------------------------------------------------------------------------------------- Free plan


def test_the_plans_limits() -> None:
    assert [
        (sku.value, limits.per_job, limits.per_collection, limits.rate) for sku, limits in BACKFILL_LIMITS.items()
    ] == [
        ("Free", 10, 10, "1 per minute"),
        ("Standard", 1000, 2000, "10 per second"),
        ("P10Premium", 1000, 2000, "10 per second"),
        ("P20Premium", 1000, 5000, "20 per second"),
    ]
    assert set(BACKFILL_LIMITS) == set(Sku)


def test_a_free_collection_has_at_most_10_outstanding_per_job_and_per_collection(free: Deployment) -> None:
    before = stored(free)
    status, answer = backfill(free, "a", 0, 11)
    assert status == 409 and answer["error"]["code"] == "QuotaExceeded"
    message = answer["error"]["message"]
    assert "maxOutstandingPerJob (10 on the Free plan)" in message and "asks for 11" in message
    assert stored(free) == before  # nothing sent, nothing written
    assert backfill(free, "a", 0, 6) == (202, {"count": 6})
    before = stored(free)
    status, answer = backfill(free, "b", 0, 5)
    assert status == 409 and answer["error"]["code"] == "QuotaExceeded"
    assert "maxOutstandingPerCollection (10 on the Free plan)" in answer["error"]["message"]
    assert "job collection 'jc1' has 6 outstanding" in answer["error"]["message"]
    assert stored(free) == before
    assert backfill(free, "b", 0, 4) == (202, {"count": 4})
    assert (outstanding(free), outstanding(free, "a"), outstanding(free, "b")) == (10, 6, 4)
    status, answer = backfill(free, "a", 6, 7)
    assert status == 409 and "maxOutstandingPerCollection (10" in answer["error"]["message"]
    assert backfill(free, "a", 6.5, 6.75) == (202, {"count": 0})  # an empty window takes nothing


def test_free_backfill_occurrences_start_one_a_minute_per_job(free: Deployment, target: HttpTarget) -> None:
    assert backfill(free, "a", 0, 5) == (202, {"count": 5})
    assert offsets(free) == [0, 60, 120, 180, 240]
    assert backfill(free, "b", 0, 2) == (202, {"count": 2})  # each job its own pace
    assert offsets(free)[5:] == [0, 60]
    assert backfill(free, "a", 5, 7) == (202, {"count": 2})  # the job's pace goes on where its last backfill left it
    assert offsets(free)[7:] == [300, 360]
    settle(free, 8 * MINUTE)
    assert (calls(target, "/a"), calls(target, "/b")) == (7, 2)
    starts = backfill_starts(free, "a")
    assert len(starts) == 7
    assert all(later - earlier >= MINUTE for earlier, later in itertools.pairwise(starts))
    assert outstanding(free) == 0


def test_a_free_one_after_another_backfill_running_late_keeps_a_minute_between_starts(
    free: Deployment, target: HttpTarget
) -> None:
    assert backfill(free, "a", 0, 3, overlapPolicy="BufferOne") == (202, {"count": 3})
    free.clock.advance(150)  # its first occurrence runs late (a backlog): its next slots (60 s, 120 s) are past
    settle(free, 6 * MINUTE)
    starts = backfill_starts(free, "a")
    assert [int((start - LATER).total_seconds()) for start in starts][:1] == [150]
    assert len(starts) == 3 and all(b - a >= MINUTE for a, b in itertools.pairwise(starts))
    assert calls(target, "/a") == 3 and outstanding(free) == 0


# ---------------------------------------------------------------------------------------- Standard plan


def test_standard_backfill_occurrences_start_at_most_10_a_second_per_job(standard: Deployment) -> None:
    assert minutes(standard, "m", 0, 25) == (202, {"count": 25})
    assert Counter(offsets(standard)) == {0: 10, 1: 10, 2: 5}
    assert minutes(standard, "m", 100, 20) == (202, {"count": 20})  # the job's pace goes on
    per_second = Counter(offsets(standard))
    assert max(per_second.values()) == 10 and sum(per_second.values()) == 45
    assert sorted(per_second) == [0, 1, 2, 3, 4]


def test_standard_limits_per_job_and_per_collection(standard: Deployment, target: HttpTarget) -> None:
    put_job(standard, "n", target, "Minute")
    put_job(standard, "o", target, "Minute")
    assert minutes(standard, "m", 0, 1000) == (202, {"count": 1000})  # one whole backfill per job
    before = stored(standard)
    status, answer = minutes(standard, "m", 1000, 1)
    assert status == 409 and "maxOutstandingPerJob (1000 on the Standard plan)" in answer["error"]["message"]
    assert stored(standard) == before
    assert minutes(standard, "n", 0, 1000) == (202, {"count": 1000})
    before = stored(standard)
    status, answer = minutes(standard, "o", 0, 1)
    assert status == 409 and "maxOutstandingPerCollection (2000 on the Standard plan)" in answer["error"]["message"]
    assert stored(standard) == before
    assert outstanding(standard) == 2000


# --------------------------------------------------------------------------------------- racing backfills


def post_together(deployment: Deployment, posts: list[tuple[str, int, int]]) -> list[tuple[int, dict[str, Any]]]:
    """POST backfills (job, first minute or hour, count) from one thread each, released together."""
    barrier = threading.Barrier(len(posts))
    answers: list[tuple[int, dict[str, Any]] | None] = [None] * len(posts)

    def run(index: int) -> None:
        name, first, count = posts[index]
        barrier.wait()
        answers[index] = (
            minutes(deployment, name, first, count) if name == "m" else backfill(deployment, name, first, first + count)
        )

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(posts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert all(answer is not None for answer in answers)
    return [answer for answer in answers if answer is not None]


def test_racing_free_backfills_take_at_most_the_limit_and_make_no_more_calls(
    free: Deployment, target: HttpTarget
) -> None:
    answers = post_together(free, [(name, 3 * n, 3) for n in range(4) for name in ("a", "b")])
    accepted = [answer for answer in answers if answer[0] == 202]
    refused = [answer for answer in answers if answer[0] != 202]
    assert 1 <= len(accepted) <= 3 and all(answer == {"count": 3} for _, answer in accepted)  # 3 x 3 <= 10 < 4 x 3
    for status, answer in refused:
        assert status == 409 and answer["error"]["code"] == "QuotaExceeded"
        assert "(10 on the Free plan)" in answer["error"]["message"]
    assert outstanding(free) == 3 * len(accepted) <= 10
    settle(free, 12 * MINUTE)
    assert calls(target, "/a") + calls(target, "/b") == 3 * len(accepted) <= 10
    assert outstanding(free) == 0


def test_racing_standard_backfills_of_one_job_take_at_most_1000_and_make_no_more_calls(
    standard: Deployment, target: HttpTarget
) -> None:
    answers = post_together(standard, [("m", 280 * n, 280) for n in range(5)])
    accepted = [answer for answer in answers if answer[0] == 202]
    refused = [answer for answer in answers if answer[0] != 202]
    assert 1 <= len(accepted) <= 3 and len(refused) >= 2  # 3 x 280 <= 1000 < 4 x 280
    for status, answer in refused:
        assert status == 409 and "maxOutstandingPerJob (1000 on the Standard plan)" in answer["error"]["message"]
    assert outstanding(standard, "m") == 280 * len(accepted)
    settle(standard, 2 * MINUTE)
    # each call recorded once (none failed): the backfills' calls, the schedule's aside
    ran = [row for row in standard.history("m") if row.trigger is Trigger.BACKFILL]
    assert len(ran) == len({row.execution_id for row in ran}) == 280 * len(accepted) <= 1000
    scheduled = [row for row in standard.history("m") if row.trigger is Trigger.SCHEDULED]
    assert calls(target, "/m") == len(ran) + len(scheduled) - 1  # the first scheduled run came before
    assert outstanding(standard) == 0 and occurrence_rows(standard) == []


# ------------------------------------------------------------------------- the count returns to 0


def test_the_count_returns_to_0_when_a_failed_occurrence_is_retried(memory_env: Settings, target: HttpTarget) -> None:
    deployment = deployment_of(memory_env, "Standard")
    put_job(deployment, "r", target, retry=fixed_retries(1, "PT30S"))
    target.answer([500, 200, 200, 200])
    assert backfill(deployment, "r", 0, 3) == (202, {"count": 3})
    assert outstanding(deployment) == 3
    deployment.deliver()  # the first fails (its retry in 30 s), the others complete
    assert outstanding(deployment, "r") == 1 and len(occurrence_rows(deployment)) == 1
    settle(deployment, MINUTE)
    assert calls(target, "/r") == 4 and outstanding(deployment) == 0 and occurrence_rows(deployment) == []


def test_the_count_returns_to_0_after_the_error_action(memory_env: Settings, target: HttpTarget) -> None:
    deployment = deployment_of(memory_env, "Standard")
    put_job(deployment, "e", target, error=True)
    target.answer([500, 200])
    assert backfill(deployment, "e", 0, 1) == (202, {"count": 1})
    deployment.deliver()  # the main action failed: the error action follows, the occurrence is not over
    assert outstanding(deployment) == 1
    deployment.deliver()
    assert calls(target, "/e-error") == 1 and outstanding(deployment) == 0 and occurrence_rows(deployment) == []


def test_the_count_of_a_one_after_another_backfill_goes_down_as_it_runs(
    memory_env: Settings, target: HttpTarget
) -> None:
    deployment = deployment_of(memory_env, "Standard")
    put_job(deployment, "c", target, retry=fixed_retries(1, "PT30S"))
    target.answer([200, 500, 200, 200])
    assert backfill(deployment, "c", 0, 3, overlapPolicy="BufferOne") == (202, {"count": 3})
    assert outstanding(deployment) == 3
    deployment.deliver()
    assert outstanding(deployment) == 2
    deployment.deliver()  # the second fails: its retry in 30 s, the third waits for it
    assert outstanding(deployment) == 2
    settle(deployment, MINUTE)
    assert calls(target, "/c") == 4 and outstanding(deployment) == 0 and occurrence_rows(deployment) == []


def test_the_count_returns_to_0_when_a_worker_dies_mid_call(
    memory_env: Settings, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment = deployment_of(memory_env, "Standard")
    put_job(deployment, "w", target)
    assert backfill(deployment, "w", 0, 1) == (202, {"count": 1})
    runner = deployment.executor.runner
    real = runner.run
    died: list[str] = []

    def run(action: Any, context: Any) -> Any:
        if not died:
            died.append(context.execution_id)
            raise WorkerDied
        return real(action, context)

    monkeypatch.setattr(runner, "run", run)
    with pytest.raises(WorkerDied):
        deployment.deliver()
    assert outstanding(deployment) == 1  # its claim is held by the dead worker, its message gone with it
    settle(deployment, CLAIM_LEASE + 2 * MINUTE)  # the watchdog sends it again after its lease
    rows = [row for row in deployment.history("w") if row.trigger is Trigger.BACKFILL]
    assert sorted(row.status for row in rows) == [HistoryStatus.COMPLETED, HistoryStatus.FAILED]
    assert outstanding(deployment) == 0 and occurrence_rows(deployment) == []


def test_a_stale_occurrence_stops_counting_at_once(memory_env: Settings, target: HttpTarget) -> None:
    deployment = deployment_of(memory_env, "Free")
    put_job(deployment, "a", target)
    assert backfill(deployment, "a", 0, 10) == (202, {"count": 10})
    assert backfill(deployment, "a", 10, 11)[0] == 409
    deployment.service.patch_job(JobRef(COLLECTION, "a"), {"properties": {"state": "Disabled"}})
    assert outstanding(deployment) == 0  # its messages are dropped as stale: none will run
    deployment.service.patch_job(JobRef(COLLECTION, "a"), {"properties": {"state": "Enabled"}})
    assert outstanding(deployment) == 0  # a new generation: still dropped
    assert backfill(deployment, "a", 10, 12) == (202, {"count": 2})
    assert len(occurrence_rows(deployment)) == 2  # the stale rows removed by the backfill that came next


def test_an_occurrence_lost_for_good_stops_counting_after_its_deadline(
    memory_env: Settings, target: HttpTarget
) -> None:
    """Its message is gone (dropped as poison, say) and the watchdog gave up: it counts until its deadline, a
    lifetime after its slot (the longest its attempts could go on), never longer."""
    deployment = deployment_of(memory_env, "Free")
    put_job(deployment, "a", target)
    put_job(deployment, "b", target)
    assert backfill(deployment, "a", 0, 1) == (202, {"count": 1})
    deployment.take()  # lost: never run, and no scan runs the watchdog
    assert outstanding(deployment) == 1
    deployment.clock.advance(LIFETIME - timedelta(seconds=1))
    assert outstanding(deployment) == 1
    deployment.clock.advance(timedelta(seconds=2))
    assert outstanding(deployment) == 0
    assert len(occurrence_rows(deployment)) == 1  # stored until a backfill is accepted
    assert backfill(deployment, "b", 0, 10) == (202, {"count": 10})  # it no longer counts against the collection
    assert {row.job_row for row in occurrence_rows(deployment)} == {"b"}


def test_a_one_after_another_backfill_whose_head_is_lost_stops_counting_after_the_heads_deadline(
    memory_env: Settings, target: HttpTarget
) -> None:
    deployment = deployment_of(memory_env, "Standard")
    put_job(deployment, "c", target)
    assert backfill(deployment, "c", 0, 4, overlapPolicy="BufferOne") == (202, {"count": 4})
    [head] = deployment.take()  # lost: the rest of the chain is never sent
    assert head.until and head.backfill
    deployment.clock.advance(LIFETIME - timedelta(seconds=1))
    assert outstanding(deployment) == 4
    deployment.clock.advance(timedelta(seconds=2))
    assert outstanding(deployment) == 0  # the others' own deadlines are later; the chain died with its head


def test_a_one_after_another_backfill_renews_its_heads_deadline_as_it_goes(
    memory_env: Settings, target: HttpTarget
) -> None:
    """A chain slower than a lifetime per occurrence (a lifetime is the longest one occurrence can take) still
    counts whole while it runs: the executor gives each next occurrence a fresh deadline when it sends it."""
    deployment = deployment_of(memory_env, "Standard")
    put_job(deployment, "c", target)
    assert backfill(deployment, "c", 0, 3, overlapPolicy="BufferOne") == (202, {"count": 3})
    for left in (2, 1):
        deployment.clock.advance(LIFETIME - MINUTE)  # the queue is behind: each waits nearly a lifetime
        deployment.deliver()
        assert outstanding(deployment) == left
    deployment.clock.advance(LIFETIME - MINUTE)
    deployment.deliver()
    assert outstanding(deployment) == 0 and calls(target, "/c") == 3


# ------------------------------------------------------------------------------------- pure decisions


T0 = datetime.fromisoformat("2026-12-01T10:00:00+00:00")


def entry(job: str, occurrence: int | None, slot: float, deadline: float, **extra: Any) -> LedgerEntry:
    return LedgerEntry(
        job,
        extra.pop("backfill", "b1"),
        None if occurrence is None else T0 + occurrence * HOUR,
        extra.pop("generation", 1),
        T0 + timedelta(seconds=slot),
        T0 + timedelta(seconds=deadline),
        **extra,
    )


def test_backfill_slots_are_a_leaky_bucket_per_job() -> None:
    ten = BackfillLimits("Standard", 1000, 2000, 10, timedelta(seconds=1))
    paced = policies.backfill_slots([], "j", 25, ten, T0)
    assert Counter(policies.start_delay(slot, T0) for slot in paced.slots) == {0: 10, 1: 10, 2: 5}
    assert paced.paced_until == T0 + timedelta(seconds=2.5)
    tail = entry("j", None, 2.5, 2.5)
    more = policies.backfill_slots([tail, entry("k", None, 99, 99)], "j", 6, ten, T0)
    assert [policies.start_delay(slot, T0) for slot in more.slots] == [2, 2, 2, 2, 2, 3]
    one = BackfillLimits("Free", 10, 10, 1, MINUTE)
    assert policies.backfill_slots([], "j", 3, one, T0).slots == (T0, T0 + MINUTE, T0 + 2 * MINUTE)
    later = T0 + timedelta(hours=1)  # a pace long past starts again from now
    assert policies.backfill_slots([tail], "j", 1, one, later).slots == (later,)


def test_what_counts_in_the_ledger(free: Deployment) -> None:
    job = free.job("a")
    jobs = {"j": replace(job, generation=1), "s": replace(job, generation=2)}
    rows = [
        entry("j", 0, 0, 100),  # counts
        entry("j", 1, 0, 10),  # past its deadline
        entry("gone", 2, 0, 100),  # its job is gone
        entry("s", 3, 0, 100),  # its job has another generation: its message is stale
        entry("j", None, 0, 60),  # a tail: counts for the pace only
        entry("j", 4, 0, 5, backfill="c", chain=True),  # a chain's head, past its deadline...
        entry("j", 5, 0, 999, backfill="c", chain=True),  # ...so the rest of it too
        entry("j", 6, 0, 100, backfill="d", chain=True),
        entry("j", 7, 0, 5, backfill="d", chain=True),  # not the head: the head's deadline rules
    ]
    live, dead = policies.live_backfills(rows, jobs, T0 + timedelta(seconds=20))
    assert [rows.index(row) for row in live] == [0, 4, 7, 8]
    assert [rows.index(row) for row in dead] == [1, 2, 3, 5, 6]
    assert policies.outstanding_backfills(live) == 3 and policies.outstanding_backfills(live, "j") == 3
    disabled = {"j": replace(job, generation=1, state=JobState.DISABLED)}
    assert policies.live_backfills(rows[:1], disabled, T0) == ([], rows[:1])  # its messages are dropped


def test_a_refusal_names_the_limit_and_its_value() -> None:
    limits = BACKFILL_LIMITS[Sku.FREE]
    policies.check_backfill_limits(limits, "j", "jc", 4, 6, 4)  # 8 and 10: within
    with pytest.raises(QuotaExceededError) as refused:
        policies.check_backfill_limits(limits, "j", "jc", 4, 6, 5)
    assert refused.value.status == 409 and refused.value.code == "QuotaExceeded"
    assert refused.value.message.startswith("backfill limit maxOutstandingPerCollection (10 on the Free plan)")
