"""What a backfill runs (``POST .../jobs/{job}/backfill``, api-version 2026-12-01-preview): each occurrence
of its window once (the schedule's fire instants, jitter included; the start included, the end excluded; at
most 1,000), one after another in order when asked (overlapPolicy BufferOne), whatever happens to a worker.

* The window's occurrences (``policies.backfill_occurrences``, pure).
* A worker that dies in the middle of a backfill run one after another (its call, or just after counting
  the attempt): every occurrence of the window still runs, in order, and the backfill is not stuck.
* Two backfills of one job over the same window, or over overlapping ones, racing: each backfill runs each
  of its occurrences once (two backfills, two runs), none is lost; copies of one backfill's message still
  run once.

In simulated time on the memory adapter (:class:`tests.support.harness.Deployment`) with a real HTTP target:
the management API in process, the real dispatcher, executor and watchdog. A worker "dies" as in
``test_overlap.py``: an exception no code catches (the claim stays ``Running``, nothing after that point is
written, the message is gone with the worker)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core import policies
from scheduler_core.definitions import Wire
from scheduler_core.errors import ValidationError
from scheduler_core.model import CLAIM_LEASE, HistoryStatus, JobState
from scheduler_core.model.history import Trigger
from scheduler_core.pipeline import counters, follow_ups
from scheduler_core.pipeline.execute import WORKER_LOST, Outcome
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.recurrence import Frequency, Recurrence, compile_adjusted
from scheduler_core.settings import Settings
from tests.support.backfills import HOUR, backfill_deployment, job_ref, post, window
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import fixed_retries

#: The instant the window's occurrences are shown at.
T0 = datetime(2030, 5, 1, 6, 0, tzinfo=UTC)
SIGNATURE = "webhook-id"


# ------------------------------------------------------------------------------- the window's occurrences


def hourly(count: int | None = None) -> Recurrence:
    return Recurrence(Frequency.HOUR, count=count)


def test_backfill_takes_the_occurrences_of_the_window_in_order() -> None:
    schedule = compile_adjusted(T0, hourly(), T0)
    found = policies.backfill_occurrences(schedule, T0 + HOUR, T0 + 4 * HOUR)
    assert found == [T0 + HOUR, T0 + 2 * HOUR, T0 + 3 * HOUR]  # start included, end excluded
    assert policies.backfill_occurrences(schedule, T0 - 5 * HOUR, T0 + timedelta(minutes=1)) == [T0]
    assert policies.backfill_occurrences(schedule, T0 + timedelta(minutes=1), T0 + timedelta(minutes=59)) == []


def test_backfill_with_jitter_takes_the_fire_instants() -> None:
    schedule = compile_adjusted(T0, hourly(), T0, jitter=timedelta(minutes=10), key="sub1/rg1/jc1/j")
    found = policies.backfill_occurrences(schedule, T0, T0 + 3 * HOUR)
    assert [schedule.nominal(fire) for fire in found] == [T0, T0 + HOUR, T0 + 2 * HOUR]


def test_backfill_refuses_more_than_1000() -> None:
    schedule = compile_adjusted(T0, Recurrence(Frequency.MINUTE), T0)
    assert len(policies.backfill_occurrences(schedule, T0, T0 + timedelta(minutes=1000))) == 1000
    with pytest.raises(ValidationError) as caught:
        policies.backfill_occurrences(schedule, T0, T0 + timedelta(minutes=1001))
    assert caught.value.path == "endTime" and "more than 1000" in caught.value.rule


# ------------------------------------------------------------------------------------ a worker dies


class WorkerDied(BaseException):
    """The process stopped: nothing catches it (it is not an ``Exception``)."""


@pytest.fixture
def deployment(memory_env: Settings) -> Deployment:
    return backfill_deployment(memory_env)


def aim(deployment: Deployment, target: HttpTarget, retry: dict[str, Any] | None = None) -> None:
    """Point the job at the real target, the occurrence's instant in the body (and its execution id in
    ``webhook-id``: the job signs its calls); the scheduled run due now is run and forgotten."""
    request = {
        "uri": f"{target.base_url}/hook",
        "method": "POST",
        "body": "@{scheduledTime}",
        "signing": {"scheme": "StandardWebhooks", "secret": "whsec_" + "QUJD" * 8},
    }
    action = {
        "type": "Http",
        "expandPlaceholders": True,
        "request": request,
        "retryPolicy": retry or {"retryType": "None"},
    }
    deployment.service.patch_job(job_ref(), {"properties": {"action": action}}, wire=Wire.PREVIEW)
    deployment.deliver()
    with target.lock:
        target.received.clear()


def stamp(instant: datetime) -> bytes:
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ").encode()


def hours(*ns: int) -> list[bytes]:
    return [stamp(START + n * HOUR) for n in ns]


def calls(target: HttpTarget) -> list[bytes]:
    with target.lock:
        return [received.body for received in target.received]


def backfill_rows(deployment: Deployment) -> list[Any]:
    return [row for row in deployment.history("j") if row.trigger is Trigger.BACKFILL]


def completed_per_occurrence(deployment: Deployment) -> Counter[datetime]:
    return Counter(
        row.expected_execution_time for row in backfill_rows(deployment) if row.status == HistoryStatus.COMPLETED
    )


def settle(deployment: Deployment, span: timedelta) -> None:
    deployment.run_until(deployment.clock.now + span, tick=timedelta(seconds=10))


def test_a_worker_dying_mid_call_in_a_one_after_another_backfill_delays_it_and_loses_nothing(
    deployment: Deployment, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    aim(deployment, target)
    assert post(deployment, window(0, 6, overlapPolicy="BufferOne")) == (202, {"count": 6})
    runner = deployment.executor.runner
    real = runner.run
    died: list[str] = []

    def run(action: Any, context: Any) -> Any:
        if context.expected_time == START + 2 * HOUR and not died:
            died.append(context.execution_id)
            raise WorkerDied
        return real(action, context)

    monkeypatch.setattr(runner, "run", run)
    with pytest.raises(WorkerDied):
        settle(deployment, timedelta(minutes=1))
    assert calls(target) == hours(0, 1)  # the third's call never went out
    # stuck behind the dead worker's claim until the watchdog sends the third again, after its lease
    settle(deployment, CLAIM_LEASE + timedelta(minutes=2))
    assert calls(target) == hours(0, 1, 2, 3, 4, 5)  # each once, in order
    assert completed_per_occurrence(deployment) == Counter(START + n * HOUR for n in range(6))
    lost = [row for row in backfill_rows(deployment) if row.status == HistoryStatus.FAILED]
    assert [(row.expected_execution_time, row.message.startswith(WORKER_LOST)) for row in lost] == [
        (START + 2 * HOUR, True)
    ]
    job = deployment.job("j")
    assert job.state == JobState.ENABLED and (job.running, job.waiting) == ("", "")


def test_a_worker_dying_after_counting_a_backfill_occurrence_does_not_end_the_backfill(
    deployment: Deployment, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker runs the third occurrence, counts it and dies before writing its record: the next
    occurrence was sent before the count (as every follow-up), so the backfill goes on; the watchdog drops
    the counted attempt's watch, and the queue's copy shown again only records the lost holder."""
    aim(deployment, target)
    assert post(deployment, window(0, 6, overlapPolicy="BufferOne")) == (202, {"count": 6})
    real = counters.count_attempt
    taken: list[ExecutionMessage] = []

    def count_then_die(jobs: Any, job: Any, message: ExecutionMessage, *args: Any) -> Any:
        written = real(jobs, job, message, *args)
        if message.occurrence_time == START + 2 * HOUR and not taken:
            taken.append(message)
            raise WorkerDied
        return written

    monkeypatch.setattr(follow_ups, "count_attempt", count_then_die)
    with pytest.raises(WorkerDied):
        settle(deployment, timedelta(minutes=1))
    settle(deployment, CLAIM_LEASE + timedelta(minutes=2))
    assert calls(target) == hours(0, 1, 2, 3, 4, 5)  # each once, in order: nothing after the third lost
    report = deployment.executor_named("successor").execute(taken[0])  # the queue shows its copy again
    assert report.outcome is Outcome.DUPLICATE
    assert calls(target) == hours(0, 1, 2, 3, 4, 5)
    per_occurrence = Counter(row.expected_execution_time for row in backfill_rows(deployment))
    assert per_occurrence == Counter(START + n * HOUR for n in range(6))  # one entry each
    [lost] = [row for row in backfill_rows(deployment) if row.expected_execution_time == START + 2 * HOUR]
    assert lost.message.startswith(WORKER_LOST) and "counted it" in lost.message


