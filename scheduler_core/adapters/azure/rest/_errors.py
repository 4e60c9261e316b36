"""A Table service answer that is not a success, as the error ``azure-data-tables`` raises for it.

The SDK decides by the service's error code (``ConditionNotMet``: ``ResourceModifiedError``, ...; an unknown or
missing code: ``HttpResponseError``), except for an insert, whose error it decides by the status (401, 404,
409). The same classes come out here, with the status, the reason and ``error_code`` set, so that code written
against the SDK's errors (the adapters, :func:`~scheduler_core.adapters.azure.errors.storage_error`) reads them
unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)

from scheduler_core.adapters.azure.rest._http import Answer

_BY_CODE: dict[str, type[HttpResponseError]] = {
    "ConditionNotMet": ResourceModifiedError,
    "UpdateConditionNotSatisfied": ResourceModifiedError,
    "InvalidAuthenticationInfo": ClientAuthenticationError,
    "AuthenticationFailed": ClientAuthenticationError,
    "ResourceNotFound": ResourceNotFoundError,
    "TableNotFound": ResourceNotFoundError,
    "EntityNotFound": ResourceNotFoundError,
    "ResourceAlreadyExists": ResourceExistsError,
    "TableAlreadyExists": ResourceExistsError,
    "AccountAlreadyExists": ResourceExistsError,
    "EntityAlreadyExists": ResourceExistsError,
}
_BY_STATUS: dict[int, type[HttpResponseError]] = {
    401: ClientAuthenticationError,
    404: ResourceNotFoundError,
    409: ResourceExistsError,
}


class _Response:
    """What azure-core's ``HttpResponseError`` reads of a response."""

    def __init__(self, answer: Answer) -> None:
        self.status_code = answer.status
        self.reason = answer.reason
        self.headers = answer.headers
        self.content_type = answer.headers.get("content-type", "")
        self._body = answer.body

    def body(self) -> bytes:
        return self._body

    def text(self, encoding: str | None = None) -> str:
        return self._body.decode(encoding or "utf-8", errors="replace")


def service_error(
    answer: Answer, kind: type[HttpResponseError] | None = None, *, by_status: bool = False
) -> HttpResponseError:
    """The error for ``answer``: ``kind`` whatever the code (a failed batch's), else by the service's code, or
    by the status when ``by_status`` (an insert's)."""
    code, message = _described(answer)
    if kind is None:
        if by_status:
            kind = _BY_STATUS.get(answer.status, HttpResponseError)
        else:
            kind = _BY_CODE.get(code or "", HttpResponseError)
    error = kind(message=f"{message}\nErrorCode:{code}", response=_Response(answer))  # type: ignore[arg-type]
    error.error_code = code  # type: ignore[attr-defined]
    return error


def _described(answer: Answer) -> tuple[str | None, str | None]:
    """The service's error code and message (JSON ``odata.error``; else the ``x-ms-error-code`` header)."""
    code, message = answer.headers.get("x-ms-error-code"), None
    try:
        body: Any = json.loads(answer.body) if answer.body else None
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("odata.error"), dict):
        described = body["odata.error"]
        code = described.get("code") or code
        value = described.get("message")
        message = value.get("value") if isinstance(value, dict) else value
    return code, message or answer.reason
