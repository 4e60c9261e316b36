"""The host's own answer at ``/`` when no function serves the request, as the Functions host gives it.

The Functions host (azure-functions-host, ``src/WebJobs.Script.WebHost/Middleware/HomepageMiddleware.cs``,
registered for ``Request.Path == "/"`` in ``WebJobsApplicationBuilderExtension.UseWebJobsScriptHost``) runs
the rest of its pipeline first; only when no function was chosen for the request (no
``IFunctionExecutionFeature``: no route matched, or the matching route's method list left the method out)
does it answer, for any method: 204 No Content when the setting ``AzureWebJobsDisableHomepage`` is ``true``
(any case) or when the request is an App Service internal one (on App Service, a request without the
front end's ``X-ARR-LOG-ID`` header), else 200 with its home page (``text/html``, "Your Azure Function App is
up and running."). The local host is never App Service, so the setting alone decides here, read at each
request from the environment (where ``local.settings.json``'s values are), as the host reads its settings.

The page here is the local host's own short text, not Microsoft's page (an embedded font and images).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import azure.functions as func

from scheduler_core.triggers import answer_headers

__all__ = ["DISABLE_SETTING", "PAGE", "homepage_response", "is_homepage_request"]

#: The app setting that turns the home page into a 204 (``EnvironmentSettingNames.AzureWebJobsDisableHomepage``).
DISABLE_SETTING = "AzureWebJobsDisableHomepage"
PAGE = b"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Your Azure Function App is up and running.</title></head>
<body>
<h1>Your function app is up and running.</h1>
<p>No function of this app serves <code>/</code>, so the host answers with its home page (the local host, as
the Azure Functions host does). Set <code>AzureWebJobsDisableHomepage</code> to <code>true</code> for an empty
204 answer instead.</p>
</body>
</html>
"""


def is_homepage_request(path: str) -> bool:
    """Whether a request whose path (percent-encoded, without the query) is ``path`` is one the home page
    answers: exactly ``/`` (``HomepageMiddleware.IsHomepageRequest``: ``Request.Path.Value == "/"``)."""
    return path == "/"


def homepage_response(environ: Mapping[str, str] | None = None) -> func.HttpResponse:
    """The host's answer at ``/`` when no function serves it: 204 without a body when ``environ`` (default:
    the process's environment) sets :data:`DISABLE_SETTING` to ``true`` in any case, else 200 with
    :data:`PAGE` as ``text/html``; with the headers of every answer (``nosniff``, ``Cache-Control``)."""
    env = os.environ if environ is None else environ
    if env.get(DISABLE_SETTING, "").lower() == "true":
        return func.HttpResponse(status_code=204, headers=answer_headers(204, {}))
    headers = answer_headers(200, {"Content-Type": "text/html; charset=utf-8"})
    return func.HttpResponse(PAGE, status_code=200, mimetype="text/html", charset="utf-8", headers=headers)
