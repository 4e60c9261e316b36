"""What every HTTP answer of the function app promises, whatever a client sends: the real app served by the
local host over Azurite, driven over HTTP.

- A JSON body nested deeper than the API reads (``MAX_DEPTH``), or holding an integer longer than Python
  converts, is a 400 ARM error naming the rule on every write route, and nothing stored changes (it was a
  500: ``RecursionError``, ``ValueError``).
- Every answer, of every route and status (the management API, ``/health``, ``/openapi``, ``/dashboard``;
  errors, 401, 403, 404, 405; the local host's own refusals) carries ``X-Content-Type-Options: nosniff``
  and ``Cache-Control: no-store``, except that the public documents and the dashboard's page and assets
  keep their own caching when they succeed.
- Every 405 carries ``Allow`` with the methods of the route (RFC 9110 §15.5.6), for a method no route
  answers (``TRACE``, ``FOO``) as for a known one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.definitions._json import MAX_DEPTH
from scheduler_core.settings import Settings
from tests.e2e.conftest import Api
from tests.support.jobs import every, http_action, job_body

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
CLASSIC = "2016-03-01"
PREVIEW = "2026-12-01-preview"
SUB = "sub-hostile"
OTHER_SUB = "sub-elsewhere"
JC = f"subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"
JOB = job_body(
    (datetime.now(UTC) + timedelta(days=30)).strftime("%Y-%m-%dT06:00:00Z"),
    http_action("http://example.org/x", method="GET", body=None),
    every("Day"),
    state="Disabled",
)


@pytest.fixture
def app(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Api, str]]:
    """The function app's HTTP routes on the local host; a key for every subscription, one scoped to another."""
    import function_app

    key, scoped = auth.generate_key(), auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", f"{auth.hash_entry(key)};{auth.hash_entry(scoped, [OTHER_SUB])}")
    wiring.reset()
    provision(storage_env)
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
        yield Api(host.base_url, key, storage_env), scoped
    wiring.reset()


def call(
    api: Api, method: str, path: str, body: Any = None, version: str = CLASSIC, key: str | None = None
) -> requests.Response:
    """``method`` on ``path`` with ``api-version`` ``version``; ``body`` as JSON, or as given when bytes."""
    headers = {"Authorization": f"Bearer {key or api.key}"}
    url = f"{api.base_url}/{path}?api-version={version}"
    if isinstance(body, bytes):
        headers["Content-Type"] = "application/json"
        return requests.request(method, url, data=body, headers=headers, timeout=30)
    return requests.request(method, url, json=body, headers=headers, timeout=30)


def arm_error(response: requests.Response, status: int) -> dict[str, str]:
    assert response.status_code == status, (response.status_code, response.text[:300])
    payload = response.json()
    assert set(payload) == {"error"} and set(payload["error"]) == {"code", "message"}, payload
    return dict(payload["error"])


def stored(api: Api) -> dict[str, Any]:
    """Everything a write to the collection could change: the collection, its jobs, its calendars."""
    collection = call(api, "GET", JC)
    jobs = call(api, "GET", f"{JC}/jobs", version=PREVIEW)
    calendars = call(api, "GET", f"{JC}/calendars", version=PREVIEW)
    for answer in (collection, jobs, calendars):
        assert answer.status_code == 200, answer.text
    return {
        "collection": collection.json(),
        "etag": collection.headers["ETag"],
        "jobs": jobs.json(),
        "calendars": calendars.json(),
    }


def nested(levels: int) -> bytes:
    """A JSON object whose ``properties`` holds arrays nested so that the whole nests ``levels`` deep."""
    inner = levels - 2
    return b'{"properties": {"x": ' + b"[" * inner + b"]" * inner + b"}}"


#: Every route that reads a body: (method, path, api-version).
WRITES = [
    ("PUT", JC, CLASSIC),
    ("PATCH", JC, CLASSIC),
    ("PUT", f"{JC}/jobs/new", CLASSIC),
    ("PUT", f"{JC}/jobs/j", CLASSIC),
    ("PATCH", f"{JC}/jobs/j", CLASSIC),
    ("PUT", f"{JC}/jobs/j", PREVIEW),
    ("POST", f"{JC}/jobs/j/backfill", PREVIEW),
    ("PUT", f"{JC}/calendars/holidays", PREVIEW),
    ("PUT", f"{JC}/calendars/new", PREVIEW),
]


