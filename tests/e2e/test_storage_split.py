"""The history tables and the execution queues in storage accounts of their own, end to end. Three Azurite
instances stand for three accounts: the test session's (AzureWebJobsStorage), one given by
SchedulerHistoryStorage and one by SchedulerExecutionStorage. The local host runs function_app.py as a
deployment with these settings indexes it (the execution function's trigger on the SchedulerExecutionStorage
connection); jobs created through the API fire into a real HTTP target, one of them failing first and
retried; their history is listed through the API. Every table row and queue message lands in the account of
its part and in no other, and /health answers 503 when the history account cannot be reached (stopped), or the
execution queues' account (down: behind a fault proxy, so that it can come back before the host stops, whose
queue pollers would otherwise wait out their back-off against it)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests
from azure.data.tables import TableServiceClient
from azure.storage.queue import QueueServiceClient

from local_host.azurite import Azurite, AzuritePorts, free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, settings, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.storage.names import CLAIMS_TABLE, DUE_INDEX_TABLE, HISTORY_TABLE, JOBS_TABLE
from tests.conftest import private_azurite
from tests.e2e.conftest import ROOT
from tests.support.fault_proxy import FaultProxy, fault_proxy
from tests.support.http_target import http_target
from tests.support.jobs import fixed_retries, http_action, job_body
from tests.unit.test_execution_queues import load_function_app

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

JC = "subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"


@dataclass
class Deployment:
    base_url: str
    key: str
    config: settings.Settings
    main: Azurite
    history: Azurite
    executions: Azurite
    #: In front of the execution queues' account's queue service: the app reaches it through this.
    executions_queues: FaultProxy

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> requests.Response:
        url = f"{self.base_url}/{path}{'&' if '?' in path else '?'}api-version=2016-03-01"
        headers = {"Authorization": f"Bearer {self.key}"}
        return requests.request(method, url, json=body, headers=headers, timeout=30)


def tables(azurite: Azurite) -> TableServiceClient:
    return TableServiceClient.from_connection_string(azurite.connection_string)


def queues(azurite: Azurite) -> QueueServiceClient:
    return QueueServiceClient.from_connection_string(azurite.connection_string)


def table_names(azurite: Azurite) -> set[str]:
    return {t.name for t in tables(azurite).list_tables()}


def queue_names(azurite: Azurite) -> set[str]:
    return {q.name for q in queues(azurite).list_queues()}


def rows(azurite: Azurite, table: str) -> list[dict[str, Any]]:
    return list(tables(azurite).get_table_client(table).list_entities())


def wait(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError("not in time")


@pytest.fixture
def deployment(
    azurite: Azurite, storage_env: settings.Settings, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Deployment]:
    with (
        private_azurite() as history,
        private_azurite() as executions,
        fault_proxy(("127.0.0.1", executions.ports.queue)) as proxy,
    ):
        key = auth.generate_key()
        monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
        monkeypatch.setenv("SchedulerHistoryStorage", history.connection_string)
        proxied = AzuritePorts(blob=executions.ports.blob, queue=proxy.port, table=executions.ports.table)
        monkeypatch.setenv("SchedulerExecutionStorage", proxied.connection_string())
        monkeypatch.setenv("SCHEDULER_EXECUTION_QUEUE_COUNT", "2")
        wiring.reset()
        config = settings.load()
        provision(config)
        app = load_function_app(monkeypatch, 2)  # as the worker indexes the app with these settings
        host = LocalHost(app, ROOT / "host.json", port=free_port())
        with host:
            yield Deployment(host.base_url, key, config, azurite, history, executions, proxy)
        wiring.reset()


def test_each_part_of_the_storage_lives_in_its_own_account(deployment: Deployment) -> None:
    d, config = deployment, deployment.config
    main_tables, history_tables = table_names(d.main), table_names(d.history)
    for base in (JOBS_TABLE, DUE_INDEX_TABLE):
        assert config.table_name(base) in main_tables
        assert config.table_name(base) not in history_tables
    for base in (CLAIMS_TABLE, HISTORY_TABLE):
        assert config.table_name(base) in history_tables
        assert config.table_name(base) not in main_tables
    execution_queues = set(config.execution_queues) | {f"{q}-poison" for q in config.execution_queues}
    assert len(config.execution_queues) == 2
    assert execution_queues <= queue_names(d.executions)
    assert not execution_queues & queue_names(d.main)
    assert {config.scan_queue, config.cleanup_queue} <= queue_names(d.main)
    assert not {config.scan_queue, config.cleanup_queue} & queue_names(d.executions)

    assert d.call("PUT", JC, {"location": "west"}).status_code == 201
    due = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
    with http_target() as target, http_target([500, 200]) as flaky:
        for name, url, retry in (
            ("steady", target.base_url, {}),
            ("flaky", flaky.base_url, {"retryPolicy": fixed_retries(2, "PT15S")}),
        ):
            body = job_body(due, http_action(f"{url}/{name}", method="GET", body=None, **retry))
            answer = d.call("PUT", f"{JC}/jobs/{name}", body)
            assert answer.status_code == 201, answer.text
        target.wait_for(1, timeout=40)
        flaky.wait_for(2, timeout=60)
        time.sleep(2)
        assert (len(target.received), len(flaky.received)) == (1, 2)  # each attempt called once

    def statuses(name: str) -> list[str]:
        answer = d.call("GET", f"{JC}/jobs/{name}/history")
        return sorted(entry["properties"]["status"] for entry in answer.json()["value"])

    wait(lambda: statuses("steady") == ["Completed"] and statuses("flaky") == ["Completed", "Failed"], timeout=30)
    assert d.call("GET", f"{JC}/jobs/flaky").json()["properties"]["status"]["executionCount"] == 2

    claims = rows(d.history, config.table_name(CLAIMS_TABLE))
    assert len(claims) == 3  # one claim per attempt (steady's, flaky's and its retry), each completed

    health = requests.get(f"{d.base_url}/health", timeout=60)
    assert health.status_code == 200, health.text
    assert health.json()["history_storage"] == "reachable"
    assert [q["name"] for q in health.json()["execution_queues"]] == list(config.execution_queues)
    assert all(q["poison"] == 0 for q in health.json()["execution_queues"]), health.text

    # An operator's mistakes and outages, one at a time: each answers 503 at once, naming the account.
    history_table = config.table_name(HISTORY_TABLE)
    tables(d.history).delete_table(history_table)  # a table missing (a point read would not see it)
    missing = requests.get(f"{d.base_url}/health", timeout=60)
    assert missing.status_code == 503, missing.text
    assert missing.json()["history_storage"] == "unreachable"
    tables(d.history).create_table(history_table)
    assert requests.get(f"{d.base_url}/health", timeout=60).status_code == 200

    queues(d.executions).delete_queue(config.execution_queues[1])  # an execution queue missing: not "empty"
    gone = requests.get(f"{d.base_url}/health", timeout=60)
    assert gone.status_code == 503, gone.text
    assert gone.json()["execution_storage"] == "unreachable"
    assert "SchedulerExecutionStorage" in gone.json()["reason"]
    queues(d.executions).create_queue(config.execution_queues[1])
    assert requests.get(f"{d.base_url}/health", timeout=60).status_code == 200

    d.executions_queues.set_mode("down")  # the account's queue service refuses connections, as when stopped
    started = time.monotonic()
    down = requests.get(f"{d.base_url}/health", timeout=120)
    assert down.status_code == 503, down.text
    assert down.json()["execution_storage"] == "unreachable"
    assert time.monotonic() - started < 10  # no retry with back-off per queue (it took minutes)
    d.executions_queues.set_mode("pass")
    assert requests.get(f"{d.base_url}/health", timeout=60).status_code == 200

    d.history.stop()
    down = requests.get(f"{d.base_url}/health", timeout=120)
    assert down.status_code == 503, down.text
    assert down.json()["history_storage"] == "unreachable"
    assert "SchedulerHistoryStorage" in down.json()["reason"]
    assert all(secret not in down.text for secret in ("AccountKey", d.history.connection_string))
