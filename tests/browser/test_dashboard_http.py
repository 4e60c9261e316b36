"""The dashboard's routes over HTTP on the local host (no browser): the page and its assets with a strict
Content-Security-Policy, nothing outside the built assets, ARM errors for what it does not serve, and the
read-only job API behind the management API's key check (subscription scope included) that never returns a
secret."""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import requests

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.dashboard import CONTENT_SECURITY_POLICY, assets
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.browser.conftest import COLLECTION, GROUP, SUBSCRIPTION
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
OTHER_SUBSCRIPTION = "sub-other"
SECRET = "s3cr3t-password-never-returned"
#: A day a month ahead, at midnight UTC (a job may start at most 18 months ahead).
START = (datetime.now(UTC) + timedelta(days=30)).replace(hour=0, minute=0, second=0, microsecond=0)
JC = f"subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}/providers/Microsoft.Scheduler/jobCollections/{COLLECTION}"


@pytest.fixture
def web(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Api, str]]:
    """The function app's HTTP routes; an API key for every subscription, and one scoped to another."""
    import function_app

    key, scoped = auth.generate_key(), auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", f"{auth.hash_entry(key)};{auth.hash_entry(scoped, [OTHER_SUBSCRIPTION])}")
    wiring.reset()
    provision(storage_env)
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
        yield Api(host.base_url, key, storage_env), scoped


def get(api: Api, path: str, **kw: Any) -> requests.Response:
    return requests.get(f"{api.base_url}{path}", timeout=10, **kw)


def raw_get(api: Api, path: str) -> tuple[int, dict[str, str], bytes]:
    """GET with the path sent exactly as written (no client normalises its dot segments)."""
    host, port = api.base_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def assert_secured(response: requests.Response) -> None:
    assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert "Set-Cookie" not in response.headers


def assert_arm_error(response: requests.Response, status: int, *words: str) -> dict[str, str]:
    assert response.status_code == status, response.text
    error: dict[str, str] = response.json()["error"]
    assert set(error) == {"code", "message"}
    for word in words:
        assert word in error["message"], error
    assert_secured(response)
    return error


# --------------------------------------------------------------------------------------------- the page


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.script_text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        if self.tags and self.tags[-1][0] == "script":
            self.script_text += data.strip()


def test_the_csp_is_strict() -> None:
    directives = dict(part.strip().split(" ", 1) for part in CONTENT_SECURITY_POLICY.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["connect-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["require-trusted-types-for"] == "'script'"
    assert not re.search(r"unsafe-|https?:|\*|data:", CONTENT_SECURITY_POLICY)


@pytest.mark.parametrize("path", ["/dashboard", "/dashboard/", "/dashboard/index.html", "/DASHBOARD"])
def test_the_page_is_served_with_a_strict_csp(web: tuple[Api, str], path: str) -> None:
    api, _ = web
    response = get(api, path)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert_secured(response)
    assert response.content == assets()["index.html"]
    page = _Tags()
    page.feed(response.text)
    scripts = [attrs for tag, attrs in page.tags if tag == "script"]
    assert scripts == [{"type": "module", "src": "/dashboard/assets/app.js"}]
    assert page.script_text == ""  # no inline script
    assert not [
        tag for tag, attrs in page.tags if tag == "style" or "style" in attrs or any(a.startswith("on") for a in attrs)
    ]
    links = [attrs.get("href") or attrs.get("src") for tag, attrs in page.tags if tag in ("link", "script", "img")]
    assert links and all(str(link).startswith("/dashboard/assets/") for link in links)  # nothing from a CDN
    assert ("html", {"lang": "en"}) in page.tags


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("app.js", "text/javascript; charset=utf-8"),
        ("app.css", "text/css; charset=utf-8"),
        ("icon.svg", "image/svg+xml"),
    ],
)
def test_assets_are_served_with_their_type_and_etag(web: tuple[Api, str], name: str, content_type: str) -> None:
    api, _ = web
    response = get(api, f"/dashboard/assets/{name}")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == content_type
    assert response.content == (ROOT / "scheduler_core" / "dashboard" / "static" / name).read_bytes()
    assert_secured(response)
    again = get(api, f"/dashboard/assets/{name}", headers={"If-None-Match": response.headers["ETag"]})
    assert again.status_code == 304
    assert again.content == b""


