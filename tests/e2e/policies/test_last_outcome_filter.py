"""``$filter=lastOutcome eq '...'`` (api-version 2026-12-01-preview): jobs fired by the real pipeline in
simulated time on the memory adapter, against a real HTTP target on 127.0.0.1, listed by the management
API's own handler by the history status of their last execution."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

import pytest

from scheduler_core.api import ApiRequest, ManagementApi
from scheduler_core.api.handler import ApiServices
from scheduler_core.auth.keys import ApiKey
from scheduler_core.auth.roles import Role
from scheduler_core.definitions import Wire
from scheduler_core.recurrence import format_instant
from tests.support.harness import Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, http_action

pytestmark = [pytest.mark.e2e]

KEY = "k" * 40


def listed(deployment: Deployment, query: str) -> tuple[int, Any]:
    services = ApiServices(deployment.service, (ApiKey(hashlib.sha256(KEY.encode()).digest(), None, Role.READER),))
    path = f"{deployment.ref('x').resource_id.rsplit('/jobs/', 1)[0]}/jobs"
    params = {"api-version": "2026-12-01-preview", "$filter": query}
    url = f"http://127.0.0.1{path}?api-version=2026-12-01-preview"
    answer = ManagementApi(lambda: services).handle(
        ApiRequest("GET", url, path, params, {"Authorization": f"Bearer {KEY}"}, b"")
    )
    return answer.status, json.loads(answer.body)


def names(deployment: Deployment, query: str) -> list[str]:
    status, body = listed(deployment, query)
    assert status == 200, body
    return sorted(item["name"].rsplit("/", 1)[-1] for item in body["value"])


def test_jobs_are_listed_by_the_outcome_of_their_last_execution(deployment: Deployment, target: HttpTarget) -> None:
    def one_shot(name: str, delay: timedelta) -> None:
        start = deployment.clock.now + delay
        action = http_action(f"{target.base_url}/hook", retryPolicy=NO_RETRY)
        deployment.service.put_job(
            deployment.ref(name),
            {"properties": {"startTime": format_instant(start), "action": action}},
            wire=Wire.PREVIEW,
        )

    one_shot("ok", timedelta(hours=2))
    deployment.run_until(deployment.clock.now + timedelta(hours=3))
    target.answer([500])
    one_shot("bad", timedelta(hours=2))
    deployment.run_until(deployment.clock.now + timedelta(hours=3))
    one_shot("idle", timedelta(days=1))
    assert len(target.received) == 2
    assert names(deployment, "lastOutcome eq 'failed'") == ["bad"]
    assert names(deployment, "lastOutcome eq 'Completed'") == ["ok"]
    assert names(deployment, "lastOutcome eq 'Failed' and state eq 'Faulted'") == ["bad"]  # its only run failed
    status, body = listed(deployment, "lastOutcome eq 'Postponed'")
    assert status == 400 and "lastOutcome must be one of Completed, Failed" in body["error"]["message"]
