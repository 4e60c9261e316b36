"""The local host resolves a trigger's storage connection as the Functions host's Storage extension does
(``local_host/connections.py`` cites the extension's source for each rule), and picks its token credential:
the stand-in only for a local service when no real identity is at hand."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from azure.identity import ClientSecretCredential, DefaultAzureCredential, ManagedIdentityCredential

from local_host.connections import StandInTokenCredential, real_identity_available, resolve, token_credential
from local_host.queues import ca_bundle
from scheduler_core.errors import ConfigurationError

AZURITE_QUEUE = "https://127.0.0.1:10001/devstoreaccount1"
ACCOUNT_QUEUE = "https://acct.queue.core.windows.net"
KEYED = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net"


def test_a_connection_string_wins_over_every_identity_setting() -> None:
    env = {
        "AzureWebJobsStorage": KEYED,
        "AzureWebJobsStorage__queueServiceUri": AZURITE_QUEUE,
        "AzureWebJobsStorage__accountName": "other",
    }
    connection = resolve("AzureWebJobsStorage", "queue", env)
    assert connection.connection_string == KEYED
    assert connection.source == "AzureWebJobsStorage"
    assert not connection.identity_based


def test_queue_service_uri_alone_is_an_identity_based_connection() -> None:
    connection = resolve("AzureWebJobsStorage", "queue", {"AzureWebJobsStorage__queueServiceUri": AZURITE_QUEUE + "/"})
    assert connection.identity_based
    assert connection.service_uri == AZURITE_QUEUE
    assert connection.source == "AzureWebJobsStorage__queueServiceUri"


def test_account_name_wins_over_queue_service_uri_as_in_the_released_extension() -> None:
    env = {
        "SchedulerExecutionStorage__accountName": "acct",
        "SchedulerExecutionStorage__queueServiceUri": AZURITE_QUEUE,
    }
    connection = resolve("SchedulerExecutionStorage", "queue", env)
    assert connection.service_uri == ACCOUNT_QUEUE
    assert connection.source == "SchedulerExecutionStorage__accountName"
    assert resolve("X", "table", {"X__accountName": "acct"}).service_uri == "https://acct.table.core.windows.net"


def test_service_uri_and_connection_string_keys_are_the_client_factory_s_fallbacks() -> None:
    assert resolve("X", "queue", {"X__serviceUri": AZURITE_QUEUE}).source == "X__serviceUri"
    keyed = resolve("X", "queue", {"X__connectionString": KEYED})
    assert (keyed.connection_string, keyed.source) == (KEYED, "X__connectionString")
    # The service's own key comes first (TryGetServiceUri), then the constructors with the most parameters.
    both = {"X__serviceUri": ACCOUNT_QUEUE, "X__queueServiceUri": AZURITE_QUEUE, "X__connectionString": KEYED}
    assert resolve("X", "queue", both).source == "X__queueServiceUri"
    assert resolve("X", "queue", {"X__serviceUri": AZURITE_QUEUE, "X__connectionString": KEYED}).identity_based


def test_the_prefixed_section_comes_first_and_no_connection_means_storage() -> None:
    env = {"AzureWebJobsMine": KEYED, "Mine__queueServiceUri": AZURITE_QUEUE}
    assert resolve("Mine", "queue", env).section == "AzureWebJobsMine"
    default = resolve("", "queue", {"AzureWebJobsStorage__queueServiceUri": AZURITE_QUEUE})
    assert (default.name, default.section) == ("Storage", "AzureWebJobsStorage")


def test_keys_match_without_regard_to_case_and_names_may_be_references() -> None:
    env = {"azurewebjobsstorage__QUEUESERVICEURI": AZURITE_QUEUE}
    assert resolve("AzureWebJobsStorage", "queue", env).source == "azurewebjobsstorage__QUEUESERVICEURI"
    env = {"WHICH": "Exec", "Exec__queueServiceUri": AZURITE_QUEUE}
    assert resolve("%WHICH%", "queue", env).section == "Exec"


def test_no_setting_at_all_fails_naming_the_settings() -> None:
    with pytest.raises(ConfigurationError) as raised:
        resolve("AzureWebJobsStorage", "queue", {"SchedulerExecutionStorage__queueServiceUri": AZURITE_QUEUE})
    message = str(raised.value)
    assert "'AzureWebJobsStorage'" in message
    assert "AzureWebJobsStorage__queueServiceUri" in message
    assert "does not exist" in message


def test_an_empty_connection_string_hides_the_identity_settings() -> None:
    env = {"SchedulerExecutionStorage": "", "SchedulerExecutionStorage__queueServiceUri": AZURITE_QUEUE}
    with pytest.raises(ConfigurationError, match=r"setting SchedulerExecutionStorage is set but empty"):
        resolve("SchedulerExecutionStorage", "queue", env)
    # Beside __serviceUri it is harmless: ClientFactory matches the serviceUri constructor.
    assert resolve("X", "queue", {"X": "", "X__serviceUri": AZURITE_QUEUE}).source == "X__serviceUri"


def test_settings_that_build_no_usable_client_fail_naming_the_setting() -> None:
    with pytest.raises(ConfigurationError, match=r"X__queueServiceUri: not an absolute URI"):
        resolve("X", "queue", {"X__queueServiceUri": "acct.queue.core.windows.net"})
    with pytest.raises(ConfigurationError, match=r"setting X__queueServiceUri must be an https URI"):
        resolve("X", "queue", {"X__queueServiceUri": "http://127.0.0.1:10001/devstoreaccount1"})
    with pytest.raises(ConfigurationError, match=r"setting X__accountName must be a storage account name"):
        resolve("X", "queue", {"X__accountName": "", "X__queueServiceUri": AZURITE_QUEUE})
    with pytest.raises(ConfigurationError, match=r"X__queueServiceUri .*X__serviceUri .*X__accountName"):
        resolve("X", "queue", {"X__blobServiceUri": AZURITE_QUEUE})


def _claims(token: str) -> dict[str, Any]:
    header, payload, signature = token.split(".")
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "none", "typ": "JWT"}
    assert signature == ""
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=="))
    return claims


def test_the_stand_in_token_has_the_shape_azurite_basic_oauth_accepts() -> None:
    token = StandInTokenCredential(lifetime=600, clock=lambda: 1_800_000_000.5).get_token(
        "https://storage.azure.com/.default"
    )
    claims = _claims(token.token)
    assert claims["aud"] == "https://storage.azure.com"
    assert claims["iss"].startswith("https://sts.windows.net/")
    assert (claims["iat"], claims["nbf"], claims["exp"]) == (1_800_000_000, 1_800_000_000, 1_800_000_600)
    assert token.expires_on == 1_800_000_600


def test_the_stand_in_is_used_only_for_a_local_service_without_an_identity() -> None:
    local = resolve("X", "queue", {"X__queueServiceUri": AZURITE_QUEUE})
    assert isinstance(token_credential(local, {}), StandInTokenCredential)
    remote = resolve("X", "queue", {"X__accountName": "acct"})
    assert isinstance(token_credential(remote, {}), DefaultAzureCredential)
    platform = {"IDENTITY_ENDPOINT": "http://127.0.0.1:8081/msi/token", "IDENTITY_HEADER": "secret"}
    assert real_identity_available(platform)
    assert isinstance(token_credential(local, platform), DefaultAzureCredential)
    assert not real_identity_available({"AZURE_CLIENT_ID": "00000000-0000-0000-0000-000000000001"})


def test_the_section_s_credential_settings_are_honoured() -> None:
    env = {
        "X__queueServiceUri": AZURITE_QUEUE,
        "X__credential": "managedidentity",
        "X__clientId": "00000000-0000-0000-0000-000000000001",
    }
    assert isinstance(token_credential(resolve("X", "queue", env), env), ManagedIdentityCredential)
    env = {"X__queueServiceUri": AZURITE_QUEUE, "X__tenantId": "t", "X__clientId": "c", "X__clientSecret": "s"}
    assert isinstance(token_credential(resolve("X", "queue", env), env), ClientSecretCredential)
    env = {"X__queueServiceUri": AZURITE_QUEUE, "X__clientId": "00000000-0000-0000-0000-000000000001"}
    assert isinstance(token_credential(resolve("X", "queue", env), env), DefaultAzureCredential)
    env = {
        "X__queueServiceUri": AZURITE_QUEUE,
        "X__credential": "managedidentity",
        "X__clientId": "a",
        "X__managedIdentityResourceId": "/subscriptions/s/resourceGroups/g/providers/x/y",
    }
    with pytest.raises(ConfigurationError, match=r"exactly one of X__clientId, X__managedIdentityResourceId must"):
        token_credential(resolve("X", "queue", env), env)
    env = {"X__queueServiceUri": AZURITE_QUEUE, "X__credential": "azurepipelines"}
    with pytest.raises(ConfigurationError, match=r"setting X__credential: azurepipelines is not supported"):
        token_credential(resolve("X", "queue", env), env)


def test_the_pollers_trust_the_ca_bundle_requests_would() -> None:
    assert ca_bundle({}) is True
    assert ca_bundle({"REQUESTS_CA_BUNDLE": "/tmp/ca.pem", "CURL_CA_BUNDLE": "/tmp/other.pem"}) == "/tmp/ca.pem"
