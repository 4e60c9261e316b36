"""Request paths: each name is decoded exactly once, and a name addresses only the resource it spells,
whether the path comes from the Functions host or from the local host."""

from __future__ import annotations

import json
import re
from urllib.parse import quote, unquote

import azure.functions as func
import pytest

from local_host.app_index import AppIndex
from local_host.routing import compile_route
from scheduler_core.api import ApiRequest
from scheduler_core.api.paths import ResourcePath, check_url, parse_path
from scheduler_core.errors import NotFoundError, ValidationError

JC = "subscriptions/sub1/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"
ROUTE = "subscriptions/{*resource}"


# --------------------------------------------------------------------------------- what each host delivers
# TEST DOUBLE of the Functions host's request conversion (no Functions host can run here). From its sources:
# Kestrel percent-decodes the request path except %2F, which stays encoded; ASP.NET Core routing takes the
# route values from that path without decoding again; the worker's URL is built from `request.Path`,
# i.e. PathString.ToUriComponent(), which escapes what is not valid in a path but keeps %XX sequences.
_PCHAR = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]")


def _kestrel_decode(raw: str) -> str:
    def decode(match: re.Match[str]) -> str:
        text = match.group(0)
        parts = re.split(r"(%2[Ff])", text)  # %2F stays encoded
        out = []
        for part in parts:
            if part.lower() == "%2f":
                out.append(part)
                continue
            try:
                out.append(unquote(part, errors="strict"))
            except UnicodeDecodeError:
                out.append(part)  # invalid UTF-8 stays encoded
        return "".join(out)

    return re.sub(r"(?:%[0-9A-Fa-f]{2})+", decode, raw)


def _to_uri_component(path: str) -> str:
    out = []
    index = 0
    while index < len(path):
        char = path[index]
        if char == "%" and re.match(r"%[0-9A-Fa-f]{2}", path[index:]):
            out.append(path[index : index + 3])
            index += 3
            continue
        out.append(char if _PCHAR.match(char) else quote(char, safe=""))
        index += 1
    return "".join(out)


def functions_host_request(raw_target: str) -> func.HttpRequest:
    """The func.HttpRequest the Functions host would hand the worker for ``raw_target`` (test double)."""
    raw_path, _, query = raw_target.partition("?")
    path = _kestrel_decode(raw_path)
    match = re.match(r"^/subscriptions/(?P<resource>.*?)/?$", path, re.IGNORECASE | re.DOTALL)
    assert match is not None
    return func.HttpRequest(
        method="GET",
        url=f"http://localhost{_to_uri_component(path)}?{query}",
        headers={},
        params={"api-version": "2016-03-01"},
        route_params={"resource": match.group("resource") or ""},
        body=b"",
    )


def local_host_request(raw_target: str) -> func.HttpRequest:
    """The func.HttpRequest the local host (local_host) builds (its router, its URL: base URL + raw target)."""
    match = compile_route(ROUTE, "api").pattern.match(raw_target.split("?", 1)[0].strip("/"))
    assert match is not None
    return func.HttpRequest(
        method="GET",
        url=f"http://127.0.0.1:7071{raw_target}",
        headers={},
        params={"api-version": "2016-03-01"},
        route_params={"resource": unquote(match.group("resource") or "")},
        body=b"",
    )


HOSTS = {"functions host": functions_host_request, "local host": local_host_request}


def addressed(request: func.HttpRequest) -> ResourcePath:
    """What function_app's management_api makes of the request: the same two calls the API makes."""
    path = ApiRequest.path_from_route("subscriptions/" + request.route_params.get("resource", ""))
    check_url(request.url)
    return parse_path(path)


# ------------------------------------------------------------------------------------------------ cases

ACCEPTED = [
    ("payroll", "payroll"),
    ("Job%20Name", "Job Name"),
    ("it's", "it's"),
    ("%C3%A9t%C3%A9", "été"),
    ("%E6%97%A5%E6%9C%AC", "日本"),
    ("%F0%9F%98%80" * 100, "\U0001f600" * 100),
    ("x" * 200, "x" * 200),
    ("a.b", "a.b"),
    ("~a-b_c(d)!", "~a-b_c(d)!"),
]

