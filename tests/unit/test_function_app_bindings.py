"""The binding metadata of every function in function_app.py, so that a decorator typo fails CI."""

from __future__ import annotations

import json

import azure.functions as func
import pytest

from local_host.app_index import AppIndex
from local_host.routing import compile_route
from tests.conftest import ROOT

#: Route and method list of each HTTP function. No method list (the empty set): the host puts no method
#: constraint on the route, so every method reaches the function and gets an ARM answer. A list built from
#: azure-functions' HttpMethod would differ between SDK versions (2.3 added QUERY; Python 3.13 gets 2.x).
EVERY_METHOD: set[str] = set()
EXPECTED_HTTP = {
    "management_api": ("subscriptions/{*resource}", EVERY_METHOD),
    "openapi_document": ("openapi/{document}", EVERY_METHOD),
    "dashboard": ("dashboard/{*path}", EVERY_METHOD),
    "health": ("health", EVERY_METHOD),
    "home": ("{ignored:maxlength(0)?}", EVERY_METHOD),
}
EXPECTED_TIMERS = {
    "dispatch_tick": "%SCHEDULER_DISPATCH_SCHEDULE%",
    "cleanup": "%SCHEDULER_CLEANUP_SCHEDULE%",
}
EXPECTED_QUEUES = {
    "scan_shard": ("%SCHEDULER_SCAN_QUEUE%", "AzureWebJobsStorage"),
    "execute_occurrence": ("%SCHEDULER_EXECUTION_QUEUE%", "AzureWebJobsStorage"),
    "cleanup_collections": ("%SCHEDULER_CLEANUP_QUEUE%", "AzureWebJobsStorage"),
}


def test_http_functions(function_index: AppIndex) -> None:
    found = {f.name: (f.route, set(f.methods)) for f in function_index.http}
    assert found == EXPECTED_HTTP


def test_timer_functions(function_index: AppIndex) -> None:
    found = {t.name: t.schedule for t in function_index.timers}
    assert found == EXPECTED_TIMERS
    # The dispatch tick also runs when a host starts (restart catch-up; scans are idempotent); the daily
    # cleanup must not run on every start or scale-out.
    assert {t.name for t in function_index.timers if t.run_on_startup} == {"dispatch_tick"}


def test_queue_functions(function_index: AppIndex) -> None:
    found = {q.name: (q.queue_name, q.connection) for q in function_index.queues}
    assert found == EXPECTED_QUEUES


def test_every_arm_path_reaches_the_management_api() -> None:
    route = compile_route(EXPECTED_HTTP["management_api"][0], "api")
    for path in (
        "subscriptions/s/providers/Microsoft.Scheduler/jobCollections",
        "subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc/jobs/j/history",
        "SUBSCRIPTIONS/s/resourcegroups/rg/providers/microsoft.scheduler/jobcollections/jc",
    ):
        match = route.pattern.match(path)
        assert match is not None, path
        assert "subscriptions/" + match.group("resource") == "subscriptions/" + path.split("/", 1)[1]


def test_http_functions_are_anonymous_at_the_host_level(function_index: AppIndex) -> None:
    # The management API authenticates every request itself (API keys); the host's function keys are not
    # used, so that ARM clients can call the paths unchanged.
    import function_app

    assert function_app.app.auth_level == func.AuthLevel.ANONYMOUS


def test_management_api_function_answers_a_func_http_request(
    function_index: AppIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scheduler_core import auth, wiring

    key = auth.generate_key()
    monkeypatch.setenv("AzureWebJobsStorage", "UseDevelopmentStorage=true")
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key, ["allowed"]))
    wiring.reset()
    handler = next(f.handler for f in function_index.http if f.name == "management_api")
    path = "subscriptions/other/providers/Microsoft.Scheduler/jobCollections"
    request = func.HttpRequest(
        method="GET",
        url=f"http://localhost/{path}?api-version=2016-03-01",
        headers={"x-functions-key": key},
        params={"api-version": "2016-03-01"},
        route_params={"resource": path.split("/", 1)[1]},
        body=b"",
    )
    try:
        response = handler(request)
    finally:
        wiring.reset()
    assert response.status_code == 403  # the key is scoped to another subscription: no storage call made
    assert json.loads(response.get_body())["error"]["code"] == "AuthorizationFailed"
    assert response.headers["x-ms-request-id"]


