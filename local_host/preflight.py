"""Checks the local host makes before it reads a request's body.

The management API authenticates every request itself (``scheduler_core.api``), after the body has been
read: in Azure the Functions host reads it first too, within its own request size limit (100 MB), and the
front end absorbs slow clients. The local host has no front end, so for the functions named here it checks
the API key (and the API's body size limit) from the request head, before a byte of body is read: an
unauthenticated client cannot make it buffer anything. The function keeps its own checks; this only
answers earlier, with the same ARM error the function would give.
"""

from __future__ import annotations

from collections.abc import Iterable

import azure.functions as func

from local_host.http_server import Preflight, RequestHead, arm_error
from scheduler_core import auth
from scheduler_core.errors import AuthenticationError, PayloadTooLargeError, SchedulerError


def _error(exc: SchedulerError) -> func.HttpResponse:
    return arm_error(exc.status, exc.message, code=exc.code)


def api_key_preflight(
    keys: tuple[auth.ApiKey, ...] | auth.Gate, functions: Iterable[str], max_body_bytes: int
) -> Preflight:
    """For requests to ``functions``: 401 without a valid credential (an API key, or an Entra ID access token
    when the gate accepts them), 413 when the declared body is larger than ``max_body_bytes``; other requests
    pass. Roles and subscriptions are left to the function (403 needs the path parsed the API's way)."""
    names = frozenset(functions)
    gate = keys if isinstance(keys, auth.Gate) else auth.Gate(keys)

    def check(head: RequestHead) -> func.HttpResponse | None:
        if head.function not in names:
            return None
        try:
            gate.authenticate(head.headers)
        except AuthenticationError as exc:
            answer = _error(exc)
            answer.headers["WWW-Authenticate"] = gate.challenge(exc)
            return answer
        except SchedulerError as exc:  # the tenant's signing keys cannot be fetched (503)
            return _error(exc)
        if head.content_length is not None and head.content_length > max_body_bytes:
            return _error(PayloadTooLargeError("", f"the request body is larger than {max_body_bytes} bytes"))
        return None

    return check
