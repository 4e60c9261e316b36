"""Fixtures for the end-to-end tests: the real function app on the local host, and clients for it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from azure.core.pipeline import PipelineRequest
from azure.core.pipeline.policies import SansIOHTTPPolicy
from azure.mgmt.scheduler import SchedulerManagementClient

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.settings import Settings
from tests.support.harness import Deployment, near_now
from tests.support.http_target import HttpTarget, http_target

ROOT = Path(__file__).resolve().parents[2]
API_VERSION = "2016-03-01"


class ApiKeyPolicy(SansIOHTTPPolicy):  # type: ignore[type-arg]
    """Sends the API key as a bearer token (the SDK's own bearer policy refuses plain http)."""

    def __init__(self, key: str) -> None:
        self.key = key

    def on_request(self, request: PipelineRequest) -> None:  # type: ignore[type-arg]
        request.http_request.headers["Authorization"] = f"Bearer {self.key}"


@dataclass
class Api:
    """The management API of a running local host, with a valid key."""

    base_url: str
    key: str
    settings: Settings
    host: LocalHost | None = None  # the serving host, for tests that wait on its connections

    def url(self, path: str, **query: str) -> str:
        params = "&".join(f"{k}={v}" for k, v in {"api-version": API_VERSION, **query}.items())
        return f"{self.base_url}/{path.lstrip('/')}?{params}"

    def call(self, method: str, path: str, body: Any = None, key: str | None = None, **kw: Any) -> requests.Response:
        headers = {"Authorization": f"Bearer {key or self.key}", **kw.pop("headers", {})}
        url = path if path.startswith("http") else self.url(path, **kw.pop("query", {}))
        if isinstance(body, (dict, list)):
            return requests.request(method, url, json=body, headers=headers, timeout=30, **kw)
        return requests.request(method, url, data=body, headers=headers, timeout=30, **kw)

    def sdk(self, subscription: str = "sub1") -> SchedulerManagementClient:
        return SchedulerManagementClient(
            object(),
            subscription,
            base_url=self.base_url,
            authentication_policy=ApiKeyPolicy(self.key),
            polling_interval=0,
            retry_total=0,
        )


@pytest.fixture
def api(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    import function_app

    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    provision(storage_env)
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
        yield Api(host.base_url, key, storage_env, host)


def give_back_slots_ahead() -> None:
    """Give back now the job slots this process's host reserved ahead (:mod:`scheduler_core.job_slots`), which
    a timer gives back 2 s after the create that took them: a write of a collection row that no request
    made, between two snapshots of the tables otherwise. Snapshots that compare rows call this first."""
    wiring.services().service.slots.give_back_ahead()


@pytest.fixture
def target() -> Iterator[HttpTarget]:
    """A real HTTP server on 127.0.0.1 that records what it receives."""
    with http_target() as server:
        yield server


@pytest.fixture
def pipeline(request: pytest.FixtureRequest) -> Deployment:
    """The real services in simulated time (:func:`tests.support.harness.near_now`), starting just past a whole
    minute, over Azurite, or over the memory adapter for tests marked ``pytest.mark.backend("memory")`` (the
    closest marker wins)."""
    marker = request.node.get_closest_marker("backend")
    backend = marker.args[0] if marker is not None else "azurite"
    settings: Settings = request.getfixturevalue("memory_env" if backend == "memory" else "storage_env")
    return near_now(settings, azurite=backend != "memory")
