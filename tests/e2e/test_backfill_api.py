"""``POST .../jobs/{job}/backfill`` (api-version 2026-12-01-preview) through the management API in process
(the real handler, gate and service over the memory adapter in simulated time): its checks, each a 400
naming the field with nothing sent, its roles and its api-version. What a backfill runs is shown end to end
in ``tests/e2e/test_backfill_runs.py``."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

import pytest

from scheduler_core import wiring
from scheduler_core.adapters.memory import SimulatedClock, memory_storage
from scheduler_core.api.handler import ApiServices, ManagementApi
from scheduler_core.api.messages import ApiRequest
from scheduler_core.auth.keys import ApiKey
from scheduler_core.auth.roles import Role
from scheduler_core.definitions import Wire
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import JobRef
from tests.decisions.conftest import COLLECTION, NO_RETRY, STANDARD, START, Deployment, http_action

pytestmark = [pytest.mark.e2e]

CONTRIBUTOR_KEY, READER_KEY = "contributor-key", "reader-key"
PREVIEW, CLASSIC = "2026-12-01-preview", "2016-03-01"
JOB_PATH = "subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc1/jobs/j"
HOUR = timedelta(hours=1)
#: When the backfilled job was written: a day after simulated time starts (so the day before is its past).
LATER = START + timedelta(days=1)


@pytest.fixture
def deployment(memory_env: Settings) -> Deployment:
    return backfill_deployment(memory_env)


def backfill_deployment(memory_env: Settings) -> Deployment:
    """A deployment whose job ``j`` (hourly from :data:`START`, aimed at a closed port) was written at
    :data:`LATER`, the simulated time now."""
    clock = SimulatedClock(START)
    storage = memory_storage(clock)
    services = wiring.build(memory_env, clock=clock, sleep=clock.advance, storage=storage)
    services.service.put_collection(COLLECTION, STANDARD)
    body = {
        "properties": {
            "startTime": format_instant(START),
            "action": http_action("http://127.0.0.1:9/hook", retryPolicy=NO_RETRY),
            "recurrence": {"frequency": "Hour"},
        }
    }
    clock.set(LATER)
    services.service.put_job(_ref(), body, wire=Wire.PREVIEW)
    return Deployment(memory_env, clock, storage, services)


def _ref() -> JobRef:
    return JobRef(COLLECTION, "j")


def api(deployment: Deployment) -> ManagementApi:
    keys = (
        ApiKey(hashlib.sha256(CONTRIBUTOR_KEY.encode()).digest(), None, Role.CONTRIBUTOR),
        ApiKey(hashlib.sha256(READER_KEY.encode()).digest(), None, Role.READER),
    )
    services = ApiServices(deployment.service, keys)
    return ManagementApi(lambda: services)


def post(
    deployment: Deployment,
    body: Any,
    version: str = PREVIEW,
    key: str = CONTRIBUTOR_KEY,
    path: str = JOB_PATH + "/backfill",
) -> tuple[int, dict[str, Any]]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = ApiRequest(
        "POST",
        f"http://127.0.0.1/{path}?api-version={version}",
        path,
        {"api-version": version},
        {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        raw,
    )
    response = api(deployment).handle(request)
    return response.status, json.loads(response.body) if response.body else {}


def window(start_hours: float, end_hours: float, **extra: Any) -> dict[str, Any]:
    return {
        "startTime": format_instant(START + timedelta(hours=start_hours)),
        "endTime": format_instant(START + timedelta(hours=end_hours)),
        **extra,
    }


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
    deployment.service.put_job(_ref(), minutely, wire=Wire.PREVIEW)
    before = deployment.queued()
    status, answer = post(deployment, window(0, 1001 / 60))
    assert status == 400 and "endTime" in answer["error"]["message"]
    assert "more than 1000 occurrences" in answer["error"]["message"]
    assert deployment.queued() == before


def test_the_window_is_planned_in_order(deployment: Deployment) -> None:
    job, occurrences, policy = deployment.service.jobs.backfills.plan(_ref(), window(1, 4.5))
    assert occurrences == [START + HOUR, START + 2 * HOUR, START + 3 * HOUR, START + 4 * HOUR]
    assert policy.value == "AllowAll" and job.ref.name == "j"
    _, _, chosen = deployment.service.jobs.backfills.plan(_ref(), window(1, 2, overlapPolicy="bufferone"))
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
    deployment.service.patch_job(_ref(), {"properties": {"state": "Disabled"}})
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
