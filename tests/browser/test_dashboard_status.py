"""The dashboard's read-only status API over HTTP on the local host (Azurite behind fault proxies): the
``/health`` answer of the instance and live counts of the subscription, behind the management API's key
check; and the job API's ``after``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from local_host.azurite import Azurite, AzuritePorts, free_port
from local_host.runtime import LocalHost
from scheduler_core import __version__, auth, triggers, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.browser.test_dashboard_http import assert_arm_error, assert_secured
from tests.e2e.conftest import ROOT, Api
from tests.support.fault_proxy import FaultProxy, fault_proxy
from tests.support.http_target import HttpTarget, http_target
from tests.support.jobs import every, http_action, job_body

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

SUB = "sub-status"
OTHER = "sub-elsewhere"
JC = f"subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections"
STATUS = f"/dashboard/api/status/subscriptions/{SUB}/providers/Microsoft.Scheduler/jobCollections"


@dataclass
class Proxied:
    api: Api
    scoped_key: str
    proxies: list[FaultProxy]

    def status(self, key: str | None = None) -> requests.Response:
        headers = {"Authorization": f"Bearer {key or self.api.key}"}
        return requests.get(f"{self.api.base_url}{STATUS}", headers=headers, timeout=120)

    def put(self, path: str, body: dict[str, Any]) -> None:
        response = self.api.call(
            "PUT", f"subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Scheduler/{path}", body
        )
        assert response.status_code in (200, 201), response.text


def _keys(monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    key, scoped = auth.generate_key(), auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", f"{auth.hash_entry(key)};{auth.hash_entry(scoped, [OTHER])}")
    return key, scoped


@pytest.fixture
def running(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Proxied]:
    """The function app with its HTTP and queue triggers (a job run now executes)."""
    import function_app

    key, scoped = _keys(monkeypatch)
    wiring.reset()
    provision(storage_env)
    enable = frozenset({"http", "queue"})
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=enable) as host:
        yield Proxied(Api(host.base_url, key, storage_env), scoped, [])


@pytest.fixture
def proxied(storage_env: Settings, azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> Iterator[Proxied]:
    """The function app's HTTP routes, its storage behind fault proxies; a key for every subscription and one
    scoped to another."""
    import function_app

    key, scoped = _keys(monkeypatch)
    provision(storage_env)
    with (
        fault_proxy(("127.0.0.1", azurite.ports.table)) as tables,
        fault_proxy(("127.0.0.1", azurite.ports.queue)) as queues,
    ):
        ports = AzuritePorts(blob=azurite.ports.blob, queue=queues.port, table=tables.port)
        monkeypatch.setenv("AzureWebJobsStorage", ports.connection_string())
        wiring.reset()
        with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
            yield Proxied(Api(host.base_url, key, storage_env), scoped, [tables, queues])
        wiring.reset()


@pytest.fixture
def target() -> Iterator[HttpTarget]:
    with http_target() as server:
        yield server


def job(uri: str, start: datetime | None, recurrence: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return job_body(start, http_action(uri, body=None), recurrence or every("Hour"), **extra)


def test_status_reports_health_and_live_counts(proxied: Proxied, target: HttpTarget) -> None:
    empty = proxied.status()
    assert empty.status_code == 200, empty.text
    assert_secured(empty)
    assert empty.headers["Cache-Control"] == "no-store"
    body = empty.json()
    assert body["subscription"] == SUB
    health = body["health"]
    assert (health["httpStatus"], health["status"], health["storage"]) == (200, "degraded", "reachable")
    assert health["version"] == __version__
    assert health["warnings"] == ["dispatch tick: never recorded"] and health["last_tick"] is None
    counts = body["counts"]
    assert counts["collections"] == 0 and counts["jobs"] == 0 and counts["dueSoon"] == 0
    assert counts["jobsByState"] == {"Enabled": 0, "Disabled": 0, "Completed": 0, "Faulted": 0}

    triggers.on_dispatch_tick()  # this process's services are the host's: a heartbeat
    later = datetime.now(UTC) + timedelta(days=1)
    proxied.put("jobCollections/a", {"location": "westus"})
    proxied.put("jobCollections/b", {"location": "westus"})
    proxied.put("jobCollections/a/jobs/later", job(f"{target.base_url}/later", later))
    proxied.put("jobCollections/a/jobs/off", job(f"{target.base_url}/off", later, state="Disabled"))
    proxied.put("jobCollections/b/jobs/soon", job(f"{target.base_url}/soon", datetime.now(UTC) + timedelta(seconds=40)))

    ticked = proxied.status().json()
    assert (ticked["health"]["status"], ticked["health"]["warnings"]) == ("healthy", [])
    assert 0 <= ticked["health"]["tick_age_seconds"] < 60
    counts = ticked["counts"]
    assert (counts["collections"], counts["jobs"], counts["dueSoon"], counts["dueSoonSeconds"]) == (2, 3, 1, 60)
    assert counts["jobsByState"] == {"Enabled": 2, "Disabled": 1, "Completed": 0, "Faulted": 0}
    assert (counts["executions"], counts["failures"]) == (0, 0)

    # Storage unreachable (down: its connections reset, new ones refused): the health answer says so; nothing
    # is counted.
    for proxy in proxied.proxies:
        proxy.set_mode("down")
    down = proxied.status()
    assert down.status_code == 200, down.text
    assert down.json()["health"]["httpStatus"] == 503
    assert down.json()["health"]["storage"] == "unreachable" and down.json()["counts"] is None
    assert "AccountKey" not in down.text and "127.0.0.1" not in down.text
    for proxy in proxied.proxies:
        proxy.set_mode("pass")
    assert proxied.status().json()["health"]["httpStatus"] == 200


def test_counts_follow_an_execution(running: Proxied, target: HttpTarget) -> None:
    later = datetime.now(UTC) + timedelta(days=1)
    running.put("jobCollections/a", {"location": "westus"})
    once = job(f"{target.base_url}/later", later)
    once["properties"]["action"]["retryPolicy"] = {"retryType": "None"}
    running.put("jobCollections/a/jobs/later", once)
    assert running.status().json()["counts"]["executions"] == 0
    target.answer([500])
    run = running.api.call("POST", f"{JC}/a/jobs/later/run")
    assert run.status_code == 200, run.text
    deadline = time.monotonic() + 60
    counts = running.status().json()["counts"]
    while not counts["failures"] and time.monotonic() < deadline:
        time.sleep(0.5)
        counts = running.status().json()["counts"]
    assert (counts["executions"], counts["failures"]) == (1, 1)
    assert len(target.received) == 1


def test_status_is_behind_the_key_check(proxied: Proxied) -> None:
    url = f"{proxied.api.base_url}{STATUS}"
    assert_arm_error(requests.get(url, timeout=30), 401, "authentication required")
    assert_arm_error(proxied.status("sks_not-a-key"), 401, "not valid")
    assert_arm_error(proxied.status(proxied.scoped_key), 403, f"over scope '/subscriptions/{SUB}'")
    other = f"{proxied.api.base_url}{STATUS.replace(SUB, OTHER)}"
    mine = requests.get(other, headers={"Authorization": f"Bearer {proxied.scoped_key}"}, timeout=60)
    assert mine.status_code == 200 and mine.json()["counts"]["collections"] == 0
    wrong = f"{proxied.api.base_url}/dashboard/api/status/subscriptions/{SUB}"
    assert_arm_error(requests.get(wrong, headers={"Authorization": f"Bearer {proxied.api.key}"}, timeout=30), 404)
    write = requests.post(url, headers={"Authorization": f"Bearer {proxied.api.key}"}, timeout=30)
    assert_arm_error(write, 405)


def test_job_api_after(proxied: Proxied, target: HttpTarget) -> None:
    start = (datetime.now(UTC) + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    proxied.put("jobCollections/a", {"location": "westus"})
    proxied.put(
        "jobCollections/a/jobs/j",
        job(f"{target.base_url}/j", start, recurrence={"frequency": "Hour", "interval": 1, "count": 5}),
    )
    url = f"{proxied.api.base_url}/dashboard/api/job/{JC}/a/jobs/j"
    headers = {"Authorization": f"Bearer {proxied.api.key}"}
    after = format_instant(start + timedelta(minutes=90))
    answer = requests.get(url, params={"count": "10", "after": after}, headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    # From 90 minutes after the start: occurrences 2, 3 and 4 of the five (count is applied).
    assert [o["utc"] for o in body["occurrences"]] == [format_instant(start + timedelta(hours=h)) for h in (2, 3, 4)]
    assert body["after"] == after
    assert abs(datetime.fromisoformat(body["now"].replace("Z", "+00:00")) - datetime.now(UTC)) < timedelta(minutes=1)
    bad = requests.get(url, params={"after": "tomorrow"}, headers=headers, timeout=30)
    assert assert_arm_error(bad, 400)["message"].startswith("after: ")
    long = requests.get(url, params={"after": "2" * 65}, headers=headers, timeout=30)
    assert assert_arm_error(long, 400)["message"].startswith("after: ")
