"""Backfills through the management API in process (``POST .../jobs/{job}/backfill``, api-version
2026-12-01-preview): a deployment whose hourly job ``j`` has a day of past to backfill, and the API's answer
to a POST, for the backfill tests (``tests/decisions/policies``, ``tests/e2e/policies``)."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from scheduler_core.api.handler import ApiServices, ManagementApi
from scheduler_core.api.messages import ApiRequest
from scheduler_core.auth.keys import ApiKey
from scheduler_core.auth.roles import Role
from scheduler_core.definitions import Wire
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import JobRef
from tests.support.harness import COLLECTION, START, Deployment
from tests.support.jobs import NO_RETRY, http_action

CONTRIBUTOR_KEY, READER_KEY = "contributor-key", "reader-key"
PREVIEW, CLASSIC = "2026-12-01-preview", "2016-03-01"
JOB_PATH = "subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc1/jobs/j"
HOUR = timedelta(hours=1)
#: When the backfilled job was written: a day after simulated time starts (so the day before is its past).
LATER = START + timedelta(days=1)


def backfill_deployment(memory_env: Settings) -> Deployment:
    """A deployment whose job ``j`` (hourly from :data:`START`, aimed at a closed port) was written at
    :data:`LATER`, the simulated time now."""
    deployment = Deployment.on_memory(memory_env)
    body = {
        "properties": {
            "startTime": format_instant(START),
            "action": http_action("http://127.0.0.1:9/hook", retryPolicy=NO_RETRY),
            "recurrence": {"frequency": "Hour"},
        }
    }
    deployment.clock.set(LATER)
    deployment.service.put_job(job_ref(), body, wire=Wire.PREVIEW)
    return deployment


def job_ref() -> JobRef:
    """The backfilled job ``j``."""
    return JobRef(COLLECTION, "j")


def api(deployment: Deployment) -> ManagementApi:
    """The management API over the deployment's service, with a Contributor's key and a Reader's."""
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
    """POST ``body`` to ``path``: the answer's status and body."""
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
    """A backfill's body: the window from ``start_hours`` to ``end_hours`` after :data:`START`."""
    return {
        "startTime": format_instant(START + timedelta(hours=start_hours)),
        "endTime": format_instant(START + timedelta(hours=end_hours)),
        **extra,
    }
