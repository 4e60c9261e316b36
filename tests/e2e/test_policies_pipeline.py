"""overlapPolicy, missedRunPolicy, pauseAfterFailures and deleteAfterCompletion (api-version
2026-12-01-preview) end to end: the real service, dispatcher and executor in simulated time on the memory
adapter (the deployment of ``tests/decisions``), with a real HTTP target on 127.0.0.1 that answers as told.

Each overlap test makes an occurrence unfinished the way it happens in production: its call fails and a
retry is pending when the next occurrence is due."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from scheduler_core import wiring
from scheduler_core.adapters.memory import SimulatedClock, memory_storage
from scheduler_core.api import ApiRequest, ManagementApi, views
from scheduler_core.api.handler import ApiServices
from scheduler_core.auth.keys import ApiKey
from scheduler_core.auth.roles import Role
from scheduler_core.definitions import Wire
from scheduler_core.model import HistoryEntry, HistoryStatus, JobState
from scheduler_core.model.history import Trigger
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.decisions.conftest import (
    COLLECTION,
    NO_RETRY,
    STANDARD,
    START,
    Deployment,
    fixed_retries,
    http_action,
    parsed,
)
from tests.support.http_target import HttpTarget

pytestmark = [pytest.mark.e2e]

MINUTE = timedelta(minutes=1)
#: Occurrences start an hour after simulated time does (so nothing is dispatched when the job is written).
T0 = START + timedelta(hours=1)


@pytest.fixture
def deployment(memory_env: Settings) -> Deployment:
    clock = SimulatedClock(START)
    storage = memory_storage(clock)
    services = wiring.build(memory_env, clock=clock, sleep=clock.advance, storage=storage)
    services.service.put_collection(COLLECTION, STANDARD)
    return Deployment(memory_env, clock, storage, services)


def put(deployment: Deployment, target: HttpTarget, recurrence: dict[str, Any], retry: Any, **props: Any) -> None:
    body = {
        "properties": {
            "startTime": format_instant(T0),
            "action": http_action(f"{target.base_url}/hook", retryPolicy=retry),
            "recurrence": recurrence,
            **props,
        }
    }
    deployment.service.put_job(deployment.ref("j"), body, wire=Wire.PREVIEW)


def rows(deployment: Deployment) -> list[HistoryEntry]:
    return sorted(deployment.history("j"), key=lambda row: (row.start_time, row.retry_count))


def by_occurrence(deployment: Deployment) -> dict[datetime, list[str]]:
    """Each occurrence's history as 'status/retry' items, in the order they ran."""
    out: dict[datetime, list[str]] = {}
    for row in rows(deployment):
        assert row.expected_execution_time is not None
        out.setdefault(row.expected_execution_time, []).append(f"{row.status}/{row.retry_count}")
    return out


# ------------------------------------------------------------------------------------------------ overlap


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


# ------------------------------------------------------------------------------------------- missed runs


def down_for_ten_minutes(deployment: Deployment, target: HttpTarget, **props: Any) -> list[datetime]:
    """The job runs every minute from T0; the service is down from before T0 to T0 + 10m 30s. Returns the
    occurrences that ran (the expected times of the entries that are not ``Skipped``)."""
    put(deployment, target, {"frequency": "Minute"}, NO_RETRY, **props)
    deployment.clock.set(T0 + timedelta(minutes=10, seconds=30))
    deployment.run_until(T0 + timedelta(minutes=10, seconds=40))
    return sorted(
        row.expected_execution_time
        for row in deployment.history("j")
        if row.expected_execution_time and row.status != HistoryStatus.SKIPPED
    )


def skipped(deployment: Deployment) -> list[HistoryEntry]:
    return [row for row in deployment.history("j") if row.status == HistoryStatus.SKIPPED]


def test_run_once_is_todays_coalescing(deployment: Deployment, target: HttpTarget) -> None:
    ran = down_for_ten_minutes(deployment, target)
    assert ran == [T0]
    [row] = deployment.history("j")  # nothing dropped: no Skipped entry
    assert "late run standing for 11 occurrences" in row.message


def test_run_once_with_a_window_stands_for_the_recent_ones_only(deployment: Deployment, target: HttpTarget) -> None:
    ran = down_for_ten_minutes(deployment, target, missedRunPolicy={"mode": "RunOnce", "window": "PT3M"})
    assert ran == [T0 + 8 * MINUTE]  # 7m30s..10m30s: the occurrences of 8, 9 and 10 minutes
    [row] = [row for row in deployment.history("j") if row.status != HistoryStatus.SKIPPED]
    assert "standing for 3 occurrences" in row.message
    [dropped] = skipped(deployment)  # the 8 older ones: one entry
    assert dropped.message == (
        f"Skipped: 8 occurrence(s) from {format_instant(T0)} to {format_instant(T0 + 7 * MINUTE)} missed while "
        "the service was down (older than the missedRunPolicy window PT3M)"
    )
    assert (dropped.expected_execution_time, dropped.repeat_count, dropped.trigger) == (T0, 1, Trigger.SCHEDULED)


