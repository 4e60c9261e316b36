"""Shared fixtures: one in-memory Azurite per test session, on free ports, started by the project's code."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_host.app_index import AppIndex, index_app
from local_host.azurite import Azurite
from scheduler_core import settings


@pytest.fixture(scope="session")
def function_index() -> AppIndex:
    """What function_app.py declares, indexed once (FunctionApp.get_functions keeps state)."""
    import function_app

    return index_app(function_app.app)


ROOT = Path(__file__).resolve().parents[1]


def sample_settings() -> dict[str, str]:
    """The values of local.settings.sample.json: what `make run` gives the app before its own changes."""
    values: dict[str, str] = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
    return values


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    """A private Azurite (in memory, free ports): never the user's own instance."""
    with Azurite() as instance:
        yield instance


@pytest.fixture
def storage_env(azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> Iterator[settings.Settings]:
    """Environment for one test: the session's Azurite and tables and queues of its own (unique names)."""
    from scheduler_core import context

    suffix = uuid.uuid4().hex[:8]
    for name, value in sample_settings().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AzureWebJobsStorage", azurite.connection_string)
    monkeypatch.setenv("SCHEDULER_TABLE_PREFIX", f"t{suffix}")
    monkeypatch.setenv("SCHEDULER_SCAN_QUEUE", f"scan-{suffix}")
    monkeypatch.setenv("SCHEDULER_EXECUTION_QUEUE", f"exec-{suffix}")
    context.reset()
    yield settings.load(os.environ)
    context.reset()


@pytest.fixture
def memory_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[settings.Settings]:
    """Settings for a deployment on the memory adapter (no Azurite): the sample settings; the connection
    string names nothing that is ever called (``context.build(..., storage=memory_storage(...))``)."""
    from scheduler_core import context

    for name, value in sample_settings().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AzureWebJobsStorage", "UseDevelopmentStorage=true")
    context.reset()
    yield settings.load(os.environ)
    context.reset()
