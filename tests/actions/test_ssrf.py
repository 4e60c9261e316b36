"""The outbound policy (SSRF guard) through the real HTTP action path: ``HttpSender`` (and the runner
production builds) with real servers on 127.0.0.1, names resolved through a test DNS (the resolver seam,
:class:`~tests.support.outbound_net.FakeDns`), and a tripwire that records every connection attempt and
lets none leave loopback, so "refused" is shown as "never attempted"."""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_core.actions import ActionResult, Failure
from scheduler_core.actions.http import HttpSender
from scheduler_core.actions.http_auth import OAuthTokens
from scheduler_core.actions.outbound import MAX_REDIRECTS, OutboundPolicy
from scheduler_core.actions.registry import default_runner
from scheduler_core.model.actions import ActiveDirectoryOAuthAuthentication, HttpAction, HttpAuthentication, Secret
from scheduler_core.model.retry import Duration
from scheduler_core.settings import Settings
from tests.actions.conftest import action_context, client_certificate
from tests.support.harness import near_now
from tests.support.jobs import job_body
from tests.support.outbound_net import (
    FakeDns,
    Request,
    ScriptedServer,
    Tripwire,
    ok,
    redirect_to,
    scripted_server,
    tls_folder,
    tls_server_context,
)
from tests.support.tls import TestCa

IPV4_BLOCKED = ["169.254.169.254", "169.254.0.1", "168.63.129.16", "100.100.100.200"]
IPV6_BLOCKED = ["fd00:ec2::254", "fe80::1"]
METADATA_NAMES = [
    "metadata.azure.internal",
    "metadata.azure.com",
    "metadata.google.internal",
    "METADATA.Google.Internal.",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
]
REDIRECT_STATUSES = [301, 302, 303, 307, 308]
REFUSED = "refused by the outbound policy"


def ipv4_spellings(text: str) -> dict[str, str]:
    """URL hosts that all mean the IPv4 address ``text`` to a Linux client."""
    value = int(ipaddress.IPv4Address(text))
    parts = [int(p) for p in text.split(".")]
    high, low = value >> 16, value & 0xFFFF
    return {
        "dotted": text,
        "trailing-dot": text + ".",
        "decimal": str(value),
        "hex": hex(value),
        "octal-parts": ".".join(f"0{p:o}" for p in parts),
        "hex-parts": ".".join(hex(p) for p in parts),
        "three-parts": f"{parts[0]}.{parts[1]}.{(parts[2] << 8) + parts[3]}",
        "two-parts": f"{parts[0]}.{value & 0xFFFFFF}",
        "mapped": f"[::ffff:{text}]",
        "mapped-hex": f"[::ffff:{high:x}:{low:x}]",
        "mapped-upper": f"[::FFFF:{high:X}:{low:X}]",
        "mapped-long": f"[0:0:0:0:0:ffff:{text}]",
        "mapped-exploded": f"[{ipaddress.IPv6Address('::ffff:' + text).exploded}]",
        "compatible": f"[::{text}]",
        "nat64": f"[64:ff9b::{text}]",
        "nat64-hex": f"[64:ff9b::{high:x}:{low:x}]",
        "nat64-local": f"[64:ff9b:1::{text}]",
    }


def ipv6_spellings(text: str) -> dict[str, str]:
    address = ipaddress.IPv6Address(text)
    spellings = {
        "compressed": f"[{address.compressed}]",
        "exploded": f"[{address.exploded}]",
        "upper": f"[{text.upper()}]",
    }
    if address.is_link_local:
        spellings["zone"] = f"[{address.compressed}%25eth0]"
    return spellings


