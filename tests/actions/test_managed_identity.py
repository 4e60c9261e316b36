"""Managed identity: actions without a key use the app's credential (here a test double, TestCredential,
since no identity endpoint can run locally) and send its token to the real peers."""

from __future__ import annotations

from pathlib import Path

from scheduler_core import settings
from scheduler_core.actions.registry import default_runner
from scheduler_core.actions.service_bus import ServiceBusSender
from scheduler_core.actions.storage_queue import StorageQueueSender
from scheduler_core.model.actions import ServiceBusQueueAction, ServiceBusTopicAction, StorageQueueAction
from tests.actions.conftest import TestCredential, action_context
from tests.support.amqp_broker import AmqpBroker
from tests.support.tls import Seen, TestCa, https_peer


def test_service_bus_without_sas_key_uses_the_identity(broker: AmqpBroker) -> None:
    credential = TestCredential()
    sender = ServiceBusSender(endpoint=broker.endpoint, credential_factory=lambda: credential, timeout=10)
    action = ServiceBusQueueAction("contoso", "orders", "by identity")
    try:
        result = sender.send(action, action_context())
    finally:
        sender.close()
    assert result.succeeded, result.message
    assert broker.wait_for(1, "orders")[0].body == b"by identity"
    assert credential.scopes and credential.scopes[0] == ("https://servicebus.azure.net//.default",)  # the SDK's scope
    assert [t.token for t in broker.tokens] == ["test-managed-identity-token"]


PUT_MESSAGE_REPLY = (
    b'<?xml version="1.0" encoding="utf-8"?><QueueMessagesList><QueueMessage><MessageId>m-1</MessageId>'
    b"<InsertionTime>Fri, 09 Oct 2026 21:04:30 GMT</InsertionTime><ExpirationTime>Fri, 16 Oct 2026 21:04:30 GMT"
    b"</ExpirationTime><PopReceipt>cG9w</PopReceipt><TimeNextVisible>Fri, 09 Oct 2026 21:04:30 GMT</TimeNextVisible>"
    b"</QueueMessage></QueueMessagesList>"
)


def test_storage_queue_without_sas_token_uses_the_identity(test_ca: TestCa, trust_test_ca: Path) -> None:
    """The storage client sends tokens only over HTTPS, which the test Azurite does not serve, so the peer here
    is an HTTPS server on loopback answering Put Message as the Queue service does."""
    credential = TestCredential()

    def queue_service(seen: Seen) -> tuple[int, str, bytes]:
        return 201, "application/xml", PUT_MESSAGE_REPLY

    with https_peer(test_ca, queue_service, require_client_cert=False) as peer:
        sender = StorageQueueSender(
            endpoint=peer.base_url + "/{account}", credential_factory=lambda: credential, message_format="text"
        )
        action = StorageQueueAction("acct", "jobs", "by identity")
        result = sender.send(action, action_context())
    assert result.succeeded, result.message
    assert credential.scopes == [("https://storage.azure.com/.default",)]
    [seen] = peer.seen
    assert seen.method == "POST" and seen.path.startswith("/acct/jobs/messages")
    assert seen.headers["Authorization"] == "Bearer test-managed-identity-token"
    assert b"<MessageText>by identity</MessageText>" in seen.body


def test_default_runner_uses_the_given_credential_for_keyless_actions(broker: AmqpBroker) -> None:
    credential = TestCredential()
    config = settings.load(
        {"AzureWebJobsStorage__accountName": "acct", "SCHEDULER_SERVICE_BUS_ENDPOINT": broker.endpoint}
    )
    runner = default_runner(config, credential=credential)
    action = ServiceBusTopicAction("contoso", "events", "x")
    assert runner.run(action, action_context()).succeeded
    assert [t.token for t in broker.tokens] == ["test-managed-identity-token"]
