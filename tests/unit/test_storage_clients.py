"""Which storage client each part of the app gets, and how it signs: the app's own clients for the calls made
per fire, signed as the SDK's client built from the same settings would be (account key, shared access
signature, the app's identity); the SDK's clients when proxy settings exist, since the app's own connect
directly. No storage is called here (tests/contract/test_rest_*.py call Azurite)."""

from __future__ import annotations

import pytest
from azure.data.tables import TableServiceClient
from azure.storage.queue import QueueClient

from scheduler_core import settings
from scheduler_core.adapters.azure.clients import data_tables, queue_client, rest_queue
from scheduler_core.adapters.azure.rest import RestQueue, RestTableService
from scheduler_core.adapters.azure.rest._auth import Bearer, Sas, SharedKeyLite

KEYED = "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:1/acct;QueueEndpoint=http://127.0.0.1:2/acct"
SIGNED = "TableEndpoint=https://acct.table.core.windows.net/;QueueEndpoint=https://acct.queue.core.windows.net/;SharedAccessSignature=sv=2020-08-04&sig=abc"


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_an_account_key_signs_with_shared_key_lite_at_the_connection_strings_endpoints() -> None:
    loaded = settings.load({"AzureWebJobsStorage": KEYED})
    tables = data_tables(loaded)
    assert isinstance(tables, RestTableService)
    assert tables.url == "http://127.0.0.1:1/acct"
    assert isinstance(tables.endpoint.auth, SharedKeyLite) and tables.endpoint.auth.service == "table"
    queue = rest_queue(queue_client(loaded, "q"))
    assert isinstance(queue, RestQueue) and queue.queue_name == "q"
    assert isinstance(queue._endpoint.auth, SharedKeyLite) and queue._endpoint.auth.service == "queue"
    assert queue._endpoint.url == "http://127.0.0.1:2/acct"


def test_a_shared_access_signature_goes_in_the_query_of_every_call() -> None:
    loaded = settings.load({"AzureWebJobsStorage": SIGNED})
    tables = data_tables(loaded)
    assert isinstance(tables, RestTableService) and isinstance(tables.endpoint.auth, Sas)
    assert tables.endpoint.auth.sign("GET", "/t()", "$top=1", {}) == "$top=1&sv=2020-08-04&sig=abc"
    queue = rest_queue(queue_client(loaded, "q"))
    assert queue is not None and isinstance(queue._endpoint.auth, Sas)
    assert queue._endpoint.url == "https://acct.queue.core.windows.net"


def test_the_apps_identity_signs_with_a_bearer_token() -> None:
    loaded = settings.load({"AzureWebJobsStorage__accountName": "acct"})
    tables = data_tables(loaded)
    assert isinstance(tables, RestTableService) and isinstance(tables.endpoint.auth, Bearer)
    assert tables.url == "https://acct.table.core.windows.net"
    queue = rest_queue(queue_client(loaded, "q"))
    assert queue is not None and isinstance(queue._endpoint.auth, Bearer)


@pytest.mark.parametrize("name", ["HTTPS_PROXY", "http_proxy"])
def test_with_proxy_settings_every_part_keeps_the_sdks_clients(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(name, "http://proxy.example:3128")
    loaded = settings.load({"AzureWebJobsStorage": KEYED})
    assert isinstance(data_tables(loaded), TableServiceClient)
    client = queue_client(loaded, "q")
    assert isinstance(client, QueueClient) and rest_queue(client) is None


def test_a_token_is_never_sent_over_plain_http() -> None:
    with pytest.raises(ValueError, match="HTTPS only"):
        RestTableService("http://127.0.0.1:1/acct", Bearer(object()), connect_timeout=1, read_timeout=1)  # type: ignore[arg-type]
