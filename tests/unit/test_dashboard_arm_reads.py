"""The dashboard's read route, ``GET /dashboard/api/arm/subscriptions/...``, in process on the memory adapter:
it hands a read to the management API's own handler, so the answer is the management API's (authentication,
roles, names, api-version, paging), it refuses every method but GET and HEAD before the API sees anything,
and a path that is not under ``subscriptions/`` is a 404. ``serve`` is called with what the host gives the
``dashboard`` function: the route value decoded once and the URL as the client sent it."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from scheduler_core import dashboard
from scheduler_core.api.handler import ApiServices, ManagementApi
from scheduler_core.api.messages import ApiRequest, ApiResponse
from scheduler_core.auth.keys import ApiKey
from scheduler_core.auth.roles import Role
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.support.harness import START, Deployment
from tests.support.jobs import http_action

KEY, READER, SCOPED = "contributor-key", "reader-key", "other-subscription-key"
VERSION = "2016-03-01"
ORIGIN = "http://127.0.0.1:7071"
JC = "subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc1"
ROUTE = "api/arm/"


def _key(secret: str, role: Role, subscriptions: frozenset[str] | None = None) -> ApiKey:
    return ApiKey(hashlib.sha256(secret.encode()).digest(), subscriptions, role)


@pytest.fixture
def api(memory_env: Settings) -> ManagementApi:
    """The management API over a memory deployment whose collection jc1 holds jobs a and b."""
    deployment = Deployment.on_memory(memory_env)
    keys = (
        _key(KEY, Role.CONTRIBUTOR),
        _key(READER, Role.READER),
        _key(SCOPED, Role.CONTRIBUTOR, frozenset({"other"})),
    )
    services = ApiServices(deployment.service, keys)
    management = ManagementApi(lambda: services)
    for name in ("a", "b"):
        body = {"properties": {"startTime": format_instant(START), "action": http_action("http://127.0.0.1:9/x")}}
        answer = direct(management, "PUT", f"{JC}/jobs/{name}", body=json.dumps(body).encode())
        assert answer.status in (200, 201), answer.body
    return management


def _query(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def direct(
    management: ManagementApi, method: str, path: str, key: str | None = KEY, body: bytes = b"", query: str = ""
) -> ApiResponse:
    """``method`` on the management API's own route (as function_app.management_api hands it over)."""
    url = f"{ORIGIN}/{path}?api-version={VERSION}{query}"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return management.handle(ApiRequest(method, url, ApiRequest.path_from_route(path), _query(url), headers, body))


def through(
    management: ManagementApi | None,
    method: str,
    route_path: str,
    key: str | None = KEY,
    query: str = f"?api-version={VERSION}",
    url_path: str | None = None,
    headers: dict[str, str] | None = None,
) -> ApiResponse:
    """``method`` on ``/dashboard/<route_path>``, as function_app.dashboard hands it to ``serve`` (``url_path``:
    the path as the client sent it, when it differs from the decoded route value)."""
    url = f"{ORIGIN}/dashboard/{url_path if url_path is not None else route_path}{query}"
    sent = dict(headers or {})
    if key:
        sent["Authorization"] = f"Bearer {key}"
    return dashboard.serve(
        method,
        route_path,
        sent,
        _query(url),
        None,
        body=b'{"properties": {}}' if method in ("PUT", "PATCH", "POST") else b"",
        url=url,
        management_api=(lambda: management) if management is not None else None,
    )


def body_of(response: ApiResponse) -> Any:
    return json.loads(response.body)


def assert_arm_error(response: ApiResponse, status: int, *words: str) -> dict[str, str]:
    assert response.status == status, response.body
    error: dict[str, str] = body_of(response)["error"]
    assert set(error) == {"code", "message"}
    for word in words:
        assert word in error["message"], error
    assert response.headers["Content-Security-Policy"] == dashboard.CONTENT_SECURITY_POLICY
    return error


@pytest.mark.parametrize(
    "path",
    [
        "subscriptions/sub1/providers/Microsoft.Scheduler/jobCollections",
        "subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections",
        JC,
        f"{JC}/jobs",
        f"{JC}/jobs/a",
        f"{JC}/jobs/a/history",
    ],
)
def test_a_read_answers_what_the_management_api_answers(api: ManagementApi, path: str) -> None:
    mine = through(api, "GET", ROUTE + path)
    theirs = direct(api, "GET", path)
    assert mine.status == theirs.status == 200
    assert body_of(mine) == body_of(theirs)
    assert mine.headers.get("ETag") == theirs.headers.get("ETag")
    # The management API's own request id (its log lines name it), and the dashboard's headers.
    assert mine.headers["x-ms-request-id"] and mine.headers["x-ms-correlation-request-id"]
    assert mine.headers["Content-Security-Policy"] == dashboard.CONTENT_SECURITY_POLICY


def test_head_is_answered_as_get(api: ManagementApi) -> None:
    head = through(api, "HEAD", f"{ROUTE}{JC}/jobs/a")
    assert head.status == 200
    assert body_of(head)["name"] == "jc1/a"  # the host sends no body for HEAD; the answer is GET's


def test_the_route_value_and_the_arm_keywords_are_matched_without_regard_to_case(api: ManagementApi) -> None:
    path = "SUBSCRIPTIONS/sub1/RESOURCEGROUPS/rg1/providers/microsoft.scheduler/jobcollections/jc1/jobs"
    response = through(api, "GET", "API/ARM/" + path)
    assert response.status == 200, response.body
    assert [job["name"] for job in body_of(response)["value"]] == ["jc1/a", "jc1/b"]


