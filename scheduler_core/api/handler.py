"""Dispatch of management API requests: authentication, api-version, paths, errors."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from scheduler_core import auth
from scheduler_core.api.messages import ApiRequest, ApiResponse
from scheduler_core.api.paths import ResourcePath, parse_path
from scheduler_core.context import Services
from scheduler_core.errors import MethodNotAllowedError, SchedulerError, ValidationError
from scheduler_core.storage.names import COLLECTIONS_TABLE

log = logging.getLogger("scheduler_core.api")

#: api-version values accepted (2016-03-01 is what azure-mgmt-scheduler 7.0.0 sends).
API_VERSIONS = frozenset({"2016-03-01", "2016-01-01", "2014-08-01-preview"})


class ManagementApi:
    """The Microsoft.Scheduler management API over a set of :class:`Services`."""

    def __init__(self, services: Callable[[], Services]) -> None:
        self._services = services

    def handle(self, request: ApiRequest) -> ApiResponse:
        request_id = str(uuid.uuid4())
        try:
            response = self._handle(request)
        except SchedulerError as exc:
            response = ApiResponse.error(exc)
        except Exception:
            log.exception("request %s %s failed", request_id, request.method)
            response = ApiResponse.error(SchedulerError(f"internal error; request id {request_id}"))
        response.headers["x-ms-request-id"] = request_id
        response.headers.setdefault(
            "x-ms-correlation-request-id", request.header("x-ms-correlation-request-id") or request_id
        )
        return response

    def _handle(self, request: ApiRequest) -> ApiResponse:
        services = self._services()
        path = parse_path(request.path)
        auth.authenticate(services.api_keys, request.headers, path.subscription)
        version = request.query.get("api-version")
        if version is None:
            raise ValidationError("api-version", "the query parameter 'api-version' is required")
        if version not in API_VERSIONS:
            raise ValidationError(
                "api-version", f"'{version}' is not supported; use one of {', '.join(sorted(API_VERSIONS))}"
            )
        return self._route(services, request, path)

    def _route(self, services: Services, request: ApiRequest, path: ResourcePath) -> ApiResponse:
        method = request.method.upper()
        if path.kind in ("subscription_collections", "group_collections"):
            if method != "GET":
                raise MethodNotAllowedError(
                    f"{method} is not supported on a list of job collections; use GET"
                )
            table = services.tables.get_table_client(services.settings.table_name(COLLECTIONS_TABLE))
            rows = table.query_entities("PartitionKey eq @p", parameters={"p": path.subscription.lower()})
            return ApiResponse.json(200, {"value": [dict(row).get("Definition") for row in rows]})
        raise MethodNotAllowedError(f"{method} on this path is not implemented yet")
