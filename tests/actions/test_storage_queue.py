"""Storage queue actions against the session's Azurite, authenticated by SAS tokens made for its account."""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest
from azure.storage.queue import AccountSasPermissions, ResourceTypes, generate_account_sas

from local_host.azurite import DEV_ACCOUNT, DEV_KEY
from scheduler_core.actions import Failure
from scheduler_core.actions.storage_queue import StorageQueueSender, account_url
from scheduler_core.model.actions import Secret, StorageQueueAction
from tests.actions.conftest import AzuriteQueue, TestCredential, action_context
from tests.support.http_target import http_target
from tests.support.loopback_guard import resolved

__all__ = ["resolved"]  # a fixture

pytestmark = pytest.mark.azurite


def queue_action(
    queue: AzuriteQueue, token: str | None, message: str = "hello queue", queue_name: str | None = None
) -> StorageQueueAction:
    return StorageQueueAction(
        "devstoreaccount1", queue_name or queue.name, message, Secret(token) if token is not None else None
    )


def test_endpoint_from_suffix_or_template() -> None:
    assert account_url("core.windows.net", "acct") == "https://acct.queue.core.windows.net"
    assert account_url("core.chinacloudapi.cn", "acct") == "https://acct.queue.core.chinacloudapi.cn"
    assert account_url("http://127.0.0.1:10001/{account}", "acct") == "http://127.0.0.1:10001/acct"


@pytest.mark.parametrize("prefix", ["", "?"])
def test_message_lands_in_the_queue_with_the_sas_token_as_given(azurite_queue: AzuriteQueue, prefix: str) -> None:
    sender = StorageQueueSender(endpoint=azurite_queue.endpoint, message_format="text")
    result = sender.send(
        queue_action(azurite_queue, prefix + azurite_queue.sas(), "<b>text & more</b>"), action_context()
    )
    assert result.succeeded, result.message
    assert f"queue '{azurite_queue.name}' of storage account 'devstoreaccount1'" in result.message
    assert azurite_queue.messages() == ["<b>text & more</b>"]


def test_envelope_is_azure_schedulers_xml_in_base64(azurite_queue: AzuriteQueue) -> None:
    sender = StorageQueueSender(endpoint=azurite_queue.endpoint)  # default format: envelope
    assert sender.send(queue_action(azurite_queue, azurite_queue.sas(), "payload <1>"), action_context("e42")).succeeded
    [content] = azurite_queue.messages()
    xml = base64.b64decode(content).decode("utf-8")
    root = ET.fromstring(xml.split("?>", 1)[1])
    assert root.tag == "StorageQueueMessage"
    fields = {child.tag: child.text for child in root}
    assert fields["Message"] == "payload <1>"
    assert fields["ExecutionTag"] == fields["ClientRequestId"] == "e42"
    assert fields["ExpectedExecutionTime"] == "2030-01-02T03:04:05Z"
    assert (fields["SchedulerJobId"], fields["SchedulerJobCollectionId"]) == ("job1", "jc")


def test_base64_format_is_the_text_only(azurite_queue: AzuriteQueue) -> None:
    sender = StorageQueueSender(endpoint=azurite_queue.endpoint, message_format="base64")
    assert sender.send(queue_action(azurite_queue, azurite_queue.sas(), "héllo"), action_context()).succeeded
    assert [base64.b64decode(m).decode() for m in azurite_queue.messages()] == ["héllo"]


def test_missing_queue_fails_clearly_without_the_token(azurite_queue: AzuriteQueue) -> None:
    token = generate_account_sas(  # an account SAS: a queue SAS is bound to its queue's name
        DEV_ACCOUNT,
        DEV_KEY,
        ResourceTypes(object=True),
        AccountSasPermissions(add=True),
        datetime.now(UTC) + timedelta(hours=1),
    )
    action = queue_action(azurite_queue, token, queue_name="no-such-queue")
    result = StorageQueueSender(endpoint=azurite_queue.endpoint).send(action, action_context())
    assert not result.succeeded
    assert result.message == (
        "Queue not found (QueueNotFound): The specified queue does not exist. "
        "| StorageQueue Action - queue 'no-such-queue' of storage account 'devstoreaccount1'"
    )
    assert (result.failure, result.status_code, result.failure_status) == (Failure.STATUS, None, 404)
    assert token not in result.message and "sig=" not in result.message