BLOCKED_SPELLINGS = [
    pytest.param(address, host, id=f"{address}-{kind}")
    for address in IPV4_BLOCKED
    for kind, host in ipv4_spellings(address).items()
] + [
    pytest.param(address, host, id=f"{address}-{kind}")
    for address in IPV6_BLOCKED
    for kind, host in ipv6_spellings(address).items()
]
#: name -> its test DNS answer; each is a metadata address in some form
BLOCKED_RESOLUTIONS = {
    "imds.test": ["169.254.169.254"],
    "imds-mapped.test": ["::ffff:169.254.169.254"],
    "imds-nat64.test": ["64:ff9b::a9fe:a9fe"],
    "wireserver.test": ["168.63.129.16"],
    "alibaba.test": ["100.100.100.200"],
    "aws-v6.test": ["fd00:ec2::254"],
    "link-local.test": ["fe80::1"],
    "one-bad-answer.test": ["127.0.0.1", "169.254.169.254"],
}


@pytest.fixture
def dns() -> FakeDns:
    return FakeDns()


@pytest.fixture
def tripwire(dns: FakeDns, monkeypatch: pytest.MonkeyPatch) -> Tripwire:
    wire = Tripwire(dns)
    wire.install(monkeypatch)
    return wire


@pytest.fixture
def target(tripwire: Tripwire) -> Iterator[ScriptedServer]:
    with scripted_server(ok) as server:
        yield server


def sender(dns: FakeDns, **kwargs: Any) -> HttpSender:
    return HttpSender(policy=OutboundPolicy(resolver=dns.resolve), timeout=5, **kwargs)


def get(url: str, authentication: HttpAuthentication | None = None) -> HttpAction:
    return HttpAction(url, "GET", authentication=authentication)


# ------------------------------------------------------------------------------------- addresses and names


@pytest.mark.parametrize(("address", "host"), BLOCKED_SPELLINGS)
def test_every_spelling_of_a_metadata_address_is_refused_before_any_connection(
    dns: FakeDns, tripwire: Tripwire, address: str, host: str
) -> None:
    result = sender(dns).send(get(f"http://{host}/latest/meta-data/"), action_context())
    assert not result.succeeded
    assert REFUSED in result.message, result.message
    assert str(ipaddress.ip_address(address)) in result.message
    assert "a cloud metadata or link-local address" in result.message
    assert tripwire.attempts == []


@pytest.mark.parametrize("name", sorted(BLOCKED_RESOLUTIONS))
def test_a_name_is_refused_when_any_address_it_resolves_to_is_a_metadata_address(
    dns: FakeDns, tripwire: Tripwire, target: ScriptedServer, name: str
) -> None:
    dns.add(name, BLOCKED_RESOLUTIONS[name])
    result = sender(dns).send(get(f"http://{name}:{target.port}/"), action_context())
    assert not result.succeeded
    assert REFUSED in result.message and f"'{name}' resolves to" in result.message, result.message
    assert tripwire.outside_loopback() == [] and target.requests() == []


@pytest.mark.parametrize("name", METADATA_NAMES)
def test_metadata_host_names_are_refused_whatever_they_resolve_to(
    dns: FakeDns, tripwire: Tripwire, target: ScriptedServer, name: str
) -> None:
    dns.add(name, ["127.0.0.1"])  # a live server: only the name can refuse it
    result = sender(dns).send(get(f"http://{name}:{target.port}/"), action_context())
    assert not result.succeeded
    assert REFUSED in result.message and "a cloud metadata host name" in result.message, result.message
    assert tripwire.attempts == [] and target.requests() == []


LOOPBACK_SPELLINGS = {
    kind: host
    for kind, host in ipv4_spellings("127.0.0.1").items()
    if kind not in ("compatible", "nat64", "nat64-hex", "nat64-local")  # not loopback to the kernel
}


