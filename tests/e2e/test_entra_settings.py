"""Entra ID sign-in configured by app settings alone, on the local host as `make run` serves it (the
preflight that checks credentials before a body is read), with the unmodified SDK over https."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from azure.identity import ClientSecretCredential
from azure.mgmt.scheduler import SchedulerManagementClient
from azure.mgmt.scheduler import models as m

from local_host.azurite import free_port
from local_host.preflight import api_key_preflight
from local_host.runtime import LocalHost
from scheduler_core import auth, settings
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.api.handler import MAX_BODY_BYTES
from tests.support.oidc import OidcProvider, oidc_provider
from tests.support.oidc_tls_front import tls_front
from tests.support.tls import TestCa

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestCa, OidcProvider]]:
    ca = TestCa()
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca.write_pem(tmp_path)))
    with oidc_provider(ca) as running:
        yield ca, running


def test_settings_alone_turn_entra_id_sign_in_on_behind_the_preflight(
    storage_env: settings.Settings,
    provider: tuple[TestCa, OidcProvider],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import function_app

    ca, idp = provider
    ops = idp.register("ops")
    reader = idp.register("reader", roles=["Scheduler.Reader"])
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(auth.generate_key()))
    monkeypatch.setenv("SCHEDULER_ENTRA_AUTHORITY_HOST", idp.base_url)
    monkeypatch.setenv("SCHEDULER_ENTRA_TENANT_ID", idp.tenant)
    monkeypatch.setenv("SCHEDULER_ENTRA_AUDIENCES", f"{idp.app_id_uri};{idp.api_client_id}")
    monkeypatch.setenv("SCHEDULER_ROLE_ASSIGNMENTS", f"contributor:oid:{ops.object_id}@sub1")
    config = settings.load()
    provision(config)
    preflight = api_key_preflight(auth.gate_from_settings(config), ["management_api"], MAX_BODY_BYTES)
    port = free_port()
    with (
        LocalHost(function_app.app, ROOT / "host.json", port=port, enable=frozenset({"http"}), preflight=preflight),
        tls_front(ca, port) as base_url,
    ):

        def sdk(client_id: str, secret: str) -> SchedulerManagementClient:
            credential = ClientSecretCredential(
                idp.tenant, client_id, secret, authority=idp.base_url, disable_instance_discovery=True
            )
            return SchedulerManagementClient(
                credential, "sub1", base_url=base_url, credential_scopes=[f"{idp.app_id_uri}/.default"], retry_total=0
            )

        definition = m.JobCollectionDefinition(
            location="westus", properties=m.JobCollectionProperties(sku=m.Sku(name="Standard"))
        )
        assert sdk(ops.client_id, ops.secret).job_collections.create_or_update("rg", "jc", definition).name == "jc"
        assert [c.name for c in sdk(reader.client_id, reader.secret).job_collections.list_by_subscription()] == ["jc"]
        bad = requests.get(
            f"{base_url}/subscriptions/sub1/providers/Microsoft.Scheduler/jobCollections?api-version=2016-03-01",
            headers={"Authorization": f"Bearer {idp.mint({'aud': 'api://other'})}"},
            timeout=10,
        )
        assert bad.status_code == 401 and 'error="invalid_token"' in bad.headers["WWW-Authenticate"]
