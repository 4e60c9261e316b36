"""The function app on the local host over Azurite, driven through its management API with api-version
2026-12-01-preview: :func:`host` starts it (every trigger, an identity endpoint as App Service's, a Standard
collection ``ops-west``), :class:`Host` writes jobs and reads their history."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
import requests

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.e2e.conftest import ROOT
from tests.support.identity_endpoint import IdentityEndpoint, identity_endpoint

PREVIEW = "2026-12-01-preview"
COLLECTION = "ops-west"
JC = f"subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/{COLLECTION}"
AUDIENCE = "https://management.azure.com/"


@dataclass
class Host:
    base_url: str
    key: str
    identity: IdentityEndpoint

    def call(self, method: str, path: str, body: Any = None) -> requests.Response:
        url = f"{self.base_url}/{path}?api-version={PREVIEW}"
        headers = {"Authorization": f"Bearer {self.key}"}
        return requests.request(method, url, json=body, headers=headers, timeout=30)

    def put_job(self, name: str, action: dict[str, Any], due: datetime, **properties: Any) -> dict[str, Any]:
        """Create the one-shot job ``name`` due at ``due`` (``properties``: more of its properties)."""
        body = {"properties": {"startTime": format_instant(due), "action": action, **properties}}
        answer = self.call("PUT", f"{JC}/jobs/{name}", body)
        assert answer.status_code == 201, answer.text
        body: dict[str, Any] = answer.json()
        return body

    def history(self, name: str, count: int, timeout: float = 15.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        rows: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            rows = self.call("GET", f"{JC}/jobs/{name}/history").json()["value"]
            if len(rows) >= count:
                return rows
            time.sleep(0.2)
        raise AssertionError(f"{name}: {len(rows)} history rows, expected {count}")


@pytest.fixture(name="host")
def running_host(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Host]:
    """The app on the local host (a module imports this fixture to use it as ``host``)."""
    import function_app

    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    monkeypatch.setenv("SCHEDULER_IDENTITY_ALLOWED_HOSTS", "127.0.0.1")
    for name in ("AZURE_CLIENT_ID", "MSI_ENDPOINT", "MSI_SECRET", "IDENTITY_SERVER_THUMBPRINT", "IMDS_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    with identity_endpoint() as identity:
        for name, value in identity.env.items():
            monkeypatch.setenv(name, value)
        wiring.reset()
        provision(storage_env)
        port = free_port()
        monkeypatch.setenv("WEBSITE_HOSTNAME", f"localhost:{port}")  # as Core Tools sets it
        with LocalHost(function_app.app, ROOT / "host.json", port=port) as local:
            running = Host(local.base_url, key, identity)
            created = running.call("PUT", JC, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
            assert created.status_code == 201, created.text
            yield running
    wiring.reset()
