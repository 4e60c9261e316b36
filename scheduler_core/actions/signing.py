"""Request signing of HTTP actions (``action.request.signing``, api-version 2026-12-01-preview).

``StandardWebhooks`` (https://www.standardwebhooks.com, the specification's "Symmetric signature"): three
headers on each request,

* ``webhook-id``: the message id, the same on every delivery and every retry of one occurrence's action
  (:attr:`ActionContext.delivery_id <scheduler_core.actions.base.ActionContext.delivery_id>`), as the
  specification asks ("the same when the same webhook is being resent"), so a receiver can drop a repeat;
* ``webhook-timestamp``: when this request is sent, in whole seconds since the epoch (the receiver refuses
  a timestamp far from its own clock: a new one on each attempt, so a retry hours later still verifies);
* ``webhook-signature``: ``v1,`` and the base64 of HMAC-SHA256 over ``{id}.{timestamp}.{body}`` under the
  key bytes (the secret without its ``whsec_`` prefix, base64-decoded).

The body signed is the exact bytes sent (after placeholders are expanded); a request without a body signs
the empty string. Headers of the job's own named ``webhook-id``, ``webhook-timestamp`` or
``webhook-signature`` (in any casing) are replaced. The secret is never put in a header, a message or a log.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import assert_never

from scheduler_core.actions.http_auth import AuthenticationProblem, OutboundRequest
from scheduler_core.model.actions import RequestSigning, SigningScheme

__all__ = ["SIGNATURE_HEADERS", "StandardWebhooksSigner", "signer_for", "standard_webhooks_signature"]

#: The headers a Standard Webhooks signature sets.
SIGNATURE_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")
SECRET_PREFIX = "whsec_"


def _key(secret: str) -> bytes:
    text = secret.removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise AuthenticationProblem("the signing secret is not whsec_ and base64 (Standard Webhooks)") from None
    if not key:
        raise AuthenticationProblem("the signing secret is empty")
    return key


def standard_webhooks_signature(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value (``v1,<base64>``) of ``body`` sent as ``message_id`` at ``timestamp``."""
    signed = message_id.encode() + b"." + str(timestamp).encode() + b"." + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode("ascii")


@dataclass(frozen=True)
class StandardWebhooksSigner:
    """Signs a built request (:class:`~scheduler_core.actions.http_auth.OutboundRequest`) as ``message_id``,
    with the time from ``clock`` (seconds since the epoch; the wall clock, which the receiver compares with)."""

    signing: RequestSigning
    message_id: str
    clock: Callable[[], float] = field(default=time.time, compare=False)

    def apply(self, request: OutboundRequest) -> None:
        key = _key(self.signing.secret.reveal())
        timestamp = int(self.clock())
        for name in [name for name in request.headers if name.lower() in SIGNATURE_HEADERS]:
            del request.headers[name]
        request.headers["webhook-id"] = self.message_id
        request.headers["webhook-timestamp"] = str(timestamp)
        request.headers["webhook-signature"] = standard_webhooks_signature(
            key, self.message_id, timestamp, request.body or b""
        )


def signer_for(
    signing: RequestSigning | None, message_id: str, clock: Callable[[], float] = time.time
) -> StandardWebhooksSigner | None:
    """The signer of ``signing`` (None: the request is not signed)."""
    if signing is None:
        return None
    match signing.scheme:
        case SigningScheme.STANDARD_WEBHOOKS:
            return StandardWebhooksSigner(signing, message_id, clock)
        case _:
            assert_never(signing.scheme)