@pytest.mark.parametrize("host", list(LOOPBACK_SPELLINGS.values()), ids=list(LOOPBACK_SPELLINGS))
def test_loopback_stays_reachable_in_every_spelling_and_is_connected_over_ipv4(
    dns: FakeDns, tripwire: Tripwire, target: ScriptedServer, host: str
) -> None:
    result = sender(dns).send(get(f"http://{host}:{target.port}/ping"), action_context())
    assert result.succeeded, result.message
    [seen] = target.requests()
    assert seen.path == "/ping"
    assert tripwire.attempts == ["127.0.0.1"]  # the checked address, mapped ones unwrapped to IPv4


def test_a_name_is_judged_by_what_it_resolves_to_when_it_is_connected(
    dns: FakeDns, tripwire: Tripwire, target: ScriptedServer
) -> None:
    # a rebinding DNS: harmless on the first lookup, the metadata address on the next
    dns.add("rebind.test", ["127.0.0.1"], ["169.254.169.254"])
    first = sender(dns).send(get(f"http://rebind.test:{target.port}/"), action_context())
    assert first.succeeded, first.message  # resolved once, checked, and that address connected to
    assert dns.lookups.count("rebind.test") == 1
    assert target.requests()[0].headers["Host"] == f"rebind.test:{target.port}"
    second = sender(dns).send(get(f"http://rebind.test:{target.port}/"), action_context())
    assert not second.succeeded and REFUSED in second.message, second.message
    assert "'rebind.test' resolves to 169.254.169.254" in second.message
    assert tripwire.outside_loopback() == [] and len(target.requests()) == 1


def test_private_and_loopback_addresses_are_allowed_by_the_policy(dns: FakeDns) -> None:
    policy = OutboundPolicy(resolver=dns.resolve)
    for host in ("127.0.0.1", "10.0.0.5", "192.168.1.1", "172.16.0.1", "[::1]", "[fd12::1]", "[::ffff:10.0.0.5]"):
        assert policy.addresses(host)  # no refusal (nothing is connected to)


