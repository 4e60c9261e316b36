"""Every console line of a failed attempt ends with a short reason, for every action type (issue 27): the
executor (memory adapter, simulated time) with the production runner (``default_runner``) against real
peers: an HTTP server on 127.0.0.1, queues on the session's Azurite, the AMQP test broker. The reason is the
start of the history message (the outcome first), on one line, bounded, with every character a terminal
acts on escaped and no credential: no SAS signature, key, password or ``Authorization`` value, even when
the target echoes it back."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.storage.queue import AccountSasPermissions, ResourceTypes, generate_account_sas

from local_host.azurite import DEV_ACCOUNT, DEV_KEY
from scheduler_core import telemetry
from scheduler_core.actions.outcome import MAX_REASON
from scheduler_core.actions.registry import default_runner
from scheduler_core.settings import Settings
from tests.actions.conftest import AzuriteQueue, TestCredential
from tests.support.amqp_broker import AmqpBroker
from tests.support.harness import JC, STANDARD_PLAN, Deployment, ticking
from tests.support.jobs import NO_RETRY, job_body
from tests.support.outbound_net import Reply, Request, ScriptedServer, scripted_server

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

SB_KEY = "c2FzLWtleS1mb3ItdGhlLWxpbmVz"
BEARER = "Bearer tok-0123456789-secret"
PASSWORD = "hunter2-line-password"
QUERY_SIG = "cXVlcnktc2lnbmF0dXJl"


def echoing_500(request: Request) -> Reply:
    """A failing target that echoes the request's headers (its credentials too) and an escape sequence."""
    echoed = "; ".join(f"{k}={v}" for k, v in request.headers.items())
    body = f"boom: database unavailable \x1b[31m(red)\x1b[0m\r\nyou sent {echoed}"
    return 500, {"Content-Type": "text/plain", "X-Echo": request.headers.get("Authorization", "")}, body.encode()


@pytest.fixture
def http_peer() -> Iterator[ScriptedServer]:
    with scripted_server(echoing_500) as server:
        yield server


@dataclasses.dataclass
class Lines:
    """The deployment and the log it writes."""

    deployment: Deployment
    caplog: pytest.LogCaptureFixture

    def run(self, name: str, action: dict[str, Any]) -> list[logging.LogRecord]:
        """Run a one-time job ``name`` with ``action``: the attempt lines it logged (main, then error)."""
        self.caplog.clear()
        due = self.deployment.clock.now + timedelta(seconds=20)
        self.deployment.put_job(name, job_body(due, {"retryPolicy": NO_RETRY, **action}))
        self.deployment.run_until(due + timedelta(minutes=2))
        return [
            r
            for r in self.caplog.records
            if r.name == "scheduler_core.execute" and hasattr(r, "scheduler_next") and r.getMessage().startswith("jc/")
        ]

    def every_text(self) -> str:
        return "\n".join(r.getMessage() + repr(telemetry.fields_of(r)) for r in self.caplog.records)


@pytest.fixture
def lines(
    storage_env: Settings, azurite_queue: AzuriteQueue, broker: AmqpBroker, caplog: pytest.LogCaptureFixture
) -> Iterator[Lines]:
    caplog.set_level(logging.WARNING)  # every other logger (the SDKs'): what reaches a console by default
    caplog.set_level(logging.DEBUG, logger="scheduler_core")  # (after: the capture's own level is DEBUG)
    settings = dataclasses.replace(
        storage_env,
        storage_queue_endpoint=azurite_queue.endpoint,
        storage_queue_message_format="text",
        service_bus_endpoint=broker.endpoint,
    )
    start = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1, seconds=5)
    runner = default_runner(settings, credential=TestCredential())
    deployment = Deployment.on_memory(
        settings, ticking(start), collection=JC, collection_body=STANDARD_PLAN, runner=runner
    )
    yield Lines(deployment, caplog)
    runner.close()


def reason_of(record: logging.LogRecord) -> str:
    """The reason a failed attempt's line ends with (and its field says)."""
    text = record.getMessage()
    assert "; reason: " in text, text
    why = text.rsplit("; reason: ", 1)[1]
    assert telemetry.fields_of(record)["scheduler_reason"] == why
    assert "\n" not in why and "\r" not in why and "\x1b" not in why and len(why) <= MAX_REASON, why
    return why


def http_call(peer: ScriptedServer, path: str) -> dict[str, Any]:
    return {
        "type": "Http",
        "request": {
            "uri": f"{peer.base_url}{path}?sig={QUERY_SIG}",
            "method": "POST",
            "body": "ping",
            "headers": {"Authorization": BEARER},
        },
    }


