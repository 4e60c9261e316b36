"""Service Bus queue and topic actions: the official azure-servicebus client against the AMQP test broker."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core import settings
from scheduler_core.actions import Failure
from scheduler_core.actions.registry import default_runner
from scheduler_core.actions.service_bus import ServiceBusSender, namespace_endpoint
from scheduler_core.definitions import read_duration
from scheduler_core.model.actions import (
    BrokeredMessageProperties,
    Secret,
    ServiceBusQueueAction,
    ServiceBusTopicAction,
    SharedAccessKeyAuthentication,
    TransportType,
)
from scheduler_core.model.retry import Duration
from tests.actions.conftest import TestCredential, action_context
from tests.support.amqp_broker import AmqpBroker
from tests.support.loopback_guard import resolved

__all__ = ["resolved"]  # a fixture

KEY = "c2VjcmV0LXNhcy1rZXktdmFsdWU="

ALL_BROKERED = BrokeredMessageProperties(
    content_type="application/json",
    correlation_id="corr-1",
    force_persistence=True,
    label="the-label",
    message_id="msg-1",
    partition_key="session-1",
    reply_to="replies",
    reply_to_session_id="reply-session",
    scheduled_enqueue_time_utc=datetime(2030, 5, 6, 7, 8, 9, tzinfo=UTC),
    session_id="session-1",
    time_to_live=Duration(timedelta(minutes=5)),
    to="destination",
    via_partition_key="via-1",
)


def sb_action(
    kind: str, entity: str, key: str | None = KEY, namespace: str = "contoso", **extra: Any
) -> ServiceBusQueueAction | ServiceBusTopicAction:
    action_class = ServiceBusQueueAction if kind == "ServiceBusQueue" else ServiceBusTopicAction
    authentication = SharedAccessKeyAuthentication(
        "RootManageSharedAccessKey", Secret(key) if key is not None else None
    )
    return action_class(namespace, entity, '{"job":"j1"}', authentication=authentication, **extra)


@pytest.fixture
def sender(broker: AmqpBroker) -> Any:
    created = ServiceBusSender(endpoint=broker.endpoint, timeout=10)
    yield created
    created.close()


def test_endpoint_from_suffix_or_template() -> None:
    assert namespace_endpoint("servicebus.windows.net", "contoso").host == "contoso.servicebus.windows.net"
    assert namespace_endpoint("servicebus.chinacloudapi.cn", "c").host == "c.servicebus.chinacloudapi.cn"
    local = namespace_endpoint("amqp://127.0.0.1:5673", "contoso")
    assert (local.host, local.use_tls) == ("127.0.0.1:5673", False)
    assert namespace_endpoint("sb://{namespace}.example.net", "c").use_tls


@pytest.mark.parametrize("kind", ["ServiceBusQueue", "ServiceBusTopic"])
def test_every_field_arrives_as_its_amqp_counterpart(sender: ServiceBusSender, broker: AmqpBroker, kind: str) -> None:
    entity = "orders" if kind == "ServiceBusQueue" else "events"
    action = sb_action(
        kind,
        entity,
        transport_type=TransportType.NET_MESSAGING,
        brokered_properties=ALL_BROKERED,
        custom_properties={"region": "west", "attempt": "3"},
    )
    result = sender.send(action, action_context())
    assert result.succeeded, result.message
    assert f"'{entity}' in namespace 'contoso'" in result.message and "msg-1" in result.message
    [received] = broker.wait_for(1, entity)
    message = received.message
    assert received.body == b'{"job":"j1"}'
    assert received.application_properties == {"region": "west", "attempt": "3"}
    assert message.content_type == "application/json"
    assert message.correlation_id == "corr-1"
    assert message.subject == "the-label"
    assert message.id == "msg-1"
    assert message.reply_to == "replies"
    assert message.reply_to_group_id == "reply-session"
    assert message.group_id == "session-1"
    assert message.address == "destination"
    assert message.ttl == 300.0
    annotations = received.annotations
    assert annotations["x-opt-partition-key"] == "session-1"
    assert annotations["x-opt-via-partition-key"] == "via-1"
    scheduled = datetime(2030, 5, 6, 7, 8, 9, tzinfo=UTC)
    assert int(annotations["x-opt-scheduled-enqueue-time"]) == int(scheduled.timestamp() * 1000)
    assert broker.tokens[0].audience.endswith(f"/{entity}")
    assert "skn=RootManageSharedAccessKey" in broker.tokens[0].token


def test_message_id_defaults_to_the_execution_id(sender: ServiceBusSender, broker: AmqpBroker) -> None:
    assert sender.send(sb_action("ServiceBusQueue", "orders"), action_context("exec-77")).succeeded
    [received] = broker.wait_for(1, "orders")
    assert received.message.id == "exec-77"
    assert received.application_properties == {}


def test_sender_is_reused_per_namespace_and_entity(sender: ServiceBusSender, broker: AmqpBroker) -> None:
    for i in range(20):
        assert sender.send(sb_action("ServiceBusQueue", "orders"), action_context(f"e{i}")).succeeded
    assert broker.stats() == (1, 1)  # one connection, one link for 20 messages
    for i in range(5):
        assert sender.send(sb_action("ServiceBusTopic", "events"), action_context(f"t{i}")).succeeded
    assert broker.stats() == (2, 2)
    assert sender.opened == 2 and sender.open_senders() == 2
    assert [m.message.id for m in broker.received("orders")] == [f"e{i}" for i in range(20)]


def test_concurrent_sends_to_a_queue_and_a_topic(sender: ServiceBusSender, broker: AmqpBroker) -> None:
    results: list[bool] = []
    lock = threading.Lock()

    def work(worker: int) -> None:
        for i in range(10):
            kind, entity = ("ServiceBusQueue", "orders") if (worker + i) % 2 else ("ServiceBusTopic", "events")
            ok = sender.send(sb_action(kind, entity), action_context(f"w{worker}-{i}")).succeeded
            with lock:
                results.append(ok)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert results.count(True) == 80
    received = broker.wait_for(80)
    assert sorted(m.message.id for m in received) == sorted(f"w{w}-{i}" for w in range(8) for i in range(10))
    assert broker.stats() == (2, 2)  # still one sender per entity


def test_idle_senders_are_closed_and_reopened_on_demand(broker: AmqpBroker) -> None:
    sender = ServiceBusSender(endpoint=broker.endpoint, idle_seconds=0.3, timeout=10)
    try:
        assert sender.send(sb_action("ServiceBusQueue", "orders"), action_context("a")).succeeded
        assert sender.open_senders() == 1
        deadline = time.monotonic() + 10
        while sender.open_senders() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sender.open_senders() == 0  # closed by the idle sweep
        assert sender.send(sb_action("ServiceBusQueue", "orders"), action_context("b")).succeeded
        assert broker.stats()[0] == 2 and sender.opened == 2
    finally:
        sender.close()


def test_unknown_entity_fails_clearly(sender: ServiceBusSender, broker: AmqpBroker) -> None:
    result = sender.send(sb_action("ServiceBusQueue", "missing"), action_context())
    assert not result.succeeded
    assert result.message.startswith("Could not send: the connection or the link was refused or broke"), result.message
    assert result.message.endswith("| ServiceBusQueue Action - queue 'missing' in namespace 'contoso'")
    assert (result.failure, result.failure_status) == (Failure.CONNECTION_ERROR, None)  # retryOn: ConnectionError
    assert KEY not in result.message
    assert sender.open_senders() == 0  # a failed sender is not kept


def test_refused_key_fails_without_quoting_it(sender: ServiceBusSender, broker: AmqpBroker) -> None:
    broker.deny_key_names.add("RootManageSharedAccessKey")
    result = sender.send(sb_action("ServiceBusTopic", "events"), action_context())
    assert not result.succeeded
    assert result.message.startswith("Access denied: the shared access key was refused"), result.message
    assert (result.failure, result.service_status) == (Failure.STATUS, 401)  # as Service Bus's REST API answers
    assert result.message.endswith("| ServiceBusTopic Action - topic 'events' in namespace 'contoso'")
    assert KEY not in result.message and "sig=" not in result.message.replace("sig=***", "")
    assert broker.received() == []


def test_partition_key_other_than_session_id_is_refused_before_sending(
    sender: ServiceBusSender, broker: AmqpBroker
) -> None:
    brokered = BrokeredMessageProperties(session_id="a", partition_key="b")
    action = sb_action("ServiceBusQueue", "orders", brokered_properties=brokered)
    result = sender.send(action, action_context())
    assert not result.succeeded
    assert result.message.startswith("Message not sent: ") and "partition_key" in result.message, result.message
    assert result.failure is Failure.NOT_SENT
    assert result.message.endswith("| ServiceBusQueue Action - queue 'orders' in namespace 'contoso'")
    assert broker.stats() == (0, 0)


@pytest.mark.parametrize("ttl", ["P60D", "10675199.02:48:05", "P10675199DT2H48M5S"])
def test_a_time_to_live_beyond_the_amqp_header_is_sent_as_the_entitys_default(
    sender: ServiceBusSender, broker: AmqpBroker, ttl: str
) -> None:
    """The header holds at most 2**32 - 1 ms (49.7 days); the SDK fails on more. A longer time to live
    (accepted up to the largest TimeSpan) leaves the header out: the entity's own default applies."""
    time_to_live = Duration(*read_duration(ttl, "timeToLive"))
    action = sb_action(
        "ServiceBusQueue", "orders", brokered_properties=BrokeredMessageProperties(time_to_live=time_to_live)
    )
    result = sender.send(action, action_context())
    assert result.succeeded, result.message
    [received] = broker.wait_for(1, "orders")
    assert not received.message.ttl


