"""An old client next to the preview: the real azure-mgmt-scheduler 7.0.0 (api-version 2016-03-01) reading and
writing back a job that was written with api-version 2026-12-01-preview, on the local host and Azurite.

The old client sees exactly a 2016-03-01 job (no preview property in what it is answered), and its
read-modify-write (GET, change a field, PUT; or PATCH) keeps every preview property it could not see.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.mgmt.scheduler import models as m

from scheduler_core import wiring
from scheduler_core.adapters.azure import connect
from scheduler_core.definitions import Wire
from scheduler_core.model.actions import HttpAction, ManagedServiceIdentityAuthentication
from scheduler_core.model.job import MissedRunMode, OverlapPolicy
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

RG, JC, NAME = "rg1", "jc1", "preview-job"
REF = JobRef(CollectionRef("sub1", RG, JC), NAME)
SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode()
PREVIEW_WORDS = (
    "overlapPolicy",
    "missedRunPolicy",
    "pauseAfterFailures",
    "deleteAfterCompletion",
    "jitter",
    "exclusions",
    "expandPlaceholders",
    "signing",
    "ManagedServiceIdentity",
    "whsec_",
)


def preview_job() -> dict[str, Any]:
    start = (datetime.now(UTC) + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    return {
        "properties": {
            "startTime": format_instant(start),
            "action": {
                "type": "Https",
                "expandPlaceholders": True,
                "request": {
                    "uri": "https://example.org/hook?occurrence=@{scheduledTime}",
                    "method": "POST",
                    "body": "job @{jobName}",
                    "authentication": {"type": "ManagedServiceIdentity", "audience": "api://target"},
                    "signing": {"scheme": "StandardWebhooks", "secret": SECRET},
                },
            },
            "recurrence": {
                "frequency": "Hour",
                "interval": 2,
                "jitter": "PT10M",
                "exclusions": {"dates": ["2031-12-25"], "ranges": [{"start": "2031-07-01", "end": "2031-07-31"}]},
            },
            "overlapPolicy": "BufferOne",
            "missedRunPolicy": {"mode": "RunAll", "window": "PT6H"},
            "pauseAfterFailures": 5,
            "deleteAfterCompletion": True,
        }
    }


@pytest.fixture
def written(api: Api) -> Api:
    """A collection made by the old client and a job written with the preview api-version."""
    client = api.sdk()
    client.job_collections.create_or_update(
        RG,
        JC,
        m.JobCollectionDefinition(location="westus", properties=m.JobCollectionProperties(sku=m.Sku(name="Standard"))),
    )
    wiring.services().service.put_job(REF, preview_job(), wire=Wire.PREVIEW)
    return api


def assert_preview_kept(api: Api) -> None:
    stored = connect(api.settings).stores.jobs.get(REF)
    assert stored is not None
    definition = stored.definition
    assert definition.overlap_policy is OverlapPolicy.BUFFER_ONE
    assert definition.missed_run_policy.mode is MissedRunMode.RUN_ALL
    assert definition.missed_run_policy.window_length == timedelta(hours=6)
    assert (definition.pause_after_failures, definition.delete_after_completion) == (5, True)
    assert definition.jitter is not None and definition.jitter.value == timedelta(minutes=10)
    assert definition.exclusions is not None and len(definition.exclusions.ranges) == 1
    assert definition.action.expand_placeholders is True
    request = definition.action.main
    assert isinstance(request, HttpAction)
    assert request.authentication == ManagedServiceIdentityAuthentication("api://target")
    assert request.signing is not None and request.signing.secret.reveal() == SECRET


def test_the_old_client_is_answered_a_2016_job(written: Api) -> None:
    path = f"subscriptions/sub1/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/{JC}/jobs/{NAME}"
    raw = written.call("GET", path)
    assert raw.status_code == 200
    text = raw.text
    assert not [word for word in PREVIEW_WORDS if word in text], text
    listed = written.call("GET", path.rsplit("/", 1)[0])
    assert not [word for word in PREVIEW_WORDS if word in listed.text]
    job = written.sdk().jobs.get(RG, JC, NAME)
    assert job.properties.action.request.uri == "https://example.org/hook?occurrence=@{scheduledTime}"
    assert job.properties.action.request.authentication is None
    assert job.properties.recurrence.interval == 2


def test_the_old_clients_get_then_put_keeps_the_preview_properties(written: Api) -> None:
    client = written.sdk()
    job = client.jobs.get(RG, JC, NAME)
    job.properties.action.request.body = "job @{jobName}, edited by an old client"
    job.properties.recurrence.count = 100
    answered = client.jobs.create_or_update(RG, JC, NAME, job)
    assert answered.properties.action.request.body.endswith("edited by an old client")
    assert not [word for word in PREVIEW_WORDS if word in json.dumps(answered.serialize())]
    assert_preview_kept(written)
    stored = connect(written.settings).stores.jobs.get(REF)
    assert stored is not None and stored.definition.recurrence is not None
    assert stored.definition.recurrence.count == 100


def test_the_old_clients_patch_keeps_the_preview_properties(written: Api) -> None:
    client = written.sdk()
    patched = client.jobs.patch(RG, JC, NAME, m.JobDefinition(properties=m.JobProperties(state="Disabled")))
    assert patched.properties.state == "Disabled"
    assert_preview_kept(written)


def test_the_old_client_cannot_write_a_preview_property(written: Api) -> None:
    path = f"subscriptions/sub1/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/{JC}/jobs/other"
    body = {"properties": {"action": {"type": "Https", "request": {"uri": "https://example.org", "method": "GET"}}}}
    body["properties"]["overlapPolicy"] = "Skip"
    refused = written.call("PUT", path, body)
    assert refused.status_code == 400
    assert "properties.overlapPolicy" in refused.json()["error"]["message"]
    assert connect(written.settings).stores.jobs.get(JobRef(REF.collection, "other")) is None
