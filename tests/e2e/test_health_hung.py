"""``GET /health`` when storage hangs (connections accepted, nothing answered): 503 within a few seconds, not
after the storage clients' retries (86 s before :data:`scheduler_core.health.HEALTH_DEADLINE`), and no pile of
probes while it hangs; healthy again once storage answers.

The local host serves the function app over Azurite reached through fault-injecting proxies, as in
``tests/e2e/test_health.py``, whose fixture this module shares."""

from __future__ import annotations

import threading
import time

import pytest
import requests

from scheduler_core.health import HEALTH_DEADLINE
from tests.e2e.test_health import proxied
from tests.support.fault_proxy import FaultProxy
from tests.support.waiting import wait_until

__all__ = ["proxied"]

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


def probe_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name.startswith("health"))


def test_health_answers_503_within_seconds_when_storage_hangs(proxied: tuple[str, list[FaultProxy]]) -> None:
    base_url, proxies = proxied
    assert requests.get(f"{base_url}/health", timeout=60).status_code == 200

    for proxy in proxies:
        proxy.set_mode("blackhole")
    answers = []
    for _ in range(3):  # checks in a row while storage hangs: each as quick, none starting a second probe
        began = time.monotonic()
        hung = requests.get(f"{base_url}/health", timeout=60)
        answers.append((hung.status_code, hung.json()["storage"], time.monotonic() - began))
        assert "reason" in hung.json() and hung.json()["reason"].startswith("storage: no answer within")
    assert [(status, storage) for status, storage, _ in answers] == [(503, "unresponsive")] * 3
    assert all(took < HEALTH_DEADLINE + 3 for _, _, took in answers), answers
    assert probe_threads() <= 1  # the first check's probe, still hanging; the others waited on it

    for proxy in proxies:
        proxy.set_mode("pass")

    def healthy_again() -> bool:
        return requests.get(f"{base_url}/health", timeout=60).status_code == 200

    wait_until(healthy_again, 120, "/health healthy again once storage answers")
