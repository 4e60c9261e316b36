"""Fixtures of the policy tests: a deployment on the memory adapter in simulated time, and the local host's API
with a Standard collection for the tests of hostile inputs over HTTP."""

from __future__ import annotations

import pytest

from scheduler_core.settings import Settings
from tests.e2e.conftest import Api
from tests.e2e.test_attack_preview import JC, call
from tests.support.harness import Deployment


@pytest.fixture
def deployment(memory_env: Settings) -> Deployment:
    """The deployment of the decision tests (:class:`tests.support.harness.Deployment`)."""
    return Deployment.on_memory(memory_env)


@pytest.fixture
def collection(api: Api) -> Api:
    created = call(api, "PUT", JC, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}, "2016-03-01")
    assert created.status_code == 201, created.text
    return api
