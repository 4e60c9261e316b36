"""What a backfill runs, with real processes: each occurrence of its window once, in order when one after
another, whatever happens to a worker, and each of two backfills of one job posted together runs its own.

* A worker killed mid-call in a backfill of 20 occurrences run one after another: every occurrence runs,
  in order; the killed one runs again once the watchdog finds its lease over; each has exactly one
  ``Completed`` history entry with trigger ``Backfill`` (the killed attempt one ``Failed`` entry more, "worker
  lost"); the job is not stuck.
* Two backfills of one job posted at the same instant, over one window and over overlapping windows: both
  answered 202, each runs each of its occurrences once (the shared ones run twice, once per backfill).

The management API of the local host (HTTP, in this process), worker host processes (the function app on the
local host, timer and queue triggers, ``tests/e2e/fault_host.py``) over the session's Azurite, a real HTTP
target on 127.0.0.1, SIGKILL, and concurrent POSTs from threads. The job's schedule (daily, 20 times within one
hour of the day) fires next about a day later: nothing but the backfills calls the target during a test."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from scheduler_core import wiring
from scheduler_core.model import CLAIM_LEASE, HistoryStatus
from scheduler_core.model.history import Trigger
from scheduler_core.pipeline.execute import WORKER_LOST
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e import fault_host
from tests.e2e.conftest import Api
from tests.support.http_target import HttpTarget
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
JC = "subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc1"
#: The deployed claim lease: renewed every 5 s while its worker lives, so the held call stays claimed however
#: long it lasts, and the killed worker's attempt is taken over a lease after its last renewal.
LEASE_SECONDS = CLAIM_LEASE.total_seconds()
EXPECTED = "x-ms-scheduler-expected-execution-time"
MINUTES = list(range(0, 60, 3))  # 20 occurrences in the hour


def past_hour() -> datetime:
    """The start of the hour two hours ago: its 20 occurrences are in the past, the next ~22 h ahead."""
    return (datetime.now(UTC) - timedelta(hours=2)).replace(minute=0, second=0, microsecond=0)


def put_job(api: Api, name: str, target: HttpTarget, hour: datetime) -> None:
    created = api.call(
        "PUT", JC, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}, query={"api-version": PREVIEW}
    )
    assert created.status_code in (200, 201), created.text
    body = {
        "properties": {
            "startTime": format_instant(hour - timedelta(days=2)),
            "action": {
                "type": "Http",
                "request": {"uri": f"{target.base_url}/{name}", "method": "POST"},
                "retryPolicy": {"retryType": "None"},
            },
            "recurrence": {"frequency": "Day", "schedule": {"hours": [hour.hour], "minutes": MINUTES}},
        }
    }
    answer = api.call("PUT", f"{JC}/jobs/{name}", body, query={"api-version": PREVIEW})
    assert answer.status_code in (200, 201), answer.text


def backfill(api: Api, name: str, start: datetime, end: datetime, policy: str) -> requests.Response:
    body = {"startTime": format_instant(start), "endTime": format_instant(end), "overlapPolicy": policy}
    return api.call("POST", f"{JC}/jobs/{name}/backfill", body, query={"api-version": PREVIEW})


def occurrences(hour: datetime, first: int = 0, last: int = 20) -> list[str]:
    return [format_instant(hour + timedelta(minutes=m)) for m in MINUTES[first:last]]


def expected_times(target: HttpTarget, path: str) -> list[str]:
    with target.lock:
        return [r.headers[EXPECTED] for r in target.received if r.path == path]


def history(api: Api, name: str) -> list[Any]:
    services = wiring.build(api.settings)
    return list(services.stores.history.list(JobRef(CollectionRef("sub1", "rg1", "jc1"), name)))


def test_a_worker_killed_mid_backfill_loses_no_occurrence_and_keeps_the_order(
    api: Api, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCHEDULER_DISPATCH_SCHEDULE", "*/2 * * * * *")
    hour = past_hour()
    fifth = occurrences(hour)[4]
    put_job(api, "k", target, hour)
    held = threading.Event()
    real_status = target._next_status

    def next_status() -> int:  # the fifth's first call is held until its worker is gone (600 s at most)
        with target.lock:
            calls = [r.headers.get(EXPECTED) for r in target.received]
        if calls.count(fifth) == 1 and calls[-1] == fifth and not held.is_set():
            held.set()
            time.sleep(600)
        return real_status()

    monkeypatch.setattr(target, "_next_status", next_status)
    doomed = fault_host.spawn(LEASE_SECONDS)
    successor = None
    try:
        answer = backfill(api, "k", hour, hour + timedelta(hours=1), "BufferOne")
        assert (answer.status_code, answer.json()) == (202, {"count": 20})
        wait_until(held.is_set, 60, "the fifth call held")
        time.sleep(2)
        assert expected_times(target, "/k") == occurrences(hour, 0, 5)  # one at a time: the fifth holds the rest
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
        successor = fault_host.spawn(LEASE_SECONDS)
        # the watchdog sends the fifth again after its claim's lease; its re-run sends the sixth, and so on
        wait_until(lambda: len(expected_times(target, "/k")) >= 21, LEASE_SECONDS + 120, "all 20 (the fifth twice)")

        def recorded() -> bool:
            rows = history(api, "k")
            return sum(1 for row in rows if row.status == HistoryStatus.COMPLETED) == 20

        wait_until(recorded, 30, "20 completed entries")
        time.sleep(3)  # nothing more comes
    finally:
        doomed.kill()
        if successor is not None:
            fault_host.stop(successor)
    calls = expected_times(target, "/k")
    assert calls == occurrences(hour, 0, 5) + occurrences(hour, 4, 20)  # in order; only the killed one twice
    rows = history(api, "k")
    assert {row.trigger for row in rows} == {Trigger.BACKFILL}
    completed = Counter(format_instant(row.expected_execution_time) for row in rows if row.status == "Completed")
    assert completed == Counter(occurrences(hour))  # exactly once each
    failed = [row for row in rows if row.status == HistoryStatus.FAILED]
    assert [(format_instant(row.expected_execution_time), row.message.startswith(WORKER_LOST)) for row in failed] == [
        (occurrences(hour)[4], True)
    ]
    job = wiring.build(api.settings).stores.jobs.get(JobRef(CollectionRef("sub1", "rg1", "jc1"), "k"))
    assert job is not None and job.state == "Enabled" and (job.running, job.waiting) == ("", "")


def post_together(api: Api, requests_: list[tuple[str, datetime, datetime, str]]) -> list[requests.Response]:
    """POST the backfills from one thread each, released at the same instant."""
    barrier = threading.Barrier(len(requests_))
    answers: list[requests.Response | None] = [None] * len(requests_)

    def post(i: int) -> None:
        name, start, end, policy = requests_[i]
        barrier.wait()
        answers[i] = backfill(api, name, start, end, policy)

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(requests_))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(answer is not None for answer in answers)
    return [answer for answer in answers if answer is not None]


def test_two_backfills_posted_together_each_run_every_occurrence_once(
    api: Api, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCHEDULER_DISPATCH_SCHEDULE", "*/2 * * * * *")
    hour = past_hour()
    put_job(api, "same", target, hour)
    put_job(api, "overlap", target, hour)
    worker = fault_host.spawn(LEASE_SECONDS)
    try:
        minute = timedelta(minutes=1)
        answers = post_together(
            api,
            [
                ("same", hour, hour + 30 * minute, "AllowAll"),  # 10 occurrences, twice
                ("same", hour, hour + 30 * minute, "AllowAll"),
                ("overlap", hour, hour + 30 * minute, "BufferOne"),  # 0..9 and 5..14, one after another each
                ("overlap", hour + 15 * minute, hour + 45 * minute, "BufferOne"),
            ],
        )
        assert [(a.status_code, a.json()) for a in answers] == [(202, {"count": 10})] * 4
        wait_until(lambda: len(expected_times(target, "/same")) >= 20, 90, "the same window twice")
        wait_until(lambda: len(expected_times(target, "/overlap")) >= 20, 120, "the overlapping windows")
        time.sleep(3)  # nothing more comes
    finally:
        fault_host.stop(worker)
    assert Counter(expected_times(target, "/same")) == Counter(occurrences(hour, 0, 10) * 2)
    assert Counter(expected_times(target, "/overlap")) == Counter(occurrences(hour, 0, 10) + occurrences(hour, 5, 15))
    for name in ("same", "overlap"):
        rows = history(api, name)
        assert len(rows) == 20 and all(row.status == HistoryStatus.COMPLETED for row in rows)
        assert len({row.execution_id for row in rows}) == 20  # one run per backfill, each its own id