def test_a_deeply_nested_body_is_a_400_naming_the_rule_on_every_write_route(app: tuple[Api, str]) -> None:
    api, _ = app
    assert call(api, "PUT", JC, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}).status_code == 201
    assert call(api, "PUT", f"{JC}/jobs/j", JOB).status_code == 201
    calendar = {"properties": {"dates": ["2031-12-25"]}}
    assert call(api, "PUT", f"{JC}/calendars/holidays", calendar, version=PREVIEW).status_code == 201
    before = stored(api)
    rule = f"the request body must not nest deeper than {MAX_DEPTH} levels (arrays and objects)"
    bodies = {
        "1,000 levels": nested(1000),
        "arrays only, 30,000 levels": b"[" * 30_000 + b"]" * 30_000,
        "one level too deep": nested(MAX_DEPTH + 1),
        "unbalanced, 5,000 open": b'{"properties": ' + b"[" * 5000,
    }
    wrong = []
    for method, path, version in WRITES:
        for name, body in bodies.items():
            answer = call(api, method, path, body, version=version)
            if answer.status_code != 400 or answer.json().get("error", {}).get("message") != rule:
                wrong.append(f"{method} {path} ({version}), {name}: {answer.status_code} {answer.text[:200]}")
            else:
                assert arm_error(answer, 400)["code"] == "BadRequest"
        # At the limit the body is decoded, and refused by the definition's own rules, not by its depth.
        at_limit = call(api, method, path, nested(MAX_DEPTH), version=version)
        if at_limit.status_code != 400 or "nest" in at_limit.text:
            wrong.append(
                f"{method} {path} ({version}), {MAX_DEPTH} levels: {at_limit.status_code} {at_limit.text[:200]}"
            )
    assert not wrong, "\n".join(wrong)
    assert stored(api) == before


def test_an_integer_longer_than_python_converts_is_a_400_not_a_500(app: tuple[Api, str]) -> None:
    api, _ = app
    assert call(api, "PUT", JC, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}).status_code == 201
    before = stored(api)
    body = b'{"properties": {"recurrence": {"frequency": "Day", "interval": ' + b"7" * 5000 + b"}}}"
    for method, path in (("PUT", f"{JC}/jobs/j"), ("PATCH", JC)):
        error = arm_error(call(api, method, path, body), 400)
        assert error["message"] == "the request body is not valid JSON (a number has too many digits)"
    assert stored(api) == before


# ------------------------------------------------------------------------------------ headers of every answer


def assert_hardened(response: requests.Response, cache: str = "no-store") -> None:
    where = f"{response.request.method} {response.url} -> {response.status_code}"
    assert response.headers.get("X-Content-Type-Options") == "nosniff", where
    assert response.headers.get("Cache-Control") == cache, where


