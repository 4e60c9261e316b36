"""The web dashboard, served by the function app itself under ``/dashboard`` (one route family).

What it serves (``path`` is what follows ``/dashboard/``):

* ``""`` (``/dashboard`` and ``/dashboard/``): the page, ``static/index.html``; the views are routed in the
  browser (``#/collections``, ``#/jobs``, ``#/failing``, ``#/job/...``), so no other page is needed;
* ``assets/<name>``: a built asset (``static/<name>``: ``app.js``, ``app.css``, ``icon.svg``). The front
  end's sources are in ``dashboard/`` at the top of the repository; ``npm run build:dashboard`` bundles
  them into ``static/`` (committed; ``tests/browser/test_assets.py`` checks they are up to date);
* ``api/job/<ARM path of a job>?count=N[&after=ISO]``: what the management API does not answer about a
  job, read-only and behind the management API's own check (``ApiServices.authenticate`` and
  ``authorize``: an API key or an Entra ID access token, and the role to read the job over its scope):
  its next occurrences from the recurrence engine (``count`` applied here, where the job's creation time
  is known), in UTC and in the job's time zone, and which of its write-only fields (passwords, keys,
  tokens) are set. Never a secret's value. ``python -m scheduler_core jobs preview`` uses it too;
* ``api/preview/<ARM path of a job>?count=N`` (POST, the only write method here; nothing is written): the
  dry run of a job PUT for the job editor (:mod:`scheduler_core.dashboard.preview`): validated as the PUT
  validates, its next occurrences, and which stored secrets the write keeps or drops. The role to write the
  job (a Reader gets 403);
* ``api/access/subscriptions/<sub>/providers/Microsoft.Scheduler/jobCollections``: the caller's role in the
  subscription (``Reader`` or ``Contributor``), so the page shows write controls only to a writer;
* ``api/status/subscriptions/<sub>/providers/Microsoft.Scheduler/jobCollections``: the ``/health`` answer
  of this instance (:func:`scheduler_core.health.check`: storage reachable, the dispatch heartbeat's age,
  queue depths, warnings) and live counts of the subscription (collections, jobs by state, their
  counters, jobs due within a minute), behind the same check (the role to list the subscription's
  collections);
* ``api/arm/subscriptions/<ARM path>?api-version=...`` (GET and HEAD only): the page's reads of the
  management API (collections, jobs, a job, its history), handed to the management API's own handler
  (:meth:`scheduler_core.api.ManagementApi.handle`, the process's one, ``scheduler_core.wiring.management_api``)
  exactly as the ``management_api`` function hands its requests: same authentication (the request's headers
  are passed on: ``Authorization: Bearer`` or ``x-functions-key``), same checks in the same order, same
  answer. Only the route differs, so the page's polls are invocations of the ``dashboard`` function, whose
  per-invocation lines host.json keeps below Information (``Function.dashboard``), not of
  ``management_api``. The API sees the URL as the client sent it, so a list's ``nextLink`` names this route
  again. A path that does not start with ``subscriptions/`` is a 404; HEAD is answered as GET (the host
  sends no body for HEAD).

The page's writes (create and edit, run now, enable, disable, delete) go to the management API itself, so
that each stays an invocation line of ``management_api`` at Information.

Every answer carries a strict Content-Security-Policy (scripts, styles and connections from this origin
only, no inline code, Trusted Types for DOM sinks, no framing) and the other :data:`SECURITY_HEADERS`;
``nosniff`` and ``Cache-Control`` come from the one rule of every answer of the app
(:func:`scheduler_core.triggers.answer_headers`): ``no-store`` for the API's answers and every error, the
page and assets revalidated by their ETag (``no-cache``). The page keeps the API key in the browser's
session storage and sends it as ``Authorization: Bearer``; there are no cookies.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from importlib import resources
from typing import TYPE_CHECKING, Any

from scheduler_core import auth, health
from scheduler_core.api.handler import ApiServices, ManagementApi
from scheduler_core.api.messages import READ_METHODS, ApiRequest, ApiResponse, MethodNotAllowed
from scheduler_core.api.paths import ResourcePath, parse_path
from scheduler_core.auth.roles import Principal
from scheduler_core.dashboard.insight import job_insight
from scheduler_core.dashboard.preview import preview_job
from scheduler_core.definitions import read_json
from scheduler_core.errors import (
    AuthenticationError,
    NotFoundError,
    PayloadTooLargeError,
    SchedulerError,
    StorageError,
    ValidationError,
)
from scheduler_core.model import JobState
from scheduler_core.recurrence import format_instant, parse_instant
from scheduler_core.storage.keys import CollectionRef, JobRef

if TYPE_CHECKING:
    from scheduler_core.wiring import Services

__all__ = ["CONTENT_SECURITY_POLICY", "ROUTE", "serve"]

log = logging.getLogger("scheduler_core.dashboard")

#: The route of the function (the Functions route template: no leading slash, below the route prefix "").
ROUTE = "dashboard/{*path}"
#: Largest body the preview API reads (as the management API's ``MAX_BODY_BYTES``).
MAX_BODY_BYTES = 64 * 1024
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
#: The dashboard's own headers, on every answer under ``/dashboard`` (``X-Content-Type-Options`` and
#: ``Cache-Control``, on every answer of the app, are :data:`scheduler_core.triggers.ANSWER_HEADERS`).
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
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
_STATUS_API = "api/status/"
_PREVIEW_API = "api/preview/"
_ACCESS_API = "api/access/"
#: The page's reads of the management API (``api/arm/subscriptions/...``).
_ARM_API = "api/arm/"
#: The live counts' "due soon" window.
DUE_SOON = timedelta(seconds=60)


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


def _after(query: Mapping[str, str]) -> datetime | None:
    text = query.get("after")
    if text is None:
        return None
    if len(text) > 64:
        raise ValidationError("after", "must be an ISO 8601 instant such as 2025-01-31T06:00:00Z")
    return parse_instant(text, "after")


def _job_api(
    route_path: str, query: Mapping[str, str], headers: Mapping[str, str], services: ApiServices
) -> ApiResponse:
    # The host decoded the route value once; the ARM path parser decodes each name exactly once.
    path = parse_path(ApiRequest.path_from_route(route_path))
    principal = services.authenticate(headers)  # 401 before anything about the path is said
    if path.kind != "job" or path.resource_group is None or path.collection is None or path.job is None:
        raise NotFoundError(
            "expected /dashboard/api/job/subscriptions/{sub}/resourceGroups/{rg}/providers/"
            "Microsoft.Scheduler/jobCollections/{jc}/jobs/{job}"
        )
    services.authorize(principal, path, "GET")  # the role to read the job (403 over the subscription without one)
    count = _count(query)
    after = _after(query)
    service = services.service
    job = service.get_job(JobRef(CollectionRef(path.subscription, path.resource_group, path.collection), path.job))
    now: datetime = service.clock()
    body = job_insight(job, now if after is None else after, count)
    if after is not None:  # occurrences from ``after`` on (and after the last run); ``now`` stays the clock's
        body["now"] = format_instant(now)
        body["after"] = format_instant(after)
    return ApiResponse.json(200, body)


def _preview_api(
    route_path: str, query: Mapping[str, str], headers: Mapping[str, str], body: bytes, services: ApiServices
) -> ApiResponse:
    path = parse_path(ApiRequest.path_from_route(route_path))
    principal = services.authenticate(headers)
    if path.kind != "job" or path.resource_group is None or path.collection is None or path.job is None:
        raise NotFoundError(
            "expected /dashboard/api/preview/subscriptions/{sub}/resourceGroups/{rg}/providers/"
            "Microsoft.Scheduler/jobCollections/{jc}/jobs/{job}"
        )
    services.authorize(principal, path, "PUT")  # a dry run of a write: the role to write the job (403 for a Reader)
    count = _count(query)
    if len(body) > MAX_BODY_BYTES:
        raise PayloadTooLargeError("", f"the request body is larger than {MAX_BODY_BYTES} bytes")
    if not body.strip():
        raise ValidationError("", "a JSON request body is required (the body of the job's PUT)")
    data = read_json(body, "the request body")
    if not isinstance(data, dict):
        raise ValidationError("", "the request body must be a JSON object")
    ref = JobRef(CollectionRef(path.subscription, path.resource_group, path.collection), path.job)
    return ApiResponse.json(200, preview_job(services.service.jobs, ref, data, count))


def live_counts(services: ApiServices, subscription: str) -> dict[str, Any]:
    """Counts of one subscription as of the service's clock: collections, jobs by state, the sums of the
    jobs' counters, and how many enabled jobs are due within :data:`DUE_SOON`."""
    service = services.service
    now = service.clock()
    by_state = {str(state): 0 for state in JobState}
    counts: dict[str, Any] = {
        "collections": 0,
        "jobs": 0,
        "jobsByState": by_state,
        "executions": 0,
        "failures": 0,
        "faults": 0,
        "dueSoon": 0,
        "dueSoonSeconds": int(DUE_SOON.total_seconds()),
    }
    for collection in service.list_collections(subscription):
        counts["collections"] += 1
        for job in service.list_jobs(collection.ref):
            counts["jobs"] += 1
            by_state[str(job.state)] = by_state.get(str(job.state), 0) + 1
            counts["executions"] += job.execution_count
            counts["failures"] += job.failure_count
            counts["faults"] += job.faulted_count
            upcoming = job.next_execution_time
            if upcoming is not None and upcoming - now <= DUE_SOON:
                counts["dueSoon"] += 1
    counts["countedAt"] = format_instant(now)
    return counts