REFUSED = [
    "payroll%3Fcopy",
    "payroll%3Fother",
    "payroll%3F",
    "a%2541",
    "a%25",
    "payroll%2Frun",
    "payroll%2fhistory",
    "payroll%252Frun",
    "a%23b",
    "a%5Cb",
    "..",
    ".",
    "%2E%2E",
    "a%0Ab",
    "a%00",
    "a%7F",
    "a%C2%85",
    "trail.",
    "trail%20",
    "%FF",
    "a%C3",
    "x" * 201,
    "x" * 513,
    "x" * 1024,
    "%F0%9F%98%80" * 101,
    "%7C" * 67,
    "%E2%84%AA",  # the Kelvin sign: lower-cases to the letter k
    "%C4%B0",  # İ: lower-cases to two characters
]


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize(("raw", "name"), ACCEPTED)
def test_a_name_is_decoded_exactly_once_under_both_hosts(host: str, raw: str, name: str) -> None:
    for suffix, kind in (("", "job"), ("/run", "job_run"), ("/history", "job_history")):
        path = addressed(HOSTS[host](f"/{JC}/jobs/{raw}{suffix}?api-version=2016-03-01"))
        assert (path.kind, path.job, path.collection, path.subscription) == (kind, name, "jc", "sub1")


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("raw", REFUSED)
def test_a_name_that_could_address_another_resource_is_refused_naming_it(host: str, raw: str) -> None:
    with pytest.raises(ValidationError) as caught:
        addressed(HOSTS[host](f"/{JC}/jobs/{raw}?api-version=2016-03-01"))
    assert caught.value.status == 400
    assert caught.value.path == "jobName", caught.value.message
    assert "docs/names.md" in caught.value.message or "UTF-8" in caught.value.message


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize(
    ("template", "field"),
    [
        ("/subscriptions/{}/providers/Microsoft.Scheduler/jobCollections", "subscriptionId"),
        ("/subscriptions/{}/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections", "subscriptionId"),
        ("/subscriptions/s/resourceGroups/{}/providers/Microsoft.Scheduler/jobCollections", "resourceGroupName"),
        ("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/{}", "jobCollectionName"),
        ("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/{}/disable", None),
        ("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/{}/jobs", None),
        ("/subscriptions/s/resourceGroups/{}/providers/Microsoft.Scheduler/jobCollections/jc/jobs/j", None),
    ],
)
@pytest.mark.parametrize("raw", ["a%3Fb", "a%2Fb", "a%2541", "..", "a%09", "end.", "x" * 513])
def test_every_name_follows_the_rule_and_the_error_names_which(
    host: str, template: str, field: str | None, raw: str
) -> None:
    expected = field or ("jobCollectionName" if "jobCollections/{}" in template else "resourceGroupName")
    with pytest.raises(ValidationError) as caught:
        addressed(HOSTS[host](template.format(raw) + "?api-version=2016-03-01"))
    assert caught.value.path == expected, caught.value.message


def test_the_old_double_decoding_is_gone() -> None:
    # The route value arrives decoded: a second decoding or a cut at '?' would address 'payroll' or 'aA'.
    for route_value in ("payroll?copy", "payroll?other", "a%41"):
        with pytest.raises(ValidationError):
            parse_path(ApiRequest.path_from_route(f"{JC}/jobs/{route_value}"))


def test_literal_segments_match_case_insensitively_and_other_paths_are_not_found() -> None:
    path = parse_path("SUBSCRIPTIONS/S/resourcegroups/R/providers/microsoft.scheduler/JOBCOLLECTIONS/C/Enable")
    assert (path.kind, path.action, path.resource_group) == ("collection_action", "enable", "R")
    with pytest.raises(NotFoundError):
        parse_path("subscriptions/S/resourceGroups/R/providers/Microsoft.Web/sites/x")
    with pytest.raises(NotFoundError):
        parse_path(f"{JC}/jobs/a/b")


def test_management_api_function_refuses_a_bad_name_with_an_arm_error(
    function_index: AppIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scheduler_core import auth, wiring

    key = auth.generate_key()
    monkeypatch.setenv("AzureWebJobsStorage", "UseDevelopmentStorage=true")
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    wiring.reset()
    handler = next(f.handler for f in function_index.http if f.name == "management_api")
    try:
        for make in HOSTS.values():
            for raw in ("payroll%3Fcopy", "a%2541", "payroll%2Frun", "x" * 600):
                request = make(f"/{JC}/jobs/{raw}?api-version=2016-03-01")
                request = func.HttpRequest(
                    method="DELETE",
                    url=request.url,
                    headers={"Authorization": f"Bearer {key}"},
                    params=dict(request.params),
                    route_params=dict(request.route_params),
                    body=b"",
                )
                response = handler(request)
                assert response.status_code == 400, (raw, response.get_body())
                error = json.loads(response.get_body())["error"]
                assert error["code"] == "BadRequest"
                assert error["message"].startswith("jobName: ")
    finally:
        wiring.reset()


def test_an_encoded_slash_outside_a_name_is_refused_as_the_url() -> None:
    with pytest.raises(ValidationError) as caught:
        check_url("http://h/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler%2Fx/jobCollections")
    assert caught.value.path == "url"
    with pytest.raises(ValidationError) as caught:
        check_url("http://h/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc%2F")
    assert caught.value.path == "jobCollectionName"
    check_url("http://h/subscriptions/s/resourceGroups/rg?x=%2F%FF")  # the query is not the path