# ---------------------------------------------------------------------------------- racing backfills


@pytest.mark.parametrize("policy", ["AllowAll", "BufferOne"])
def test_the_same_window_backfilled_twice_runs_each_occurrence_twice_once_per_backfill(
    deployment: Deployment, target: HttpTarget, policy: str
) -> None:
    aim(deployment, target)
    assert post(deployment, window(0, 4, overlapPolicy=policy)) == (202, {"count": 4})
    assert post(deployment, window(0, 4, overlapPolicy=policy)) == (202, {"count": 4})
    settle(deployment, timedelta(minutes=3))
    assert Counter(calls(target)) == Counter(dict.fromkeys(hours(0, 1, 2, 3), 2))
    assert completed_per_occurrence(deployment) == Counter({START + n * HOUR: 2 for n in range(4)})
    # two runs, two execution ids (and webhook-ids): a receiver's de-duplication keeps both
    with target.lock:
        ids = {received.headers[SIGNATURE] for received in target.received}
    assert len(ids) == 8
    assert len({row.execution_id for row in backfill_rows(deployment)}) == 8
    if policy == "BufferOne":  # each backfill in order (the two side by side)
        for body in hours(0, 1, 2, 3):
            assert calls(target).count(body) == 2
        firsts = [calls(target).index(body) for body in hours(0, 1, 2, 3)]
        assert firsts == sorted(firsts)