def test_queue_functions_pass_the_message_body_to_their_trigger(
    function_index: AppIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    from azure.functions.queue import QueueMessage

    import function_app

    seen: list[tuple[str, bytes]] = []
    monkeypatch.setattr(function_app.triggers, "on_scan", lambda body: seen.append(("scan", body)))
    monkeypatch.setattr(function_app.triggers, "on_execution", lambda body: seen.append(("execution", body)))
    handlers = {q.name: q.handler for q in function_index.queues}
    handlers["scan_shard"](QueueMessage(id="1", body=b'{"shard": "0001"}', dequeue_count=1))
    handlers["execute_occurrence"](QueueMessage(id="2", body=b'{"v": 1}', dequeue_count=1))
    assert seen == [("scan", b'{"shard": "0001"}'), ("execution", b'{"v": 1}')]


def test_openapi_route_is_the_documented_one() -> None:
    from scheduler_core.api import openapi

    assert EXPECTED_HTTP["openapi_document"][0] == openapi.ROUTE_TEMPLATE
    route = compile_route(openapi.ROUTE_TEMPLATE, "doc")
    for name in openapi.DOCUMENT_NAMES:
        assert route.pattern.match(f"openapi/{name}")
        assert route.pattern.match(f"subscriptions/s/openapi/{name}") is None


def test_openapi_function_serves_microsofts_document_unchanged(function_index: AppIndex) -> None:
    handler = next(f.handler for f in function_index.http if f.name == "openapi_document")
    request = func.HttpRequest(
        method="GET",
        url="http://localhost/openapi/microsoft-scheduler-2016-03-01.json",
        headers={},
        body=b"",
        route_params={"document": "microsoft-scheduler-2016-03-01.json"},
    )
    response = handler(request)  # no API key: the document is public
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    shipped = ROOT / "scheduler_core/api/openapi/microsoft-scheduler-2016-03-01.json"
    assert response.get_body() == shipped.read_bytes()
    document = json.loads(response.get_body())
    assert document["swagger"] == "2.0"
    assert document["info"]["version"] == "2016-03-01"
    assert sum(len(operations) for operations in document["paths"].values()) == 15
    notice = (shipped.parent / "LICENSE").read_text()
    assert "Azure/azure-rest-api-specs" in notice
    assert "MIT License" in notice


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_openapi_function_refuses_writes_with_an_arm_error(function_index: AppIndex, method: str) -> None:
    handler = next(f.handler for f in function_index.http if f.name == "openapi_document")
    request = func.HttpRequest(
        method=method, url="http://localhost/openapi/microsoft-scheduler-2016-03-01.json", headers={}, body=b"{}"
    )
    response = handler(request)
    assert response.status_code == 405
    error = json.loads(response.get_body())["error"]
    assert error["code"] == "InvalidHttpVerb"
    assert method in error["message"]
    assert response.headers["Allow"] == "GET, HEAD"


@pytest.mark.parametrize("method", ["QUERY", "TRACE", "BREW"])
def test_a_method_no_sdk_enum_lists_gets_an_arm_405_from_both_functions(
    function_index: AppIndex, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    """With no method list every method reaches the functions; each answers one it does not serve with an
    ARM error body (not the host's bare 404 or 405)."""
    from scheduler_core import auth, wiring

    handlers = {f.name: f.handler for f in function_index.http}
    document = handlers["openapi_document"](
        func.HttpRequest(method=method, url="http://localhost/openapi/microsoft-scheduler-2016-03-01.json", body=b"")
    )
    assert document.status_code == 405
    assert json.loads(document.get_body())["error"]["code"] == "InvalidHttpVerb"

    key = auth.generate_key()
    monkeypatch.setenv("AzureWebJobsStorage", "UseDevelopmentStorage=true")
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key, ["s"]))
    wiring.reset()
    path = "subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"
    try:
        response = handlers["management_api"](
            func.HttpRequest(
                method=method,
                url=f"http://localhost/{path}?api-version=2016-03-01",
                headers={"x-functions-key": key},
                params={"api-version": "2016-03-01"},
                route_params={"resource": path.split("/", 1)[1]},
                body=b"",
            )
        )
    finally:
        wiring.reset()
    assert response.status_code == 405
    error = json.loads(response.get_body())["error"]
    assert error["code"] == "InvalidHttpVerb"
    assert method in error["message"]


def test_the_home_route_is_the_documented_one_and_owns_the_root_alone() -> None:
    from scheduler_core import home

    assert EXPECTED_HTTP["home"][0] == home.ROUTE
    route = compile_route(home.ROUTE, "home")
    assert route.pattern.match("") is not None
    for path in ("x", "dashboard", "health", "subscriptions", "openapi"):
        assert route.pattern.match(path) is None, path


def test_home_function_leads_to_the_dashboard(function_index: AppIndex) -> None:
    handler = next(f.handler for f in function_index.http if f.name == "home")
    for method in ("GET", "HEAD"):
        response = handler(func.HttpRequest(method=method, url="http://localhost/", body=b""))
        assert response.status_code == 302
        assert response.headers["Location"] == "/dashboard/"
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        assert response.headers["Cache-Control"] == "no-store"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        page = response.get_body().decode()
        for link in ('href="/dashboard/"', 'href="/health"', 'href="/openapi/microsoft-scheduler-2016-03-01.json"'):
            assert link in page
    refused = handler(func.HttpRequest(method="POST", url="http://localhost/", body=b"{}"))
    assert refused.status_code == 405
    assert json.loads(refused.get_body())["error"]["code"] == "InvalidHttpVerb"
    assert refused.headers["Allow"] == "GET, HEAD"
