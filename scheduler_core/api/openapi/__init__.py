"""The published contract of the management API: Microsoft's OpenAPI document of Microsoft.Scheduler 2016-03-01.

``microsoft-scheduler-2016-03-01.json`` beside this module is Microsoft's Swagger 2.0 document, copied unchanged
from Azure/azure-rest-api-specs under its MIT licence (see ``LICENSE`` here). The app serves it at
``GET /openapi/microsoft-scheduler-2016-03-01.json`` (:data:`ROUTE`, below the host's route prefix),
anonymously: the document is public, holds no secret and says nothing about this deployment, and tools
(schemathesis, AutoRest, API explorers) fetch it without credentials. Its ``host`` is still
``management.azure.com``: point a tool's base URL at this app instead. ``tests/e2e/test_contract_fuzz.py``
fuzzes the running app against it.
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from importlib import resources

from scheduler_core.api.messages import ApiResponse
from scheduler_core.errors import MethodNotAllowedError

DOCUMENT_NAME = "microsoft-scheduler-2016-03-01.json"
#: The route of the document (the Functions route template: no leading slash, below the route prefix).
ROUTE = "openapi/" + DOCUMENT_NAME
#: Methods that read the document; any other gets an ARM 405.
READ_METHODS = frozenset({"GET", "HEAD"})


@functools.cache
def document() -> bytes:
    """The document's bytes, exactly as published."""
    return resources.files(__name__).joinpath(DOCUMENT_NAME).read_bytes()


@functools.cache
def _etag() -> str:
    return '"' + hashlib.sha256(document()).hexdigest()[:32] + '"'


def serve(method: str) -> ApiResponse:
    """The answer to ``method`` on :data:`ROUTE`: the document (GET, HEAD) or an ARM 405 error body."""
    if method.upper() in READ_METHODS:
        response = ApiResponse(
            200,
            document(),
            {
                "Content-Type": "application/json; charset=utf-8",
                "Cache-Control": "public, max-age=3600",
                "ETag": _etag(),
            },
        )
    else:
        response = ApiResponse.error(
            MethodNotAllowedError(f"the method '{method}' is not allowed on /{ROUTE}; use GET or HEAD")
        )
        response.headers["Allow"] = ", ".join(sorted(READ_METHODS))
    response.headers["x-ms-request-id"] = str(uuid.uuid4())
    return response
