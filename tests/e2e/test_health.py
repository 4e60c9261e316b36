"""``GET /health`` on the local host over Azurite, reached through fault-injecting proxies: no key needed;
200 with warnings for fleet-wide conditions (no dispatch tick yet, poison messages, of the execution queues
or of the cleanup queue); 200 healthy after a tick; 503 naming storage when this instance cannot reach it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace

import pytest
import requests

from local_host.azurite import Azurite, AzuritePorts, free_port
from local_host.runtime import LocalHost
from scheduler_core import __version__, triggers, wiring
from scheduler_core.adapters.azure.clients import queue_client
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.settings import Settings
from tests.e2e.conftest import ROOT
from tests.support.fault_proxy import FaultProxy, fault_proxy

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


@pytest.fixture
def proxied(
    storage_env: Settings, azurite: Azurite, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, list[FaultProxy]]]:
    """The local host serving function_app with its storage behind fault proxies: (base URL, proxies)."""
    import function_app

    monkeypatch.setenv("SCHEDULER_CLEANUP_QUEUE", f"cleanup-{storage_env.scan_queue.removeprefix('scan-')}")
    provision(replace(storage_env, cleanup_queue=os.environ["SCHEDULER_CLEANUP_QUEUE"]))
    with (
        fault_proxy(("127.0.0.1", azurite.ports.table)) as tables,
        fault_proxy(("127.0.0.1", azurite.ports.queue)) as queues,
    ):
        ports = AzuritePorts(blob=azurite.ports.blob, queue=queues.port, table=tables.port)
        monkeypatch.setenv("AzureWebJobsStorage", ports.connection_string())
        wiring.reset()
        with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
            yield host.base_url, [tables, queues]
        wiring.reset()


def test_health_reports_ticks_queues_and_a_storage_outage(
    proxied: tuple[str, list[FaultProxy]], storage_env: Settings
) -> None:
    base_url, proxies = proxied

    first = requests.get(f"{base_url}/health", timeout=60)  # no key
    assert first.status_code == 200, first.text
    body = first.json()
    assert (body["status"], body["storage"], body["version"]) == ("degraded", "reachable", __version__)
    assert body["warnings"] == ["dispatch tick: never recorded"]
    assert (body["execution_queue_depth"], body["poison_queue_length"]) == (0, 0)
    cleanup_queue = os.environ["SCHEDULER_CLEANUP_QUEUE"]
    assert body["cleanup_queue"] == {"name": cleanup_queue, "depth": 0, "poison": 0}

    triggers.on_dispatch_tick()  # this process's services: the host's own
    healthy = requests.get(f"{base_url}/health", timeout=60).json()
    assert (healthy["status"], healthy["warnings"]) == ("healthy", [])
    assert healthy["last_tick"] is not None and 0 <= healthy["tick_age_seconds"] < 60

    poison = queue_client(storage_env, f"{storage_env.execution_queue}-poison")
    poison.send_message("eyJ2IjogMX0=")
    degraded = requests.get(f"{base_url}/health", timeout=60)
    assert degraded.status_code == 200  # fleet-wide: an alert's business, not a reason to restart this instance
    assert degraded.json()["poison_queue_length"] == 1
    assert degraded.json()["warnings"] == ["poison queue: 1 message(s) (see docs/operations.md)"]

    queue_client(storage_env, cleanup_queue).send_message("e30=")
    queue_client(storage_env, f"{cleanup_queue}-poison").send_message("e30=")
    both = requests.get(f"{base_url}/health", timeout=60).json()
    assert both["cleanup_queue"] == {"name": cleanup_queue, "depth": 1, "poison": 1}
    assert both["warnings"] == [
        "poison queue: 1 message(s) (see docs/operations.md)",
        "cleanup poison queue: 1 message(s): the cleanup of their collections failed",
    ]

    # Storage down: its connections reset, new ones refused. The probe's one try fails at once: "unreachable",
    # not "unresponsive" (the client's retries would take 4.8 s of the 5-s deadline, more on a loaded machine).
    for proxy in proxies:
        proxy.set_mode("down")
    down = requests.get(f"{base_url}/health", timeout=120)
    assert down.status_code == 503, down.text
    assert down.json()["storage"] == "unreachable" and down.json()["reason"].startswith("storage")
    assert "AccountKey" not in down.text and "127.0.0.1" not in down.text

    for proxy in proxies:
        proxy.set_mode("pass")
    assert requests.get(f"{base_url}/health", timeout=60).status_code == 200


def test_health_answers_a_write_with_an_arm_405(proxied: tuple[str, list[FaultProxy]]) -> None:
    base_url, _ = proxied
    answer = requests.post(f"{base_url}/health", timeout=30)
    assert answer.status_code == 405
    assert answer.json()["error"]["code"] == "MethodNotAllowed"
