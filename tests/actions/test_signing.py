"""Standard Webhooks signing of HTTP actions (``request.signing``), verified as a receiver verifies it: by a
real HTTP server on 127.0.0.1 that checks every request with the specification's own library
(``standardwebhooks`` from PyPI) and answers 204 when it verifies, 401 when it does not
(``tests/actions/webhook_receiver.py``)."""

from __future__ import annotations

import base64
import logging
import secrets
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from scheduler_core.actions import ActionContext
from scheduler_core.actions.http import HttpSender
from scheduler_core.actions.signing import standard_webhooks_signature
from scheduler_core.model.actions import BasicAuthentication, HttpAction, RequestSigning, Secret
from tests.actions.webhook_receiver import receiver

SECRET = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
JOB = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc/jobs/hook"


def context(
    execution_id: str, attempt: int, message_id: str | None = "msg-occurrence-1", **extra: Any
) -> ActionContext:
    return ActionContext(
        JOB,
        JOB.rsplit("/jobs/", 1)[0],
        datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC),
        execution_id,
        attempt,
        message_id=message_id,
        **extra,
    )


def signed(url: str, body: str | None = '{"event": "tick"}', secret: str = SECRET, **extra: Any) -> HttpAction:
    return HttpAction(url, "POST", body=body, signing=RequestSigning(Secret(secret)), **extra)


def test_the_receiver_verifies_a_signed_call_with_the_reference_library() -> None:
    with receiver(SECRET) as hook:
        before = int(time.time())
        result = HttpSender(timeout=5).send(signed(hook.base_url + "/in"), context("exec-a", 0))
        [delivery] = hook.received()
    assert result.succeeded, result.message
    assert delivery.verified, delivery.reason
    assert delivery.headers["webhook-id"] == "msg-occurrence-1"
    assert before <= int(delivery.headers["webhook-timestamp"]) <= int(time.time())
    assert delivery.headers["webhook-signature"].startswith("v1,")
    assert delivery.body == b'{"event": "tick"}'


def test_a_retry_carries_the_same_webhook_id_and_a_fresh_signature() -> None:
    """The specification's webhook-id is the message's: the same when it is sent again after a failure, so
    the receiver can drop the repeat. Each attempt has its own execution id, the message id stays."""
    sender = HttpSender(timeout=5)
    with receiver(SECRET) as hook:
        first = sender.send(signed(hook.base_url), context("exec-attempt-0", 0))
        second = sender.send(signed(hook.base_url), context("exec-attempt-1", 1))
        deliveries = hook.received()
    assert first.succeeded and second.succeeded
    assert [d.verified for d in deliveries] == [True, True]
    assert {d.headers["webhook-id"] for d in deliveries} == {"msg-occurrence-1"}
    assert [d.headers["x-ms-scheduler-execution-id"] for d in deliveries] == ["exec-attempt-0", "exec-attempt-1"]


def test_without_a_message_id_the_execution_id_is_the_webhook_id() -> None:
    with receiver(SECRET) as hook:
        assert HttpSender(timeout=5).send(signed(hook.base_url), context("exec-only", 0, message_id=None)).succeeded
        [delivery] = hook.received()
    assert delivery.verified and delivery.headers["webhook-id"] == "exec-only"


def test_a_tampered_body_a_replayed_old_timestamp_and_another_secret_fail_verification() -> None:
    with receiver(SECRET) as hook:
        assert HttpSender(timeout=5).send(signed(hook.base_url), context("exec-a", 0)).succeeded
        [delivery] = hook.received()
    webhook = Webhook(SECRET)
    webhook.verify(delivery.body, delivery.headers, json_parse=False)  # as received: verifies
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        webhook.verify(b'{"event": "tock"}', delivery.headers, json_parse=False)
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        webhook.verify(delivery.body, {**delivery.headers, "webhook-id": "msg-other"}, json_parse=False)
    other = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        Webhook(other).verify(delivery.body, delivery.headers, json_parse=False)
    # an old delivery replayed later: the timestamp is signed, so it cannot be renewed without the secret
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    old = int(time.time()) - 600
    replayed = {
        **delivery.headers,
        "webhook-timestamp": str(old),
        "webhook-signature": standard_webhooks_signature(key, "msg-occurrence-1", old, delivery.body),
    }
    with pytest.raises(WebhookVerificationError, match="too old"):
        webhook.verify(delivery.body, replayed, json_parse=False)


def test_a_receiver_with_another_secret_refuses_and_the_attempt_fails() -> None:
    other = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    with receiver(other) as hook:
        result = HttpSender(timeout=5).send(signed(hook.base_url), context("exec-a", 0))
        [delivery] = hook.received()
    assert not delivery.verified and not result.succeeded
    assert result.message.startswith("401 Unauthorized | Http Action"), result.message


def test_the_body_signed_is_the_body_sent_after_placeholders() -> None:
    body = '{"attempt": @{attempt}, "job": "@{jobName}", "run": "@{executionId}"}'
    with receiver(SECRET) as hook:
        action = signed(hook.base_url, body=body, headers={"Content-Type": "application/json"})
        result = HttpSender(timeout=5).send(action, context("exec-3", 3, expand_placeholders=True))
        [delivery] = hook.received()
    assert result.succeeded, result.message
    assert delivery.verified, delivery.reason
    assert delivery.body == b'{"attempt": 3, "job": "hook", "run": "exec-3"}'


def test_a_call_without_a_body_is_signed_over_the_empty_body() -> None:
    with receiver(SECRET) as hook:
        assert HttpSender(timeout=5).send(signed(hook.base_url, body=None), context("exec-a", 0)).succeeded
        [delivery] = hook.received()
    assert delivery.verified and delivery.body == b""


def test_the_jobs_own_webhook_headers_are_replaced_and_authentication_still_applies() -> None:
    headers = {"Webhook-Id": "forged", "WEBHOOK-SIGNATURE": "v1,Zm9yZ2Vk", "webhook-timestamp": "1"}
    basic = BasicAuthentication("user", Secret("basic-password"))
    with receiver(SECRET) as hook:
        action = signed(hook.base_url, headers=headers, authentication=basic)
        assert HttpSender(timeout=5).send(action, context("exec-a", 0)).succeeded
        [delivery] = hook.received()
    lowered = [name.lower() for name in delivery.headers]
    assert lowered.count("webhook-id") == lowered.count("webhook-signature") == lowered.count("webhook-timestamp") == 1
    assert delivery.verified and delivery.headers["webhook-id"] == "msg-occurrence-1"
    assert delivery.headers["Authorization"].startswith("Basic ")


def test_the_secret_is_never_logged_nor_in_the_result_nor_in_the_actions_repr(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    action = signed("http://127.0.0.1:9/")  # nothing listens: the failure path too
    with receiver(SECRET) as hook:
        ok = HttpSender(timeout=5).send(signed(hook.base_url), context("exec-a", 0))
    failed = HttpSender(timeout=2).send(action, context("exec-b", 0))
    assert ok.succeeded and not failed.succeeded
    key_text = SECRET.removeprefix("whsec_")
    for text in (ok.message, failed.message, repr(action), str(action), caplog.text):
        assert key_text not in text and SECRET not in text


def test_a_secret_that_is_not_base64_fails_the_attempt_without_sending() -> None:
    with receiver(SECRET) as hook:
        result = HttpSender(timeout=5).send(signed(hook.base_url, secret="whsec_not*base64!"), context("exec-a", 0))
        assert hook.received() == []
    assert not result.succeeded
    assert "not sent: the signing secret is not whsec_ and base64" in result.message
    assert "not*base64!" not in result.message
