"""History messages start with the outcome for every api-version (issue 27), read back through the management
API of the local host (raw HTTP with 2016-03-01 and 2026-12-01-preview, and the real ``azure-mgmt-scheduler``
SDK) after the pipeline (simulated time, over Azurite) ran a job against a real failing target.

Why 2016-03-01 gets the new order too: its ``message`` is free text (Microsoft's document: ``type: string``,
"Gets the message for the job history"; the SDK's ``JobHistoryDefinitionProperties.message`` is a ``str``
it only carries), and the old service's wording is known only from memory; no client can have parsed it.
So one message serves both versions, and a row written before keeps the text it was written with."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from scheduler_core import settings
from tests.e2e.conftest import Api
from tests.support.harness import near_now
from tests.support.jobs import NO_RETRY, http_action, job_body
from tests.support.outbound_net import Reply, Request, ScriptedServer, scripted_server

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

HISTORY = "subscriptions/sub1/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc/jobs/nightly/history"
TOKEN = "Bearer echo-me-not-0123456789"


def respond(request: Request) -> Reply:
    """The main call fails with a reason in its body; the error action's with another; both echo credentials."""
    if request.path.startswith("/error"):
        return 503, {"Retry-After": "60"}, b"maintenance until 06:00"
    echoed = request.headers.get("Authorization", "")
    return 500, {"Content-Type": "text/plain", "X-Echo": echoed}, f"boom: database unavailable ({echoed})".encode()


@pytest.fixture
def target() -> Iterator[ScriptedServer]:
    with scripted_server(respond) as server:
        yield server


def messages(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(row["properties"]["actionName"], row["properties"]["message"]) for row in rows]


def test_every_api_version_reads_the_outcome_first(api: Api, target: ScriptedServer) -> None:
    pipeline = near_now(settings.load(os.environ), azurite=True)  # with the API's key: its services serve the API
    due = pipeline.clock.now + timedelta(seconds=20)
    error = {"type": "Http", "request": {"uri": f"{target.base_url}/error", "method": "POST", "body": "x"}}
    action = http_action(f"{target.base_url}/main", retryPolicy=NO_RETRY, errorAction=error)
    action["request"]["headers"] = {"Authorization": TOKEN}
    pipeline.put_job("nightly", job_body(due, action))
    pipeline.run_until(due + timedelta(minutes=2))

    classic = api.call("GET", HISTORY, query={"api-version": "2016-03-01"})
    preview = api.call("GET", HISTORY, query={"api-version": "2026-12-01-preview"})
    assert classic.status_code == preview.status_code == 200, (classic.text, preview.text)
    [(error_name, error_message), (main_name, main_message)] = messages(classic.json()["value"])  # newest first
    assert (main_name, error_name) == ("MainAction", "ErrorAction")
    assert main_message.startswith("500 Internal Server Error: boom: database unavailable (***) | Http Action - ")
    headers = main_message.rsplit(" | ", 1)[1]  # the headers last, an echoed credential masked
    assert headers.startswith("Response Headers: ") and "X-Echo: ***, " in headers
    assert error_message.startswith("503 Service Unavailable: maintenance until 06:00 | Http Action - ")
    assert messages(preview.json()["value"]) == messages(classic.json()["value"])  # one text for both versions
    assert "trigger" in preview.json()["value"][0]["properties"]
    assert "trigger" not in classic.json()["value"][0]["properties"]  # 2016-03-01's shape, unchanged

    rows = list(api.sdk().jobs.list_job_history("rg", "jc", "nightly"))  # the SDK of old clients
    assert [(row.properties.action_name, row.properties.message) for row in rows] == messages(classic.json()["value"])
    assert all(isinstance(row.properties.message, str) for row in rows)
    for text in (classic.text, preview.text):
        assert TOKEN.split()[1] not in text
