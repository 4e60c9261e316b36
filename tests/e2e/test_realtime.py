"""Real time, real queues: the local host runs every trigger of the function app against Azurite, and a
job created through the API fires at its second against a real HTTP server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.settings import Settings
from tests.support.http_target import http_target
from tests.support.jobs import http_action, job_body

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
JC = "subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"


@pytest.fixture
def running(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    import function_app

    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    wiring.reset()
    provision(storage_env)
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port()) as host:
        yield host.base_url, key


def test_job_fires_at_its_second_and_history_shows_it(running: tuple[str, str]) -> None:
    base, key = running
    headers = {"Authorization": f"Bearer {key}"}
    url = f"{base}/{JC}?api-version=2016-03-01"
    assert requests.put(url, json={"location": "westus"}, headers=headers, timeout=10).status_code == 201
    with http_target() as target:
        due = (datetime.now(UTC) + timedelta(seconds=6)).replace(microsecond=0)
        job = job_body(due, http_action(target.base_url, method="GET", body=None))
        response = requests.put(f"{base}/{JC}/jobs/soon?api-version=2016-03-01", json=job, headers=headers, timeout=10)
        assert response.status_code == 201, response.text
        [received] = target.wait_for(1, timeout=20)
        lateness = received.at - due.timestamp()
        assert -0.05 <= lateness < 3.0, f"fired {lateness:.2f} s after its due second"
    history_url = f"{base}/{JC}/jobs/soon/history?api-version=2016-03-01"
    deadline = time.monotonic() + 10
    rows: list[dict[str, object]] = []
    while time.monotonic() < deadline and not rows:
        rows = requests.get(history_url, headers=headers, timeout=10).json()["value"]
        time.sleep(0.2)
    assert [row["properties"]["status"] for row in rows] == ["Completed"]  # type: ignore[index]
    job_state = requests.get(f"{base}/{JC}/jobs/soon?api-version=2016-03-01", headers=headers, timeout=10).json()
    assert job_state["properties"]["state"] == "Completed"
    assert job_state["properties"]["status"]["executionCount"] == 1
