"""Wire compatibility: the seed documents' example jobs, and models read and written by the real
azure-mgmt-scheduler 7.0.0 (de)serialiser."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.mgmt.scheduler import models

from scheduler_core.definitions import job_output, parse_collection, parse_job, restore_secrets
from tests.unit.seed_examples import (
    frequency_for,
    move_into_future,
    scan_seeds,
    seed_jobs,
    seed_schedules,
    strip_comments,
)

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
SEED_JOBS = seed_jobs(NOW)


# -------------------------------------------------------------------------------------- the seeds


def test_every_seed_document_yields_its_examples() -> None:
    found = {name: [example.kind for example in scan.jobs] for name, scan in scan_seeds().items()}
    assert len(found) == 5
    full = ["job", "action", "action fragment", "action fragment"]
    assert list(found.values()) == [full, ["job", "action"], full, ["job"], full]
    # what is not a job is a reference-table snippet, never something with an action in it
    for scan in scan_seeds().values():
        for _name, raw in scan.others:
            assert '"action"' not in raw
            assert '"startTime"' not in raw


@pytest.mark.parametrize("example", SEED_JOBS, ids=[example.label for example in SEED_JOBS])
def test_seed_example_is_accepted_and_round_trips(example: Any) -> None:
    spec = parse_job(example.body, now=NOW)
    again = parse_job({"properties": restore_secrets(spec.properties, spec.secrets)}, now=NOW)
    assert again == spec
    assert parse_job({"properties": spec.properties}, previous=spec.definition, now=NOW) == spec
    # output is in the swagger's casing, whatever the document wrote
    assert spec.properties["action"]["type"] in ("Http", "StorageQueue", "ServiceBusQueue", "ServiceBusTopic")


def test_the_comprehensive_example_means_what_the_document_says() -> None:
    example = next(e for e in SEED_JOBS if e.source.startswith("000") and e.kind == "job")
    spec = parse_job(example.body, now=NOW)
    props = spec.properties
    assert props["state"] == "Disabled"
    assert props["action"]["retryPolicy"] == {"retryType": "None"}
    assert props["action"]["request"] == {
        "uri": "http://contoso.com/foo",
        "method": "PUT",
        "body": "Posting from a timer",
        "headers": {"Content-Type": "application/json"},
    }
    assert props["action"]["errorAction"] == {
        "type": "Http",
        "request": {"uri": "http://contoso.com/notifyError", "method": "POST"},
    }
    assert props["recurrence"]["frequency"] == "Week"
    assert props["recurrence"]["schedule"] == {"hours": [10, 22], "weekDays": ["Monday", "Wednesday", "Friday"]}
    assert props["recurrence"]["count"] == 10
    # dates moved by whole weeks: 2012-08-04 was a Saturday, so is the new start; the span is kept
    assert spec.start_time is not None
    assert spec.start_time.weekday() == 5
    assert timedelta(days=7) <= spec.start_time - NOW <= timedelta(days=14)
    assert spec.recurrence is not None
    assert spec.recurrence.end_time is not None
    assert spec.recurrence.end_time - spec.start_time == datetime(2012, 11, 4, tzinfo=UTC) - datetime(
        2012, 8, 4, tzinfo=UTC
    )


def test_service_bus_fragments_keep_their_flattened_fields() -> None:
    flattened = [e for e in SEED_JOBS if e.source.startswith("000") and e.kind == "action fragment"]
    topic = parse_job(flattened[0].body, now=NOW).properties["action"]["serviceBusTopicMessage"]
    assert topic == {
        "namespace": "mySBNamespace",
        "topicPath": "t1",
        "message": "Some message",
        "transportType": "NetMessaging",
        "authentication": {"type": "SharedAccessKey", "sasKeyName": "QPolicy"},
        "brokeredMessageProperties": {},
        "customMessageProperties": {"appname": "FromScheduler"},
    }


def test_storage_queue_example_keeps_its_token_secret() -> None:
    example = next(e for e in SEED_JOBS if e.kind == "action")
    spec = parse_job(example.body, now=NOW)
    assert spec.secrets == {"action.queueMessage.sasToken": "TOKEN"}
    assert "TOKEN" not in str(spec.properties)


def test_comment_stripping() -> None:
    assert strip_comments('"uri": "http://x.org/a", // required') == '"uri": "http://x.org/a", '
    assert strip_comments('"t": "netMessaging", // Either "a" or b "auth": {') == '"t": "netMessaging", "auth": {'
    assert strip_comments('"f": "week", // can be "year" "month"') == '"f": "week", '


def test_moving_dates_keeps_weekdays_and_spans() -> None:
    body = {"properties": {"startTime": "2012-08-04T00:00Z", "recurrence": {"endTime": "2012-11-04"}}}
    moved = move_into_future(body, NOW)
    start = datetime.fromisoformat(moved["properties"]["startTime"].replace("Z", "+00:00"))
    assert moved["properties"]["startTime"].endswith("T00:00Z")
    assert start.weekday() == datetime(2012, 8, 4).weekday()
    assert NOW + timedelta(days=7) <= start <= NOW + timedelta(days=14)


SCHEDULES = seed_schedules()


def test_all_schedule_snippets_of_the_reference_table_are_found() -> None:
    assert len(SCHEDULES) == 31


@pytest.mark.parametrize(("source", "schedule"), SCHEDULES, ids=[str(s) for _, s in SCHEDULES])
def test_seed_schedule_snippet_makes_a_valid_job(source: str, schedule: dict[str, Any]) -> None:
    body = {
        "properties": {
            "startTime": "2030-01-05T12:25:00Z",
            "action": {"type": "http", "request": {"uri": "https://example.org/", "method": "get"}},
            "recurrence": {"frequency": frequency_for(schedule), "schedule": schedule},
        }
    }
    spec = parse_job(body, now=NOW)
    assert spec.recurrence is not None
    assert spec.recurrence.has_schedule
    assert parse_job({"properties": spec.properties}, now=NOW) == spec


# ---------------------------------------------------------------------------------------- the SDK


def _sdk_job(properties: dict[str, Any]) -> Any:
    return models.JobDefinition.deserialize(
        {
            "id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc/jobs/j",
            "type": "Microsoft.Scheduler/jobCollections/jobs",
            "name": "jc/j",
            "properties": properties,
        }
    )


def test_sdk_reads_back_a_full_http_job() -> None:
    body = {
        "properties": {
            "startTime": "2030-02-01T10:00:00+02:00",
            "action": {
                "type": "http",
                "request": {
                    "uri": "https://example.org/hook",
                    "method": "post",
                    "headers": {"Content-Type": "text/plain"},
                    "authentication": {"type": "basic", "username": "u", "password": "SECRET"},
                },
                "retryPolicy": {"retryType": "fixed", "retryInterval": "PT2M", "retryCount": 3},
                "errorAction": {
                    "type": "storageQueue",
                    "queueMessage": {
                        "storageAccount": "acct",
                        "queueName": "errors",
                        "message": "failed",
                        "sasToken": "SAS",
                    },
                },
            },
            "recurrence": {
                "frequency": "month",
                "interval": 1,
                "count": 5,
                "schedule": {"hours": [9], "minutes": [30], "monthlyOccurrences": [{"day": "monday", "occurrence": 1}]},
            },
        }
    }
    spec = parse_job(body, now=NOW)
    status = {"executionCount": 1, "failureCount": 0, "faultedCount": 0, "nextExecutionTime": "2030-03-04T09:30:00Z"}
    job = _sdk_job(job_output(spec.properties, status))
    props = job.properties
    assert props.start_time == datetime(2030, 2, 1, 8, 0, tzinfo=UTC)
    assert props.state == "Enabled"
    assert props.action.type == models.JobActionType.HTTP
    assert isinstance(props.action.request.authentication, models.BasicAuthentication)
    assert props.action.request.authentication.username == "u"
    assert props.action.request.authentication.password is None
    assert props.action.retry_policy.retry_type == models.RetryType.FIXED
    assert props.action.retry_policy.retry_interval == timedelta(minutes=2)
    assert props.action.retry_policy.retry_count == 3
    assert props.action.error_action.type == models.JobActionType.STORAGE_QUEUE
    assert props.action.error_action.queue_message.queue_name == "errors"
    assert props.action.error_action.queue_message.sas_token is None
    assert props.recurrence.frequency == models.RecurrenceFrequency.MONTH
    occurrence = props.recurrence.schedule.monthly_occurrences[0]
    assert occurrence.day == models.JobScheduleDay.MONDAY
    assert occurrence.occurrence == 1
    assert props.status.next_execution_time == datetime(2030, 3, 4, 9, 30, tzinfo=UTC)
    assert props.status.execution_count == 1
    assert props.status.last_execution_time is None


def test_sdk_reads_back_service_bus_and_default_retry() -> None:
    body = {
        "properties": {
            "action": {
                "type": "ServiceBusTopic",
                "serviceBusTopicMessage": {
                    "namespace": "ns",
                    "topicPath": "t",
                    "transportType": "amqp",
                    "authentication": {"type": "sharedaccesskey", "sasKeyName": "send", "sasKey": "SECRET"},
                    "brokeredMessageProperties": {"timeToLive": "P1D", "forcePersistence": False},
                },
            }
        }
    }
    spec = parse_job(body, now=NOW)
    props = _sdk_job(job_output(spec.properties, {})).properties
    message = props.action.service_bus_topic_message
    assert message.transport_type == models.ServiceBusTransportType.AMQP
    assert message.authentication.type == models.ServiceBusAuthenticationType.SHARED_ACCESS_KEY
    assert message.authentication.sas_key is None
    assert message.brokered_message_properties.time_to_live == timedelta(days=1)
    assert message.brokered_message_properties.force_persistence is False
    assert props.action.retry_policy.retry_interval == timedelta(seconds=30)
    assert props.action.retry_policy.retry_count == 4


def test_sdk_reads_client_certificate_facts() -> None:
    from tests.unit.test_definitions_secrets import make_pfx

    text, _cert = make_pfx(b"pw")
    body = {
        "properties": {
            "action": {
                "type": "Https",
                "request": {
                    "uri": "https://example.org/",
                    "method": "GET",
                    "authentication": {"type": "ClientCertificate", "pfx": text, "password": "pw"},
                },
            }
        }
    }
    spec = parse_job(body, now=NOW)
    auth = _sdk_job(job_output(spec.properties, {})).properties.action.request.authentication
    assert isinstance(auth, models.ClientCertAuthentication)
    assert auth.certificate_expiration_date == datetime(2030, 1, 1, tzinfo=UTC)
    assert auth.certificate_subject_name == "CN=scheduler-test, O=Contoso"
    assert auth.pfx is None
    assert auth.password is None


def test_what_the_sdk_sends_is_accepted() -> None:
    job = models.JobDefinition(
        properties=models.JobProperties(
            start_time=datetime(2030, 1, 10, 6, 0, tzinfo=UTC),
            action=models.JobAction(
                type="Http",
                request=models.HttpRequest(
                    uri="https://example.org/x",
                    method="GET",
                    authentication=models.OAuthAuthentication(
                        secret="SECRET",
                        tenant="t.example.com",
                        audience="https://management.core.windows.net/",
                        client_id="cid",
                    ),
                ),
                retry_policy=models.RetryPolicy(
                    retry_type="Fixed", retry_interval=timedelta(seconds=20), retry_count=2
                ),
                error_action=models.JobErrorAction(
                    type="ServiceBusQueue",
                    service_bus_queue_message=models.ServiceBusQueueMessage(
                        namespace="ns", queue_name="q", message="m", transport_type="NetMessaging"
                    ),
                ),
            ),
            recurrence=models.JobRecurrence(
                frequency="Week",
                interval=2,
                end_time=datetime(2030, 12, 31, tzinfo=UTC),
                schedule=models.JobRecurrenceSchedule(week_days=["Monday", "Friday"], hours=[6], minutes=[0]),
            ),
            state="Enabled",
        )
    )
    sent = job.serialize()
    spec = parse_job(sent, now=NOW)
    assert spec.secrets == {"action.request.authentication.secret": "SECRET"}
    assert spec.properties["action"]["retryPolicy"] == {"retryType": "Fixed", "retryInterval": "PT20S", "retryCount": 2}
    back = _sdk_job(job_output(spec.properties, {})).properties
    assert back.start_time == job.properties.start_time
    assert back.recurrence.end_time == job.properties.recurrence.end_time
    assert back.recurrence.schedule.week_days == ["Monday", "Friday"]
    assert back.action.retry_policy.retry_interval == timedelta(seconds=20)
    assert back.action.error_action.service_bus_queue_message.queue_name == "q"
    assert back.action.request.authentication.client_id == "cid"


def test_sdk_collection_body_is_accepted_and_read_back() -> None:
    sent = models.JobCollectionDefinition(
        name="jc",
        location="westus",
        properties=models.JobCollectionProperties(
            sku=models.Sku(name="P20Premium"),
            quota=models.JobCollectionQuota(
                max_job_count=100,
                max_job_occurrence=7,
                max_recurrence=models.JobMaxRecurrence(frequency="Hour", interval=1),
            ),
        ),
    ).serialize()
    spec = parse_collection(sent, name="jc")
    back = models.JobCollectionDefinition.deserialize(
        {"name": "jc", "location": spec.location, "tags": spec.tags, "properties": spec.properties}
    )
    assert back.properties.sku.name == models.SkuDefinition.P20_PREMIUM
    assert back.properties.state == models.JobCollectionState.ENABLED
    assert back.properties.quota.max_job_count == 100
    assert back.properties.quota.max_job_occurrence == 7
    assert back.properties.quota.max_recurrence.frequency == models.RecurrenceFrequency.HOUR
