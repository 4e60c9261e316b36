"""Attacks on Entra ID sign-in and roles through the real host (issue 17), each kept as a test.

The function app runs on the local host over Azurite behind an https front, with the local OpenID provider of
``tests/support/oidc.py`` as its tenant (the set-up of ``tests/e2e/test_entra_api.py``). Hostile tokens are
forged as in ``tests/unit/test_attack_tokens.py`` and sent over https to every kind of route, in both
api-versions; a Reader (by app role and by API key) tries every write, including the preview's calendars,
with method-override headers and with HEAD, OPTIONS and TRACE; enormous headers are sent.

Every refusal: 401 or 403 (405 for a method no route has, 404 for a path that is no route) with an ARM body,
never a 5xx, the same answer whether or not the resource exists, nothing stored changed (every entity of
every table and the execution queue), and no token, key or secret in the logs.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from tests.e2e.test_entra_api import JC, JC_SCOPE, JOB_BODY, RG, SUB, Deployment, Start, provider, seed, start, test_ca
from tests.support.oidc import OidcProvider, SigningKey
from tests.unit.test_attack_tokens import forge

__all__ = ["provider", "start", "test_ca"]  # fixtures of test_entra_api, used here

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW, CLASSIC = "2026-12-01-preview", "2016-03-01"
BASE = JC_SCOPE.lstrip("/")
MISSING = BASE.replace(f"/{JC}", "/nope")
CALENDAR = {"properties": {"dates": ["2030-12-25"]}}
PATCH_JOB = {"properties": {"state": "Disabled"}}
COLLECTION = {"location": "westus", "properties": {"sku": {"name": "Standard"}}}


def send(
    d: Deployment,
    method: str,
    path: str,
    headers: dict[str, str],
    body: Any = None,
    version: str = CLASSIC,
) -> requests.Response:
    url = f"{d.https_url}/{path}?api-version={version}"
    return requests.request(method, url, json=body, headers=headers, timeout=30)


def arm_error(answer: requests.Response) -> dict[str, str]:
    assert answer.headers.get("Content-Type", "").startswith("application/json"), answer.headers
    error = answer.json()["error"]
    assert set(error) == {"code", "message"} and error["code"] and error["message"], error
    return dict(error)


def seed_all(d: Deployment) -> None:
    seed(d)
    made = requests.put(
        f"{d.http_url}/{BASE}/calendars/hol?api-version={PREVIEW}",
        json=CALENDAR,
        headers={"Authorization": f"Bearer {d.key}"},
        timeout=30,
    )
    assert made.status_code == 201, made.text


def writes(base: str, job: str, calendar: str) -> list[tuple[str, str, Any, str]]:
    """(method, path, body, api-version) of every write of the API, on ``base`` (a collection path)."""
    return [
        ("PUT", base, COLLECTION, CLASSIC),
        ("PATCH", base, {"tags": {"a": "b"}}, CLASSIC),
        ("DELETE", base, None, CLASSIC),
        ("POST", f"{base}/enable", None, CLASSIC),
        ("POST", f"{base}/disable", None, CLASSIC),
        ("PUT", f"{base}/jobs/{job}", JOB_BODY, CLASSIC),
        ("PUT", f"{base}/jobs/{job}", JOB_BODY, PREVIEW),
        ("PATCH", f"{base}/jobs/{job}", PATCH_JOB, CLASSIC),
        ("PATCH", f"{base}/jobs/{job}", PATCH_JOB, PREVIEW),
        ("DELETE", f"{base}/jobs/{job}", None, CLASSIC),
        ("POST", f"{base}/jobs/{job}/run", None, CLASSIC),
        ("POST", f"{base}/jobs/{job}/run", None, PREVIEW),
        ("PUT", f"{base}/calendars/{calendar}", CALENDAR, PREVIEW),
        ("DELETE", f"{base}/calendars/{calendar}", None, PREVIEW),
    ]


def reads(base: str, job: str, calendar: str) -> list[tuple[str, str, Any, str]]:
    return [
        ("GET", base, None, CLASSIC),
        ("GET", f"{base}/jobs", None, CLASSIC),
        ("GET", f"{base}/jobs/{job}", None, PREVIEW),
        ("GET", f"{base}/jobs/{job}/history", None, CLASSIC),
        ("GET", f"{base}/jobs/{job}/occurrences", None, PREVIEW),
        ("GET", f"{base}/calendars", None, PREVIEW),
        ("GET", f"{base}/calendars/{calendar}", None, PREVIEW),
    ]


# ----------------------------------------------------------------------------------------- bad tokens


def hostile_tokens(p: OidcProvider, reader_roles: list[str]) -> dict[str, str]:
    reader = p.register("hostile", roles=reader_roles)
    claims = p.claims_for(reader, p.app_id_uri)
    header = {"alg": "RS256", "typ": "JWT", "kid": p.current.kid}
    rogue = SigningKey.new("rogue")
    now = time.time()

    def signed(head: Any = None, payload: Any = None, key: Any = p.current, alg: str = "RS256") -> str:
        return forge(head if head is not None else header, payload if payload is not None else claims, key, alg)

    body = json.dumps(claims)
    return {
        "audience list with a good value": signed(payload={**claims, "aud": [p.api_client_id, "api://evil"]}),
        "expiry as a string": signed(payload={**claims, "exp": str(int(now) + 3600)}),
        "not before as a boolean": signed(payload={**claims, "nbf": False}),
        "expiry out of range": signed(payload=body[:-1] + ', "exp": 1e400}'),
        "issuer with a trailing slash": signed(payload={**claims, "iss": p.issuer_v2 + "/"}),
        "issuer in upper case": signed(payload={**claims, "iss": p.issuer_v2.upper()}),
        "alg with a space": signed(head={**header, "alg": "RS256 "}),
        "alg lower case": signed(head={**header, "alg": "rs256"}),
        "alg none": signed(head={**header, "alg": "none"}, key=None),
        "PS256 by the tenant's key": signed(head={**header, "alg": "PS256"}, alg="PS256"),
        "HS256 keyed with the public key": signed(head={**header, "alg": "HS256"}, key=p.current.public_pem()),
        "jku to another server": signed(
            head={**header, "kid": rogue.kid, "jku": "https://127.0.0.1:9/keys"}, key=rogue
        ),
        "embedded jwk": signed(head={**header, "jwk": rogue.jwk()}, key=rogue),
        "crit header": signed(head={**header, "crit": ["exp"]}),
        "duplicate roles": signed(payload=body[:-1] + ', "roles": ["Scheduler.Contributor"]}'),
        "object id not a GUID": signed(payload={**claims, "oid": "admin"}),
        "enormous": signed(payload={**claims, "pad": "p" * 20_000}),
        "two signatures": '{"payload": "e30", "signatures": [{"protected": "e30", "signature": ""}]}',
    }


def test_hostile_tokens_are_401s_with_an_arm_body_on_every_route_and_change_nothing(
    start: Start, provider: OidcProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    d = start()
    seed_all(d)
    tokens = hostile_tokens(provider, ["Scheduler.Contributor"])
    before = d.snapshot()
    routes = [
        *writes(BASE, "j", "hol"),
        *reads(BASE, "j", "hol"),
        ("POST", f"{BASE}/jobs/j/run", None, PREVIEW),
    ]
    for index, (name, token) in enumerate(tokens.items()):
        headers = {"Authorization": f"Bearer {token}"}
        # every token on a write, a preview write and a read, and on two more routes in turn (all are covered)
        chosen = [routes[6], routes[13], routes[16], routes[index % len(routes)], routes[(index * 7 + 3) % len(routes)]]
        for method, path, body, version in chosen:
            existing = send(d, method, path, headers, body, version)
            missing_path = path.replace("/jobs/j", "/jobs/nope").replace("/calendars/hol", "/calendars/nope")
            missing = send(d, method, missing_path.replace(f"/{JC}", "/nope"), headers, body, version)
            for answer in (existing, missing):
                assert answer.status_code == 401, (name, method, path, answer.status_code, answer.text[:200])
                assert arm_error(answer)["code"] in (
                    "InvalidAuthenticationToken",
                    "InvalidAuthenticationTokenAudience",
                    "ExpiredAuthenticationToken",
                    "AuthenticationFailed",
                )
                assert answer.headers["WWW-Authenticate"].startswith('Bearer realm="Microsoft.Scheduler"')
            assert existing.json() == missing.json(), (name, method, path)
            assert existing.headers["WWW-Authenticate"] == missing.headers["WWW-Authenticate"]
    assert d.snapshot() == before
    for token in tokens.values():
        signature = token.rsplit(".", 1)[-1]
        assert token not in caplog.text
        assert len(signature) < 20 or signature not in caplog.text
    assert d.key not in caplog.text and d.reader_key not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "an error was logged"


# -------------------------------------------------------------------------------------- the Reader


def refused_same_whether_or_not_it_exists(
    d: Deployment, headers: dict[str, str], method: str, path: str, body: Any, version: str
) -> None:
    existing = send(d, method, path, headers, body, version)
    other = path.replace("/jobs/j", "/jobs/nope").replace("/calendars/hol", "/calendars/nope")
    other = other.replace(f"/jobCollections/{JC}", "/jobCollections/nope")
    missing = send(d, method, other, headers, body, version)
    for answer in (existing, missing):
        assert answer.status_code == 403, (method, path, version, answer.status_code, answer.text[:300])
        assert arm_error(answer)["code"] == "AuthorizationFailed"
    # the same words, but for the name each asked about
    renamed = (
        missing.json()["error"]["message"].replace("/jobs/nope", "/jobs/j").replace("/calendars/nope", "/calendars/hol")
    )
    assert renamed.replace("/jobCollections/nope", f"/jobCollections/{JC}") == existing.json()["error"]["message"]


def test_a_reader_by_app_role_or_key_is_refused_every_write_on_every_route_in_both_versions(
    start: Start, provider: OidcProvider
) -> None:
    d = start()
    seed_all(d)
    reader = provider.register("reader", roles=["Scheduler.Reader"])
    token = provider.mint(provider.claims_for(reader, provider.app_id_uri))
    before = d.snapshot()
    for headers in (
        {"Authorization": f"Bearer {token}"},
        {"Authorization": f"Bearer {d.reader_key}"},
        {"x-functions-key": d.reader_key},
        {"x-functions-key": d.reader_key, "Authorization": f"Bearer {d.key}"},  # the function key decides
    ):
        for method, path, body, version in writes(BASE, "j", "hol"):
            refused_same_whether_or_not_it_exists(d, headers, method, path, body, version)
            if "Bearer eyJ" in headers.get("Authorization", ""):
                for override in ("X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"):
                    answer = send(d, method, path, {**headers, override: "GET"}, body, version)
                    assert answer.status_code == 403, (override, method, path, answer.text[:200])
        for method, path, body, version in reads(BASE, "j", "hol"):
            assert send(d, method, path, headers, body, version).status_code == 200, (method, path)
            # an override header asking for a write changes nothing: the method on the wire decides
            answer = send(d, method, path, {**headers, "X-HTTP-Method-Override": "DELETE"}, body, version)
            assert answer.status_code == 200, (method, path, answer.text[:200])
    assert d.snapshot() == before


def test_methods_no_route_has_are_405_and_unknown_paths_404_for_every_principal(
    start: Start, provider: OidcProvider
) -> None:
    d = start()
    seed_all(d)
    reader = provider.register("reader", roles=["Scheduler.Reader"])
    token = provider.mint(provider.claims_for(reader, provider.app_id_uri))
    before = d.snapshot()
    paths = [BASE, f"{BASE}/jobs/j", f"{BASE}/jobs/j/run", f"{BASE}/calendars/hol", f"{BASE}/jobs/j/occurrences"]
    for headers in ({"Authorization": f"Bearer {token}"}, {"Authorization": f"Bearer {d.key}"}):
        for path in paths:
            for method in ("OPTIONS", "TRACE", "CONNECT", "PROPFIND", "HEAD"):
                answer = send(d, method, path, headers, version=PREVIEW)
                assert answer.status_code == 405, (method, path, answer.status_code)
                if method != "HEAD":
                    assert arm_error(answer)["code"]
        # POST with an override header is still a POST (405 on a job), and never a DELETE
        answer = send(d, "POST", f"{BASE}/jobs/j", {**headers, "X-HTTP-Method-Override": "DELETE"}, version=PREVIEW)
        assert answer.status_code == 405
    # backfill is a write of the preview version: a Reader is refused it (403, ARM's words), whatever the body
    backfill = {"startTime": "2030-01-01T00:00:00Z", "endTime": "2030-01-02T00:00:00Z"}
    answer = send(d, "POST", f"{BASE}/jobs/j/backfill", {"Authorization": f"Bearer {token}"}, backfill, version=PREVIEW)
    assert answer.status_code == 403 and arm_error(answer)["code"] == "AuthorizationFailed"
    # and a path below a job that names no operation is a 404 with an ARM body, whoever asks
    for headers in ({"Authorization": f"Bearer {token}"}, {"Authorization": f"Bearer {d.key}"}):
        answer = send(d, "POST", f"{BASE}/jobs/j/backfill/more", headers, backfill, version=PREVIEW)
        assert answer.status_code == 404 and arm_error(answer)["code"]
    for method in ("OPTIONS", "HEAD", "TRACE"):  # without a credential: 401 before anything else
        assert send(d, method, f"{BASE}/jobs/j", {}, version=PREVIEW).status_code == 401
    assert d.snapshot() == before


def test_a_subscription_scoped_principal_is_nobody_in_another_subscription(
    start: Start, provider: OidcProvider
) -> None:
    ops = provider.register("ops")
    d = start(assignments=f"contributor:oid:{ops.object_id}@{SUB}")
    seed_all(d)
    seed(d, "sub2")
    token = provider.mint(provider.claims_for(ops, provider.app_id_uri))
    headers = {"Authorization": f"Bearer {token}"}
    other = BASE.replace(f"subscriptions/{SUB}", "subscriptions/sub2")
    before = d.snapshot()
    for method, path, body, version in writes(other, "j", "hol") + reads(other, "j", "hol"):
        answer = send(d, method, path, headers, body, version)
        assert answer.status_code == 403, (method, path, answer.text[:200])
        assert "over scope '/subscriptions/sub2'" in arm_error(answer)["message"]
    assert d.snapshot() == before
    assert send(d, "GET", f"{BASE}/jobs/j", headers).status_code == 200
    assert (
        send(
            d, "GET", f"{BASE}/jobs/j".replace(f"subscriptions/{SUB}", f"subscriptions/{SUB.upper()}"), headers
        ).status_code
        == 200
    )


# -------------------------------------------------------------------------------- enormous headers


def raw_request(d: Deployment, head: bytes) -> bytes:
    """Send a raw request head to the local host (http) and read its answer (or what it sent before closing)."""
    parts = urlsplit(d.http_url)
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=30) as sock:
        with contextlib.suppress(OSError):  # the host may answer and close before it has read everything
            sock.sendall(head)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


@pytest.mark.parametrize("size", [17 * 1024, 64 * 1024, 1024 * 1024])
def test_an_enormous_authorization_header_is_refused_without_a_5xx(
    start: Start, provider: OidcProvider, size: int
) -> None:
    d = start()
    seed_all(d)
    before = d.snapshot()
    token = "eyJ" + "A" * size + ".eyJ9.c2ln"
    head = (
        f"DELETE /{BASE}/jobs/j?api-version={CLASSIC} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    ).encode()
    answer = raw_request(d, head)
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None
    assert status is not None and 400 <= status < 500, answer[:200]
    assert b'{"error":{"code":' in answer.replace(b" ", b""), answer[:400]  # an ARM body
    assert status == (401 if size < 64 * 1024 else 431), answer[:200]
    assert d.snapshot() == before
    admin = provider.register("admin", roles=["Scheduler.Reader"])
    good = provider.mint(provider.claims_for(admin, provider.app_id_uri))
    assert send(d, "GET", f"{BASE}/jobs/j", {"Authorization": f"Bearer {good}"}).status_code == 200  # still serving


def test_the_resource_group_scope_of_a_list_is_refused_in_arms_words(start: Start, provider: OidcProvider) -> None:
    d = start()
    seed_all(d)
    nobody = provider.register("nobody")
    token = provider.mint(provider.claims_for(nobody, provider.app_id_uri))
    path = f"subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections"
    answer = send(d, "GET", path, {"Authorization": f"Bearer {token}"})
    assert answer.status_code == 403
    assert f"over scope '/subscriptions/{SUB}'" in arm_error(answer)["message"]