def test_a_failed_http_attempt_ends_with_its_status_and_the_start_of_the_body(
    lines: Lines, http_peer: ScriptedServer
) -> None:
    [line] = lines.run("http-fails", http_call(http_peer, "/hook"))
    assert telemetry.fields_of(line)["scheduler_outcome"] == "failed"
    why = reason_of(line)
    assert why.startswith("500 Internal Server Error: boom: database unavailable \\x1b[31m(red)\\x1b[0m\\nyou sent ")
    basic = {
        "type": "Http",
        "request": {
            "uri": f"{http_peer.base_url}/basic",
            "method": "GET",
            "authentication": {"type": "Basic", "username": "ops", "password": PASSWORD},
        },
    }
    [line] = lines.run("basic-fails", basic)
    assert reason_of(line).startswith("500 Internal Server Error: boom: database unavailable")
    text = lines.every_text()
    for secret in (BEARER, BEARER.split()[1], QUERY_SIG, PASSWORD):
        assert secret not in text, secret


def test_a_failed_storage_queue_attempt_ends_with_the_storage_error(lines: Lines, azurite_queue: AzuriteQueue) -> None:
    account_sas = generate_account_sas(
        DEV_ACCOUNT,
        DEV_KEY,
        ResourceTypes(object=True),
        AccountSasPermissions(add=True),
        datetime.now(UTC) + timedelta(hours=1),
    )
    missing = {"storageAccount": DEV_ACCOUNT, "queueName": "no-such-queue", "sasToken": account_sas, "message": "m"}
    [line] = lines.run("sq-missing", {"type": "StorageQueue", "queueMessage": missing})
    assert reason_of(line) == "Queue not found (QueueNotFound): The specified queue does not exist."
    assert (
        line.getMessage().startswith(  # the line itself names the action and its target
            "jc/sq-missing: occurrence "
        )
        and f" StorageQueue {DEV_ACCOUNT}/no-such-queue -> failed in " in line.getMessage()
    )
    expired = azurite_queue.sas(expiry=timedelta(minutes=-5))
    denied = {"storageAccount": DEV_ACCOUNT, "queueName": azurite_queue.name, "sasToken": expired, "message": "m"}
    [line] = lines.run("sq-denied", {"type": "StorageQueue", "queueMessage": denied})
    assert reason_of(line).startswith(
        "Access denied: the SAS token is invalid, expired or lacks the 'add' permission (AuthenticationFailed)"
    )
    text = lines.every_text()
    for token in (account_sas, expired):
        assert token.split("sig=")[1].split("&")[0] not in text


@pytest.mark.parametrize(
    ("kind", "payload", "entity"),
    [("ServiceBusQueue", "queueName", "queue"), ("ServiceBusTopic", "topicPath", "topic")],
)
def test_a_failed_service_bus_attempt_ends_with_what_the_broker_said(
    lines: Lines, broker: AmqpBroker, kind: str, payload: str, entity: str
) -> None:
    message = {
        "namespace": "contoso",
        payload: "missing-entity",
        "message": "m",
        "authentication": {"type": "SharedAccessKey", "sasKeyName": "Root", "sasKey": SB_KEY},
    }
    field = "serviceBusQueueMessage" if kind == "ServiceBusQueue" else "serviceBusTopicMessage"
    [line] = lines.run(f"{entity}-missing", {"type": kind, field: message})
    why = reason_of(line)
    assert why.startswith("Could not send: the connection or the link was refused or broke"), why
    broker.deny_key_names.add("Root")
    existing = {**message, payload: "orders" if entity == "queue" else "events"}
    [line] = lines.run(f"{entity}-denied", {"type": kind, field: existing})
    assert reason_of(line).startswith("Access denied: the shared access key was refused"), line.getMessage()
    assert SB_KEY not in lines.every_text()


def test_an_error_actions_failure_line_ends_with_its_own_reason(lines: Lines, http_peer: ScriptedServer) -> None:
    error = {
        "type": "StorageQueue",
        "queueMessage": {
            "storageAccount": DEV_ACCOUNT,
            "queueName": "nowhere",
            "sasToken": "sv=1&sig=Zm9v",
            "message": "x",
        },
    }
    main, error_line = lines.run("guarded", {**http_call(http_peer, "/main"), "errorAction": error})
    assert telemetry.fields_of(main)["scheduler_next"] == "error_action"
    assert reason_of(main).startswith("500 Internal Server Error: boom")
    assert telemetry.fields_of(error_line)["scheduler_action"] == "error"
    assert reason_of(error_line).startswith("Access denied: the SAS token is invalid, expired")
    assert "Zm9v" not in lines.every_text()


def test_a_successful_attempt_gives_no_reason(lines: Lines, azurite_queue: AzuriteQueue) -> None:
    ok = {
        "storageAccount": DEV_ACCOUNT,
        "queueName": azurite_queue.name,
        "sasToken": azurite_queue.sas(),
        "message": "m",
    }
    [line] = lines.run("sq-ok", {"type": "StorageQueue", "queueMessage": ok})
    assert "reason:" not in line.getMessage() and telemetry.fields_of(line)["scheduler_reason"] is None
