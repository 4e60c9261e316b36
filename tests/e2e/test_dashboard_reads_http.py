"""The dashboard's read route over HTTP on the local host (the real function app, Azurite, a real port):
``GET /dashboard/api/arm/subscriptions/...`` answers what the management API answers, behind the same
keys; writes are refused there (405) and reach nothing; raw hostile paths never leave the management API's
paths; a list's ``nextLink`` names the route and is followed, by ``requests`` and by the Azure Scheduler SDK
pointed at the route."""

from __future__ import annotations

import http.client
import json
from datetime import UTC, datetime, timedelta

import pytest
import requests

from scheduler_core.dashboard import CONTENT_SECURITY_POLICY
from tests.e2e.conftest import API_VERSION, Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

SUB, GROUP = "sub-reads", "rg"
JC = f"subscriptions/{SUB}/resourceGroups/{GROUP}/providers/Microsoft.Scheduler/jobCollections/jc"
READS = "/dashboard/api/arm/"
JOB = {
    "properties": {
        # A month ahead (a job may start at most 18 months ahead): nothing runs during the test.
        "startTime": (datetime.now(UTC) + timedelta(days=30)).strftime("%Y-%m-%dT00:00:00Z"),
        "action": {"type": "Http", "request": {"uri": "http://127.0.0.1:9/hook", "method": "GET"}},
        "recurrence": {"frequency": "Day"},
    }
}


@pytest.fixture
def jobs(api: Api) -> Api:
    """A collection ``jc`` with jobs ``a`` and ``b``."""
    assert api.call("PUT", JC, {"location": "westeurope", "properties": {"sku": {"name": "Standard"}}}).ok
    for name in ("a", "b"):
        assert api.call("PUT", f"{JC}/jobs/{name}", JOB).ok
    return api


def read(api: Api, path: str, key: str | None = "", method: str = "GET", **query: str) -> requests.Response:
    headers = {"Authorization": f"Bearer {key if key else api.key}"} if key is not None else {}
    params = {"api-version": API_VERSION, **query}
    return requests.request(method, f"{api.base_url}{READS}{path}", params=params, headers=headers, timeout=30)


def raw(api: Api, method: str, target: str) -> tuple[int, dict[str, str], bytes]:
    """``method target`` with the target sent exactly as written (no client removes its dot segments)."""
    host, port = api.base_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request(method, target, headers={"Authorization": f"Bearer {api.key}"})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def arm_error(response: requests.Response, status: int) -> dict[str, str]:
    assert response.status_code == status, response.text
    error: dict[str, str] = response.json()["error"]
    assert set(error) == {"code", "message"}
    return error


@pytest.mark.parametrize("path", [f"{JC}/jobs", f"{JC}/jobs/a", f"{JC}/jobs/a/history", JC])
def test_a_read_is_the_management_apis_answer(jobs: Api, path: str) -> None:
    mine = read(jobs, path)
    theirs = jobs.call("GET", path)
    assert mine.status_code == theirs.status_code == 200
    assert mine.json() == theirs.json()
    assert mine.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert mine.headers["Cache-Control"] == "no-store"
    assert mine.headers["X-Content-Type-Options"] == "nosniff"
    head = read(jobs, path, method="HEAD")
    assert head.status_code == 200
    assert head.content == b""


def test_a_read_needs_a_valid_credential(jobs: Api) -> None:
    missing = read(jobs, f"{JC}/jobs", key=None)
    assert "authentication required" in arm_error(missing, 401)["message"]
    assert missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert "not valid" in arm_error(read(jobs, f"{JC}/jobs", key="sks_wrong"), 401)["message"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("PUT", f"{JC}/jobs/c", JOB),
        ("PATCH", f"{JC}/jobs/a", {"properties": {"state": "Disabled"}}),
        ("POST", f"{JC}/jobs/a/run", None),
        ("DELETE", f"{JC}/jobs/b", None),
        ("DELETE", JC, None),
    ],
)
def test_writes_are_refused_and_change_nothing(jobs: Api, method: str, path: str, body: object) -> None:
    response = requests.request(
        method,
        f"{jobs.base_url}{READS}{path}",
        params={"api-version": API_VERSION},
        headers={"Authorization": f"Bearer {jobs.key}"},
        json=body,
        timeout=30,
    )
    assert method in arm_error(response, 405)["message"]
    assert response.headers["Allow"] == "GET, HEAD"
    listed = jobs.call("GET", f"{JC}/jobs").json()["value"]
    assert [(job["name"], job["properties"]["state"]) for job in listed] == [("jc/a", "Enabled"), ("jc/b", "Enabled")]
    assert jobs.call("GET", f"{JC}/jobs/a/history").json()["value"] == []


@pytest.mark.parametrize(
    "target",
    [
        "/dashboard/api/arm/../../health",
        "/dashboard/api/arm/%2e%2e/%2e%2e/health",
        f"/dashboard/api/arm/subscriptions/{SUB}/../../../health",
        f"/dashboard/api/arm/subscriptions%2F{SUB}/providers/Microsoft.Scheduler/jobCollections",
        f"/dashboard/api%2Farm/subscriptions/{SUB}/providers/Microsoft.Scheduler/jobCollections",
        "/dashboard/api/arm/openapi/microsoft-scheduler-2016-03-01.json",
        f"/dashboard/api/arm/{JC}/jobs/a%2Frun",
        f"/dashboard/api/arm/{JC}/jobs/%2e%2e",
        "/dashboard/api/arm/",
    ],
)
def test_hostile_paths_stay_within_the_management_apis_paths(jobs: Api, target: str) -> None:
    status, headers, body = raw(jobs, "GET", f"{target}?api-version={API_VERSION}")
    assert status in (400, 404), body
    assert set(json.loads(body)["error"]) == {"code", "message"}
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY  # the dashboard's answer, no other
    assert b"swagger" not in body and b"tick_age_seconds" not in body


def test_next_link_names_the_read_route_and_is_followed(jobs: Api) -> None:
    first = read(jobs, f"{JC}/jobs", **{"$top": "1"})
    assert first.status_code == 200, first.text
    link = first.json()["nextLink"]
    assert link.startswith(f"{jobs.base_url}{READS}{JC}/jobs?")
    second = requests.get(link, headers={"Authorization": f"Bearer {jobs.key}"}, timeout=30)
    assert [job["name"] for job in first.json()["value"] + second.json()["value"]] == ["jc/a", "jc/b"]
    assert "nextLink" not in second.json()


def test_the_sdk_reads_through_the_route_and_pages_on(jobs: Api) -> None:
    client = Api(jobs.base_url + READS.rstrip("/"), jobs.key, jobs.settings).sdk(SUB)
    names = [job.name for job in client.jobs.list(GROUP, "jc", top=1)]  # one job per page: follows nextLink
    assert names == ["jc/a", "jc/b"]
    assert client.job_collections.get(GROUP, "jc").name == "jc"
