"""Where the app's own identity may be presented (scheduler_core.identity.IdentityScope): only to hosts under
the configured Storage / Service Bus endpoints and SCHEDULER_IDENTITY_ALLOWED_HOSTS. Pure code: hosts are
judged, never looked up."""

from __future__ import annotations

import pytest

from scheduler_core import settings
from scheduler_core.identity import HostRule, IdentityScope

PUBLIC = IdentityScope()


@pytest.mark.parametrize(
    "namespace",
    ["contoso", "contoso.servicebus.windows.net", "CONTOSO.ServiceBus.Windows.Net.", "a.b.servicebus.windows.net"],
)
def test_namespaces_under_the_public_cloud_suffix_get_the_identity(namespace: str) -> None:
    assert PUBLIC.service_bus_refusal(PUBLIC.service_bus_host(namespace)) is None


@pytest.mark.parametrize(
    "namespace",
    [
        "evil.example.com",
        "169.254.169.254",
        "10.0.0.4",
        "127.0.0.1",
        "0x7f.1",
        "servicebus.windows.net",
        "servicebus.windows.net.evil.com",
        "contoso.servicebus.windows.net.evil.com",
        "evilservicebus.windows.net",
        "contoso.servicebus.chinacloudapi.cn",
        "metadata.azure.com",
    ],
)
def test_any_other_host_is_refused_and_the_refusal_names_the_rule(namespace: str) -> None:
    refusal = PUBLIC.service_bus_refusal(PUBLIC.service_bus_host(namespace))
    assert refusal is not None
    assert "*.servicebus.windows.net" in refusal and "SCHEDULER_IDENTITY_ALLOWED_HOSTS" in refusal


def test_a_sovereign_cloud_is_configured_by_the_endpoint_setting() -> None:
    china = IdentityScope(
        service_bus_endpoint="servicebus.chinacloudapi.cn", storage_queue_endpoint="core.chinacloudapi.cn"
    )
    assert china.service_bus_refusal(china.service_bus_host("contoso")) is None
    assert china.service_bus_refusal(china.service_bus_host("contoso.servicebus.chinacloudapi.cn")) is None
    assert china.service_bus_refusal(china.service_bus_host("contoso.servicebus.windows.net")) is not None
    assert china.storage_queue_host("acct") == "acct.queue.core.chinacloudapi.cn"
    assert china.storage_queue_refusal(china.storage_queue_host("acct")) is None


def test_extra_hosts_match_themselves_and_names_also_their_subdomains() -> None:
    scope = IdentityScope(extra_hosts=("servicebus.usgovcloudapi.net", "127.0.0.1", "[::1]", "*.Example.org."))
    for host in ("ns.servicebus.usgovcloudapi.net", "127.0.0.1", "::1", "[::1]", "example.org", "a.example.org"):
        assert scope.service_bus.allows(host), host
        assert scope.storage_queue.allows(host), host
    for host in ("127.0.0.2", "1.127.0.0.1", "x.example.com", "example.org.evil.com", ""):
        assert not scope.service_bus.allows(host), host


@pytest.mark.parametrize(
    ("setting", "allowed", "refused"),
    [
        ("amqp://127.0.0.1:5672", ["127.0.0.1"], ["10.0.0.4", "localhost", "x.127.0.0.1"]),
        ("sb://{namespace}.sb.example.net:5671", ["a.sb.example.net"], ["sb.example.net", "example.net", "evil.com"]),
        ("amqp://{namespace}:5672", [], ["127.0.0.1", "evil.com", "a.b"]),
        ("amqp://x{namespace}:5672", [], ["xevil.com"]),
    ],
)
def test_a_url_template_trusts_its_own_host_or_the_suffix_after_the_placeholder(
    setting: str, allowed: list[str], refused: list[str]
) -> None:
    rule = HostRule.from_endpoint(setting, "{namespace}")
    for host in allowed:
        assert rule.allows(host), host
    for host in refused:
        assert not rule.allows(host), host


def test_the_host_a_template_gives_is_the_host_judged() -> None:
    scope = IdentityScope(service_bus_endpoint="amqp://{namespace}:5672", extra_hosts=("127.0.0.1",))
    assert scope.service_bus_host("127.0.0.1") == "127.0.0.1"
    assert scope.service_bus_refusal("127.0.0.1") is None
    assert scope.service_bus_refusal(scope.service_bus_host("10.0.0.4")) is not None
    azurite = IdentityScope(storage_queue_endpoint="http://127.0.0.1:10001/{account}")
    assert azurite.storage_queue_host("devstoreaccount1") == "127.0.0.1"
    assert azurite.storage_queue_refusal("127.0.0.1") is None


def test_the_scope_is_read_from_the_settings() -> None:
    config = settings.load(
        {
            "AzureWebJobsStorage__accountName": "acct",
            "SCHEDULER_SERVICE_BUS_ENDPOINT": "servicebus.usgovcloudapi.net",
            "SCHEDULER_IDENTITY_ALLOWED_HOSTS": "sb.internal.example",
        }
    )
    scope = IdentityScope.from_settings(config)
    assert scope.service_bus_refusal("ns.servicebus.usgovcloudapi.net") is None
    assert scope.service_bus_refusal("ns.sb.internal.example") is None
    assert scope.service_bus_refusal("ns.servicebus.windows.net") is not None
    assert scope.storage_queue_refusal("acct.queue.core.windows.net") is None
    assert scope.storage_queue_refusal("acct.sb.internal.example") is None