def test_the_bundle_loads_nothing_from_elsewhere() -> None:
    bundle = assets()["app.js"].decode()
    assert "Chart.js v4" in bundle  # the chart library is inside, with its licence
    for pattern in (
        r"https?://(?!www\.w3\.org)[a-z0-9.-]+\.[a-z]{2,}/[^\s\"']*\.(?:js|css)",
        r"\.innerHTML\s*=",
        r"\beval\(",
    ):
        assert not re.search(pattern, bundle), pattern


@pytest.mark.parametrize(
    "path",
    [
        "/dashboard/assets/nope.js",
        "/dashboard/assets/../../function_app.py",
        "/dashboard/assets/%2e%2e/__init__.py",
        "/dashboard/assets/..%2F__init__.py",
        "/dashboard/assets/static/app.js",
        "/dashboard/assets/__init__.py",
        "/dashboard/static/app.js",
        "/dashboard/elsewhere",
    ],
)
def test_nothing_but_the_built_assets_is_served(web: tuple[Api, str], path: str) -> None:
    api, _ = web
    status, headers, body = raw_get(api, path)
    assert status == 404, body
    assert b"import" not in body and b"def " not in body
    if headers.get("Content-Security-Policy"):  # the dashboard's answer (not the host's, for a path elsewhere)
        assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
        assert set(json.loads(body)["error"]) == {"code", "message"}


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_writes_get_an_arm_405(web: tuple[Api, str], method: str) -> None:
    api, _ = web
    response = requests.request(method, f"{api.base_url}/dashboard/", timeout=10)
    assert_arm_error(response, 405, method)
    assert response.headers["Allow"] == "GET, HEAD"


# ------------------------------------------------------------------------------------------ the job API


def put(api: Api, path: str, body: dict[str, Any]) -> None:
    response = api.call("PUT", path, body)
    assert response.status_code in (200, 201), response.text


def job_api(api: Api, job: str, key: str | None = None, **query: str) -> requests.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return get(api, f"/dashboard/api/job/{JC}/jobs/{job}", headers=headers, params=query)


@pytest.fixture
def jobs(web: tuple[Api, str]) -> tuple[Api, str]:
    api, scoped = web
    put(api, JC, {"location": "westeurope", "properties": {"sku": {"name": "Standard"}}})
    start = START
    request = {"uri": "https://example.invalid/hook", "method": "POST"}
    put(
        api,
        f"{JC}/jobs/berlin",
        {
            "properties": {
                "startTime": format_instant(start),
                "action": {
                    "type": "Https",
                    "request": {**request, "authentication": {"type": "Basic", "username": "u", "password": SECRET}},
                    "errorAction": {
                        "type": "StorageQueue",
                        "queueMessage": {
                            "storageAccount": "acct",
                            "queueName": "errors",
                            "sasToken": "sv=2020-01-01&sig=" + SECRET,
                            "message": "failed",
                        },
                    },
                },
                "recurrence": {
                    "frequency": "Day",
                    "interval": 1,
                    "schedule": {"hours": [12], "minutes": [30]},
                    "timeZone": "W. Europe Standard Time",
                },
            }
        },
    )
    put(
        api,
        f"{JC}/jobs/plain",
        {
            "properties": {
                "startTime": format_instant(start),
                "action": {"type": "Https", "request": request},
                "state": "Disabled",
            }
        },
    )
    return api, scoped


