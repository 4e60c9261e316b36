"""The web dashboard, served by the function app itself under ``/dashboard`` (one route family).

What it serves (``path`` is what follows ``/dashboard/``):

* ``""`` (``/dashboard`` and ``/dashboard/``): the page, ``static/index.html``; the views are routed in the
  browser (``#/collections``, ``#/jobs``, ``#/failing``, ``#/job/...``), so no other page is needed;
* ``assets/<name>``: a built asset (``static/<name>``: ``app.js``, ``app.css``, ``icon.svg``). The front
  end's sources are in ``dashboard/`` at the top of the repository; ``npm run build:dashboard`` bundles
  them into ``static/`` (committed; ``tests/browser/test_assets.py`` checks they are up to date);
* ``api/job/<ARM path of a job>``: what the management API does not answer about a job, read-only and
  behind the same API key check (:func:`scheduler_core.auth.authenticate`, subscription scope included):
  its next occurrences from the recurrence engine, in UTC and in the job's time zone, and which of its
  write-only fields (passwords, keys, tokens) are set. Never a secret's value. Everything else the page
  shows and does (lists, history, run now, enable, disable, delete) goes through the management API.

Every answer carries a strict Content-Security-Policy (scripts, styles and connections from this origin
only, no inline code, Trusted Types for DOM sinks, no framing) and ``nosniff``. The page keeps the API key
in the browser's session storage and sends it as ``Authorization: Bearer``; there are no cookies.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from importlib import resources

from scheduler_core import auth
from scheduler_core.api.handler import ApiServices
from scheduler_core.api.messages import ApiRequest, ApiResponse
from scheduler_core.api.paths import parse_path
from scheduler_core.dashboard.insight import job_insight
from scheduler_core.errors import MethodNotAllowedError, NotFoundError, SchedulerError, StorageError, ValidationError
from scheduler_core.storage.keys import CollectionRef, JobRef

__all__ = ["CONTENT_SECURITY_POLICY", "ROUTE", "serve"]

log = logging.getLogger("scheduler_core.dashboard")

#: The route of the function (the Functions route template: no leading slash, below the route prefix "").
ROUTE = "dashboard/{*path}"
#: Methods the dashboard answers; any other gets an ARM 405.
READ_METHODS = frozenset({"GET", "HEAD"})
#: Most occurrences one request may ask for (``?count=``), and the default.
MAX_OCCURRENCES = 50
DEFAULT_OCCURRENCES = 10

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    )
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
_STATIC = "static"
_ASSETS = "assets/"
_JOB_API = "api/job/"


@functools.cache
def assets() -> dict[str, bytes]:
    """The built assets by file name (read once): only these names are ever served."""
    folder = resources.files(__name__).joinpath(_STATIC)
    found = {}
    for entry in folder.iterdir():
        suffix = "." + entry.name.rpartition(".")[2]
        if entry.is_file() and suffix in CONTENT_TYPES:
            found[entry.name] = entry.read_bytes()
    return found


@functools.cache
def _etag(name: str) -> str:
    return '"' + hashlib.sha256(assets()[name]).hexdigest()[:32] + '"'


def _static(name: str, headers: Mapping[str, str]) -> ApiResponse:
    body = assets().get(name)
    if body is None:
        raise NotFoundError(f"the dashboard has no asset '{name[:80]}'")
    etag = _etag(name)
    content_type = CONTENT_TYPES["." + name.rpartition(".")[2]]
    out = {"Content-Type": content_type, "Cache-Control": "no-cache", "ETag": etag}
    if _header(headers, "If-None-Match") == etag:
        return ApiResponse(304, b"", out)
    return ApiResponse(200, body, out)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    return next((value for key, value in headers.items() if key.lower() == lowered), None)


def _count(query: Mapping[str, str]) -> int:
    text = query.get("count")
    if text is None:
        return DEFAULT_OCCURRENCES
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_OCCURRENCES:
        raise ValidationError("count", f"must be an integer between 1 and {MAX_OCCURRENCES}, got '{text[:20]}'")
    return int(text)


def _job_api(
    route_path: str, query: Mapping[str, str], headers: Mapping[str, str], services: ApiServices
) -> ApiResponse:
    # The host decoded the route value once; the ARM path parser decodes each name exactly once.
    path = parse_path(ApiRequest.path_from_route(route_path))
    auth.authenticate(services.api_keys, headers, path.subscription)
    if path.kind != "job" or path.resource_group is None or path.collection is None or path.job is None:
        raise NotFoundError(
            "expected /dashboard/api/job/subscriptions/{sub}/resourceGroups/{rg}/providers/"
            "Microsoft.Scheduler/jobCollections/{jc}/jobs/{job}"
        )
    count = _count(query)
    service = services.service
    job = service.get_job(JobRef(CollectionRef(path.subscription, path.resource_group, path.collection), path.job))
    now: datetime = service.clock()
    return ApiResponse.json(200, job_insight(job, now, count), {"Cache-Control": "no-store"})


def serve(
    method: str,
    path: str,
    headers: Mapping[str, str] | None = None,
    query: Mapping[str, str] | None = None,
    services: Callable[[], ApiServices] | None = None,
) -> ApiResponse:
    """The answer to ``method`` on ``/dashboard/<path>`` (``path`` as the host decoded it).

    ``services`` gives the API keys and the service (``scheduler_core.wiring.api_services``); it is called
    only for ``api/...``, so serving the page and its assets connects to nothing."""
    headers = headers or {}
    query = query or {}
    request_id = str(uuid.uuid4())
    route_path = path.strip("/")
    try:
        if method.upper() not in READ_METHODS:
            raise MethodNotAllowedError(f"the method '{method}' is not allowed on /dashboard; use GET or HEAD")
        if route_path in ("", "index.html"):
            response = _static("index.html", headers)
        elif route_path.startswith(_ASSETS) and "/" not in route_path[len(_ASSETS) :]:
            response = _static(route_path[len(_ASSETS) :], headers)
        elif route_path.lower().startswith(_JOB_API) and services is not None:
            response = _job_api(route_path[len(_JOB_API) :], query, headers, services())
        else:
            raise NotFoundError(f"the dashboard has nothing at '/dashboard/{route_path[:80]}'")
    except Exception as exc:
        if isinstance(exc, SchedulerError) and not isinstance(exc, StorageError):
            response = ApiResponse.error(exc)
        else:  # a bug, or storage that failed: logged with its cause, answered without details
            log.exception("dashboard request %s: %s failed", request_id, method)
            response = ApiResponse.error(SchedulerError(f"internal error; request id {request_id}"))
        response.headers["Cache-Control"] = "no-store"
        if isinstance(exc, MethodNotAllowedError):
            response.headers["Allow"] = ", ".join(sorted(READ_METHODS))
    response.headers.update(SECURITY_HEADERS)
    response.headers["x-ms-request-id"] = request_id
    return response