def with_wrong_signature(token: str) -> str:
    """The token with a well-formed signature that the account key did not make. (Cutting characters off the
    real one left half a percent-escape up to one time in twenty, which Azurite answers with a 500, not a 403.)"""
    fields, _, signature = token.rpartition("sig=")
    assert fields and signature, token  # the signature is the token's last field
    return fields + "sig=" + quote(base64.b64encode(bytes(32)).decode(), safe="")


@pytest.mark.parametrize(
    ("make_token", "expected"),
    [
        (lambda q: q.sas(expiry=timedelta(minutes=-1)), "Access denied: "),  # expired
        (lambda q: with_wrong_signature(q.sas()), "Access denied: "),  # bad signature
        (lambda q: q.sas(permission="r"), "Access denied: "),  # no 'add' permission
    ],
    ids=["expired", "bad-signature", "read-only"],
)
def test_bad_or_expired_token_fails_without_quoting_it(
    azurite_queue: AzuriteQueue, make_token: object, expected: str
) -> None:
    token = make_token(azurite_queue)  # type: ignore[operator]
    result = StorageQueueSender(endpoint=azurite_queue.endpoint).send(
        queue_action(azurite_queue, token), action_context()
    )
    assert not result.succeeded
    assert result.message.startswith(expected) and "the SAS token is invalid, expired" in result.message, result.message
    assert (result.failure, result.service_status) == (Failure.STATUS, 403)
    assert result.message.endswith(
        f"| StorageQueue Action - queue '{azurite_queue.name}' of storage account 'devstoreaccount1'"
    )
    signature = token.split("sig=")[1]
    assert token not in result.message and signature not in result.message
    assert azurite_queue.messages() == []


def test_throttled_endpoint_is_a_failure_naming_the_status() -> None:
    with http_target([503]) as target:
        sender = StorageQueueSender(endpoint=target.base_url + "/{account}")
        token = "sv=2024-01-01&sig=c2VjcmV0c2lnbmF0dXJl&se=2030-01-01"
        action = StorageQueueAction("acct", "q1", "m", Secret(token))
        result = sender.send(action, action_context())
    assert not result.succeeded
    assert result.message.startswith("Throttled or unavailable (HTTP 503"), result.message
    assert (result.failure, result.service_status) == (Failure.STATUS, 503)
    assert "c2VjcmV0c2lnbmF0dXJl" not in result.message
    assert target.received and target.received[0].path.startswith("/acct/q1/messages")


@pytest.mark.parametrize("account", ["acct", "10.0.0.4", "evil.example.com"])
def test_the_apps_identity_is_never_sent_outside_the_configured_endpoint(account: str, resolved: list[str]) -> None:
    """An endpoint template whose host is the account alone trusts no host for the app's identity (only
    SCHEDULER_IDENTITY_ALLOWED_HOSTS would): the run refuses before asking for a token or looking the host
    up. (Writing such a job is refused too; the run checks again, as settings change.)"""
    credential = TestCredential()
    sender = StorageQueueSender(
        endpoint="http://{account}:10001/", credential_factory=lambda: credential, identity_hosts=("example.org",)
    )
    action = StorageQueueAction(account, "q1", "m")
    result = sender.send(action, action_context())
    assert not result.succeeded
    assert "no sasToken is given" in result.message and f"host '{account}' is not one of them" in result.message
    assert "example.org" in result.message  # the hosts that are allowed are named
    assert result.failure is Failure.REFUSED
    assert credential.scopes == [] and resolved == []


def test_a_sas_token_may_go_to_the_host_the_job_names(resolved: list[str]) -> None:
    sender = StorageQueueSender(endpoint="http://{account}:10001/", identity_hosts=())
    action = StorageQueueAction("acct", "q1", "m", Secret("sv=1&sig=x"))
    result = sender.send(action, action_context())
    assert not result.succeeded  # the guard stops the lookup of 'acct': the rule did not
    assert "not one of them" not in result.message, result.message
    assert result.message.startswith("Could not reach the account: "), result.message
    assert result.failure is Failure.CONNECTION_ERROR
    assert resolved and resolved[0] == "acct"
