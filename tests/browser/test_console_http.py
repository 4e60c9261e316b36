"""The dashboard's write-side helpers over HTTP on the local host (no browser): the dry run of a job PUT
(``POST /dashboard/api/preview/...``) validates as the PUT does, answers the next occurrences and what the
write does to each stored secret, and writes nothing; the access route says the caller's role; a Reader's
key gets the management API's 403 for the dry run and for every write."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.browser.conftest import COLLECTION, GROUP, SUBSCRIPTION
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
JC = f"subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}/providers/Microsoft.Scheduler/jobCollections/{COLLECTION}"
PREVIEW = "2026-12-01-preview"
SAS = "sv=2020-01-01&sig=never-shown"
START = (datetime.now(UTC) + timedelta(days=2)).replace(hour=8, minute=0, second=0, microsecond=0)


@pytest.fixture
def web(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Api, str]]:
    """The function app's HTTP routes with a Contributor key and a Reader key, and a collection."""
    import function_app

    key, reader = auth.generate_key(), auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", f"{auth.hash_entry(key)};{auth.hash_entry(reader, role=auth.Role.READER)}")
    wiring.reset()
    provision(storage_env)
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
        api = Api(host.base_url, key, storage_env)
        response = api.call("PUT", JC, {"location": "westeurope", "properties": {"sku": {"name": "Standard"}}})
        assert response.status_code in (200, 201), response.text
        yield api, reader


def queue_job(queue: str = "orders", sas: str | None = SAS) -> dict[str, Any]:
    message: dict[str, Any] = {"storageAccount": "acct", "queueName": queue, "message": "go"}
    if sas is not None:
        message["sasToken"] = sas
    return {
        "properties": {
            "startTime": format_instant(START),
            "action": {"type": "StorageQueue", "queueMessage": message},
            "recurrence": {
                "frequency": "Week",
                "interval": 1,
                "schedule": {"weekDays": ["Monday", "Wednesday"], "hours": [8], "minutes": [0]},
            },
        }
    }


def preview(api: Api, job: str, body: Any, key: str | None = None, count: int = 5) -> requests.Response:
    return requests.post(
        f"{api.base_url}/dashboard/api/preview/{JC}/jobs/{job}",
        params={"count": str(count)},
        json=body,
        headers={"Authorization": f"Bearer {key or api.key}"},
        timeout=10,
    )


def test_the_dry_run_answers_occurrences_and_writes_nothing(web: tuple[Api, str]) -> None:
    api, _ = web
    response = preview(api, "fresh", queue_job())
    assert response.status_code == 200, response.text
    assert response.headers["Cache-Control"] == "no-store"
    data = response.json()
    assert data["exists"] is False
    days = [datetime.fromisoformat(o["utc"].replace("Z", "+00:00")) for o in data["occurrences"]]
    assert len(days) == 5
    assert all(day.weekday() in (0, 2) and (day.hour, day.minute) == (8, 0) for day in days)
    assert data["writeOnly"] == [
        {"path": "action.queueMessage.sasToken", "set": True, "wasSet": False, "fate": "new value"}
    ]
    assert SAS not in response.text
    assert api.call("GET", f"{JC}/jobs/fresh").status_code == 404  # nothing written


def test_the_dry_run_refuses_what_the_put_refuses_naming_the_field(web: tuple[Api, str]) -> None:
    api, _ = web
    body = queue_job()
    body["properties"]["recurrence"]["frequency"] = "Fortnight"
    dry = preview(api, "bad", body)
    put = api.call("PUT", f"{JC}/jobs/bad", body)
    assert dry.status_code == put.status_code == 400
    assert dry.json() == put.json()
    assert dry.json()["error"]["message"].startswith("properties.recurrence.frequency: ")


def test_the_dry_run_says_which_stored_secret_a_write_keeps_or_drops(web: tuple[Api, str]) -> None:
    api, _ = web
    assert api.call("PUT", f"{JC}/jobs/feed", queue_job()).status_code == 201
    shown = api.call("GET", api.url(f"{JC}/jobs/feed", **{"api-version": PREVIEW})).json()
    assert "sasToken" not in shown["properties"]["action"]["queueMessage"]
    same = {"properties": {k: v for k, v in shown["properties"].items() if k != "status"}}
    kept = preview(api, "feed", same).json()
    assert kept["exists"] is True and kept["keepsSeries"] is True
    assert [(f["path"], f["fate"]) for f in kept["writeOnly"]] == [("action.queueMessage.sasToken", "kept")]
    assert kept["droppedSecrets"] == []
    moved = preview(api, "feed", queue_job("elsewhere", sas=None)).json()
    assert moved["droppedSecrets"] == ["action.queueMessage.sasToken"]  # another queue: the token is not kept


def test_the_access_route_says_the_role_and_a_reader_may_not_write(web: tuple[Api, str]) -> None:
    api, reader = web
    url = (
        f"{api.base_url}/dashboard/api/access/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Scheduler/jobCollections"
    )
    mine = requests.get(url, headers={"Authorization": f"Bearer {api.key}"}, timeout=10)
    theirs = requests.get(url, headers={"Authorization": f"Bearer {reader}"}, timeout=10)
    assert mine.json() == {"subscription": SUBSCRIPTION, "role": "Contributor", "canWrite": True}
    assert theirs.json() == {"subscription": SUBSCRIPTION, "role": "Reader", "canWrite": False}
    assert requests.get(url, timeout=10).status_code == 401
    refused = preview(api, "fresh", queue_job(), key=reader)
    assert refused.status_code == 403
    assert "Microsoft.Scheduler/jobCollections/jobs/write" in refused.json()["error"]["message"]
    assert requests.get(f"{api.base_url}/dashboard/api/preview/{JC}/jobs/fresh", timeout=10).status_code == 405
