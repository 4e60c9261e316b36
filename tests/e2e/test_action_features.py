"""The action features of api-version 2026-12-01-preview, end to end in real time: the local host runs every
trigger of the real function app against Azurite, jobs are written through the management API with the
preview api-version, fire at their second through the timer, the scan and the execution queue, and call
real peers on 127.0.0.1:

* ``expandPlaceholders``: the target receives the values of the attempt in the query, a header and the body;
* ``ManagedServiceIdentity``: the target receives the app's token for the audience, which the app got from an
  identity endpoint that answers as App Service's (``tests/support/identity_endpoint.py``), named by
  ``IDENTITY_ENDPOINT`` / ``IDENTITY_HEADER`` as Azure Functions names it;
* ``request.signing``: a receiver verifies each call with the Standard Webhooks library; its first answer is a
  500, and the retry carries the same ``webhook-id`` and a signature that verifies again.
"""

from __future__ import annotations

import base64
import json
import secrets
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

from scheduler_core.recurrence import format_instant, parse_instant
from tests.actions.webhook_receiver import receiver
from tests.e2e.preview_host import AUDIENCE, COLLECTION, JC, Host, running_host  # noqa: F401 (the fixture)
from tests.support.http_target import http_target
from tests.support.identity_endpoint import IdentityEndpoint

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


def soon(seconds: int = 4) -> datetime:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).replace(microsecond=0)


def test_placeholders_carry_the_attempts_values_to_the_target(host: Host) -> None:
    body = {
        "scheduled": "@{scheduledTime}",
        "actual": "@{actualTime}",
        "execution": "@{executionId}",
        "attempt": "@{attempt}",
        "job": "@{jobName}",
        "collection": "@{collectionName}",
    }
    due = soon()
    with http_target() as target:
        request = {
            "uri": f"{target.base_url}/hook?job=@{{jobName}}&at=@{{scheduledTime}}",
            "method": "POST",
            "headers": {"Content-Type": "application/json", "X-Attempt": "@{attempt}"},
            "body": json.dumps(body),
        }
        written = host.put_job("nightly report", {"type": "Http", "request": request, "expandPlaceholders": True}, due)
        plain = {**request, "uri": f"{target.base_url}/plain?job=@{{jobName}}"}
        host.put_job("as-written", {"type": "Http", "request": plain}, due)
        received = {urlsplit(r.path).path: r for r in target.wait_for(2, timeout=25)}
    assert written["properties"]["action"]["expandPlaceholders"] is True
    expanded = received["/hook"]
    execution_id = expanded.headers["x-ms-scheduler-execution-id"]
    sent = json.loads(expanded.body)
    assert sent["scheduled"] == format_instant(due)
    assert due <= parse_instant(sent["actual"], "actual") <= datetime.fromtimestamp(expanded.at, UTC)
    assert {k: sent[k] for k in ("execution", "attempt", "job", "collection")} == {
        "execution": execution_id,
        "attempt": "0",
        "job": "nightly report",
        "collection": COLLECTION,
    }
    assert parse_qs(urlsplit(expanded.path).query) == {"job": ["nightly report"], "at": [format_instant(due)]}
    assert expanded.headers["X-Attempt"] == "0"
    untouched = received["/plain"]
    assert untouched.body == json.dumps(body).encode()  # no expandPlaceholders: sent as written
    assert parse_qs(urlsplit(untouched.path).query) == {"job": ["@{jobName}"]}
    assert [row["properties"]["status"] for row in host.history("nightly report", 1)] == ["Completed"]


def test_managed_identity_sends_the_apps_token_for_the_audience(host: Host) -> None:
    with http_target() as target:
        authentication = {"type": "ManagedServiceIdentity", "audience": AUDIENCE}
        request = {"uri": f"{target.base_url}/arm", "method": "GET", "authentication": authentication}
        written = host.put_job("by-identity", {"type": "Http", "request": request}, soon())
        [received] = target.wait_for(1, timeout=25)
    assert written["properties"]["action"]["request"]["authentication"] == authentication
    [asked] = host.identity.seen()
    assert asked.resource == AUDIENCE and asked.headers["X-IDENTITY-HEADER"] == host.identity.header
    assert received.headers["Authorization"] == f"Bearer {IdentityEndpoint.token_for(AUDIENCE, 1)}"
    [row] = host.history("by-identity", 1)
    assert row["properties"]["status"] == "Completed"
    assert "mi-token" not in json.dumps(row) and host.identity.header not in json.dumps(row)


def test_a_signed_call_and_its_retry_verify_with_the_same_webhook_id(host: Host) -> None:
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    with receiver(secret, statuses=[500, 204]) as hook:
        request = {
            "uri": f"{hook.base_url}/events",
            "method": "POST",
            "headers": {"Content-Type": "application/json"},
            "body": '{"attempt": @{attempt}}',
            "signing": {"scheme": "StandardWebhooks", "secret": secret},
        }
        retry = {"retryType": "Fixed", "retryInterval": "PT15S", "retryCount": 1}
        action = {"type": "Http", "request": request, "retryPolicy": retry, "expandPlaceholders": True}
        written = host.put_job("signed", action, soon())
        first, second = hook.wait_for(2, timeout=45)
    assert written["properties"]["action"]["request"]["signing"] == {"scheme": "StandardWebhooks"}
    assert secret not in json.dumps(written)
    assert (first.verified, first.status, second.verified, second.status) == (True, 500, True, 204), (
        first.reason,
        second.reason,
    )
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert first.headers["webhook-id"] == first.headers["x-ms-scheduler-execution-id"]  # the first attempt's id
    assert first.headers["x-ms-scheduler-execution-id"] != second.headers["x-ms-scheduler-execution-id"]
    assert (first.body, second.body) == (b'{"attempt": 0}', b'{"attempt": 1}')  # signed after expansion
    assert first.headers["webhook-signature"] != second.headers["webhook-signature"]
    rows = host.history("signed", 2, timeout=20)
    assert sorted(row["properties"]["status"] for row in rows) == ["Completed", "Failed"]
    assert secret.removeprefix("whsec_") not in json.dumps(rows)
    stored = host.call("GET", f"{JC}/jobs/signed")
    assert stored.status_code == 200 and secret.removeprefix("whsec_") not in stored.text
