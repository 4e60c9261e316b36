"""The management API driven by the real azure-mgmt-scheduler 7.0.0 client, on the local host and Azurite."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.mgmt.scheduler import models as m

from scheduler_core.adapters.azure import connect
from scheduler_core.adapters.azure.clients import queue_client
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

RG = "rg1"
JC = "jc1"


def future(days: int = 1) -> datetime:
    return (datetime.now(UTC) + timedelta(days=days)).replace(microsecond=0)


def standard_collection(max_jobs: int = 50) -> m.JobCollectionDefinition:
    return m.JobCollectionDefinition(
        location="westus",
        tags={"team": "ops"},
        properties=m.JobCollectionProperties(
            sku=m.Sku(name="Standard"),
            state="Enabled",
            quota=m.JobCollectionQuota(
                max_job_count=max_jobs, max_recurrence=m.JobMaxRecurrence(frequency="Minute", interval=1)
            ),
        ),
    )


def http_job(start: datetime) -> m.JobDefinition:
    return m.JobDefinition(
        properties=m.JobProperties(
            start_time=start,
            state="Enabled",
            action=m.JobAction(
                type="Https",
                request=m.HttpRequest(
                    uri="https://example.org/hook",
                    method="POST",
                    body="hello",
                    headers={"Content-Type": "text/plain"},
                    authentication=m.BasicAuthentication(username="user", password="s3cret-pass"),
                ),
                retry_policy=m.RetryPolicy(retry_type="Fixed", retry_interval=timedelta(seconds=40), retry_count=3),
                error_action=m.JobErrorAction(
                    type="StorageQueue",
                    queue_message=m.StorageQueueMessage(
                        storage_account="acct",
                        queue_name="errors",
                        sas_token="?sv=secret-sas",
                        message="failed",
                    ),
                ),
            ),
            recurrence=m.JobRecurrence(
                frequency="Week",
                interval=1,
                count=10,
                schedule=m.JobRecurrenceSchedule(week_days=["Monday", "Friday"], hours=[10], minutes=[0, 30]),
            ),
        )
    )


def service_bus_job(kind: str, start: datetime) -> m.JobDefinition:
    auth = m.ServiceBusAuthentication(sas_key="sb-secret-key", sas_key_name="send", type="SharedAccessKey")
    props = m.ServiceBusBrokeredMessageProperties(content_type="application/json", label="lbl", message_id="mid")
    if kind == "queue":
        action = m.JobAction(
            type="ServiceBusQueue",
            service_bus_queue_message=m.ServiceBusQueueMessage(
                namespace="ns1",
                queue_name="q1",
                message="{}",
                authentication=auth,
                transport_type="AMQP",
                brokered_message_properties=props,
                custom_message_properties={"k": "v"},
            ),
        )
    else:
        action = m.JobAction(
            type="ServiceBusTopic",
            service_bus_topic_message=m.ServiceBusTopicMessage(
                namespace="ns1",
                topic_path="t1",
                message="{}",
                authentication=auth,
                transport_type="NetMessaging",
            ),
        )
    return m.JobDefinition(
        properties=m.JobProperties(
            start_time=start,
            action=action,
            recurrence=m.JobRecurrence(
                frequency="Month",
                interval=1,
                schedule=m.JobRecurrenceSchedule(
                    monthly_occurrences=[m.JobRecurrenceScheduleMonthlyOccurrence(day="Friday", occurrence=-1)],
                    hours=[6],
                    minutes=[15],
                ),
            ),
        )
    )


def test_collection_lifecycle(api: Api) -> None:
    client = api.sdk()
    created = client.job_collections.create_or_update(RG, JC, standard_collection())
    assert created.id == f"/subscriptions/sub1/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/{JC}"
    assert created.type == "Microsoft.Scheduler/jobCollections"
    assert created.name == JC
    assert created.properties.sku.name == "Standard"
    assert created.properties.quota.max_job_count == 50
    assert created.properties.quota.max_recurrence.frequency == "Minute"
    again = client.job_collections.create_or_update(RG, JC, standard_collection(max_jobs=10))
    assert again.properties.quota.max_job_count == 10
    client.job_collections.create_or_update("rg2", "other", standard_collection())

    fetched = client.job_collections.get("RG1", "JC1")  # names are case-insensitive
    assert fetched.name == JC
    assert fetched.tags == {"team": "ops"}
    patched = client.job_collections.patch(RG, JC, m.JobCollectionDefinition(tags={"team": "dev"}))
    assert patched.tags == {"team": "dev"}
    assert patched.properties.quota.max_job_count == 10

    assert sorted(c.name for c in client.job_collections.list_by_subscription()) == ["jc1", "other"]
    assert [c.name for c in client.job_collections.list_by_resource_group("rg2")] == ["other"]

    client.job_collections.begin_disable(RG, JC).result()
    assert client.job_collections.get(RG, JC).properties.state == "Disabled"
    client.job_collections.begin_enable(RG, JC).result()
    assert client.job_collections.get(RG, JC).properties.state == "Enabled"

    client.job_collections.begin_delete(RG, JC).result()
    with pytest.raises(ResourceNotFoundError) as info:
        client.job_collections.get(RG, JC)
    assert info.value.error.code == "ResourceNotFound"
    assert [c.name for c in client.job_collections.list_by_subscription()] == ["other"]


def test_jobs_of_every_action_type_round_trip_without_secrets(api: Api) -> None:
    client = api.sdk()
    client.job_collections.create_or_update(RG, JC, standard_collection())
    start = future()
    created = client.jobs.create_or_update(RG, JC, "http", http_job(start))
    assert created.name == f"{JC}/http"
    assert created.type == "Microsoft.Scheduler/jobCollections/jobs"
    assert created.id.endswith(f"/jobCollections/{JC}/jobs/http")
    client.jobs.create_or_update(RG, JC, "sbq", service_bus_job("queue", start))
    client.jobs.create_or_update(RG, JC, "sbt", service_bus_job("topic", start))

    job = client.jobs.get(RG, JC, "http")
    action = job.properties.action
    assert action.type == "Https"
    assert action.request.uri == "https://example.org/hook"
    assert action.request.headers == {"Content-Type": "text/plain"}
    assert action.request.authentication.type == "Basic"
    assert action.request.authentication.username == "user"
    assert action.request.authentication.password is None
    assert action.retry_policy.retry_interval == timedelta(seconds=40)
    assert action.retry_policy.retry_count == 3
    assert action.error_action.type == "StorageQueue"
    assert action.error_action.queue_message.sas_token is None
    assert action.error_action.queue_message.queue_name == "errors"
    recurrence = job.properties.recurrence
    assert (recurrence.frequency, recurrence.interval, recurrence.count) == ("Week", 1, 10)
    assert recurrence.schedule.week_days == ["Monday", "Friday"]
    assert recurrence.schedule.minutes == [0, 30]
    assert job.properties.start_time == start
    assert job.properties.status.execution_count == 0
    assert job.properties.status.next_execution_time is not None
    assert job.properties.status.next_execution_time >= start
    assert job.properties.status.next_execution_time.weekday() in (0, 4)

    sbq = client.jobs.get(RG, JC, "sbq").properties
    message = sbq.action.service_bus_queue_message
    assert message.authentication.sas_key is None
    assert message.authentication.sas_key_name == "send"
    assert message.brokered_message_properties.label == "lbl"
    assert message.custom_message_properties == {"k": "v"}
    occurrence = sbq.recurrence.schedule.monthly_occurrences[0]
    assert (occurrence.day, occurrence.occurrence) == ("Friday", -1)
    assert client.jobs.get(RG, JC, "sbt").properties.action.service_bus_topic_message.topic_path == "t1"

    raw = api.call(
        "GET",
        f"subscriptions/sub1/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/{JC}/jobs",
    )
    for secret in ("s3cret-pass", "secret-sas", "sb-secret-key"):
        assert secret not in raw.text


def test_patch_replace_and_final_states(api: Api) -> None:
    client = api.sdk()
    client.job_collections.create_or_update(RG, JC, standard_collection())
    client.jobs.create_or_update(RG, JC, "j", http_job(future()))
    patched = client.jobs.patch(RG, JC, "j", m.JobDefinition(properties=m.JobProperties(state="Disabled")))
    assert patched.properties.state == "Disabled"
    assert patched.properties.action.request.uri == "https://example.org/hook"
    assert patched.properties.status.next_execution_time is None
    replaced = client.jobs.create_or_update(RG, JC, "j", http_job(future(2)))
    assert replaced.properties.state == "Enabled"


def test_list_jobs_with_paging_and_filter(api: Api) -> None:
    client = api.sdk()
    client.job_collections.create_or_update(RG, JC, standard_collection())
    for index in range(5):
        client.jobs.create_or_update(RG, JC, f"job{index}", http_job(future()))
    client.jobs.patch(RG, JC, "job3", m.JobDefinition(properties=m.JobProperties(state="Disabled")))
    pages = client.jobs.list(RG, JC, top=2).by_page()
    names = [[job.name for job in page] for page in pages]
    assert names == [[f"{JC}/job0", f"{JC}/job1"], [f"{JC}/job2", f"{JC}/job3"], [f"{JC}/job4"]]
    enabled = [job.name for job in client.jobs.list(RG, JC, filter="state eq 'Enabled'")]
    assert enabled == [f"{JC}/job{i}" for i in (0, 1, 2, 4)]
    disabled = [job.name for job in client.jobs.list(RG, JC, top=1, filter="state eq 'Disabled'")]
    assert disabled == [f"{JC}/job3"]
    assert [job.name for job in client.jobs.list(RG, JC, skip=4)] == [f"{JC}/job4"]


def test_disable_collection_disables_jobs_and_enable_restores(api: Api) -> None:
    client = api.sdk()
    client.job_collections.create_or_update(RG, JC, standard_collection())
    client.jobs.create_or_update(RG, JC, "a", http_job(future()))
    client.job_collections.begin_disable(RG, JC).result()
    job = client.jobs.get(RG, JC, "a")
    assert job.properties.state == "Disabled"
    assert job.properties.status.next_execution_time is None
    client.job_collections.begin_enable(RG, JC).result()
    job = client.jobs.get(RG, JC, "a")
    assert job.properties.state == "Enabled"
    assert job.properties.status.next_execution_time is not None


def test_run_enqueues_an_immediate_execution(api: Api) -> None:
    client = api.sdk()
    client.job_collections.create_or_update(RG, JC, standard_collection())
    client.jobs.create_or_update(RG, JC, "r", http_job(future()))
    assert client.jobs.run(RG, JC, "r") is None
    [raw] = queue_client(api.settings, api.settings.execution_queue).receive_messages(max_messages=1)
    message = ExecutionMessage.from_json(raw.content)
    assert message.cause == Cause.MANUAL
    stored = connect(api.settings).stores.jobs.get(JobRef(CollectionRef("sub1", RG, JC), "r"))
    assert stored is not None and message.generation == stored.generation
    assert "secret" not in raw.content


def test_history_of_a_new_job_is_empty(api: Api) -> None:
    client = api.sdk()
    client.job_collections.create_or_update(RG, JC, standard_collection())
    client.jobs.create_or_update(RG, JC, "h", http_job(future()))
    assert list(client.jobs.list_job_history(RG, JC, "h")) == []
    assert list(client.jobs.list_job_history(RG, JC, "h", filter="status eq 'Failed'")) == []


def test_delete_job(api: Api) -> None:
    client = api.sdk()
    client.job_collections.create_or_update(RG, JC, standard_collection())
    client.jobs.create_or_update(RG, JC, "d", http_job(future()))
    assert client.jobs.delete(RG, JC, "d") is None
    with pytest.raises(ResourceNotFoundError):
        client.jobs.get(RG, JC, "d")
    with pytest.raises(ResourceNotFoundError):
        client.jobs.delete(RG, JC, "d")


def test_error_paths_the_sdk_maps(api: Api) -> None:
    client = api.sdk()
    with pytest.raises(ResourceNotFoundError):
        client.jobs.create_or_update(RG, "missing", "j", http_job(future()))
    client.job_collections.create_or_update(RG, JC, standard_collection(max_jobs=1))
    client.jobs.create_or_update(RG, JC, "only", http_job(future()))
    with pytest.raises(ResourceExistsError) as quota:  # 409: maxJobCount
        client.jobs.create_or_update(RG, JC, "second", http_job(future()))
    assert "maxJobCount" in quota.value.message
    with pytest.raises(ResourceNotFoundError):
        client.jobs.get(RG, JC, "second")

    hourly = standard_collection()
    hourly.properties.quota.max_recurrence = m.JobMaxRecurrence(frequency="Hour", interval=1)
    client.job_collections.create_or_update(RG, "hourly", hourly)
    every_minute = http_job(future())
    every_minute.properties.recurrence = m.JobRecurrence(frequency="Minute", interval=5)
    with pytest.raises(ResourceExistsError) as frequent:  # 409: maxRecurrence
        client.jobs.create_or_update(RG, "hourly", "fast", every_minute)
    assert "maxRecurrence" in frequent.value.message

    bad = http_job(future())
    bad.properties.recurrence.schedule.hours = [24]
    with pytest.raises(HttpResponseError) as invalid:  # 400
        client.jobs.create_or_update(RG, "hourly", "bad", bad)
    assert invalid.value.status_code == 400
    assert "hours" in invalid.value.message
    before = json.dumps(client.jobs.get(RG, JC, "only").as_dict(), sort_keys=True, default=str)
    broken = http_job(future())
    broken.properties.action.request.uri = "not a url"
    with pytest.raises(HttpResponseError):
        client.jobs.create_or_update(RG, JC, "only", broken)
    after = json.dumps(client.jobs.get(RG, JC, "only").as_dict(), sort_keys=True, default=str)
    assert before == after  # a rejected request changes nothing
