"""HTTP authentication ``ManagedServiceIdentity``: the app's token for exactly the audience asked, from a real
identity endpoint on 127.0.0.1 that answers as App Service's does (``tests/support/identity_endpoint.py``),
through azure-identity's ``ManagedIdentityCredential`` as production builds it (``default_runner`` with the
platform's ``IDENTITY_ENDPOINT`` / ``IDENTITY_HEADER``), sent to a real HTTP target; cached per audience,
refreshed near expiry; a refusal is a failed attempt that names no secret; the endpoint is reachable by the
identity client only, and the token goes only where its audience or the settings allow."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterator

import pytest

from scheduler_core import settings
from scheduler_core.actions import ActionRunner, Failure
from scheduler_core.actions.managed_identity import IdentityEndpoint as PlatformEndpoint
from scheduler_core.actions.managed_identity import ManagedIdentityTokens, reserved_endpoints
from scheduler_core.actions.outbound import OutboundPolicy, OutboundRefused, endpoint
from scheduler_core.actions.registry import default_runner
from scheduler_core.model.actions import HttpAction, ManagedServiceIdentityAuthentication
from tests.actions.conftest import action_context
from tests.support.http_target import HttpTarget, http_target
from tests.support.identity_endpoint import IdentityEndpoint

ARM = "https://management.azure.com/"
VAULT = "https://vault.azure.net"


@pytest.fixture
def target() -> Iterator[HttpTarget]:
    with http_target() as running:
        yield running


def runner(allowed_hosts: str = "127.0.0.1") -> ActionRunner:
    config = settings.load(
        {"AzureWebJobsStorage__accountName": "acct", "SCHEDULER_IDENTITY_ALLOWED_HOSTS": allowed_hosts}
    )
    return default_runner(config)


def msi(url: str, audience: str = ARM) -> HttpAction:
    return HttpAction(url, "GET", authentication=ManagedServiceIdentityAuthentication(audience))


def test_the_target_gets_the_apps_token_for_exactly_the_audience_asked(
    platform: IdentityEndpoint, target: HttpTarget
) -> None:
    result = runner().run(msi(f"{target.base_url}/api"), action_context())
    assert result.succeeded, result.message
    [asked] = platform.seen()
    assert asked.path == "/msi/token" and asked.query["api-version"] == ["2019-08-01"]
    assert asked.query["resource"] == [ARM]
    assert asked.headers["X-IDENTITY-HEADER"] == platform.header
    [received] = target.received
    assert received.headers["Authorization"] == f"Bearer {IdentityEndpoint.token_for(ARM, 1)}"


def test_one_token_request_per_audience_for_many_calls(platform: IdentityEndpoint, target: HttpTarget) -> None:
    actions = runner()
    for _ in range(5):
        assert actions.run(msi(target.base_url), action_context()).succeeded
        assert actions.run(msi(target.base_url, VAULT), action_context()).succeeded
    assert [asked.resource for asked in platform.seen()] == [ARM, VAULT]
    tokens = [received.headers["Authorization"] for received in target.received]
    assert set(tokens[0::2]) == {f"Bearer {IdentityEndpoint.token_for(ARM, 1)}"}
    assert set(tokens[1::2]) == {f"Bearer {IdentityEndpoint.token_for(VAULT, 2)}"}


def test_concurrent_calls_share_one_token_request(platform: IdentityEndpoint, target: HttpTarget) -> None:
    actions = runner()
    results: list[bool] = []
    threads = [
        threading.Thread(target=lambda: results.append(actions.run(msi(target.base_url), action_context()).succeeded))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert results == [True] * 8
    assert len(platform.seen()) == 1


def test_a_token_is_refreshed_near_its_expiry(platform: IdentityEndpoint, target: HttpTarget) -> None:
    """Tokens that live 302 s: kept until 300 s before they expire (the cache's margin, and the identity
    library's), so the calls of the first 2 s share one, and a call after that gets a new one."""
    platform.lifetime = 302
    actions = runner()
    issued = time.time()
    assert actions.run(msi(target.base_url), action_context()).succeeded
    assert actions.run(msi(target.base_url), action_context()).succeeded
    assert time.time() - issued < 1.5, "the two first calls were meant to fall in the token's first 2 s"
    assert len(platform.seen()) == 1
    time.sleep(max(0.0, issued + 2.5 - time.time()))
    assert actions.run(msi(target.base_url), action_context()).succeeded
    assert [asked.resource for asked in platform.seen()] == [ARM, ARM]
    assert [received.headers["Authorization"] for received in target.received] == [
        f"Bearer {IdentityEndpoint.token_for(ARM, 1)}",
        f"Bearer {IdentityEndpoint.token_for(ARM, 1)}",
        f"Bearer {IdentityEndpoint.token_for(ARM, 2)}",
    ]


def test_a_refusal_is_a_clear_failed_attempt_without_the_identity_header(
    platform: IdentityEndpoint, target: HttpTarget, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    platform.refusal = (403, {"error": "identity not enabled", "echo": platform.header})  # a careless endpoint
    actions = runner()
    result = actions.run(msi(target.base_url), action_context())
    assert not result.succeeded
    assert result.message.startswith("Request not sent: no token of the app's"), result.message
    assert result.message.endswith(" | Http Action - Request to host '127.0.0.1'"), result.message
    assert result.failure is Failure.NOT_SENT  # the identity endpoint's 403 is not the target's status
    assert f"for audience '{ARM}'" in result.message
    assert "the identity endpoint answered HTTP 403" in result.message
    assert platform.header not in result.message and platform.header not in caplog.text
    assert target.received == []
    # nothing is cached from a refusal: once the endpoint answers, the next attempt gets its token
    platform.refusal = None
    again = actions.run(msi(target.base_url), action_context())
    assert again.succeeded, again.message
    [received] = target.received
    assert received.headers["Authorization"].startswith("Bearer mi-token-")


def test_an_endpoint_that_is_down_is_a_failed_attempt(platform: IdentityEndpoint, target: HttpTarget) -> None:
    config = settings.load(
        {"AzureWebJobsStorage__accountName": "acct", "SCHEDULER_IDENTITY_ALLOWED_HOSTS": "127.0.0.1"}
    )
    environ = {**platform.env, "IDENTITY_ENDPOINT": "http://127.0.0.1:9/msi/token"}  # nothing listens on port 9
    result = default_runner(config, environ=environ).run(msi(target.base_url), action_context())
    assert not result.succeeded and "no token of the app's managed identity" in result.message
    assert target.received == []


def test_without_an_identity_the_attempt_fails_at_once_and_nothing_is_asked(
    monkeypatch: pytest.MonkeyPatch, target: HttpTarget
) -> None:
    for name in ("IDENTITY_ENDPOINT", "IDENTITY_HEADER"):
        monkeypatch.delenv(name, raising=False)
    result = runner().run(msi(target.base_url), action_context())
    assert not result.succeeded
    assert "IDENTITY_ENDPOINT and IDENTITY_HEADER are not set" in result.message
    assert target.received == []


# ------------------------------------------------------------------------------ where the token may go


@pytest.mark.parametrize(
    ("audience", "host", "allowed"),
    [
        (ARM, "management.azure.com", True),
        ("https://contoso.azurewebsites.net", "contoso.azurewebsites.net", True),
        (VAULT, "my-vault.vault.azure.net", True),
        (ARM, "evil.example.com", False),
        (ARM, "management.azure.com.evil.example", False),
        ("api://11111111-2222-3333-4444-555555555555", "api.contoso.com", False),
        ("api://11111111-2222-3333-4444-555555555555", "orders.internal.contoso.com", True),
        (ARM, "127.0.0.1", True),
    ],
)
def test_the_token_goes_to_its_audiences_host_or_an_allowed_host(audience: str, host: str, allowed: bool) -> None:
    tokens = ManagedIdentityTokens(None, allowed_hosts=("internal.contoso.com", "127.0.0.1"))
    refusal = tokens.refusal(audience, host)
    assert (refusal is None) is allowed, refusal
    if refusal is not None:
        assert "SCHEDULER_IDENTITY_ALLOWED_HOSTS" in refusal and f"'{host}'" in refusal


def test_a_target_the_token_may_not_go_to_gets_nothing_and_no_token_is_asked(
    platform: IdentityEndpoint, target: HttpTarget
) -> None:
    result = runner(allowed_hosts="").run(msi(f"{target.base_url}/api"), action_context())
    assert not result.succeeded
    assert "not sent: the app's token for audience 'https://management.azure.com/' goes only to" in result.message
    assert platform.seen() == [] and target.received == []


# --------------------------------------------------------------------------------- the outbound policy


def test_no_action_may_call_the_identity_endpoint(platform: IdentityEndpoint) -> None:
    """On Windows plans the endpoint is on loopback, which actions may otherwise call: it is refused to
    them by host and port, in every spelling, with or without the header."""
    port = platform.url.split(":")[2].split("/")[0]
    actions = runner()
    for host in ("127.0.0.1", "[::ffff:127.0.0.1]", "2130706433"):
        action = HttpAction(
            f"http://{host}:{port}/msi/token?resource={ARM}&api-version=2019-08-01",
            "GET",
            headers={"X-IDENTITY-HEADER": platform.header},
        )
        result = actions.run(action, action_context())
        assert not result.succeeded
        assert "refused by the outbound policy" in result.message
        assert "the platform's managed identity endpoint" in result.message
    assert platform.seen() == []


def test_the_identity_client_reaches_exactly_its_endpoint() -> None:
    """The endpoint of Linux plans is link-local (refused to actions as metadata space): the identity
    client's policy allows exactly its host and port, and nothing else, not even loopback."""
    only = OutboundPolicy(allow_metadata_endpoints=True, only=frozenset({endpoint("169.254.129.3", 8081)}))
    assert only.socket_addresses("169.254.129.3", 8081)
    for host, port in [("169.254.129.3", 8082), ("169.254.169.254", 80), ("127.0.0.1", 8081), ("example.org", 8081)]:
        with pytest.raises(OutboundRefused, match="not an endpoint this client may call"):
            only.socket_addresses(host, port)
    actions = OutboundPolicy(
        reserved=reserved_endpoints(PlatformEndpoint("http://127.0.0.1:41056/msi/token/", "h"), _no_dns)
    )
    with pytest.raises(OutboundRefused, match="managed identity endpoint"):
        actions.socket_addresses("127.0.0.1", 41056)
    assert actions.socket_addresses("127.0.0.1", 41057)  # another port of loopback stays callable
    opted_out = dataclasses.replace(actions, allow_metadata_endpoints=True)
    assert opted_out.socket_addresses("127.0.0.1", 41056)


def test_an_identity_endpoint_named_by_host_name_is_reserved_by_name_and_address() -> None:
    reserved = reserved_endpoints(
        PlatformEndpoint("http://localhost:8081/msi/token", "h"), lambda host: ["127.0.0.1", "::1"]
    )
    assert reserved == {("localhost", 8081), ("127.0.0.1", 8081), ("::1", 8081)}


def _no_dns(host: str) -> list[str]:
    raise OSError(f"no DNS in this test: {host}")
