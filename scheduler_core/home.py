"""``GET /``: the app's root leads to the dashboard.

The Functions host serves a home page of its own at ``/`` ("Your Azure Function App is up and running", or
204 with ``AzureWebJobsDisableHomepage=true``), but only when no function ran for the request: its
``HomepageMiddleware`` (azure-functions-host, ``src/WebJobs.Script.WebHost/Middleware/HomepageMiddleware.cs``)
calls the rest of the pipeline first and answers only if no function route matched. With ``routePrefix``
"" a function whose route matches the empty path owns ``/``. An empty route cannot do it (the host replaces
it by the function's name, ``ScriptHost.ValidateHttpFunction``), a catch-all would take every unmatched
path, so the route is an optional parameter that matches no segment at all: :data:`ROUTE`.

GET and HEAD are answered with a 302 to ``/dashboard/`` and a small page that links the dashboard, the
management API's OpenAPI documents and ``/health`` (for a client that does not follow redirects); any other
method is an ARM 405 with ``Allow: GET, HEAD``. The page holds no data and no secret; it carries a
Content-Security-Policy that allows nothing but the page itself, and (as every answer of the app,
:func:`scheduler_core.triggers.http_answer`) ``nosniff`` and ``Cache-Control: no-store``.
"""

from __future__ import annotations

from scheduler_core.api.messages import READ_METHODS, ApiResponse, MethodNotAllowed

__all__ = ["LOCATION", "ROUTE", "serve"]

#: The function's route (below the route prefix ""): an optional parameter of at most 0 characters, so only
#: the empty path (``/``) matches it (ASP.NET Core's ``maxlength`` constraint; an absent optional parameter
#: is not checked).
ROUTE = "{ignored:maxlength(0)?}"
#: Where ``GET /`` leads.
LOCATION = "/dashboard/"
#: The headers of the page (``nosniff`` and ``Cache-Control`` come from the answer rule of every route).
PAGE_HEADERS = {
    "Content-Type": "text/html; charset=utf-8",
    "Content-Security-Policy": "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
PAGE = b"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Azure Scheduler, self-hosted</title></head>
<body>
<h1>Azure Scheduler, self-hosted</h1>
<ul>
<li><a href="/dashboard/">The dashboard</a> (sign in with an API key)</li>
<li>The management API:
<code>/subscriptions/{subscription}/providers/Microsoft.Scheduler/jobCollections?api-version=2016-03-01</code>
(an API key as <code>Authorization: Bearer</code>); its OpenAPI documents:
<a href="/openapi/microsoft-scheduler-2016-03-01.json">2016-03-01</a>,
<a href="/openapi/microsoft-scheduler-2026-12-01-preview.json">2026-12-01-preview</a></li>
<li><a href="/health">Health</a></li>
</ul>
</body>
</html>
"""


def serve(method: str) -> ApiResponse:
    """The answer to ``method`` on ``/``: for GET and HEAD a 302 to :data:`LOCATION` with :data:`PAGE` (the
    host sends no body for HEAD); for any other method an ARM 405 (``InvalidHttpVerb``) with
    ``Allow: GET, HEAD``. Reads nothing, connects to nothing."""
    if method.upper() not in READ_METHODS:
        refused = MethodNotAllowed(f"the method '{method}' is not allowed on /; use GET or HEAD", READ_METHODS)
        return ApiResponse.error(refused)
    return ApiResponse(302, PAGE, {**PAGE_HEADERS, "Location": LOCATION})
