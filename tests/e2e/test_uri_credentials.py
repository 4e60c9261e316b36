"""Credentials in a target URI's query (``sig`` of a Logic Apps trigger or a SAS, ``code`` of a Functions key) are
write-only, through the real API on the local host and Azurite: a Reader and a Contributor are answered
``***`` in their place (raw HTTP, and the real azure-mgmt-scheduler client), the GET-modify-PUT of the old
SDK keeps the stored values, and a write that moves the URI to another host with the hidden form is a 400
naming ``request.uri``. The dashboard's job insight lists the URI among the write-only fields."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from azure.mgmt.scheduler import models as m

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth
from scheduler_core.adapters.azure import connect
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.auth.roles import Role
from scheduler_core.model.actions import HttpAction
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e.conftest import ROOT, Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

RG, JC, NAME = "rg1", "jc1", "trigger"
REF = JobRef(CollectionRef("sub1", RG, JC), NAME)
SIG = "REAL-trigger-signature_0123456789"
CODE = "FUNCTION-KEY-abcdef"
URI = f"https://prod-01.westus.logic.azure.com/workflows/1/triggers/manual/paths/invoke?api-version=2016-10-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig={SIG}&code={CODE}"
SHOWN = URI.replace(SIG, "***").replace(CODE, "***")
JOB_PATH = f"subscriptions/sub1/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/{JC}/jobs/{NAME}"


@pytest.fixture
def keys(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Api, str]]:
    """The API with a Contributor key (``Api.key``) and a Reader key (returned beside it)."""
    import function_app

    contributor, reader = auth.generate_key(), auth.generate_key()
    monkeypatch.setenv(
        "SCHEDULER_API_KEYS", f"{auth.hash_entry(contributor)};{auth.hash_entry(reader, role=Role.READER)}"
    )
    provision(storage_env)
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
        api = Api(host.base_url, contributor, storage_env)
        client = api.sdk()
        client.job_collections.create_or_update(
            RG,
            JC,
            m.JobCollectionDefinition(
                location="westus", properties=m.JobCollectionProperties(sku=m.Sku(name="Standard"))
            ),
        )
        body = {"properties": {"action": {"type": "Https", "request": {"uri": URI, "method": "POST"}}}}
        created = api.call("PUT", JOB_PATH, body)
        assert created.status_code in (200, 201), created.text
        yield api, reader


def stored_uri(api: Api) -> str:
    job = connect(api.settings).stores.jobs.get(REF)
    assert job is not None and isinstance(job.definition.action.main, HttpAction)
    return job.definition.action.main.uri


def test_a_reader_and_a_contributor_are_answered_the_credentials_hidden(keys: tuple[Api, str]) -> None:
    api, reader = keys
    for key in (reader, api.key):
        for answer in (api.call("GET", JOB_PATH, key=key), api.call("GET", JOB_PATH.rsplit("/", 1)[0], key=key)):
            assert answer.status_code == 200, answer.text
            text = answer.text
            assert SIG not in text and CODE not in text, "a URI credential was answered"
            assert json.dumps(SHOWN)[1:-1] in text.replace("\\/", "/")
    assert stored_uri(api) == URI


def test_the_old_sdks_get_modify_put_keeps_the_stored_credentials(keys: tuple[Api, str]) -> None:
    api, _ = keys
    client = api.sdk()
    job = client.jobs.get(RG, JC, NAME)
    assert job.properties.action.request.uri == SHOWN
    job.properties.action.request.method = "PUT"
    written = client.jobs.create_or_update(RG, JC, NAME, m.JobDefinition(properties=job.properties))
    assert written.properties.action.request.uri == SHOWN
    assert written.properties.action.request.method == "PUT"
    assert stored_uri(api) == URI


def test_moving_the_hidden_form_to_another_host_is_refused_and_changes_nothing(keys: tuple[Api, str]) -> None:
    api, _ = keys
    moved = SHOWN.replace("prod-01.westus.logic.azure.com", "attacker.example")
    answer = api.call("PATCH", JOB_PATH, {"properties": {"action": {"request": {"uri": moved}}}})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert "request.uri" in error["message"] and "'sig'" in error["message"], error
    assert SIG not in answer.text
    assert stored_uri(api) == URI


def test_a_reader_cannot_see_them_in_the_dashboards_job_insight(keys: tuple[Api, str]) -> None:
    api, reader = keys
    answer = api.call("GET", f"dashboard/api/job/{JOB_PATH}", key=reader, query={"count": "1"})
    assert answer.status_code == 200, answer.text
    assert SIG not in answer.text and CODE not in answer.text
    fields = {field["path"]: field["set"] for field in answer.json()["writeOnly"]}
    assert fields.get("action.request.uri") is True, fields