def test_proxies_from_the_environment_are_not_used_so_the_checked_address_is_the_one_connected(
    dns: FakeDns, tripwire: Tripwire, target: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with scripted_server(ok) as proxy:
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.setenv(name, proxy.base_url)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        refused = sender(dns).send(get("http://[::ffff:a9fe:a9fe]/latest/meta-data/"), action_context())
        direct = sender(dns).send(get(f"http://127.0.0.1:{target.port}/direct"), action_context())
        assert proxy.requests() == []
    assert not refused.succeeded and REFUSED in refused.message, refused.message
    assert direct.succeeded, direct.message
    assert [r.path for r in target.requests()] == ["/direct"]


def test_no_proxy_or_netrc_credentials_from_the_environment_reach_a_target_or_a_redirect_hop(
    dns: FakeDns, tripwire: Tripwire, target: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with scripted_server(ok) as proxy:
        for name in ("HTTP_PROXY", "http_proxy"):
            monkeypatch.setenv(name, f"http://proxy-user:proxy-password@127.0.0.1:{proxy.port}")
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        netrc = tmp_path / "netrc"
        netrc.write_text("machine 127.0.0.1 login netrc-user password netrc-password\n")
        monkeypatch.setenv("NETRC", str(netrc))
        with scripted_server(redirect_to(f"{target.base_url}/landed", 302)) as first:
            result = sender(dns).send(get(first.base_url + "/start"), action_context())
            [start] = first.requests()
        assert proxy.requests() == []
    assert result.succeeded, result.message
    [landed] = target.requests()
    for request in (start, landed):
        assert "Proxy-Authorization" not in request.headers and "Authorization" not in request.headers


# ------------------------------------------------------------------------------------------------ redirects

REDIRECT_TARGETS = {
    "literal": "http://169.254.169.254/latest/meta-data/",
    "mapped": "http://[::ffff:a9fe:a9fe]/latest/meta-data/",
    "decimal": "http://2852039166/latest/meta-data/",
    "name": "http://imds.test/latest/meta-data/",
    "metadata-name": "http://metadata.google.internal/computeMetadata/v1/",
}


@pytest.mark.parametrize("status", REDIRECT_STATUSES)
@pytest.mark.parametrize("location", list(REDIRECT_TARGETS.values()), ids=list(REDIRECT_TARGETS))
def test_a_redirect_to_a_metadata_address_is_refused_at_its_hop(
    dns: FakeDns, tripwire: Tripwire, status: int, location: str
) -> None:
    dns.add("imds.test", ["169.254.169.254"])
    dns.add("metadata.google.internal", ["169.254.169.254"])
    with scripted_server(redirect_to(location, status)) as allowed:
        result = sender(dns).send(get(allowed.base_url + "/start"), action_context())
        assert len(allowed.requests()) == 1
    assert not result.succeeded
    assert result.message.startswith("Request refused by the outbound policy: "), result.message
    assert result.message.endswith(" | Http Action - Request to host '127.0.0.1'"), result.message
    assert "a redirect to '" in result.message, result.message
    assert (result.failure, result.status_code) == (Failure.REFUSED, None)  # never named by retryOn
    assert tripwire.outside_loopback() == []


@pytest.mark.parametrize("status", REDIRECT_STATUSES)
def test_a_redirect_to_an_allowed_host_is_followed_with_the_hop_resolved_when_connected(
    dns: FakeDns, tripwire: Tripwire, target: ScriptedServer, status: int
) -> None:
    dns.add("next-hop.test", ["127.0.0.1"])
    with scripted_server(redirect_to(f"http://next-hop.test:{target.port}/landed", status)) as first:
        action = HttpAction(first.base_url + "/start", "POST", body="b")
        result = sender(dns).send(action, action_context())
    assert result.succeeded, result.message
    [landed] = target.requests()
    assert landed.path == "/landed" and landed.headers["Host"] == f"next-hop.test:{target.port}"
    # 307 and 308 keep the method and body; 301, 302 and 303 turn a POST into a GET (as browsers and requests)
    assert landed.method == ("POST" if status in (307, 308) else "GET")
    assert dns.lookups == ["next-hop.test"]


def test_redirects_are_followed_at_most_ten_times(dns: FakeDns, tripwire: Tripwire) -> None:
    with scripted_server(redirect_to("/again", 302)) as loop:
        result = sender(dns).send(get(loop.base_url + "/again"), action_context())
        assert len(loop.requests()) == MAX_REDIRECTS + 1 == 11
    assert not result.succeeded
    assert "failed: TooManyRedirects" in result.message


# ------------------------------------------------------------------------------------------ TLS and auth


@pytest.fixture
def ca_folder(test_ca: TestCa, trust_test_ca: Path) -> Iterator[Path]:
    with tls_folder() as folder:
        yield folder


def test_tls_is_checked_against_the_name_while_the_checked_address_is_connected(
    dns: FakeDns, tripwire: Tripwire, test_ca: TestCa, ca_folder: Path
) -> None:
    dns.add("localhost", ["127.0.0.1"])  # the server certificate is for localhost and 127.0.0.1
    dns.add("not-in-the-certificate.test", ["127.0.0.1"])
    with scripted_server(ok, tls=tls_server_context(test_ca, ca_folder)) as server:
        good = sender(dns).send(get(f"https://localhost:{server.port}/tls"), action_context())
        bad = sender(dns).send(get(f"https://not-in-the-certificate.test:{server.port}/tls"), action_context())
        seen = server.requests()
    assert good.succeeded, good.message
    assert [(r.sni, r.headers["Host"]) for r in seen] == [("localhost", f"localhost:{server.port}")]
    assert not bad.succeeded and "TLS error" in bad.message, bad.message


def test_client_certificate_calls_are_checked_on_every_hop(
    dns: FakeDns, tripwire: Tripwire, test_ca: TestCa, ca_folder: Path
) -> None:
    pfx = test_ca.issue("scheduler-client", server=False).pfx_base64("pw")
    auth = client_certificate(pfx, "pw")
    dns.add("localhost", ["127.0.0.1"])
    dns.add("imds.test", ["169.254.169.254"])

    def respond(request: Request) -> tuple[int, dict[str, str], bytes]:
        if request.path == "/to-http":
            return 302, {"Location": "http://[::ffff:169.254.169.254]/latest/meta-data/"}, b""
        if request.path == "/to-https":
            return 307, {"Location": "https://imds.test/metadata/identity/oauth2/token"}, b""
        return ok(request)

    with scripted_server(respond, tls=tls_server_context(test_ca, ca_folder, require_client_cert=True)) as mtls:
        http = sender(dns)
        reached = http.send(get(f"https://localhost:{mtls.port}/hello", auth), action_context())
        to_http = http.send(get(f"https://localhost:{mtls.port}/to-http", auth), action_context())
        to_https = http.send(get(f"https://localhost:{mtls.port}/to-https", auth), action_context())
        direct = http.send(get("https://[::ffff:a9fe:a9fe]/", auth), action_context())
        seen = mtls.requests()
    assert reached.succeeded, reached.message
    assert [r.client_subject for r in seen] == ["commonName=scheduler-client"] * 3
    for result in (to_http, to_https):
        assert not result.succeeded and REFUSED in result.message and "a redirect to" in result.message
    assert not direct.succeeded and REFUSED in direct.message, direct.message
    assert tripwire.outside_loopback() == []


def test_the_oauth_authority_is_connected_only_through_the_policy(
    dns: FakeDns, tripwire: Tripwire, target: ScriptedServer
) -> None:
    dns.add("login.test", ["::ffff:169.254.169.254"])
    oauth = OAuthTokens(authority_host="https://login.test", policy=OutboundPolicy(resolver=dns.resolve))
    auth = ActiveDirectoryOAuthAuthentication(
        tenant="contoso.onmicrosoft.com",
        audience="https://management.core.windows.net/",
        client_id="11111111-2222-3333-4444-555555555555",
        secret=Secret("oauth-secret-value"),
    )
    result = sender(dns, oauth=oauth).send(get(f"{target.base_url}/api", auth), action_context())
    assert not result.succeeded
    assert "not sent: no Entra ID token" in result.message, result.message
    # The mapped address is spelled the same on every Python (3.13's str() differs from 3.11's).
    assert "'login.test' resolves to ::ffff:169.254.169.254 (169.254.169.254), a cloud metadata" in result.message
    assert "oauth-secret-value" not in result.message
    assert tripwire.outside_loopback() == [] and target.requests() == []


# ---------------------------------------------------------------------------------- settings and history


def test_the_opt_out_setting_lets_actions_call_metadata_endpoints(
    storage_env: Settings, dns: FakeDns, tripwire: Tripwire, target: ScriptedServer
) -> None:
    dns.add("metadata.google.internal", ["127.0.0.1"])
    action = get(f"http://metadata.google.internal:{target.port}/computeMetadata/v1/")
    assert storage_env.allow_metadata_endpoints is False
    refused = default_runner(storage_env, resolver=dns.resolve).run(action, action_context())
    assert not refused.succeeded and REFUSED in refused.message
    allowed_settings = dataclasses.replace(storage_env, allow_metadata_endpoints=True)
    allowed = default_runner(allowed_settings, resolver=dns.resolve).run(action, action_context())
    assert allowed.succeeded, allowed.message
    assert len(target.requests()) == 1


def test_a_refused_redirect_hop_is_a_failed_attempt_in_history_with_its_reason(
    memory_env: Settings, dns: FakeDns, tripwire: Tripwire
) -> None:
    dns.add("imds.test", ["169.254.169.254"])
    # the pipeline on the memory adapter, with the production runner built with the test DNS
    pipeline = near_now(memory_env, runner=default_runner(memory_env, resolver=dns.resolve))
    with scripted_server(redirect_to("http://imds.test/metadata/identity/oauth2/token", 302)) as allowed:
        due = pipeline.clock.now + timedelta(seconds=20)
        request = {"uri": allowed.base_url + "/hook", "method": "GET"}
        action = {"type": "Http", "request": request, "retryPolicy": {"retryType": "None"}}
        pipeline.put_job("ssrf", job_body(due, action))
        pipeline.run_until(due + timedelta(minutes=2))
        assert len(allowed.requests()) == 1
    history = list(reversed(pipeline.services.service.list_history(pipeline.ref("ssrf"))))
    assert [(h.action_name, h.status) for h in history] == [("MainAction", "Failed")]
    assert REFUSED in history[0].message and "a redirect to 'imds.test'" in history[0].message
    assert "169.254.169.254, a cloud metadata or link-local address" in history[0].message
    assert tripwire.outside_loopback() == []


# ----------------------------------------------------------------------------- asyncPolling's Location hop


POLLED = timedelta(minutes=5)


def accepted_then_polled(dns: FakeDns, location: str) -> tuple[ActionResult, ActionResult]:
    """A POST answered ``202`` with ``location`` (asyncPolling on), then the poll of what it named."""
    with scripted_server(redirect_to(location, 202)) as first:
        action = dataclasses.replace(
            HttpAction(first.base_url + "/start", "POST", body="b"), async_polling=Duration(POLLED)
        )
        accepted = sender(dns).send(action, action_context())
        assert accepted.poll is not None, accepted.message
        polling = dataclasses.replace(action_context(), poll=accepted.poll)
        return accepted, sender(dns).send(action, polling)


@pytest.mark.parametrize(("address", "host"), BLOCKED_SPELLINGS)
def test_every_spelling_of_a_metadata_address_as_a_location_is_refused_before_any_connection(
    dns: FakeDns, tripwire: Tripwire, address: str, host: str
) -> None:
    accepted, polled = accepted_then_polled(dns, f"http://{host}/latest/meta-data/")
    assert accepted.poll == f"http://{host}/latest/meta-data/"
    assert not polled.succeeded and REFUSED in polled.message, polled.message
    assert polled.failure is Failure.REFUSED
    assert tripwire.outside_loopback() == []


@pytest.mark.parametrize("name", METADATA_NAMES)
def test_a_metadata_host_name_as_a_location_is_refused(dns: FakeDns, tripwire: Tripwire, name: str) -> None:
    dns.add(name, ["127.0.0.1"])
    _, polled = accepted_then_polled(dns, f"http://{name}/status")
    assert REFUSED in polled.message and "a cloud metadata host name" in polled.message, polled.message
    assert tripwire.attempts == [] or tripwire.outside_loopback() == []


@pytest.mark.parametrize("location", list(REDIRECT_TARGETS.values()), ids=list(REDIRECT_TARGETS))
def test_a_location_that_redirects_to_a_metadata_address_is_refused_at_that_hop(
    dns: FakeDns, tripwire: Tripwire, location: str
) -> None:
    dns.add("imds.test", ["169.254.169.254"])
    dns.add("metadata.google.internal", ["169.254.169.254"])
    with scripted_server(redirect_to(location, 302)) as bouncer:
        _, polled = accepted_then_polled(dns, bouncer.base_url + "/status")
    assert REFUSED in polled.message and "a redirect to '" in polled.message, polled.message
    assert tripwire.outside_loopback() == []


@pytest.mark.parametrize("location", ["file:///etc/passwd", "gopher://127.0.0.1/", "ftp://127.0.0.1/x"])
def test_a_location_that_is_not_http_is_not_called(dns: FakeDns, tripwire: Tripwire, location: str) -> None:
    _, polled = accepted_then_polled(dns, location)
    assert not polled.succeeded and polled.failure is Failure.NOT_SENT, polled.message
    assert tripwire.outside_loopback() == []
