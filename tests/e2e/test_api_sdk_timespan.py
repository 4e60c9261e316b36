"""The management API driven by the azure-mgmt-scheduler 7.0.0 client patched with the SDK's own
``azure.mgmt.scheduler.patch.patch_client``: written for the original service, it sends and reads only .NET
TimeSpan durations (``"00:00:20"``). The service answers each duration in the style it was written in, so
the patched client reads back what it wrote, and the plain client (ISO 8601) keeps working beside it.

Rules these tests hold the service to (see ``scheduler_core.definitions._job``):

* TimeSpan in, TimeSpan out; ISO 8601 in, ISO 8601 out (per duration, in every response: PUT, GET, list,
  PATCH);
* a duration the service fills in (the default ``retryInterval`` of 30 s) takes the job's style: TimeSpan
  when every duration the job carries is a TimeSpan;
* a PATCH that changes one duration answers it in the PATCH's style and keeps the others' styles.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.mgmt.scheduler import SchedulerManagementClient
from azure.mgmt.scheduler import models as m
from azure.mgmt.scheduler.patch import patch_client

from tests.e2e.conftest import Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

RG = "rg1"
JC = "jc1"
JOBS = f"subscriptions/sub1/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/{JC}/jobs"


def patched_client(api: Api) -> SchedulerManagementClient:
    client = api.sdk()
    patch_client(client)
    return client


def collection() -> m.JobCollectionDefinition:
    return m.JobCollectionDefinition(
        location="westus",
        properties=m.JobCollectionProperties(
            sku=m.Sku(name="Standard"),
            quota=m.JobCollectionQuota(
                max_job_count=20, max_recurrence=m.JobMaxRecurrence(frequency="Minute", interval=1)
            ),
        ),
    )


def start() -> datetime:
    return (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)


def job(policy: m.RetryPolicy | None, ttl: timedelta | None = None) -> m.JobDefinition:
    error = None
    if ttl is not None:
        error = m.JobErrorAction(
            type="ServiceBusTopic",
            service_bus_topic_message=m.ServiceBusTopicMessage(
                namespace="ns1",
                topic_path="t1",
                message="failed",
                authentication=m.ServiceBusAuthentication(
                    sas_key="sb-key", sas_key_name="send", type="SharedAccessKey"
                ),
                brokered_message_properties=m.ServiceBusBrokeredMessageProperties(time_to_live=ttl),
            ),
        )
    return m.JobDefinition(
        properties=m.JobProperties(
            start_time=start(),
            action=m.JobAction(
                type="Https",
                request=m.HttpRequest(uri="https://example.org/hook", method="POST"),
                retry_policy=policy,
                error_action=error,
            ),
            recurrence=m.JobRecurrence(frequency="Hour", interval=1),
        )
    )


def raw_action(api: Api, name: str) -> dict[str, Any]:
    response = api.call("GET", f"{JOBS}/{name}")
    assert response.status_code == 200, response.text
    action: dict[str, Any] = response.json()["properties"]["action"]
    return action


def ttl_of(action: Any) -> timedelta:
    value: timedelta = action.error_action.service_bus_topic_message.brokered_message_properties.time_to_live
    return value


def test_the_patched_client_reads_back_the_durations_it_wrote(api: Api) -> None:
    client = patched_client(api)
    client.job_collections.create_or_update(RG, JC, collection())
    policy = m.RetryPolicy(
        retry_type="Exponential", retry_interval=timedelta(seconds=20), retry_count=3
    )  # maxRetryInterval is not in the 2016-03-01 model
    created = client.jobs.create_or_update(RG, JC, "ts", job(policy, ttl=timedelta(hours=1, minutes=30)))
    assert created.properties.action.retry_policy.retry_interval == timedelta(seconds=20)
    assert ttl_of(created.properties.action) == timedelta(hours=1, minutes=30)

    got = client.jobs.get(RG, JC, "ts")
    assert got.properties.action.retry_policy.retry_interval == timedelta(seconds=20)
    assert got.properties.action.retry_policy.retry_count == 3
    assert ttl_of(got.properties.action) == timedelta(hours=1, minutes=30)
    [listed] = list(client.jobs.list(RG, JC))
    assert listed.properties.action.retry_policy.retry_interval == timedelta(seconds=20)

    action = raw_action(api, "ts")  # on the wire: what the original service answered
    assert action["retryPolicy"]["retryInterval"] == "00:00:20"
    assert action["errorAction"]["serviceBusTopicMessage"]["brokeredMessageProperties"]["timeToLive"] == "01:30:00"


def test_a_default_retry_interval_is_answered_as_a_timespan_to_a_timespan_job(api: Api) -> None:
    client = patched_client(api)
    client.job_collections.create_or_update(RG, JC, collection())
    created = client.jobs.create_or_update(
        RG, JC, "d", job(m.RetryPolicy(retry_type="Fixed"), ttl=timedelta(minutes=5))
    )
    assert created.properties.action.retry_policy.retry_interval == timedelta(seconds=30)
    assert created.properties.action.retry_policy.retry_count == 4
    assert raw_action(api, "d")["retryPolicy"]["retryInterval"] == "00:00:30"


def test_the_plain_and_the_patched_client_each_read_their_own_jobs(api: Api) -> None:
    plain, patched = api.sdk(), patched_client(api)
    plain.job_collections.create_or_update(RG, JC, collection())
    policy = m.RetryPolicy(retry_type="Fixed", retry_interval=timedelta(minutes=2), retry_count=1)
    plain.jobs.create_or_update(RG, JC, "iso", job(policy, ttl=timedelta(days=2)))
    patched.jobs.create_or_update(RG, JC, "timespan", job(policy, ttl=timedelta(hours=3)))
    iso = plain.jobs.get(RG, JC, "iso").properties.action
    assert iso.retry_policy.retry_interval == timedelta(minutes=2) and ttl_of(iso) == timedelta(days=2)
    timespan = patched.jobs.get(RG, JC, "timespan").properties.action
    assert timespan.retry_policy.retry_interval == timedelta(minutes=2) and ttl_of(timespan) == timedelta(hours=3)
    assert raw_action(api, "iso")["retryPolicy"]["retryInterval"] == "PT2M"
    assert raw_action(api, "timespan")["retryPolicy"]["retryInterval"] == "00:02:00"


def test_a_patch_by_the_patched_client_keeps_its_jobs_readable(api: Api) -> None:
    client = patched_client(api)
    client.job_collections.create_or_update(RG, JC, collection())
    policy = m.RetryPolicy(retry_type="Fixed", retry_interval=timedelta(seconds=20), retry_count=2)
    client.jobs.create_or_update(RG, JC, "p", job(policy, ttl=timedelta(minutes=10)))
    disabled = client.jobs.patch(RG, JC, "p", m.JobDefinition(properties=m.JobProperties(state="Disabled")))
    assert disabled.properties.state == "Disabled"
    assert disabled.properties.action.retry_policy.retry_interval == timedelta(seconds=20)
    assert ttl_of(disabled.properties.action) == timedelta(minutes=10)
    longer = m.RetryPolicy(retry_type="Fixed", retry_interval=timedelta(minutes=1, seconds=30), retry_count=2)
    changed = client.jobs.patch(
        RG, JC, "p", m.JobDefinition(properties=m.JobProperties(action=m.JobAction(type="Https", retry_policy=longer)))
    )
    assert changed.properties.action.retry_policy.retry_interval == timedelta(minutes=1, seconds=30)
    assert ttl_of(changed.properties.action) == timedelta(minutes=10)
    assert raw_action(api, "p")["retryPolicy"]["retryInterval"] == "00:01:30"


def test_a_patch_in_the_other_style_changes_only_the_duration_it_names(api: Api) -> None:
    client = patched_client(api)
    client.job_collections.create_or_update(RG, JC, collection())
    policy = m.RetryPolicy(retry_type="Fixed", retry_interval=timedelta(seconds=20), retry_count=2)
    client.jobs.create_or_update(RG, JC, "mixed", job(policy, ttl=timedelta(minutes=10)))
    patch = {"properties": {"action": {"retryPolicy": {"retryInterval": "PT45S"}}}}
    response = api.call("PATCH", f"{JOBS}/mixed", patch)
    assert response.status_code == 200, response.text
    action = response.json()["properties"]["action"]
    assert action["retryPolicy"]["retryInterval"] == "PT45S"
    assert action["errorAction"]["serviceBusTopicMessage"]["brokeredMessageProperties"]["timeToLive"] == "00:10:00"
    assert raw_action(api, "mixed") == action
