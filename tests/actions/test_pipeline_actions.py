"""Each new action type end to end through the executor (the memory adapter's stores, simulated time), with
the runner that production uses (``default_runner``) pointed at the local peers (a queue on Azurite, an AMQP
broker, HTTPS peers), and error actions of another type."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_core.actions import ActionRunner
from scheduler_core.actions.registry import default_runner
from scheduler_core.settings import Settings
from tests.actions.conftest import AzuriteQueue, TestCredential
from tests.support.amqp_broker import AmqpBroker
from tests.support.harness import JC, STANDARD_PLAN, Deployment, ticking
from tests.support.jobs import job_body
from tests.support.tls import HttpsPeer, Seen, TestCa, https_peer, token_endpoint

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

SB_KEY = "c2FzLWtleS1mb3ItdGhlLXBpcGVsaW5l"
OAUTH_SECRET = "pipeline-oauth-secret-value"
ONE_RETRY = {"retryType": "Fixed", "retryInterval": "PT15S", "retryCount": 1}


class ActionPipeline(Deployment):
    """The pipeline harness with the production runner (``default_runner``) instead of HTTP only."""

    @classmethod
    def near(cls, settings: Settings, start: datetime, credential: TestCredential) -> ActionPipeline:
        """On the memory adapter (these tests are about the actions, not the stores), from ``start``."""
        runner = default_runner(settings, credential=credential)
        return cls.on_memory(settings, ticking(start), collection=JC, collection_body=STANDARD_PLAN, runner=runner)

    @property
    def runner(self) -> ActionRunner:
        return self.executor.runner

    def run_once(self, name: str, action: dict[str, Any]) -> list[Any]:
        due = self.clock.now + timedelta(seconds=20)
        self.put_job(name, job_body(due, action))
        self.run_until(due + timedelta(minutes=2))
        return list(reversed(self.services.service.list_history(self.ref(name))))


def mailbox(queue: AzuriteQueue, message: str, token: str | None = None) -> dict[str, Any]:
    return {
        "storageAccount": "devstoreaccount1",
        "queueName": queue.name,
        "sasToken": token if token is not None else queue.sas(),
        "message": message,
    }


def bus(entity_field: str, entity: str, message: str) -> dict[str, Any]:
    return {
        "namespace": "contoso",
        entity_field: entity,
        "message": message,
        "authentication": {"type": "SharedAccessKey", "sasKeyName": "Root", "sasKey": SB_KEY},
        "brokeredMessageProperties": {"label": "from-pipeline", "forcePersistence": False},
        "customMessageProperties": {"source": "scheduler"},
    }


@pytest.fixture
def idp(test_ca: TestCa, trust_test_ca: Path) -> Iterator[HttpsPeer]:
    def respond(seen: Seen) -> tuple[int, str, bytes]:
        if seen.path.startswith("/refusing-tenant/") and seen.path.endswith("/token"):
            return 401, "application/json", b'{"error": "invalid_client"}'
        return token_endpoint([f"tok-{i}" for i in range(10)], 3600)(seen)

    with https_peer(test_ca, respond, require_client_cert=False) as peer:
        yield peer


@pytest.fixture
def pipeline(
    storage_env: Settings, azurite_queue: AzuriteQueue, broker: AmqpBroker, idp: HttpsPeer
) -> Iterator[ActionPipeline]:
    settings = dataclasses.replace(
        storage_env,
        storage_queue_endpoint=azurite_queue.endpoint,
        storage_queue_message_format="text",
        service_bus_endpoint=broker.endpoint,
        entra_authority_host=idp.base_url,
    )
    start = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1, seconds=5)
    built = ActionPipeline.near(settings, start, TestCredential())
    yield built
    built.runner.close()


def assert_no_secret(history: list[Any], *secrets: str) -> None:
    for row in history:
        for secret in secrets:
            assert secret not in row.message


def test_storage_queue_action_and_its_service_bus_error_action(
    pipeline: ActionPipeline, azurite_queue: AzuriteQueue, broker: AmqpBroker
) -> None:
    ok = pipeline.run_once("sq-ok", {"type": "StorageQueue", "queueMessage": mailbox(azurite_queue, "tick")})
    assert [(h.action_name, h.status) for h in ok] == [("MainAction", "Completed")]
    assert azurite_queue.messages() == ["tick"]

    bad_token = azurite_queue.sas(expiry=timedelta(minutes=-5))
    action = {
        "type": "StorageQueue",
        "queueMessage": mailbox(azurite_queue, "never", bad_token),
        "retryPolicy": ONE_RETRY,
        "errorAction": {"type": "ServiceBusQueue", "serviceBusQueueMessage": bus("queueName", "orders", "sq failed")},
    }
    history = pipeline.run_once("sq-bad", action)
    assert [(h.action_name, h.status, h.retry_count) for h in history] == [
        ("MainAction", "Failed", 0),
        ("MainAction", "Failed", 1),
        ("ErrorAction", "Completed", 0),
    ]
    assert "denied: the SAS token is invalid, expired" in history[0].message
    assert_no_secret(history, bad_token, bad_token.split("sig=")[1], SB_KEY)
    [error_message] = broker.wait_for(1, "orders")
    assert error_message.body == b"sq failed" and error_message.message.subject == "from-pipeline"
    assert azurite_queue.messages() == []
    job = pipeline.services.service.get_job(pipeline.ref("sq-bad"))
    assert (job.state, job.faulted_count) == ("Faulted", 1)


def test_service_bus_actions_and_a_storage_queue_error_action(
    pipeline: ActionPipeline, azurite_queue: AzuriteQueue, broker: AmqpBroker
) -> None:
    queue_ok = pipeline.run_once(
        "sbq", {"type": "ServiceBusQueue", "serviceBusQueueMessage": bus("queueName", "orders", "to queue")}
    )
    topic_ok = pipeline.run_once(
        "sbt", {"type": "ServiceBusTopic", "serviceBusTopicMessage": bus("topicPath", "events", "to topic")}
    )
    assert [h.status for h in queue_ok + topic_ok] == ["Completed", "Completed"]
    [queued] = broker.wait_for(1, "orders")
    [published] = broker.wait_for(1, "events")
    assert (queued.body, published.body) == (b"to queue", b"to topic")
    assert published.application_properties == {"source": "scheduler"}

    action = {
        "type": "ServiceBusTopic",
        "serviceBusTopicMessage": bus("topicPath", "no-such-topic", "lost"),
        "retryPolicy": {"retryType": "None"},
        "errorAction": {"type": "StorageQueue", "queueMessage": mailbox(azurite_queue, "topic send failed")},
    }
    history = pipeline.run_once("sbt-bad", action)
    assert [(h.action_name, h.status) for h in history] == [("MainAction", "Failed"), ("ErrorAction", "Completed")]
    assert history[0].message.startswith("Could not send: "), history[0].message  # the outcome first
    assert history[0].message.endswith("| ServiceBusTopic Action - topic 'no-such-topic' in namespace 'contoso'")
    assert_no_secret(history, SB_KEY)
    assert azurite_queue.messages() == ["topic send failed"]


def test_https_client_certificate_and_oauth_with_a_service_bus_error_action(
    pipeline: ActionPipeline, test_ca: TestCa, broker: AmqpBroker, idp: HttpsPeer
) -> None:
    client = test_ca.issue("pipeline-client", server=False)
    pfx = client.pfx_base64("pfx-pass")
    with https_peer(test_ca, require_client_cert=True) as target:
        cert_auth = {"type": "ClientCertificate", "pfx": pfx, "password": "pfx-pass"}
        history = pipeline.run_once(
            "mtls",
            {
                "type": "Https",
                "request": {"uri": target.base_url + "/mtls", "method": "GET", "authentication": cert_auth},
            },
        )
        assert [h.status for h in history] == ["Completed"], history[0].message
        assert target.requests_to("/mtls")[0].client_subject == "commonName=pipeline-client"

        def oauth(tenant: str) -> dict[str, Any]:
            return {
                "type": "ActiveDirectoryOAuth",
                "tenant": tenant,
                "audience": "https://management.core.windows.net/",
                "clientId": "app-1",
                "secret": OAUTH_SECRET,
            }

        request = {"uri": target.base_url.replace("https", "http") + "/unused", "method": "GET"}
        with https_peer(test_ca, require_client_cert=False) as api:
            ok = pipeline.run_once(
                "oauth-ok",
                {"type": "Https", "request": {**request, "uri": api.base_url + "/api", "authentication": oauth("t1")}},
            )
            assert [h.status for h in ok] == ["Completed"], ok[0].message
            assert api.requests_to("/api")[0].headers["Authorization"] == "Bearer tok-0"
            failing = {
                "type": "Https",
                "request": {**request, "uri": api.base_url + "/api", "authentication": oauth("refusing-tenant")},
                "retryPolicy": {"retryType": "None"},
                "errorAction": {
                    "type": "ServiceBusTopic",
                    "serviceBusTopicMessage": bus("topicPath", "events", "oauth failed"),
                },
            }
            history = pipeline.run_once("oauth-bad", failing)
            assert len(api.requests_to("/api")) == 1  # the refused call was never sent
    assert [(h.action_name, h.status) for h in history] == [("MainAction", "Failed"), ("ErrorAction", "Completed")]
    assert "no Entra ID token for client 'app-1' in tenant 'refusing-tenant'" in history[0].message
    assert_no_secret(history + ok, OAUTH_SECRET, pfx, "pfx-pass", SB_KEY, "tok-0")
    assert broker.wait_for(1, "events")[0].body == b"oauth failed"


def test_stored_message_is_base64_of_the_envelope_by_default(
    storage_env: Settings, azurite_queue: AzuriteQueue
) -> None:
    settings = dataclasses.replace(storage_env, storage_queue_endpoint=azurite_queue.endpoint)
    start = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1, seconds=5)
    built = ActionPipeline.near(settings, start, TestCredential())
    history = built.run_once("env", {"type": "StorageQueue", "queueMessage": mailbox(azurite_queue, "x<y")})
    assert history[0].status == "Completed"
    [content] = azurite_queue.messages()
    text = base64.b64decode(content).decode()
    assert "<Message>x&lt;y</Message>" in text and "<SchedulerJobId>env</SchedulerJobId>" in text