def test_run_all_runs_each_missed_occurrence_in_order(deployment: Deployment, target: HttpTarget) -> None:
    ran = down_for_ten_minutes(deployment, target, missedRunPolicy={"mode": "RunAll", "window": "PT4M"})
    assert ran == [T0 + m * MINUTE for m in (7, 8, 9, 10)]
    history = [row for row in deployment.history("j") if row.status != HistoryStatus.SKIPPED]
    starts = [row.start_time for row in sorted(history, key=lambda r: r.expected_execution_time or T0)]
    assert starts == sorted(starts)
    [dropped] = skipped(deployment)
    assert dropped.message.startswith(
        f"Skipped: 7 occurrence(s) from {format_instant(T0)} to {format_instant(T0 + 6 * MINUTE)} missed"
    )
    assert dropped.message.endswith("(older than the missedRunPolicy window PT4M)")


def test_run_all_without_a_window_runs_every_missed_occurrence(deployment: Deployment, target: HttpTarget) -> None:
    ran = down_for_ten_minutes(deployment, target, missedRunPolicy={"mode": "RunAll"})
    assert ran == [T0 + m * MINUTE for m in range(11)]
    assert all("standing for" not in row.message for row in deployment.history("j"))
    assert skipped(deployment) == []


def test_skip_runs_no_missed_occurrence_and_resumes_at_the_next(deployment: Deployment, target: HttpTarget) -> None:
    ran = down_for_ten_minutes(deployment, target, missedRunPolicy={"mode": "Skip"})
    assert ran == []
    [dropped] = skipped(deployment)  # eleven occurrences, one entry
    assert dropped.message == (
        f"Skipped: 11 occurrence(s) from {format_instant(T0)} to {format_instant(T0 + 10 * MINUTE)} missed while "
        "the service was down (missedRunPolicy Skip)"
    )
    assert all(entry.due > T0 + 10 * MINUTE for entry in deployment.occurrence_entries())
    deployment.run_until(T0 + timedelta(minutes=11, seconds=30))
    ran_later = [row for row in deployment.history("j") if row.status != HistoryStatus.SKIPPED]
    assert [row.expected_execution_time for row in ran_later] == [T0 + 11 * MINUTE]
    assert skipped(deployment) == [dropped]  # later scans write no more


def test_a_long_outage_writes_one_skipped_entry_and_walks_at_most_1000(
    deployment: Deployment, target: HttpTarget
) -> None:
    """Down for three days with a job every minute (4,320 missed): one entry, counted by ordinals past the
    1,000th; RunAll runs the first 1,000 and records the rest in one entry too."""
    put(deployment, target, {"frequency": "Minute"}, NO_RETRY, missedRunPolicy={"mode": "Skip"})
    deployment.clock.set(T0 + timedelta(days=3, seconds=30))
    deployment.scan()
    next_one = T0 + timedelta(days=3, minutes=1)
    assert [message.occurrence_time for message in parsed(deployment.queued())] == [next_one]  # on time, not missed
    [dropped] = skipped(deployment)
    assert dropped.message == (
        f"Skipped: 4321 occurrence(s) from {format_instant(T0)} up to {format_instant(next_one)} (excluded) missed "
        "while the service was down (missedRunPolicy Skip)"
    )


def test_run_all_records_what_it_does_not_run_beyond_1000(deployment: Deployment, target: HttpTarget) -> None:
    put(deployment, target, {"frequency": "Minute"}, NO_RETRY, missedRunPolicy={"mode": "RunAll"})
    deployment.clock.set(T0 + timedelta(days=1, seconds=30))  # 1,441 missed
    deployment.scan()
    sent = [message.occurrence_time for message in parsed(deployment.queued())]
    assert sent[:1000] == [T0 + n * MINUTE for n in range(1000)]
    [dropped] = skipped(deployment)
    assert dropped.message == (
        f"Skipped: 441 occurrence(s) from {format_instant(T0 + 1000 * MINUTE)} to "
        f"{format_instant(T0 + timedelta(days=1))} missed while the service was down (beyond the 1000 runs of "
        "one missedRunPolicy RunAll catch-up)"
    )


def test_an_occurrence_on_time_is_not_missed(deployment: Deployment, target: HttpTarget) -> None:
    put(deployment, target, {"frequency": "Minute", "count": 3}, NO_RETRY, missedRunPolicy={"mode": "Skip"})
    deployment.run_until(T0 + 4 * MINUTE)
    assert len(deployment.history("j")) == 3 and deployment.job("j").state == JobState.COMPLETED


# --------------------------------------------------------------------------------------- pause and delete


