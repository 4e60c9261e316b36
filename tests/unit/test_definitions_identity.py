"""Writing a job: a Storage queue action without sasToken or a Service Bus action without sasKey runs as the
function app's identity, so its host must be under the configured endpoints (or
SCHEDULER_IDENTITY_ALLOWED_HOSTS); otherwise the field is refused with the rule. Hosts are judged, never
looked up."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from scheduler_core import settings
from scheduler_core.definitions import JobSpec, merge_patch, parse_job, restore_secrets
from scheduler_core.errors import ValidationError
from scheduler_core.identity import IdentityScope

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
EVIL = ["evil.example.com", "169.254.169.254", "10.0.0.4", "127.0.0.1", "contoso.servicebus.windows.net.evil.com"]
SAS = {"type": "SharedAccessKey", "sasKeyName": "send", "sasKey": "SECRET-KEY"}


def sb_job(namespace: str, auth: dict[str, Any] | None = None, kind: str = "queue", **extra: Any) -> dict[str, Any]:
    field = "serviceBusQueueMessage" if kind == "queue" else "serviceBusTopicMessage"
    entity = {"queueName": "q1"} if kind == "queue" else {"topicPath": "t1"}
    message: dict[str, Any] = {"namespace": namespace, **entity, "message": "m"}
    if auth is not None:
        message["authentication"] = auth
    action_type = "ServiceBusQueue" if kind == "queue" else "ServiceBusTopic"
    return {"properties": {"action": {"type": action_type, field: message, **extra}}}


def parse(data: dict[str, Any], previous: JobSpec | None = None, scope: IdentityScope | None = None) -> JobSpec:
    return parse_job(data, previous=previous.definition if previous else None, now=NOW, identity=scope)


def refused(data: dict[str, Any], path: str, scope: IdentityScope | None = None) -> str:
    with pytest.raises(ValidationError) as caught:
        parse(data, scope=scope)
    assert caught.value.path == path, caught.value.message
    assert "identity" in caught.value.message
    return caught.value.message


@pytest.mark.parametrize("namespace", EVIL)
@pytest.mark.parametrize("auth", [None, {"type": "NotSpecified"}, {"type": "SharedAccessKey", "sasKeyName": "send"}])
def test_a_keyless_service_bus_action_naming_another_host_is_refused(
    namespace: str, auth: dict[str, Any] | None
) -> None:
    message = refused(sb_job(namespace, auth), "properties.action.serviceBusQueueMessage.namespace")
    assert "*.servicebus.windows.net" in message and "sasKey" in message
    assert namespace not in message  # a value the client sent is not repeated


@pytest.mark.parametrize("namespace", EVIL)
def test_with_its_own_sas_key_a_job_may_name_any_namespace_host(namespace: str) -> None:
    spec = parse(sb_job(namespace, SAS))
    assert spec.properties["action"]["serviceBusQueueMessage"]["namespace"] == namespace


@pytest.mark.parametrize("namespace", ["contoso", "contoso.servicebus.windows.net", "Contoso.ServiceBus.Windows.Net"])
def test_namespaces_under_the_endpoint_suffix_may_use_the_identity(namespace: str) -> None:
    parse(sb_job(namespace))
    parse(sb_job(namespace, kind="topic"))


def test_the_error_action_is_checked_with_its_path() -> None:
    error = sb_job("10.0.0.4", kind="topic")["properties"]["action"]
    main = sb_job("contoso", SAS)
    main["properties"]["action"]["errorAction"] = error
    refused(main, "properties.action.errorAction.serviceBusTopicMessage.namespace")


def test_a_storage_account_whose_host_is_not_under_the_endpoint_is_refused_without_a_sas_token() -> None:
    job = {
        "properties": {
            "action": {
                "type": "StorageQueue",
                "queueMessage": {"storageAccount": "acct", "queueName": "jobs", "message": "m"},
            }
        }
    }
    parse(job)  # acct.queue.core.windows.net
    whole_host = IdentityScope(storage_queue_endpoint="http://{account}:10001")
    refused(job, "properties.action.queueMessage.storageAccount", whole_host)
    job["properties"]["action"]["queueMessage"]["sasToken"] = "sv=1&sig=SECRET"
    parse(job, scope=whole_host)


def scope_of(**environ: str) -> IdentityScope:
    """The scope the service builds from these settings."""
    return IdentityScope.from_settings(settings.load({"AzureWebJobsStorage__accountName": "acct", **environ}))


def test_the_settings_decide_sovereign_clouds_and_extra_hosts() -> None:
    scope = scope_of(SCHEDULER_SERVICE_BUS_ENDPOINT="servicebus.usgovcloudapi.net")
    parse(sb_job("contoso"), scope=scope)
    parse(sb_job("contoso.servicebus.usgovcloudapi.net"), scope=scope)
    refused(sb_job("contoso.servicebus.windows.net"), "properties.action.serviceBusQueueMessage.namespace", scope)
    scope = scope_of(
        SCHEDULER_SERVICE_BUS_ENDPOINT="servicebus.usgovcloudapi.net",
        SCHEDULER_IDENTITY_ALLOWED_HOSTS="127.0.0.1;sb.internal.example",
    )
    parse(sb_job("127.0.0.1"), scope=scope)
    parse(sb_job("ns.sb.internal.example"), scope=scope)
    refused(sb_job("10.0.0.4"), "properties.action.serviceBusQueueMessage.namespace", scope)


def test_a_stored_key_kept_by_a_put_without_it_still_counts_as_a_key() -> None:
    stored = parse(sb_job("10.0.0.4", SAS))
    again = {"properties": stored.properties}  # what a client GETs and PUTs back: no sasKey
    assert parse(again, previous=stored).secrets == stored.secrets
    # but a PATCH moving the job to another namespace drops the key, and with it the permission
    patched = merge_patch(again, {"properties": {"action": {"serviceBusQueueMessage": {"namespace": "10.0.0.5"}}}})
    with pytest.raises(ValidationError) as caught:
        parse(patched, previous=stored)
    assert caught.value.path == "properties.action.serviceBusQueueMessage.namespace"


def test_a_stored_job_is_read_back_without_the_check() -> None:
    """Jobs written before the rule existed stay readable (GET, the executor); the executor refuses to send."""
    stored = parse(sb_job("evil.example.com", SAS))
    keyless = restore_secrets(stored.properties, {})
    spec = parse_job({"properties": keyless}, validate_limits=False)
    assert spec.properties["action"]["serviceBusQueueMessage"]["namespace"] == "evil.example.com"