def test_overlapping_one_after_another_backfills_both_run_to_their_ends(
    deployment: Deployment, target: HttpTarget
) -> None:
    """[0h, 6h) and [3h, 9h), one after another each, started together: the shared occurrences run twice,
    the others once, none is lost (a second backfill does not stop at an occurrence the first ran)."""
    aim(deployment, target)
    assert post(deployment, window(0, 6, overlapPolicy="BufferOne")) == (202, {"count": 6})
    assert post(deployment, window(3, 9, overlapPolicy="BufferOne")) == (202, {"count": 6})
    settle(deployment, timedelta(minutes=3))
    expected = Counter(hours(0, 1, 2, 3, 4, 5)) + Counter(hours(3, 4, 5, 6, 7, 8))
    assert Counter(calls(target)) == expected
    assert sum(completed_per_occurrence(deployment).values()) == 12


def test_overlapping_backfills_the_first_ahead_still_both_complete(deployment: Deployment, target: HttpTarget) -> None:
    """The first backfill runs past the start of the second before the second is asked for."""
    aim(deployment, target)
    assert post(deployment, window(0, 6, overlapPolicy="BufferOne")) == (202, {"count": 6})
    for _ in range(5):
        deployment.deliver()  # the first runs 0h..4h
    assert calls(target) == hours(0, 1, 2, 3, 4)
    assert post(deployment, window(3, 9, overlapPolicy="BufferOne")) == (202, {"count": 6})
    settle(deployment, timedelta(minutes=3))
    assert Counter(calls(target)) == Counter(hours(0, 1, 2, 3, 4, 5)) + Counter(hours(3, 4, 5, 6, 7, 8))


def test_copies_of_one_backfills_message_run_once(deployment: Deployment, target: HttpTarget) -> None:
    aim(deployment, target)
    assert post(deployment, window(0, 2)) == (202, {"count": 2})
    messages = deployment.take()
    assert [m.cause for m in messages] == [Cause.BACKFILL] * 2 and all(m.backfill for m in messages)
    again = ExecutionMessage.from_json(messages[0].to_json())  # a redelivery: the same backfill
    assert again == messages[0]
    reports = [deployment.executor.execute(m) for m in (messages[0], again, messages[1])]
    assert [r.outcome for r in reports] == [Outcome.SUCCEEDED, Outcome.DUPLICATE, Outcome.SUCCEEDED]
    assert calls(target) == hours(0, 1)


def test_a_backfills_retries_keep_its_id_and_run_once(deployment: Deployment, target: HttpTarget) -> None:
    aim(deployment, target, retry=fixed_retries(1, "PT30S"))
    target.answer([500, 200])
    assert post(deployment, window(0, 1)) == (202, {"count": 1})
    assert post(deployment, window(0, 1)) == (202, {"count": 1})
    target.answer([500, 500, 200, 200])
    settle(deployment, timedelta(minutes=2))
    rows = sorted((row.execution_id, row.retry_count, row.status.value) for row in backfill_rows(deployment))
    assert [(retry, status) for _, retry, status in rows if status == "Completed"] == [(1, "Completed")] * 2
    assert len(rows) == 4 and len(calls(target)) == 4


def test_a_backfill_message_of_the_previous_version_keeps_its_keys() -> None:
    """A backfill's message sent before the backfill id (in a queue during an upgrade) has none: its claim,
    execution id and counted key are those it had, so its copies still run once."""
    old = (
        '{"job_partition":"sub1|rg1|jc1","job_row":"j","generation":7,"occurrence":"2026-11-24T10:00:00Z",'
        '"attempt":0,"action":"main","cause":"backfill","missed":0,"last":false,"v":1}'
    )
    message = ExecutionMessage.from_json(old)
    assert message.backfill == "" and message.cause_key == "backfill"
    assert message.attempt_key == "2026-11-24T10:00:00Z|backfill|main|0"
    assert message.to_json() == old  # written back as it was
    fresh = ExecutionMessage("p", "r", 1, "2026-11-24T10:00:00Z", cause=Cause.BACKFILL)
    assert fresh.backfill and fresh.cause_key == f"backfill.{fresh.backfill}"
    assert ExecutionMessage.from_json(fresh.to_json()) == fresh
    scheduled = ExecutionMessage("p", "r", 1, "2026-11-24T10:00:00Z")
    assert scheduled.backfill == "" and '"backfill"' not in scheduled.to_json()
