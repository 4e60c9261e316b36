"""The app's own Table client with the app's identity: bearer tokens over HTTPS, as the deployed app signs its
storage calls (no account key), against an Azurite that serves HTTPS and checks tokens (``--oauth basic``),
beside the SDK's client with the same credential. Tokens come from the local host's stand-in for the managed
identity (a **test double**: no identity can run here)."""

from __future__ import annotations

import ssl
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import ClientAuthenticationError
from azure.data.tables import TableServiceClient

from local_host.azurite import Azurite
from local_host.connections import StandInTokenCredential
from scheduler_core.adapters.azure.rest import RestTableService
from scheduler_core.adapters.azure.rest._auth import Bearer
from tests.support.secure_azurite import https_azurite

pytestmark = [pytest.mark.azurite]


class Counted(StandInTokenCredential):
    """The stand-in, counting the tokens it gives."""

    def __init__(self, lifetime: float = 3600.0) -> None:
        super().__init__(lifetime)
        self.given = 0

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        self.given += 1
        return super().get_token(*scopes, **kwargs)


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Azurite, str]]:
    with https_azurite(tmp_path_factory.mktemp("azurite-https")) as (azurite, bundle):
        yield azurite, str(bundle)


def _rest(azurite: Azurite, bundle: str, credential: Any) -> RestTableService:
    tls = ssl.create_default_context(cafile=bundle)
    return RestTableService(
        azurite.service_uri("table"), Bearer(credential), connect_timeout=5, read_timeout=20, tls=tls
    )


def test_calls_signed_with_the_identity_work_and_fetch_one_token(secure: tuple[Azurite, str]) -> None:
    azurite, bundle = secure
    name = "ident" + uuid.uuid4().hex[:8]
    sdk_service = TableServiceClient(
        azurite.service_uri("table"), credential=StandInTokenCredential(), connection_verify=bundle
    )
    sdk = sdk_service.create_table(name)
    credential = Counted()
    rest = _rest(azurite, bundle, credential).get_table_client(name)
    etag = rest.create_entity({"PartitionKey": "p", "RowKey": "r", "N": 1})["etag"]
    rest.update_entity(
        {"PartitionKey": "p", "RowKey": "r", "N": 2}, etag=etag, match_condition=MatchConditions.IfNotModified
    )
    rest.submit_transaction([("create", {"PartitionKey": "p", "RowKey": f"b{i}"}) for i in range(3)])
    assert [row["RowKey"] for row in rest.query_entities("PartitionKey eq @p", parameters={"p": "p"})] == [
        "b0",
        "b1",
        "b2",
        "r",
    ]
    assert sdk.get_entity("p", "r")["N"] == 2
    rest.delete_entity("p", "r")
    assert credential.given == 1  # one token for every call while it lives


def test_a_token_near_its_end_is_fetched_again_and_a_refused_one_fails_as_the_sdk_fails(
    secure: tuple[Azurite, str],
) -> None:
    azurite, bundle = secure
    name = "ident" + uuid.uuid4().hex[:8]
    TableServiceClient(
        azurite.service_uri("table"), credential=StandInTokenCredential(), connection_verify=bundle
    ).create_table(name)
    short = Counted(lifetime=200)  # inside the refresh margin (300 s): fetched again for every call
    table = _rest(azurite, bundle, short).get_table_client(name)
    table.upsert_entity({"PartitionKey": "p", "RowKey": "r"})
    table.get_entity("p", "r")
    assert short.given == 2
    expired = Counted(lifetime=-60)
    with pytest.raises(ClientAuthenticationError) as raised:
        _rest(azurite, bundle, expired).get_table_client(name).get_entity("p", "r")
    assert raised.value.status_code in (401, 403)
    sdk = TableServiceClient(
        azurite.service_uri("table"),
        credential=StandInTokenCredential(lifetime=-60),
        connection_verify=bundle,
        retry_total=0,
    ).get_table_client(name)
    with pytest.raises(ClientAuthenticationError):
        sdk.get_entity("p", "r")