def test_the_job_api_lists_occurrences_in_utc_and_in_the_zone(jobs: tuple[Api, str]) -> None:
    api, _ = jobs
    response = job_api(api, "berlin", api.key, count="12")
    assert response.status_code == 200, response.text
    assert response.headers["Cache-Control"] == "no-store"
    assert_secured(response)
    data = response.json()
    assert data["timeZone"] == {"name": "W. Europe Standard Time", "iana": "Europe/Berlin"}
    assert data["state"] == "Enabled"
    assert len(data["occurrences"]) == 12
    berlin = ZoneInfo("Europe/Berlin")
    # Every day at 12:30 in Berlin (noon: never skipped or repeated by a clock change), from the start day on.
    days = [START.date() + timedelta(days=n) for n in range(12)]
    expected = [datetime(d.year, d.month, d.day, 12, 30, tzinfo=berlin) for d in days]
    assert [o["utc"] for o in data["occurrences"]] == [format_instant(e.astimezone(UTC)) for e in expected]
    assert [o["local"] for o in data["occurrences"]] == [e.isoformat() for e in expected]
    read = api.call("GET", f"{JC}/jobs/berlin").json()
    assert data["occurrences"][0]["utc"] == read["properties"]["status"]["nextExecutionTime"]
    assert [o["utc"] for o in data["occurrences"]] == sorted(o["utc"] for o in data["occurrences"])


def test_the_job_api_says_which_write_only_fields_are_set_never_their_values(jobs: tuple[Api, str]) -> None:
    api, _ = jobs
    response = job_api(api, "berlin", api.key)
    assert SECRET.encode() not in response.content
    assert response.json()["writeOnly"] == [
        {"path": "action.request.authentication.password", "set": True, "meaning": "set"},
        {"path": "action.errorAction.queueMessage.sasToken", "set": True, "meaning": "set"},
    ]
    plain = job_api(api, "plain", api.key).json()
    assert plain["writeOnly"] == []
    assert plain["timeZone"] is None
    assert plain["state"] == "Disabled"  # a disabled job still shows when its schedule would run
    assert [o["utc"] for o in plain["occurrences"]] == [format_instant(START)]  # runs once
    assert plain["occurrences"][0]["local"] is None


def test_the_job_api_needs_the_management_api_key(jobs: tuple[Api, str]) -> None:
    api, scoped = jobs
    assert_arm_error(job_api(api, "berlin"), 401, "authentication required")
    assert_arm_error(job_api(api, "berlin", "sks_wrong"), 401, "not valid")
    assert_arm_error(job_api(api, "berlin", scoped), 403, SUBSCRIPTION)
    # The scoped key gets 403 for a job that does not exist too: it learns nothing about the subscription.
    assert_arm_error(job_api(api, "missing", scoped), 403)
    assert_arm_error(job_api(api, "missing", api.key), 404)
    x_functions_key = get(api, f"/dashboard/api/job/{JC}/jobs/berlin", headers={"x-functions-key": api.key})
    assert x_functions_key.status_code == 200


@pytest.mark.parametrize("count", ["0", "51", "-1", "ten", "１"])
def test_the_job_api_refuses_a_bad_count(jobs: tuple[Api, str], count: str) -> None:
    api, _ = jobs
    error = assert_arm_error(job_api(api, "berlin", api.key, count=count), 400, "count")
    assert "between 1 and 50" in error["message"]


@pytest.mark.parametrize(
    "path",
    [
        f"/dashboard/api/job/{JC}",
        f"/dashboard/api/job/{JC}/jobs",
        f"/dashboard/api/job/{JC}/jobs/berlin/history",
        "/dashboard/api/job/",
    ],
)
def test_the_job_api_answers_only_for_a_job(jobs: tuple[Api, str], path: str) -> None:
    api, _ = jobs
    response = get(api, path, headers={"Authorization": f"Bearer {api.key}"})
    assert response.status_code in (400, 404), response.text
    assert_arm_error(response, response.status_code)


def test_the_job_api_applies_the_name_rule(jobs: tuple[Api, str]) -> None:
    api, _ = jobs
    response = get(api, f"/dashboard/api/job/{JC}/jobs/a%25b", headers={"Authorization": f"Bearer {api.key}"})
    assert_arm_error(response, 400, "jobName")