def test_a_time_to_live_within_the_amqp_header_is_sent_as_given(sender: ServiceBusSender, broker: AmqpBroker) -> None:
    brokered = BrokeredMessageProperties(time_to_live=Duration(timedelta(days=49), "timespan"))
    action = sb_action("ServiceBusQueue", "orders", brokered_properties=brokered)
    assert sender.send(action, action_context()).succeeded
    [received] = broker.wait_for(1, "orders")
    assert received.message.ttl == 49 * 86400.0


# ----------------------------------------------------------------------- where the identity may go


def keyless(namespace: str, entity: str = "orders") -> ServiceBusQueueAction:
    return ServiceBusQueueAction(namespace, entity, "by identity")


@pytest.mark.parametrize(
    "namespace",
    [
        "evil.example.com",
        "169.254.169.254",
        "10.0.0.4",
        "127.0.0.1",
        "servicebus.windows.net",
        "contoso.servicebus.windows.net.example.com",
        "contososervicebus.windows.net",
    ],
)
def test_the_apps_identity_is_never_sent_to_a_host_outside_the_endpoint_suffix(
    namespace: str, resolved: list[str]
) -> None:
    credential = TestCredential()
    sender = ServiceBusSender(credential_factory=lambda: credential, timeout=5, identity_hosts=())
    try:
        result = sender.send(keyless(namespace), action_context())
    finally:
        sender.close()
    assert not result.succeeded
    assert "no sasKey is given" in result.message and "*.servicebus.windows.net" in result.message, result.message
    assert f"host '{namespace}' is not one of them" in result.message
    assert result.failure is Failure.REFUSED
    assert credential.scopes == []  # no token was even asked for
    assert resolved == []  # nor the host looked up
    assert sender.opened == 0


