"""Dispatch of management API requests: authentication, authorization, api-version, paths, bodies, paging,
errors.

Order of the checks: URL and path (400/404 for what names no resource), credentials (401), api-version
(400), method (405, with ``Allow`` listing the path's methods), then the principal's role over the
subscription (403), all before anything is read or written, so a refusal is the same whether or not the
resource exists and changes nothing. A body is decoded in one place (:func:`_body`), bounded in size and
depth."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler_core import auth, telemetry
from scheduler_core.api import views
from scheduler_core.api.job_filter import parse_job_filter
from scheduler_core.api.messages import READ_METHODS, ApiRequest, ApiResponse, MethodNotAllowed
from scheduler_core.api.paging import Page, link_after, paginate, parse_filter, parse_occurrence_query, parse_paging
from scheduler_core.api.paths import ResourcePath, check_url, parse_path
from scheduler_core.definitions import API_VERSIONS, PREVIEW_VERSION, Wire, read_json, wire_of
from scheduler_core.errors import (
    AuthenticationError,
    PayloadTooLargeError,
    RegionNotActiveError,
    SchedulerError,
    StorageError,
    ValidationError,
)
from scheduler_core.model import ActionName, CollectionState, HistoryStatus
from scheduler_core.recurrence import format_instant
from scheduler_core.service import SchedulerService
from scheduler_core.storage.keys import CollectionRef, JobRef

log = logging.getLogger("scheduler_core.api")

#: Largest request body read (a job definition may be 16,000 characters; JSON escapes can grow it).
MAX_BODY_BYTES = 64 * 1024
#: Longest request URL (as Azure Scheduler's limit on URLs).
MAX_URL_LENGTH = 4096
#: The path kind of a job's backfill (``POST .../jobs/{job}/backfill``, api-version 2026-12-01-preview).
JOB_BACKFILL = "job_backfill"


def resource_path(path: str) -> ResourcePath:
    """:func:`parse_path` (a job's ``backfill`` is its kind :data:`JOB_BACKFILL`)."""
    return parse_path(path)


def route_kind(path: str) -> str:
    """The kind of resource ``path`` names (``job``, ``job_history``, ...; ``invalid`` when it names none),
    the operation attribute of ``scheduler.api.requests``."""
    try:
        return resource_path(path).kind
    except SchedulerError:
        return "invalid"


def scope_of(path: ResourcePath) -> str:
    """The ARM scope an operation on ``path`` acts over (as a refusal names it): the subscription or
    resource group of a list of collections, the collection (its enable and disable too), the collection's
    jobs or calendars for a list of them, the job (its run, backfill, history and occurrences too), the
    calendar."""
    scope = f"/subscriptions/{path.subscription}"
    if path.resource_group is None:
        return scope
    scope += f"/resourceGroups/{path.resource_group}"
    if path.collection is None:
        return scope
    scope += f"/providers/Microsoft.Scheduler/jobCollections/{path.collection}"
    if path.job is not None:
        return f"{scope}/jobs/{path.job}"
    if path.calendar is not None:
        return f"{scope}/calendars/{path.calendar}"
    return f"{scope}/{path.kind}" if path.kind in ("jobs", "calendars") else scope


class ApiServices:
    """What the API needs from the process: the service, the API keys and the gate (keys, Entra ID tokens,
    roles; by default the keys alone)."""

    def __init__(
        self,
        service: SchedulerService,
        api_keys: tuple[auth.ApiKey, ...],
        gate: auth.Gate | None = None,
        active: Callable[[], bool] = lambda: True,
    ) -> None:
        self.service = service
        self.api_keys = api_keys
        self.gate = gate or auth.Gate(api_keys)
        self.active = active  # whether this deployment's region takes writes (docs/regions.md)

    def authenticate(self, headers: Mapping[str, str]) -> auth.Principal:
        """The principal of a request (401 otherwise)."""
        return self.gate.authenticate(headers)

    def authorize(self, principal: auth.Principal, path: ResourcePath, method: str) -> None:
        """Allow ``method`` on ``path`` for ``principal`` (403 otherwise)."""
        operation = auth.operation_for(path.kind, method, path.action)
        self.gate.authorize(principal, operation, path.subscription, scope_of(path))

    def check(self, headers: Mapping[str, str], path: ResourcePath, method: str) -> auth.Principal:
        """Both steps, for a route that has nothing to check in between (the dashboard's read-only API)."""
        principal = self.authenticate(headers)
        self.authorize(principal, path, method)
        return principal


class ManagementApi:
    """The Microsoft.Scheduler management API. ``services`` is called once per request (lazy set-up)."""

    def __init__(self, services: Callable[[], ApiServices]) -> None:
        self._services = services

    def handle(self, request: ApiRequest) -> ApiResponse:
        started = time.perf_counter()
        request_id = str(uuid.uuid4())
        parsed: list[ResourcePath] = []  # the path, once _handle has parsed it (for the metric's route)
        try:
            response = self._handle(request, parsed)
        except Exception as exc:
            if isinstance(exc, SchedulerError) and not isinstance(exc, StorageError):
                response = ApiResponse.error(exc)
                if isinstance(exc, AuthenticationError):  # raised once the services were built
                    response.headers["WWW-Authenticate"] = self._services().gate.challenge(exc)
            else:  # a bug, or storage that failed: logged with its cause, answered without details
                log.exception("request %s: %s failed", request_id, request.method)
                response = ApiResponse.error(SchedulerError(f"internal error; request id {request_id}"))
        response.headers["x-ms-request-id"] = request_id
        correlation = request.header("x-ms-correlation-request-id") or request_id
        response.headers.setdefault("x-ms-correlation-request-id", correlation)
        route = parsed[0].kind if parsed else route_kind(request.path)
        telemetry.record_api_request(request.method, route, response.status, time.perf_counter() - started)
        return response

    def _handle(self, request: ApiRequest, parsed: list[ResourcePath]) -> ApiResponse:
        if len(request.url) > MAX_URL_LENGTH:
            raise ValidationError("url", f"the request URL is longer than {MAX_URL_LENGTH} characters")
        services = self._services()
        check_url(request.url)
        path = resource_path(request.path)
        parsed.append(path)
        principal = services.authenticate(request.headers)
        operation = _Operation(services.service, request, path, wire_of(api_version(request.query)))
        run = operation.handler()
        services.authorize(principal, path, operation.method)
        if operation.method not in READ_METHODS and not services.active():
            raise RegionNotActiveError("this region is the standby (docs/regions.md): write to the active region")
        return run()


def _shown(text: str, limit: int = 60) -> str:
    """Client text quoted in an error: cut short, control characters replaced."""
    cut = text if len(text) <= limit else text[:limit] + "..."
    return "".join(c if c.isprintable() else "?" for c in cut)


def api_version(query: Mapping[str, str]) -> str:
    """The request's ``api-version``, exactly one of :data:`API_VERSIONS` (400 naming ``api-version``
    otherwise: missing, misspelt, in another case, or given more than once, which hosts join with commas)."""
    supported = ", ".join(sorted(API_VERSIONS))
    version = query.get("api-version")
    if version is None:
        near = next((name for name in query if name.strip().lower() == "api-version"), None)
        sent = f" (the query has '{_shown(near)}'; parameter names are case-sensitive)" if near is not None else ""
        raise ValidationError("api-version", f"the query parameter 'api-version' is required{sent}")
    if version in API_VERSIONS:
        return version
    if "," in version:
        raise ValidationError(
            "api-version", f"was given more than once ('{_shown(version)}'); give exactly one of {supported}"
        )
    raise ValidationError("api-version", f"'{_shown(version)}' is not supported; use one of {supported}")


def _body(request: ApiRequest) -> dict[str, Any]:
    """The JSON object of a write's body, the one place the API decodes one: 413 over
    :data:`MAX_BODY_BYTES`; 400 when empty, not JSON, nested deeper than
    :data:`~scheduler_core.definitions._json.MAX_DEPTH` levels (:func:`read_json`, so that no body reaches a
    recursive walk it could exhaust), or not an object. Nothing is read or written before."""
    if len(request.body) > MAX_BODY_BYTES:
        raise PayloadTooLargeError("", f"the request body is larger than {MAX_BODY_BYTES} bytes")
    if not request.body.strip():
        raise ValidationError("", "a JSON request body is required")
    data = read_json(request.body, "the request body")
    if not isinstance(data, dict):
        raise ValidationError("", "the request body must be a JSON object")
    return data


class _Operation:
    """One request: picks the operation from the method and the path kind."""

    def __init__(
        self, service: SchedulerService, request: ApiRequest, path: ResourcePath, wire: Wire = Wire.CLASSIC
    ) -> None:
        self.service = service
        self.request = request
        self.path = path
        self.wire = wire
        self.method = request.method.upper()
        self.if_match = request.header("If-Match")

    def handler(self) -> Callable[[], ApiResponse]:
        """What runs this request (400 for a preview-only path with a classic api-version, 405 for a method
        the path does not support, any method a client may send: ``Allow`` lists those it does)."""
        if self.path.kind == JOB_BACKFILL and not self.wire.preview:
            raise ValidationError("api-version", f"a job's backfill needs api-version {PREVIEW_VERSION}")
        views.require_preview(self.wire, self.path)
        handlers: dict[tuple[str, str], Callable[[], ApiResponse]] = {
            ("subscription_collections", "GET"): self.list_collections,
            ("group_collections", "GET"): self.list_collections,
            ("collection", "GET"): self.get_collection,
            ("collection", "PUT"): self.put_collection,
            ("collection", "PATCH"): self.patch_collection,
            ("collection", "DELETE"): self.delete_collection,
            ("collection_action", "POST"): self.collection_action,
            ("jobs", "GET"): self.list_jobs,
            ("job", "GET"): self.get_job,
            ("job", "PUT"): self.put_job,
            ("job", "PATCH"): self.patch_job,
            ("job", "DELETE"): self.delete_job,
            ("job_run", "POST"): self.run_job,
            (JOB_BACKFILL, "POST"): self.backfill_job,
            ("job_history", "GET"): self.list_history,
            ("job_history_rerun", "POST"): self.rerun_history,
            ("job_occurrences", "GET"): self.list_occurrences,
            ("calendars", "GET"): self.list_calendars,
            ("calendar", "GET"): self.get_calendar,
            ("calendar", "PUT"): self.put_calendar,
            ("calendar", "DELETE"): self.delete_calendar,
        }
        handler = handlers.get((self.path.kind, self.method))
        if handler is None:
            allowed = sorted(m for (kind, m) in handlers if kind == self.path.kind)
            raise MethodNotAllowed(f"{self.method} is not supported here; use {' or '.join(allowed)}", allowed)
        return handler

    # --------------------------------------------------------------------------------------- references

    def collection_ref(self) -> CollectionRef:
        assert self.path.resource_group is not None
        assert self.path.collection is not None
        return CollectionRef(self.path.subscription, self.path.resource_group, self.path.collection)

    def job_ref(self) -> JobRef:
        assert self.path.job is not None
        return JobRef(self.collection_ref(), self.path.job)

    def _list(self, items: Sequence[Any], render: Callable[[Any], dict[str, Any]]) -> ApiResponse:
        page: Page[Any] = paginate(items, parse_paging(self.request.query), self.request.url)
        payload: dict[str, Any] = {"value": [render(item) for item in page.items]}
        if page.next_link:
            payload["nextLink"] = page.next_link
        return ApiResponse.json(200, payload)

    # -------------------------------------------------------------------------------------- collections

    def list_collections(self) -> ApiResponse:
        records = self.service.list_collections(self.path.subscription, self.path.resource_group)
        payload = {"value": [views.collection(record, self.wire) for record in records]}
        return ApiResponse.json(200, payload)

    def get_collection(self) -> ApiResponse:
        record = self.service.get_collection(self.collection_ref())
        return ApiResponse.json(200, views.collection(record, self.wire), {"ETag": record.version})

    def put_collection(self) -> ApiResponse:
        ref, body = self.collection_ref(), _body(self.request)
        record, created = self.service.put_collection(ref, body, self.if_match, self.wire)
        return ApiResponse.json(201 if created else 200, views.collection(record, self.wire), {"ETag": record.version})

    def patch_collection(self) -> ApiResponse:
        record = self.service.patch_collection(self.collection_ref(), _body(self.request), self.if_match, self.wire)
        return ApiResponse.json(200, views.collection(record, self.wire), {"ETag": record.version})

    def delete_collection(self) -> ApiResponse:
        self.service.delete_collection(self.collection_ref(), self.if_match)
        return ApiResponse.empty(200)

    def collection_action(self) -> ApiResponse:
        state = CollectionState.ENABLED if self.path.action == "enable" else CollectionState.DISABLED
        self.service.set_collection_state(self.collection_ref(), state)
        return ApiResponse.empty(200)

    # --------------------------------------------------------------------------------------------- jobs

    def list_jobs(self) -> ApiResponse:
        jobs = self.service.list_jobs(self.collection_ref())
        if self.wire.preview:  # tags, host and several clauses: the preview's $filter (api/job_filter.py)
            chosen = parse_job_filter(self.request.query.get("$filter"), views.JOB_STATES)
            if chosen is not None:
                jobs = [job for job in jobs if chosen.matches(job)]
        else:
            wanted = parse_filter(self.request.query, "state", views.JOB_STATES)
            if wanted is not None:
                jobs = [job for job in jobs if job.state == wanted]
        return self._list(jobs, lambda job: views.job(job, self.wire))

    def get_job(self) -> ApiResponse:
        record = self.service.get_job(self.job_ref())
        return ApiResponse.json(200, views.job(record, self.wire), {"ETag": record.version})

    def put_job(self) -> ApiResponse:
        record, created = self.service.put_job(self.job_ref(), _body(self.request), self.if_match, self.wire)
        return ApiResponse.json(201 if created else 200, views.job(record, self.wire), {"ETag": record.version})

    def patch_job(self) -> ApiResponse:
        record = self.service.patch_job(self.job_ref(), _body(self.request), self.if_match, self.wire)
        return ApiResponse.json(200, views.job(record, self.wire), {"ETag": record.version})

    def delete_job(self) -> ApiResponse:
        self.service.delete_job(self.job_ref(), self.if_match)
        return ApiResponse.empty(200)

    def run_job(self) -> ApiResponse:
        self.service.run_job(self.job_ref())
        return ApiResponse.empty(200)

    def backfill_job(self) -> ApiResponse:
        """202 with how many occurrences of the window were sent (``{"count": N}``)."""
        count = self.service.jobs.backfill(self.job_ref(), _body(self.request))
        return ApiResponse.json(202, {"count": count})

    def rerun_history(self) -> ApiResponse:
        """202 with the occurrence run again and its first attempt's execution id."""
        assert self.path.history is not None
        occurrence, execution_id = self.service.rerun_job(self.job_ref(), self.path.history)
        return ApiResponse.json(202, {"scheduledTime": format_instant(occurrence), "executionId": execution_id})

    def list_history(self) -> ApiResponse:
        ref = self.job_ref()
        rows = self.service.list_history(ref)
        if not self.wire.preview:
            # Skipped entries (overlapPolicy) and notifications' are not in 2016-03-01's enums (preview only).
            rows = [
                row
                for row in rows
                if row.status != HistoryStatus.SKIPPED and row.action_name is not ActionName.NOTIFICATION
            ]
        statuses = views.EXECUTION_STATUSES if self.wire.preview else views.CLASSIC_EXECUTION_STATUSES
        wanted = parse_filter(self.request.query, "status", statuses)
        if wanted is not None:
            rows = [row for row in rows if row.status == wanted]
        return self._list(rows, lambda row: views.history(ref, row, self.wire))

    def list_occurrences(self) -> ApiResponse:
        top, after = parse_occurrence_query(self.request.query)
        items, more = self.service.job_occurrences(self.job_ref(), after, top)
        link = link_after(self.request.url, items[-1][1]) if more and items else None
        return ApiResponse.json(200, views.occurrences(items, link))

    # ------------------------------------------------------------------------------ calendars (preview)

    def calendar_name(self) -> str:
        assert self.path.calendar is not None
        return self.path.calendar

    def list_calendars(self) -> ApiResponse:
        ref = self.collection_ref()
        return self._list(self.service.list_calendars(ref), lambda item: views.calendar(ref, item))

    def get_calendar(self) -> ApiResponse:
        ref = self.collection_ref()
        return ApiResponse.json(200, views.calendar(ref, self.service.get_calendar(ref, self.calendar_name())))

    def put_calendar(self) -> ApiResponse:
        ref = self.collection_ref()
        record, created = self.service.put_calendar(ref, self.calendar_name(), _body(self.request))
        return ApiResponse.json(201 if created else 200, views.calendar(ref, record))

    def delete_calendar(self) -> ApiResponse:
        self.service.delete_calendar(self.collection_ref(), self.calendar_name())
        return ApiResponse.empty(200)