def test_a_read_needs_a_credential_and_the_role(api: ManagementApi) -> None:
    path = f"{ROUTE}{JC}/jobs/a"
    missing = through(api, "GET", path, key=None)
    assert_arm_error(missing, 401, "authentication required")
    assert missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert_arm_error(through(api, "GET", path, key="sks_wrong"), 401, "not valid")
    assert_arm_error(through(api, "GET", path, key=SCOPED), 403, "sub1")
    assert through(api, "GET", path, key=READER).status == 200  # a Reader reads
    functions_key = through(api, "GET", path, key=None, headers={"x-functions-key": KEY})
    assert functions_key.status == 200  # the header is passed on as the management API reads it


@pytest.mark.parametrize("method", ["PUT", "PATCH", "POST", "DELETE", "OPTIONS", "QUERY"])
def test_only_get_and_head_reach_the_api(api: ManagementApi, method: str) -> None:
    for path in (f"{JC}/jobs/c", f"{JC}/jobs/a", f"{JC}/jobs/a/run"):
        response = through(api, method, ROUTE + path)
        assert_arm_error(response, 405, method)
        assert response.headers["Allow"] == "GET, HEAD"
    listed = body_of(direct(api, "GET", f"{JC}/jobs"))["value"]
    assert [(job["name"], job["properties"]["state"]) for job in listed] == [("jc1/a", "Enabled"), ("jc1/b", "Enabled")]
    assert body_of(direct(api, "GET", f"{JC}/jobs/a/history"))["value"] == []  # nothing ran


@pytest.mark.parametrize(
    "route_path",
    [
        "api/arm",
        "api/arm/",
        "api/arm/health",
        "api/arm/subscription/sub1/providers/Microsoft.Scheduler/jobCollections",
        "api/arm/xsubscriptions/sub1/providers/Microsoft.Scheduler/jobCollections",
        "api/arm//subscriptions/sub1/providers/Microsoft.Scheduler/jobCollections",
        "api/arm/../subscriptions/sub1/providers/Microsoft.Scheduler/jobCollections",
        "api/arm/subscriptions%2Fsub1/providers/Microsoft.Scheduler/jobCollections",  # %2F stays encoded
        "api/arm/dashboard/api/arm/subscriptions/sub1/providers/Microsoft.Scheduler/jobCollections",
        "api/arm/openapi/microsoft-scheduler-2016-03-01.json",
        "api/armsubscriptions/sub1/providers/Microsoft.Scheduler/jobCollections",
    ],
)
def test_a_path_not_under_subscriptions_is_a_404(api: ManagementApi, route_path: str) -> None:
    for key in (KEY, None):  # with or without a credential: the route names nothing there
        assert_arm_error(through(api, "GET", route_path, key=key), 404)


def test_without_the_management_api_the_route_is_a_404() -> None:
    assert_arm_error(through(None, "GET", f"{ROUTE}{JC}/jobs"), 404, "/dashboard/api/arm")


@pytest.mark.parametrize(
    ("route_path", "url_path", "status", "word"),
    [
        # The host decoded the route value once: a name holding '%' is refused by the name rule, not read twice.
        (f"{ROUTE}{JC}/jobs/a%41", f"{ROUTE}{JC}/jobs/a%2541", 400, "jobName"),
        # An encoded '/' stays in the URL (and, encoded, in the route value): never a segment boundary.
        (f"{ROUTE}{JC}/jobs/a%2Frun", f"{ROUTE}{JC}/jobs/a%2Frun", 400, "encoded '/'"),
        # Dot segments (a client that does not remove them): no resource of the API, nothing outside it.
        (f"{ROUTE}{JC}/jobs/../../../../../../health", None, 404, "no Microsoft.Scheduler resource"),
        (f"{ROUTE}subscriptions/../health", None, 404, "no Microsoft.Scheduler resource"),
        (f"{ROUTE}{JC}/jobs/a\x00b", f"{ROUTE}{JC}/jobs/a%00b", 400, "jobName"),
        (f"{ROUTE}{JC}/jobs/" + "x" * 5000, None, 400, "longer than"),
    ],
)
def test_hostile_paths_get_the_management_apis_refusals(
    api: ManagementApi, route_path: str, url_path: str | None, status: int, word: str
) -> None:
    assert_arm_error(through(api, "GET", route_path, url_path=url_path), status, word)


def test_a_read_needs_the_api_version(api: ManagementApi) -> None:
    assert_arm_error(through(api, "GET", f"{ROUTE}{JC}/jobs", query=""), 400, "api-version")


def test_next_link_names_the_read_route_and_following_it_reads_on(api: ManagementApi) -> None:
    first = through(api, "GET", f"{ROUTE}{JC}/jobs", query=f"?api-version={VERSION}&$top=1")
    assert first.status == 200, first.body
    page = body_of(first)
    assert [job["name"] for job in page["value"]] == ["jc1/a"]
    link = urlsplit(page["nextLink"])
    assert f"{link.scheme}://{link.netloc}" == ORIGIN
    assert link.path == f"/dashboard/{ROUTE}{JC}/jobs"
    assert _query(page["nextLink"]) == {"api-version": VERSION, "$top": "1", "$skip": "1"}
    # Followed as the page does (path and query of the link, same origin), through the same route.
    second = through(api, "GET", link.path.removeprefix("/dashboard/"), query="?" + link.query)
    assert [job["name"] for job in body_of(second)["value"]] == ["jc1/b"]
    assert "nextLink" not in body_of(second)
    # The management API's own answer links its own route, unchanged.
    own = body_of(direct(api, "GET", f"{JC}/jobs", query="&$top=1"))
    assert urlsplit(own["nextLink"]).path == f"/{JC}/jobs"
