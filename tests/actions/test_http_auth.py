"""Outbound HTTP authentication: ClientCertificate (mutual TLS against an HTTPS server on loopback that
requires a certificate from a test CA) and ActiveDirectoryOAuth (a local Entra ID look-alike)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler_core.actions.http import HttpSender
from scheduler_core.actions.http_auth import OAuthTokens
from scheduler_core.model.actions import ActiveDirectoryOAuthAuthentication, HttpAction, Secret
from tests.actions.conftest import action_context, client_certificate
from tests.support.http_target import HttpTarget, http_target
from tests.support.tls import HttpsPeer, TestCa, https_peer, token_endpoint

SECRET = "Top$ecret-Client-Value-123"


def cert_action(url: str, pfx: str, password: str | None) -> HttpAction:
    return HttpAction(url, "POST", https=True, body="hi", authentication=client_certificate(pfx, password))


def oauth_action(url: str, secret: str = SECRET) -> HttpAction:
    auth = ActiveDirectoryOAuthAuthentication(
        tenant="contoso.onmicrosoft.com",
        audience="https://management.core.windows.net/",
        client_id="11111111-2222-3333-4444-555555555555",
        secret=Secret(secret),
    )
    return HttpAction(url, "GET", authentication=auth)


@pytest.fixture
def mtls(test_ca: TestCa, trust_test_ca: Path) -> Iterator[HttpsPeer]:
    with https_peer(test_ca, require_client_cert=True) as peer:
        yield peer


@pytest.mark.parametrize("password", ["pfx-password", None])
def test_right_certificate_succeeds(mtls: HttpsPeer, test_ca: TestCa, password: str | None) -> None:
    pfx = test_ca.issue("scheduler-client", server=False).pfx_base64(password)
    sender = HttpSender()
    result = sender.send(cert_action(mtls.base_url + "/secure", pfx, password), action_context())
    assert result.succeeded, result.message
    assert result.message.startswith("200 OK: hello over mutual TLS | Http Action"), result.message
    [seen] = mtls.requests_to("/secure")
    assert seen.client_subject == "commonName=scheduler-client" and seen.body == b"hi"
    # the session (and its TLS context) is kept for the next call with the same certificate
    assert sender.send(cert_action(mtls.base_url + "/secure", pfx, password), action_context()).succeeded
    assert len(mtls.requests_to("/secure")) == 2


def test_certificate_from_another_ca_fails(mtls: HttpsPeer) -> None:
    stranger = TestCa("Some Other CA").issue("scheduler-client", server=False)
    result = HttpSender().send(
        cert_action(mtls.base_url + "/secure", stranger.pfx_base64("pw"), "pw"), action_context()
    )
    assert not result.succeeded
    assert result.message.startswith("TLS error: "), result.message
    assert result.message.endswith(" | Http Action - Request to host '127.0.0.1'"), result.message
    assert mtls.requests_to("/secure") == []


def test_no_certificate_fails(mtls: HttpsPeer) -> None:
    action = HttpAction(mtls.base_url + "/secure", "GET", https=True)
    assert not HttpSender().send(action, action_context()).succeeded
    assert mtls.requests_to("/secure") == []


def test_wrong_pfx_password_is_a_clear_failure(mtls: HttpsPeer, test_ca: TestCa) -> None:
    pfx = test_ca.issue("scheduler-client", server=False).pfx_base64("right")
    result = HttpSender().send(cert_action(mtls.base_url + "/secure", pfx, "wrong-password"), action_context())
    assert not result.succeeded
    assert "could not be opened with its password" in result.message
    assert "wrong-password" not in result.message and pfx not in result.message


@pytest.fixture
def idp(test_ca: TestCa, trust_test_ca: Path) -> Iterator[HttpsPeer]:
    with https_peer(
        test_ca, token_endpoint(["token-one", "token-two", "token-three"], 3), require_client_cert=False
    ) as peer:
        yield peer


@pytest.fixture
def target() -> Iterator[HttpTarget]:
    with http_target() as server:
        yield server


def test_token_is_requested_once_reused_and_refreshed_after_expiry(
    idp: HttpsPeer, target: HttpTarget, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sender = HttpSender(oauth=OAuthTokens(authority_host=idp.base_url, refresh_margin=1))
    for _ in range(3):
        result = sender.send(oauth_action(target.base_url + "/api"), action_context())
        assert result.succeeded, result.message
        assert SECRET not in result.message
    token_requests = idp.requests_to("/oauth2/v2.0/token")
    assert len(token_requests) == 1
    form = token_requests[0].body.decode()
    assert "grant_type=client_credentials" in form
    assert "scope=https%3A%2F%2Fmanagement.core.windows.net%2F%2F.default" in form
    assert token_requests[0].path == "/contoso.onmicrosoft.com/oauth2/v2.0/token"
    time.sleep(2.1)  # expires_in=3 with a 1 s margin: the cached token is now due for refresh
    assert sender.send(oauth_action(target.base_url + "/api"), action_context()).succeeded
    assert len(idp.requests_to("/oauth2/v2.0/token")) == 2
    assert [r.headers["Authorization"] for r in target.received] == ["Bearer token-one"] * 3 + ["Bearer token-two"]
    assert SECRET not in caplog.text and "token-one" not in caplog.text


def test_token_endpoint_refusal_is_a_failure_without_the_secret(
    test_ca: TestCa, trust_test_ca: Path, target: HttpTarget, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    def refuse(seen: Any) -> tuple[int, str, bytes]:
        if seen.path.endswith("/token"):
            body = b'{"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret."}'
            return 401, "application/json", body
        return token_endpoint([], 3)(seen)

    with https_peer(test_ca, refuse, require_client_cert=False) as bad_idp:
        sender = HttpSender(oauth=OAuthTokens(authority_host=bad_idp.base_url))
        result = sender.send(oauth_action(target.base_url + "/api"), action_context())
    assert not result.succeeded
    assert "not sent: no Entra ID token for client '11111111-2222-3333-4444-555555555555'" in result.message
    assert "AADSTS7000215" in result.message
    assert SECRET not in result.message and SECRET not in caplog.text
    assert target.received == []