def _subscription_reader(
    api: str, route_path: str, headers: Mapping[str, str], services: ApiServices
) -> tuple[ResourcePath, Principal]:
    """The subscription a dashboard API ``api`` is asked about, and its caller, who may list its collections
    (else the service's 401 or 403)."""
    path = parse_path(ApiRequest.path_from_route(route_path))
    principal = services.authenticate(headers)
    if path.kind != "subscription_collections":
        raise NotFoundError(
            f"expected /dashboard/api/{api}/subscriptions/{{sub}}/providers/Microsoft.Scheduler/jobCollections"
        )
    services.authorize(principal, path, "GET")  # the role to list the subscription's collections
    return path, principal


def _status_api(
    route_path: str,
    headers: Mapping[str, str],
    services: ApiServices,
    fleet: Callable[[], Services],
) -> ApiResponse:
    path, _ = _subscription_reader("status", route_path, headers, services)
    code, checked = health.check(fleet)
    body: dict[str, Any] = {
        "subscription": path.subscription,
        "health": {"httpStatus": code, **checked},
        "counts": None,
    }
    if code == 200:  # storage answers: count (a failure now is a storage error, answered as such)
        body["counts"] = live_counts(services, path.subscription)
    return ApiResponse.json(200, body)


def _access_api(route_path: str, headers: Mapping[str, str], services: ApiServices) -> ApiResponse:
    """The caller's role in the subscription, so the page shows write controls only to who may write (the
    service still decides: a write without the role is its 403)."""
    path, principal = _subscription_reader("access", route_path, headers, services)
    role = principal.role_in(path.subscription)
    assert role is not None  # authorize refused a principal without one
    can_write = role >= auth.Role.CONTRIBUTOR
    return ApiResponse.json(200, {"subscription": path.subscription, "role": role.title, "canWrite": can_write})


