"""``GET /`` on the local host, on a real port, as the Functions host answers it.

The Functions host (``HomepageMiddleware``) answers ``/`` itself only when no function ran for the request:
200 with its home page, or 204 with ``AzureWebJobsDisableHomepage=true``, whatever the method. A function
whose route matches the empty path (``routePrefix`` "") owns ``/``: this app's ``home`` function leads to the
dashboard (302 and a page of links). An app without such a function, or a request whose method the matching
function's list leaves out, gets the host's page.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import azure.functions as func
import pytest
import requests

from local_host.azurite import free_port
from local_host.hostjson import HostConfig
from local_host.runtime import LocalHost
from scheduler_core.dashboard import assets
from scheduler_core.settings import Settings

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]

#: An app with a function that owns "/" for GET only, and one elsewhere.
root_get_only = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


@root_get_only.route(route="{ignored:maxlength(0)?}", methods=["GET"])
def root(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("the root function", status_code=200)


#: An app with no function at "/" (its routes are under the default prefix "api").
no_root = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


@no_root.route(route="{*path}")
def anything(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse(f"api {req.route_params.get('path')}", status_code=200)


@pytest.fixture
def app_host(storage_env: Settings) -> Iterator[str]:
    """The function app on the local host (HTTP only): its base URL."""
    import function_app

    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
        yield host.base_url


def test_the_root_leads_to_the_dashboard(app_host: str) -> None:
    for target in ("/", "/?from=bookmark"):
        response = requests.get(app_host + target, allow_redirects=False, timeout=30)
        assert response.status_code == 302
        assert response.headers["Location"] == "/dashboard/"
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        assert response.headers["Cache-Control"] == "no-store"
        assert 'href="/dashboard/"' in response.text and 'href="/health"' in response.text
    followed = requests.get(app_host + "/", timeout=30)
    assert followed.status_code == 200
    assert followed.url == app_host + "/dashboard/"
    assert followed.content == assets()["index.html"]
    head = requests.head(app_host + "/", timeout=30)
    assert (head.status_code, head.headers["Location"], head.content) == (302, "/dashboard/", b"")


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_other_methods_at_the_root_get_an_arm_405(app_host: str, method: str) -> None:
    response = requests.request(method, app_host + "/", data=b"{}", timeout=30)
    assert response.status_code == 405
    assert json.loads(response.content)["error"]["code"] == "InvalidHttpVerb"
    assert response.headers["Allow"] == "GET, HEAD"


@pytest.mark.parametrize("path", ["/x", "/index.html", "/ignored", "/%20", "/home"])
def test_the_root_function_owns_the_root_alone(app_host: str, path: str) -> None:
    response = requests.get(app_host + path, allow_redirects=False, timeout=30)
    assert response.status_code == 404
    assert "no function serves the path" in response.json()["error"]["message"]


def test_without_a_root_function_the_host_answers_with_its_home_page(
    storage_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AzureWebJobsDisableHomepage", raising=False)
    with LocalHost(no_root, HostConfig(route_prefix="api"), port=free_port(), enable=frozenset({"http"})) as host:
        for method in ("GET", "POST", "DELETE"):  # the host's page answers any method
            response = requests.request(method, host.base_url + "/", data=b"x", timeout=30)
            assert response.status_code == 200, method
            assert response.headers["Content-Type"].startswith("text/html")
            assert "up and running" in response.text
        assert requests.get(host.base_url + "/api/", timeout=30).text == "api None"  # the app's routes still answer
        assert requests.get(host.base_url + "/x", timeout=30).status_code == 404
        for value in ("true", "True", "TRUE"):
            monkeypatch.setenv("AzureWebJobsDisableHomepage", value)  # read at each request, as the host does
            disabled = requests.get(host.base_url + "/", timeout=30)
            assert (disabled.status_code, disabled.content) == (204, b"")
        monkeypatch.setenv("AzureWebJobsDisableHomepage", "yes")  # only "true" turns it off
        assert requests.get(host.base_url + "/", timeout=30).status_code == 200


def test_a_method_the_root_function_leaves_out_gets_the_host_page(storage_env: Settings) -> None:
    with LocalHost(root_get_only, HostConfig(route_prefix=""), port=free_port(), enable=frozenset({"http"})) as host:
        assert requests.get(host.base_url + "/", timeout=30).text == "the root function"
        put = requests.put(host.base_url + "/", data=b"x", timeout=30)
        assert put.status_code == 200
        assert "up and running" in put.text
        elsewhere = requests.get(host.base_url + "/elsewhere", timeout=30)
        assert elsewhere.status_code == 404
