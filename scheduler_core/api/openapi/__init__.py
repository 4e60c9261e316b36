"""The published contracts of the management API: Microsoft's OpenAPI document of Microsoft.Scheduler
2016-03-01, and the document of api-version 2026-12-01-preview derived from it.

``microsoft-scheduler-2016-03-01.json`` beside this module is Microsoft's Swagger 2.0 document, copied unchanged
from Azure/azure-rest-api-specs under its MIT licence (see ``LICENSE`` here).
``microsoft-scheduler-2026-12-01-preview.json`` is that document with the preview's additions
(:mod:`._derive` makes it; a test checks the committed file is exactly that). The app serves both at
``GET /openapi/<name>`` (:data:`ROUTE_TEMPLATE`, below the host's route prefix; :data:`ROUTE` is the first),
anonymously: the documents are public, hold no secret and say nothing about this deployment, and tools
(schemathesis, AutoRest, API explorers) fetch them without credentials. Their ``host`` is still
``management.azure.com``: point a tool's base URL at this app instead. ``tests/e2e/test_contract_fuzz.py``
fuzzes the running app against both.
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from importlib import resources

from scheduler_core.api.messages import READ_METHODS, ApiResponse
from scheduler_core.errors import MethodNotAllowedError, NotFoundError

DOCUMENT_NAME = "microsoft-scheduler-2016-03-01.json"
PREVIEW_DOCUMENT_NAME = "microsoft-scheduler-2026-12-01-preview.json"
#: Every document served, by name.
DOCUMENT_NAMES = (DOCUMENT_NAME, PREVIEW_DOCUMENT_NAME)
#: The route of the 2016-03-01 document (the Functions route template: no leading slash, below the route prefix).
ROUTE = "openapi/" + DOCUMENT_NAME
#: The route that serves every document, by its name (``{document}``).
ROUTE_TEMPLATE = "openapi/{document}"


@functools.cache
def document(name: str = DOCUMENT_NAME) -> bytes:
    """A document's bytes, exactly as committed (``name``: one of :data:`DOCUMENT_NAMES`)."""
    if name not in DOCUMENT_NAMES:
        raise KeyError(name)
    return resources.files(__name__).joinpath(name).read_bytes()


@functools.cache
def _etag(name: str) -> str:
    return '"' + hashlib.sha256(document(name)).hexdigest()[:32] + '"'


def serve(method: str, name: str = DOCUMENT_NAME) -> ApiResponse:
    """The answer to ``method`` on ``openapi/<name>``: the document (GET, HEAD), an ARM 404 for a name that
    is none of :data:`DOCUMENT_NAMES` (matched without regard to case), or an ARM 405 error body."""
    known = {item.lower(): item for item in DOCUMENT_NAMES}.get(name.lower())
    if known is None:
        response = ApiResponse.error(
            NotFoundError(f"no OpenAPI document '{name[:80]}'; the documents are {', '.join(DOCUMENT_NAMES)}")
        )
    elif method.upper() in READ_METHODS:
        response = ApiResponse(
            200,
            document(known),
            {
                "Content-Type": "application/json; charset=utf-8",
                "Cache-Control": "public, max-age=3600",
                "ETag": _etag(known),
            },
        )
    else:
        response = ApiResponse.error(
            MethodNotAllowedError(f"the method '{method}' is not allowed on /openapi/{known}; use GET or HEAD")
        )
        response.headers["Allow"] = ", ".join(sorted(READ_METHODS))
    response.headers["x-ms-request-id"] = str(uuid.uuid4())
    return response
