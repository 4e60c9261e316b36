"""The jobs of the policy tests in simulated time (:class:`tests.support.harness.Deployment`, the fixture
``deployment`` of ``conftest.py``), written with the preview's properties (api-version 2026-12-01-preview),
and their history as the tests compare it."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from scheduler_core.definitions import Wire
from scheduler_core.model import HistoryEntry
from scheduler_core.recurrence import format_instant
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import NO_RETRY, http_action

MINUTE = timedelta(minutes=1)
#: Occurrences start an hour after simulated time does (so nothing is dispatched when the job is written).
T0 = START + timedelta(hours=1)


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


def hook(target: HttpTarget) -> str:
    return f"{target.base_url}/hook"


def preview_job(url: str, recurrence: dict[str, Any], start: datetime = START, **properties: Any) -> dict[str, Any]:
    return {
        "properties": {
            "startTime": format_instant(start),
            "action": http_action(url, retryPolicy=NO_RETRY),
            "recurrence": recurrence,
            **properties,
        }
    }


def put_preview(deployment: Deployment, name: str, body: dict[str, Any]) -> None:
    deployment.service.put_job(deployment.ref(name), body, wire=Wire.PREVIEW)