def test_the_identity_goes_to_an_allowed_host_only(broker: AmqpBroker, resolved: list[str]) -> None:
    """The endpoint template puts the namespace in the host (``amqp://{namespace}:port``), so the job names
    the host: 127.0.0.1 is allowed by SCHEDULER_IDENTITY_ALLOWED_HOSTS in one sender and not in the other."""
    port = broker.endpoint.rsplit(":", 1)[1]
    template = f"amqp://{{namespace}}:{port}"
    credential = TestCredential()
    allowed = ServiceBusSender(template, lambda: credential, timeout=10, identity_hosts=("127.0.0.1",))
    refused = ServiceBusSender(template, lambda: credential, timeout=10, identity_hosts=("localhost",))
    try:
        denied = refused.send(keyless("127.0.0.1"), action_context("e1"))
        assert not denied.succeeded and "no sasKey is given" in denied.message, denied.message
        assert broker.stats() == (0, 0) and credential.scopes == []
        sent = allowed.send(keyless("127.0.0.1"), action_context("e2"))
        assert sent.succeeded, sent.message
    finally:
        allowed.close()
        refused.close()
    assert [m.message.id for m in broker.wait_for(1, "orders")] == ["e2"]
    assert [t.token for t in broker.tokens] == ["test-managed-identity-token"]


def test_the_allowed_hosts_setting_reaches_the_sender(broker: AmqpBroker) -> None:
    port = broker.endpoint.rsplit(":", 1)[1]
    config = settings.load(
        {
            "AzureWebJobsStorage__accountName": "acct",
            "SCHEDULER_SERVICE_BUS_ENDPOINT": f"amqp://{{namespace}}:{port}",
            "SCHEDULER_IDENTITY_ALLOWED_HOSTS": "example.net; 127.0.0.1",
        }
    )
    result = default_runner(config, credential=TestCredential()).run(keyless("127.0.0.1"), action_context())
    assert result.succeeded, result.message


def test_a_sas_key_may_go_to_the_host_the_job_names(broker: AmqpBroker, resolved: list[str]) -> None:
    port = broker.endpoint.rsplit(":", 1)[1]
    sender = ServiceBusSender(f"amqp://{{namespace}}:{port}", timeout=10, identity_hosts=())
    action = sb_action("ServiceBusQueue", "orders", namespace="127.0.0.1")
    try:
        result = sender.send(action, action_context())
    finally:
        sender.close()
    assert result.succeeded, result.message
    assert "skn=RootManageSharedAccessKey" in broker.tokens[0].token
