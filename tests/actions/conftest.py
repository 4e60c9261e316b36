"""Fixtures of the action tests: real peers on 127.0.0.1 (Azurite queues with SAS tokens, the AMQP test
broker, HTTPS servers with a test CA), and a test double of the app's managed identity."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from azure.storage.queue import QueueClient, QueueSasPermissions, generate_queue_sas

from local_host.azurite import DEV_ACCOUNT, DEV_KEY, Azurite
from scheduler_core.actions import ActionContext
from scheduler_core.model.actions import ClientCertificateAuthentication, Secret
from tests.support.amqp_broker import AmqpBroker, amqp_broker
from tests.support.identity_endpoint import IdentityEndpoint, identity_endpoint
from tests.support.tls import TestCa

JOB_ID = "/subscriptions/sub1/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc/jobs/job1"
COLLECTION_ID = "/subscriptions/sub1/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"


def action_context(execution_id: str = "exec-1", retry: int = 0) -> ActionContext:
    return ActionContext(
        JOB_ID, COLLECTION_ID, datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC), execution_id=execution_id, retry_count=retry
    )


def client_certificate(pfx: str, password: str | None) -> ClientCertificateAuthentication:
    """ClientCertificate authentication with a PFX (its public facts, which only responses show, left blank)."""
    return ClientCertificateAuthentication(
        Secret(pfx), Secret(password) if password else None, "", "", datetime(2030, 1, 1, tzinfo=UTC)
    )


@dataclass
class TestCredential:
    """**Test double** of the function app's managed identity (``DefaultAzureCredential``): no identity
    endpoint can run locally. It hands out a fixed token and records the scopes asked for."""

    __test__ = False

    token: str = "test-managed-identity-token"
    scopes: list[tuple[str, ...]] = field(default_factory=list)

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.scopes.append(scopes)
        return AccessToken(self.token, int((datetime.now(UTC) + timedelta(hours=1)).timestamp()))


@dataclass
class AzuriteQueue:
    """A fresh queue in the session's Azurite, with SAS tokens made for the Azurite account."""

    azurite: Azurite
    name: str

    @property
    def endpoint(self) -> str:
        """The ``SCHEDULER_STORAGE_QUEUE_ENDPOINT`` value that points actions at this Azurite."""
        return f"http://127.0.0.1:{self.azurite.ports.queue}/{{account}}"

    def client(self) -> QueueClient:
        return QueueClient.from_connection_string(self.azurite.connection_string, self.name)

    def sas(self, permission: str = "a", expiry: timedelta = timedelta(hours=1)) -> str:
        return generate_queue_sas(
            DEV_ACCOUNT,
            self.name,
            DEV_KEY,
            permission=QueueSasPermissions.from_string(permission),
            expiry=datetime.now(UTC) + expiry,
            start=datetime.now(UTC) - timedelta(minutes=5),
        )

    def messages(self) -> list[str]:
        return [m.content for m in self.client().receive_messages(messages_per_page=32, max_messages=32)]


@pytest.fixture
def azurite_queue(azurite: Azurite) -> Iterator[AzuriteQueue]:
    queue = AzuriteQueue(azurite, f"actions-{uuid.uuid4().hex[:12]}")
    queue.client().create_queue()
    yield queue
    queue.client().delete_queue()


@pytest.fixture
def broker() -> Iterator[AmqpBroker]:
    with amqp_broker(["orders", "events"]) as running:
        yield running


@pytest.fixture(scope="session")
def test_ca() -> TestCa:
    return TestCa()


@pytest.fixture
def trust_test_ca(test_ca: TestCa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make requests (and azure-core) trust the test CA, as a deployment trusts its own CAs."""
    path = test_ca.write_pem(tmp_path)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(path))
    return path


@pytest.fixture
def platform(monkeypatch: pytest.MonkeyPatch) -> Iterator[IdentityEndpoint]:
    """The App Service identity endpoint look-alike, named in the environment as Azure Functions names it."""
    for name in ("AZURE_CLIENT_ID", "MSI_ENDPOINT", "MSI_SECRET", "IDENTITY_SERVER_THUMBPRINT", "IMDS_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    with identity_endpoint() as running:
        for name, value in running.env.items():
            monkeypatch.setenv(name, value)
        yield running
