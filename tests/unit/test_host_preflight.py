"""The local host's check of the management API's key and size before a request body is read."""

from __future__ import annotations

import json

from local_host.http_server import RequestHead
from local_host.preflight import api_key_preflight
from scheduler_core import auth

KEY = auth.generate_key()
CHECK = api_key_preflight(auth.parse_keys(auth.hash_entry(KEY, ["sub"])), ["management_api"], 1024)


def head(
    function: str = "management_api", length: int | None = 10, headers: dict[str, str] | None = None
) -> RequestHead:
    return RequestHead(function, "PUT", "/subscriptions/sub/x", headers or {}, length, {})


def test_a_request_without_a_valid_key_is_refused_with_the_apis_401() -> None:
    for headers in ({}, {"Authorization": "Bearer sks_wrong"}, {"x-functions-key": "nope"}):
        answer = CHECK(head(headers=headers))
        assert answer is not None and answer.status_code == 401
        assert json.loads(answer.get_body())["error"]["code"] == "AuthenticationFailed"
        assert answer.headers["x-ms-request-id"]


def test_an_authenticated_request_declaring_too_large_a_body_is_a_413() -> None:
    answer = CHECK(head(length=1025, headers={"Authorization": f"Bearer {KEY}"}))
    assert answer is not None and answer.status_code == 413
    assert json.loads(answer.get_body())["error"]["code"] == "RequestEntityTooLarge"


def test_authenticated_requests_chunked_bodies_and_other_functions_pass() -> None:
    assert CHECK(head(length=1024, headers={"Authorization": f"Bearer {KEY}"})) is None
    assert CHECK(head(length=None, headers={"x-functions-key": KEY})) is None  # chunked: the host bounds what it reads
    assert CHECK(head(function="openapi_document", length=10**9)) is None
    # The key's subscription scope is the function's to judge (403 needs the API's path parsing).
    assert (
        CHECK(RequestHead("management_api", "GET", "/subscriptions/other/x", {"x-functions-key": KEY}, 0, {})) is None
    )
