"""A hostile PFX over the management API: the function app on the local host, over Azurite, answers a job
whose ClientCertificate PFX asks for 2^31 - 1 iterations (about 150 s of CPU to open, before the rule) with
a 400 in milliseconds, stores nothing, and keeps the job a PATCH tried to change as it was."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.e2e.conftest import Api
from tests.support import hostile_pfx as forge

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

JC_PATH = "subscriptions/sub1/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc-pfx"
PASSWORD = "pfx-pass"
MOST = 2**31 - 1
AUTH = "properties.action.request.authentication.pfx"


def job(pfx: str) -> dict[str, Any]:
    start = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    authentication = {"type": "ClientCertificate", "pfx": pfx, "password": PASSWORD}
    return {
        "properties": {
            "startTime": start,
            "action": {
                "type": "Https",
                "request": {"uri": "https://example.org/hook", "method": "POST", "authentication": authentication},
            },
            "recurrence": {"frequency": "Hour", "interval": 1},
        }
    }


@pytest.fixture
def collection(api: Api) -> str:
    response = api.call("PUT", JC_PATH, {"location": "westus", "properties": {"sku": {"name": "standard"}}})
    assert response.status_code == 201, response.text
    return JC_PATH


@pytest.fixture(scope="module")
def real() -> bytes:
    return forge.real_pfx(PASSWORD)


def timed(api: Api, method: str, path: str, body: Any) -> tuple[Any, float, float]:
    """The response, the wall time and this process's CPU time (the local host runs in it)."""
    wall, cpu = time.monotonic(), time.process_time()
    response = api.call(method, path, body)
    return response, time.monotonic() - wall, time.process_time() - cpu


@pytest.mark.parametrize(
    ("rewrite", "rule"),
    [
        (lambda data: forge.with_mac_iterations(data, MOST), f"the MAC iteration count {MOST} exceeds 600000"),
        (
            lambda data: forge.with_key_hidden(data, PASSWORD, MOST),
            f"the private key encryption iteration count {MOST} exceeds 600000",
        ),
    ],
    ids=["mac", "key-hidden-in-the-encrypted-certificates"],
)
def test_a_hostile_pfx_is_a_400_in_milliseconds_and_nothing_is_stored(
    api: Api, collection: str, real: bytes, rewrite: Any, rule: str
) -> None:
    hostile = forge.b64(rewrite(real))
    response, wall, cpu = timed(api, "PUT", f"{collection}/jobs/hostile", job(hostile))
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "BadRequest"
    assert error["message"] == f"{AUTH}: is refused before it is opened: {rule}"
    assert PASSWORD not in response.text and hostile[:40] not in response.text
    assert wall < 2 and cpu < 0.5, (wall, cpu)
    assert api.call("GET", f"{collection}/jobs/hostile").status_code == 404


def test_a_patch_with_a_hostile_pfx_keeps_the_job_as_it_was(api: Api, collection: str, real: bytes) -> None:
    created = api.call("PUT", f"{collection}/jobs/kept", job(forge.b64(real)))
    assert created.status_code == 201, created.text
    before = api.call("GET", f"{collection}/jobs/kept").json()
    assert before["properties"]["action"]["request"]["authentication"]["certificateThumbprint"]
    hostile = forge.b64(forge.with_certificate_iterations(real, PASSWORD, MOST))
    patch = {"properties": {"action": {"request": {"authentication": {"pfx": hostile, "password": PASSWORD}}}}}
    response, wall, cpu = timed(api, "PATCH", f"{collection}/jobs/kept", patch)
    assert response.status_code == 400, response.text
    assert f"the content encryption iteration count {MOST} exceeds 600000" in response.json()["error"]["message"]
    assert wall < 2 and cpu < 0.5, (wall, cpu)
    assert api.call("GET", f"{collection}/jobs/kept").json() == before
