"""Identity-based trigger connections, exercised locally: with only ``AzureWebJobsStorage__queueServiceUri``
(no connection string, as the Bicep deploys them: ``__accountName`` / ``__queueServiceUri``), the local host
resolves the queue trigger's connection as the Storage extension does and reaches an Azurite that serves
HTTPS and accepts bearer tokens (``--oauth basic``) with a stand-in for the managed identity; a connection the
extension would refuse stops the host at start-up, naming the setting."""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from azure.core.exceptions import ClientAuthenticationError
from azure.storage.queue import QueueClient

from local_host.azurite import Azurite, free_port
from local_host.connections import StandInTokenCredential
from local_host.hostjson import HostConfig, QueueOptions
from local_host.runtime import LocalHost
from scheduler_core.errors import ConfigurationError
from tests.e2e import sample_app
from tests.support.secure_azurite import https_azurite
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

CONFIG = HostConfig(queues=QueueOptions(batch_size=4, new_batch_threshold=2, max_polling_interval=0.5))

#: Settings that would give the host a connection string or a real identity: none may be set here.
CLEARED = (
    "AzureWebJobsStorage",
    "AzureWebJobsAzureWebJobsStorage",
    "IDENTITY_ENDPOINT",
    "IDENTITY_HEADER",
    "MSI_ENDPOINT",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "AZURE_FEDERATED_TOKEN_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
)


@dataclass
class SecureAzurite:
    azurite: Azurite
    ca_bundle: Path

    def keyed_queue(self, name: str) -> QueueClient:
        """A client of queue ``name`` with the account key over HTTPS: the test's own way in."""
        return QueueClient.from_connection_string(
            self.azurite.connection_string, name, connection_verify=str(self.ca_bundle)
        )


@pytest.fixture(scope="module")
def secure_azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureAzurite]:
    """An Azurite of its own with HTTPS (a certificate of a test CA) and ``--oauth basic``."""
    with https_azurite(tmp_path_factory.mktemp("azurite-https")) as (azurite, bundle):
        yield SecureAzurite(azurite, bundle)


@pytest.fixture
def identity_env(monkeypatch: pytest.MonkeyPatch) -> str:
    """No connection string and no identity for AzureWebJobsStorage; the sample app's queue of its own."""
    for name in [*CLEARED, *(n for n in os.environ if n.lower().startswith("azurewebjobsstorage__"))]:
        monkeypatch.delenv(name, raising=False)
    queue = f"identity-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("SAMPLE_QUEUE", queue)
    monkeypatch.setenv("SAMPLE_TIMER_SCHEDULE", "0 0 0 1 1 *")
    with sample_app.lock:
        sample_app.queue_calls.clear()
    return queue


def test_queue_trigger_with_only_queue_service_uri_gets_its_message_with_a_token(
    secure_azurite: SecureAzurite, identity_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AzureWebJobsStorage__queueServiceUri", secure_azurite.azurite.service_uri("queue"))
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(secure_azurite.ca_bundle))
    with LocalHost(sample_app.app, CONFIG, port=free_port(), enable=frozenset({"queue"})) as host:
        [poller] = host.pollers
        assert poller.connection.source == "AzureWebJobsStorage__queueServiceUri"
        assert poller.connection.connection_string is None
        assert isinstance(poller.credential, StandInTokenCredential)
        queue = secure_azurite.keyed_queue(identity_env)  # created by the poller, with its token
        queue.send_message(base64.b64encode(b"hello over identity").decode())
        wait_until(lambda: ("hello over identity", 1) in sample_app.queue_calls, 15, "the function got the message")
        # Deleted by the poller's client, with its token, after the function ran.
        wait_until(lambda: queue.get_queue_properties().approximate_message_count == 0, 5, "the message deleted")


def test_azurite_checks_the_tokens_it_is_given(secure_azurite: SecureAzurite) -> None:
    """The stand-in's tokens pass because of their shape, not because Azurite takes anything: an expired one
    is refused."""
    uri = secure_azurite.azurite.service_uri("queue")
    verify = str(secure_azurite.ca_bundle)
    name = f"tokens-{uuid.uuid4().hex[:8]}"
    QueueClient(uri, name, credential=StandInTokenCredential(), connection_verify=verify).create_queue()
    expired = StandInTokenCredential(lifetime=-60)
    with pytest.raises(ClientAuthenticationError):
        QueueClient(uri, name, credential=expired, connection_verify=verify, retry_total=0).get_queue_properties()


def test_no_connection_setting_fails_at_start_up_naming_it(identity_env: str) -> None:
    with pytest.raises(ConfigurationError, match=r"AzureWebJobsStorage__queueServiceUri") as raised:
        LocalHost(sample_app.app, CONFIG, port=free_port(), enable=frozenset({"queue"}))
    assert "'AzureWebJobsStorage'" in str(raised.value)


def test_an_empty_connection_string_beside_the_uri_fails_at_start_up(
    identity_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extension takes an empty ``AzureWebJobsStorage`` for a connection string and never reads the URI."""
    monkeypatch.setenv("AzureWebJobsStorage", "")
    monkeypatch.setenv("AzureWebJobsStorage__queueServiceUri", "https://127.0.0.1:10001/devstoreaccount1")
    with pytest.raises(ConfigurationError, match=r"setting AzureWebJobsStorage is set but empty"):
        LocalHost(sample_app.app, CONFIG, port=free_port(), enable=frozenset({"queue"}))
