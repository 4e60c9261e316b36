"""Wiring of the Azure Functions app: each trigger converts its binding and calls scheduler_core.

No logic lives here. Imports stay cheap: the Functions worker imports this module to index the functions.
"""

from __future__ import annotations

import azure.functions as func

from scheduler_core.api import ApiRequest, ManagementApi
from scheduler_core.context import services

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

_api = ManagementApi(services)


@app.function_name("management_api")
@app.route(
    route="subscriptions/{*resource}",
    methods=[
        func.HttpMethod.GET,
        func.HttpMethod.PUT,
        func.HttpMethod.PATCH,
        func.HttpMethod.DELETE,
        func.HttpMethod.POST,
    ],
)
def management_api(req: func.HttpRequest) -> func.HttpResponse:
    """Every Microsoft.Scheduler ARM operation (job collections, jobs, history)."""
    resource = req.route_params.get("resource", "")
    response = _api.handle(
        ApiRequest(
            method=req.method,
            url=req.url,
            path="subscriptions/" + resource,
            query=dict(req.params),
            headers=dict(req.headers),
            body=req.get_body() or b"",
        )
    )
    return func.HttpResponse(body=response.body, status_code=response.status, headers=response.headers)