def test_every_answer_of_every_route_carries_nosniff_and_no_store(app: tuple[Api, str]) -> None:
    api, scoped = app
    base = api.base_url
    document = "openapi/microsoft-scheduler-2016-03-01.json"

    # The management API: success, validation error, 401 (the local host's preflight stands in for the
    # app's), 403, 404, 405.
    created = call(api, "PUT", JC, {"location": "westus", "properties": {"sku": {"name": "Standard"}}})
    assert created.status_code == 201
    answers = [
        created,
        call(api, "GET", JC),
        call(api, "GET", f"subscriptions/{SUB}/providers/Microsoft.Scheduler/jobCollections"),
        call(api, "PUT", f"{JC}/jobs/bad", b"{not json"),
        requests.get(f"{base}/{JC}?api-version={CLASSIC}", timeout=30),
        call(api, "GET", JC, key="not-a-key"),
        call(api, "GET", JC, key=scoped),
        call(api, "GET", f"{JC}/jobs/missing"),
        call(api, "TRACE", JC),
        call(api, "GET", JC, version="1999-01-01"),
        # /health, /openapi errors, /dashboard errors and its API, the host's own 404.
        requests.get(f"{base}/health", timeout=30),
        requests.post(f"{base}/health", timeout=30),
        requests.get(f"{base}/openapi/missing.json", timeout=30),
        requests.put(f"{base}/{document}", timeout=30),
        requests.get(f"{base}/dashboard/nothing-here", timeout=30),
        requests.delete(f"{base}/dashboard/", timeout=30),
        requests.get(f"{base}/dashboard/api/job/{JC}/jobs/j", timeout=30),
        requests.get(
            f"{base}/dashboard/api/job/{JC}/jobs/missing", headers={"Authorization": f"Bearer {api.key}"}, timeout=30
        ),
        requests.get(
            f"{base}/dashboard/api/status/subscriptions/{SUB}/providers/Microsoft.Scheduler/jobCollections",
            headers={"Authorization": f"Bearer {api.key}"},
            timeout=30,
        ),
        requests.get(f"{base}/no-function-here", timeout=30),
    ]
    statuses = {answer.status_code for answer in answers}
    assert statuses >= {200, 201, 400, 401, 403, 404, 405}, statuses
    for answer in answers:
        assert_hardened(answer)

    # Successes that name their own caching keep it, with nosniff: the public documents, and the dashboard's
    # page and assets (no secret in them; revalidated by their ETag).
    assert_hardened(requests.get(f"{base}/{document}", timeout=30), cache="public, max-age=3600")
    page = requests.get(f"{base}/dashboard/", timeout=30)
    assert page.status_code == 200
    assert_hardened(page, cache="no-cache")
    assert page.headers["Content-Security-Policy"].startswith("default-src 'none'")
    script = requests.get(f"{base}/dashboard/assets/app.js", timeout=30)
    assert script.status_code == 200 and script.headers["Content-Type"].startswith("text/javascript")
    assert_hardened(script, cache="no-cache")
    revalidated = requests.get(
        f"{base}/dashboard/assets/app.js", headers={"If-None-Match": script.headers["ETag"]}, timeout=30
    )
    assert revalidated.status_code == 304
    assert_hardened(revalidated, cache="no-cache")
    # The dashboard's own headers stay on its errors too.
    refused = requests.delete(f"{base}/dashboard/", timeout=30)
    assert refused.headers["Content-Security-Policy"] == page.headers["Content-Security-Policy"]
    assert refused.headers["X-Frame-Options"] == "DENY"


# ------------------------------------------------------------------------------------------- 405 and Allow

#: Each kind of path of the management API, the api-version it needs, and the methods it answers.
ROUTES = {
    f"subscriptions/{SUB}/providers/Microsoft.Scheduler/jobCollections": (CLASSIC, "GET"),
    f"subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections": (CLASSIC, "GET"),
    JC: (CLASSIC, "DELETE, GET, PATCH, PUT"),
    f"{JC}/enable": (CLASSIC, "POST"),
    f"{JC}/disable": (CLASSIC, "POST"),
    f"{JC}/jobs": (CLASSIC, "GET"),
    f"{JC}/jobs/j": (CLASSIC, "DELETE, GET, PATCH, PUT"),
    f"{JC}/jobs/j/run": (CLASSIC, "POST"),
    f"{JC}/jobs/j/history": (CLASSIC, "GET"),
    f"{JC}/jobs/j/occurrences": (PREVIEW, "GET"),
    f"{JC}/jobs/j/backfill": (PREVIEW, "POST"),
    f"{JC}/calendars": (PREVIEW, "GET"),
    f"{JC}/calendars/c": (PREVIEW, "DELETE, GET, PUT"),
}


@pytest.mark.parametrize("method", ["TRACE", "FOO", "HEAD", "POST"])
def test_every_405_of_the_management_api_lists_the_routes_methods_in_allow(app: tuple[Api, str], method: str) -> None:
    api, _ = app
    wrong = []
    for path, (version, allowed) in ROUTES.items():
        if method in allowed.split(", "):
            continue
        answer = call(api, method, path, version=version)
        if answer.status_code != 405 or answer.headers.get("Allow") != allowed:
            wrong.append(f"{method} {path}: {answer.status_code} Allow={answer.headers.get('Allow')!r}")
            continue
        if method != "HEAD":  # a HEAD answer has no body
            error = arm_error(answer, 405)
            assert error["code"] == "InvalidHttpVerb" and method in error["message"], error
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("method", ["TRACE", "FOO", "DELETE"])
def test_every_405_of_the_read_only_routes_lists_get_and_head_in_allow(app: tuple[Api, str], method: str) -> None:
    api, _ = app
    for path in (
        "health",
        "openapi/microsoft-scheduler-2026-12-01-preview.json",
        "dashboard/",
        "dashboard/assets/app.js",
    ):
        answer = requests.request(method, f"{api.base_url}/{path}", timeout=30)
        assert answer.status_code == 405, (path, answer.text)
        assert answer.headers["Allow"] == "GET, HEAD", path
        assert json.loads(answer.content)["error"]["message"], path