def _arm_read(
    method: str, route_path: str, url: str, query: Mapping[str, str], headers: Mapping[str, str], api: ManagementApi
) -> ApiResponse:
    """A read of the management API through the dashboard's route: ``route_path`` is what follows
    ``api/arm/`` (as the host decoded it), ``url`` the request's URL as the client sent it.

    A path that does not start with ``subscriptions/`` is a 404 (nothing else is the management API's); any
    other goes to ``api.handle`` as the ``management_api`` function hands it over (the ARM path re-encoded
    from the decoded route value, the query and the headers as sent, no body), so authentication (401
    without a credential), the path and name rules, api-version, roles (403) and the answer are the
    management API's own. HEAD is handed over as GET (the host sends no body for HEAD); the caller has
    refused every other method."""
    head, _, rest = route_path.partition("/")
    if head.lower() != "subscriptions":
        raise NotFoundError(
            "expected /dashboard/api/arm/subscriptions/... (a path of the management API, read with GET)"
        )
    assert method.upper() in READ_METHODS
    return api.handle(ApiRequest.under_subscriptions("GET", url, rest, query, headers))


def _fleet() -> Services:
    """The process's services (``/health`` reads the same), imported on first use."""
    from scheduler_core.wiring import services

    return services()


def serve(
    method: str,
    path: str,
    headers: Mapping[str, str] | None = None,
    query: Mapping[str, str] | None = None,
    services: Callable[[], ApiServices] | None = None,
    fleet: Callable[[], Services] | None = None,
    body: bytes = b"",
    url: str = "",
    management_api: Callable[[], ManagementApi] | None = None,
) -> ApiResponse:
    """The answer to ``method`` on ``/dashboard/<path>`` (``path`` as the host decoded it).

    ``services`` gives the API keys and the service (``scheduler_core.wiring.api_services``); it is called
    only for ``api/...``, so serving the page and its assets connects to nothing. ``fleet`` gives what
    ``/health`` checks (default: ``scheduler_core.wiring.services``, as the health route uses). ``body`` is
    the request's (read by the preview API only). ``management_api`` gives the management API's handler
    (``scheduler_core.wiring.management_api``) that ``api/arm/...`` hands reads to, with ``url``, the
    request's URL as the client sent it; without it that route is a 404. An answer keeps the
    ``x-ms-request-id`` the management API gave it; any other gets one of its own."""
    headers = headers or {}
    query = query or {}
    request_id = str(uuid.uuid4())
    route_path = path.strip("/")
    try:
        preview = route_path.lower().startswith(_PREVIEW_API)
        if preview and method.upper() != "POST":
            raise MethodNotAllowed(f"the method '{method}' is not allowed on the preview API; use POST", {"POST"})
        if not preview and method.upper() not in READ_METHODS:
            raise MethodNotAllowed(f"the method '{method}' is not allowed on /dashboard; use GET or HEAD", READ_METHODS)
        if preview and services is not None:
            response = _preview_api(route_path[len(_PREVIEW_API) :], query, headers, body, services())
        elif route_path in ("", "index.html"):
            response = _static("index.html", headers)
        elif route_path.startswith(_ASSETS) and "/" not in route_path[len(_ASSETS) :]:
            response = _static(route_path[len(_ASSETS) :], headers)
        elif route_path.lower().startswith(_JOB_API) and services is not None:
            response = _job_api(route_path[len(_JOB_API) :], query, headers, services())
        elif route_path.lower().startswith(_ACCESS_API) and services is not None:
            response = _access_api(route_path[len(_ACCESS_API) :], headers, services())
        elif route_path.lower().startswith(_STATUS_API) and services is not None:
            response = _status_api(route_path[len(_STATUS_API) :], headers, services(), fleet or _fleet)
        elif route_path.lower().startswith(_ARM_API) and management_api is not None:
            response = _arm_read(method, route_path[len(_ARM_API) :], url, query, headers, management_api())
        else:
            raise NotFoundError(f"the dashboard has nothing at '/dashboard/{route_path[:80]}'")
    except Exception as exc:
        if isinstance(exc, SchedulerError) and not isinstance(exc, StorageError):
            response = ApiResponse.error(exc)
            if isinstance(exc, AuthenticationError) and services is not None:  # raised once they were built
                response.headers["WWW-Authenticate"] = services().gate.challenge(exc)
        else:  # a bug, or storage that failed: logged with its cause, answered without details
            log.exception("dashboard request %s: %s failed", request_id, method)
            response = ApiResponse.error(SchedulerError(f"internal error; request id {request_id}"))
    response.headers.update(SECURITY_HEADERS)
    response.headers.setdefault("x-ms-request-id", request_id)
    return response