def test_pause_after_failures_disables_the_job_with_the_reason(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([500, 200, 500, 500, 500])
    put(deployment, target, {"frequency": "Minute"}, NO_RETRY, pauseAfterFailures=2)
    deployment.run_until(T0 + 6 * MINUTE)
    history = rows(deployment)
    assert [row.status for row in history] == ["Failed", "Completed", "Failed", "Failed"]  # then nothing ran
    assert "Disabled after 2 consecutive faulted occurrence(s)" in history[-1].message
    assert "Disabled after" not in history[0].message
    job = deployment.job("j")
    assert job.state == JobState.DISABLED, job
    assert "2 consecutive faulted" in job.paused, job
    preview = views.job(deployment.service.get_job(job.ref), Wire.PREVIEW)
    assert "2 consecutive faulted" in preview["properties"]["status"]["disabledReason"]
    classic = views.job(deployment.service.get_job(job.ref), Wire.CLASSIC)
    assert "disabledReason" not in json.dumps(classic) and classic["properties"]["state"] == "Disabled"
    # enabled again: it resumes, the reason gone
    target.answer([200])
    enabled = deployment.service.patch_job(job.ref, {"properties": {"state": "Enabled"}}, wire=Wire.PREVIEW)
    assert "disabledReason" not in views.job(enabled, Wire.PREVIEW)["properties"]["status"]
    deployment.run_until(T0 + 8 * MINUTE)
    assert rows(deployment)[-1].status == HistoryStatus.COMPLETED


def test_the_error_action_runs_before_the_job_is_paused(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([500])
    action = http_action(f"{target.base_url}/hook", retryPolicy=NO_RETRY)
    action["errorAction"] = {"type": "Http", "request": {"uri": f"{target.base_url}/error", "method": "POST"}}
    body = {
        "properties": {
            "startTime": format_instant(T0),
            "action": action,
            "recurrence": {"frequency": "Minute"},
            "pauseAfterFailures": 1,
        }
    }
    deployment.service.put_job(deployment.ref("j"), body, wire=Wire.PREVIEW)
    deployment.run_until(T0 + 3 * MINUTE)
    paths = [received.path for received in target.received]
    assert paths == ["/hook", "/error"]
    assert deployment.job("j").state == JobState.DISABLED


def test_delete_after_completion_removes_a_completed_job_only(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([200])
    put(deployment, target, {"frequency": "Minute", "count": 2}, NO_RETRY, deleteAfterCompletion=True)
    deployment.run_until(T0 + 3 * MINUTE)
    assert len(target.received) == 2
    assert deployment.storage.jobs.get(deployment.ref("j")) is None
    assert deployment.service.list_jobs(COLLECTION) == []
    assert deployment.storage.collections.get(COLLECTION) is not None
    # its place under maxJobCount (8) is given back: eight jobs fit again
    for index in range(8):
        put_named(deployment, target, f"k{index}")
    assert len(deployment.service.list_jobs(COLLECTION)) == 8


def put_named(deployment: Deployment, target: HttpTarget, name: str) -> None:
    body = {
        "properties": {
            "startTime": format_instant(T0 + timedelta(days=1)),
            "action": http_action(f"{target.base_url}/hook", retryPolicy=NO_RETRY),
        }
    }
    deployment.service.put_job(deployment.ref(name), body)


def test_delete_after_completion_keeps_a_faulted_job(deployment: Deployment, target: HttpTarget) -> None:
    target.answer([500])
    put(deployment, target, {"frequency": "Minute", "count": 1}, NO_RETRY, deleteAfterCompletion=True)
    deployment.run_until(T0 + 2 * MINUTE)
    assert deployment.job("j").state == JobState.FAULTED


def test_a_skipped_entry_is_listed_by_the_preview_and_not_by_2016_03_01(
    deployment: Deployment, target: HttpTarget
) -> None:
    """Skipped is not in 2016-03-01's JobExecutionStatus (an enum in Microsoft's document): that version's
    history lists the job's other entries and refuses a $filter on Skipped, the preview lists them all."""
    target.answer([500, 200])
    put(deployment, target, {"frequency": "Minute", "count": 3}, fixed_retries(1, "PT90S"), overlapPolicy="Skip")
    deployment.run_until(T0 + 4 * MINUTE)
    key = "sks_test-history-versions"
    services = ApiServices(deployment.service, (ApiKey(hashlib.sha256(key.encode()).digest(), None, Role.READER),))
    api = ManagementApi(lambda: services)
    path = f"{deployment.ref('j').resource_id}/history"

    def listed(version: str, **query: str) -> tuple[int, Any]:
        query = {"api-version": version, **query}
        url = f"http://127.0.0.1{path}?" + "&".join(f"{k}={v}" for k, v in query.items())
        response = api.handle(ApiRequest("GET", url, path, query, {"Authorization": f"Bearer {key}"}, b""))
        return response.status, json.loads(response.body)

    status, preview = listed("2026-12-01-preview")
    assert status == 200
    assert sorted(item["properties"]["status"] for item in preview["value"]) == [
        "Completed",
        "Completed",
        "Failed",
        "Skipped",
    ]
    status, classic = listed("2016-03-01")
    assert status == 200
    assert sorted(item["properties"]["status"] for item in classic["value"]) == ["Completed", "Completed", "Failed"]
    status, refused = listed("2016-03-01", **{"$filter": "status eq Skipped"})
    assert status == 400 and "status" in refused["error"]["message"]
    assert listed("2026-12-01-preview", **{"$filter": "status eq Skipped"})[1]["value"][0]["properties"]["status"] == (
        "Skipped"
    )
