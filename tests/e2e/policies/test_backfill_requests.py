"""A backfill request (``POST .../jobs/{job}/backfill``, api-version 2026-12-01-preview) is checked before
anything is sent: a body that breaks a rule (a window reversed, empty, in the future, before 1900 or of more
than 1,000 occurrences, an unknown overlapPolicy or field, not a JSON object) is a 400 whose message names the
field and states the rule, never a 5xx, and nothing is sent or stored; a classic client, a Reader, an unknown
or a disabled job is refused; a window of exactly 1,000 occurrences is sent whole. What a backfill runs is
shown in ``test_backfill_runs.py``.

Through the management API in process (the real handler, gate and service over the memory adapter in
simulated time), and through the local host's HTTP API on Azurite (the hostile windows)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.definitions import Wire
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.e2e.conftest import Api
from tests.e2e.test_attack_preview import JC, PREVIEW, call, snapshot
from tests.support.backfills import CLASSIC, HOUR, JOB_PATH, READER_KEY, backfill_deployment, job_ref, post, window
from tests.support.harness import START, Deployment
from tests.support.jobs import NO_RETRY, http_action

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def deployment(memory_env: Settings) -> Deployment:
    return backfill_deployment(memory_env)


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({"endTime": "2020-01-01T00:00:00Z"}, "startTime", "is required"),
        ({"startTime": "2020-01-01T00:00:00Z"}, "endTime", "is required"),
        ({"startTime": "yesterday", "endTime": "2020-01-01T00:00:00Z"}, "startTime", "ISO 8601"),
        ({"startTime": "1800-01-01T00:00:00Z", "endTime": "2020-01-01T00:00:00Z"}, "startTime", "1900-01-01"),
        (window(3, 3), "endTime", "must be after startTime"),
        (window(3, 1), "endTime", "must be after startTime"),
        (window(0, 25), "endTime", "must not be in the future"),
        (window(0, 3, overlapPolicy="Sometimes"), "overlapPolicy", "AllowAll, Skip, BufferOne"),
        (window(0, 3, count=3), "count", "is not a known field"),
        ([1, 2], "", "JSON object"),
    ],
)
def test_bad_bodies_are_400s_naming_the_field_and_send_nothing(
    deployment: Deployment, body: Any, field: str, rule: str
) -> None:
    before = deployment.queued()
    status, answer = post(deployment, body)
    assert status == 400, answer
    message = answer["error"]["message"]
    assert answer["error"]["code"] and rule in message
    if field:
        assert field in message
    assert deployment.queued() == before


def test_more_than_1000_occurrences_is_a_400(deployment: Deployment) -> None:
    minutely = {
        "properties": {
            "startTime": format_instant(START),
            "action": http_action("http://127.0.0.1:9/hook", retryPolicy=NO_RETRY),
            "recurrence": {"frequency": "Minute"},
        }
    }
    deployment.service.put_job(job_ref(), minutely, wire=Wire.PREVIEW)
    before = deployment.queued()
    status, answer = post(deployment, window(0, 1001 / 60))
    assert status == 400 and "endTime" in answer["error"]["message"]
    assert "more than 1000 occurrences" in answer["error"]["message"]
    assert deployment.queued() == before


def test_the_window_is_planned_in_order(deployment: Deployment) -> None:
    job, occurrences, policy = deployment.service.jobs.backfills.plan(job_ref(), window(1, 4.5))
    assert occurrences == [START + HOUR, START + 2 * HOUR, START + 3 * HOUR, START + 4 * HOUR]
    assert policy.value == "AllowAll" and job.ref.name == "j"
    _, _, chosen = deployment.service.jobs.backfills.plan(job_ref(), window(1, 2, overlapPolicy="bufferone"))
    assert chosen.value == "BufferOne"


def test_an_empty_window_is_a_202_with_count_0(deployment: Deployment) -> None:
    status, answer = post(deployment, window(1.25, 1.75))
    assert (status, answer) == (202, {"count": 0})


def test_classic_clients_readers_unknown_and_disabled_jobs_are_refused(deployment: Deployment) -> None:
    status, answer = post(deployment, window(0, 3), version=CLASSIC)
    assert status == 400 and "api-version" in answer["error"]["message"]
    assert "2026-12-01-preview" in answer["error"]["message"]
    status, answer = post(deployment, window(0, 3), key=READER_KEY)
    assert status == 403 and "jobs/backfill/action" in answer["error"]["message"]
    status, _ = post(deployment, window(0, 3), path=JOB_PATH[:-1] + "missing" + "/backfill")
    assert status == 404
    deployment.service.patch_job(job_ref(), {"properties": {"state": "Disabled"}})
    status, answer = post(deployment, window(0, 3))
    assert status == 409 and "Disabled" in answer["error"]["message"]
    assert all('"backfill"' not in message.text for message in deployment.queued())


def test_the_backfill_path_is_the_jobs_and_checks_its_names(deployment: Deployment) -> None:
    status, _ = post(deployment, window(0, 3), path=JOB_PATH + "/BACKFILL/")
    assert status != 404
    status, _ = post(deployment, window(0, 3), path=JOB_PATH + "/history/backfill")
    assert status == 404
    status, answer = post(deployment, window(0, 3), path=JOB_PATH[:-1] + "a.." + "/backfill")
    assert status == 400 and "jobName" in answer["error"]["message"]


# --------------------------------------------------------------------------- hostile windows, over HTTP


def minutely(api: Api, name: str, start: datetime) -> None:
    body = {
        "properties": {
            "startTime": format_instant(start),
            "action": {"type": "Http", "request": {"uri": "http://127.0.0.1:9/hook", "method": "POST"}},
            "recurrence": {"frequency": "Minute"},
        }
    }
    answer = call(api, "PUT", f"{JC}/jobs/{name}", body)
    assert answer.status_code == 201, answer.text


@pytest.mark.azurite
def test_hostile_backfill_windows_are_400s_naming_the_field_and_send_nothing(collection: Api) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    start = now - timedelta(days=3)
    minutely(collection, "b", start)
    before = snapshot(collection)
    m = timedelta(minutes=1)
    base = now - timedelta(days=2)

    def window(a: Any, b: Any, **extra: Any) -> dict[str, Any]:
        return {
            "startTime": a if isinstance(a, str) else format_instant(a),
            "endTime": b if isinstance(b, str) else format_instant(b),
            **extra,
        }

    hostile: dict[str, tuple[Any, str, str]] = {
        "reversed": (window(base + 10 * m, base), "endTime", "must be after startTime"),
        "empty": (window(base, base), "endTime", "must be after startTime"),
        "in the future": (window(base, now + m), "endTime", "must not be in the future"),
        "all in the future": (window(now + m, now + 10 * m), "endTime", "must not be in the future"),
        "year 9999": (window("9999-12-31T00:00:00Z", "9999-12-31T23:59:59Z"), "endTime", "must not be in the future"),
        "1,001 occurrences": (window(base, base + 1001 * m), "endTime", "more than 1000 occurrences"),
        "a century": (window(start - timedelta(days=36500), base), "endTime", "more than 1000 occurrences"),
        "before 1900": (window("1800-01-01T00:00:00Z", base), "startTime", "1900-01-01"),
        "a number": (window(base, base).__or__({"startTime": 1}), "startTime", "ISO 8601"),
        "nested": (window(base, base).__or__({"endTime": {"at": "now"}}), "endTime", "ISO 8601"),
        "null": (window(base, base).__or__({"startTime": None}), "startTime", "is required"),
        "overlap policy unknown": (window(base, base + m, overlapPolicy="Replace"), "overlapPolicy", "AllowAll"),
        "overlap policy a number": (window(base, base + m, overlapPolicy=1), "overlapPolicy", "AllowAll"),
        "unknown field": (window(base, base + m, count=5), "count", "is not a known field"),
        "an array": ([window(base, base + m)], "", "JSON object"),
    }
    wrong = []
    for name, (body, field, rule) in hostile.items():
        answer = call(collection, "POST", f"{JC}/jobs/b/backfill", body)
        assert answer.status_code < 500, (name, answer.text)
        error = answer.json().get("error", {})
        message = str(error.get("message", ""))
        if answer.status_code != 400 or not error.get("code") or rule not in message or not message.startswith(field):
            wrong.append(f"{name}: {answer.status_code} {answer.text[:300]}")
    for raw, what in ((b"{", "not valid JSON"), (b"\xff\xfe", "not valid JSON")):
        answer = collection.call(
            "POST",
            f"{JC}/jobs/b/backfill",
            raw,
            headers={"Content-Type": "application/json"},
            query={"api-version": PREVIEW},
        )
        if answer.status_code != 400 or what not in answer.text:
            wrong.append(f"{raw!r}: {answer.status_code} {answer.text[:300]}")
    answer = call(collection, "POST", f"{JC}/jobs/b/backfill", {"startTime": "2" * 70_000, "endTime": "x"})
    if answer.status_code != 413:
        wrong.append(f"a 70 kB body: {answer.status_code} {answer.text[:300]}")
    assert not wrong, "\n".join(wrong)
    assert snapshot(collection) == before


@pytest.mark.azurite
def test_a_backfill_of_exactly_1000_occurrences_is_sent_whole(collection: Api) -> None:
    """The most one backfill runs: 1,000 messages sent (all at once, AllowAll), answered 202 with the count;
    the time the answer took is printed (every message and its watch are written before it)."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    minutely(collection, "k", now - timedelta(days=3))
    # the one after another backfill on another job: the Standard plan holds one whole backfill (1,000
    # occurrences) outstanding per job
    minutely(collection, "k2", now - timedelta(days=3))
    base = now - timedelta(days=2)
    before = snapshot(collection)["executions"]
    started = time.monotonic()
    body = {"startTime": format_instant(base), "endTime": format_instant(base + timedelta(minutes=1000))}
    answer = call(collection, "POST", f"{JC}/jobs/k/backfill", body)
    took = time.monotonic() - started
    print(f"\nbackfill of 1000 occurrences (AllowAll) on Azurite: answered in {took:.2f} s")
    assert (answer.status_code, answer.json()) == (202, {"count": 1000}), answer.text
    assert snapshot(collection)["executions"] - before == 1000
    answer = call(collection, "POST", f"{JC}/jobs/k2/backfill", body | {"overlapPolicy": "BufferOne"})
    assert (answer.status_code, answer.json()) == (202, {"count": 1000})  # one message: one after another
    assert snapshot(collection)["executions"] - before == 1001
    assert PREVIEW in answer.url
