"""Wiring of the Azure Functions app: each trigger converts its binding and calls scheduler_core.

No logic lives here. Imports stay cheap: the Functions worker imports this module to index the functions,
and nothing is connected or configured until the first invocation.
"""

from __future__ import annotations

import azure.functions as func

from scheduler_core import triggers

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


def _http_response(answer: triggers.HttpMessage) -> func.HttpResponse:
    """Every HTTP function's answer, through triggers.http_answer (the headers every answer carries)."""
    sealed = triggers.http_answer(answer)
    return func.HttpResponse(body=sealed.body, status_code=sealed.status, headers=sealed.headers)


@app.function_name("management_api")
@app.route(
    route="subscriptions/{*resource}",
    # No method list: the host then limits no method, so HEAD, OPTIONS and the like reach the API and get an
    # ARM 405 error body too (a list built from func.HttpMethod would differ between azure-functions versions).
)
def management_api(req: func.HttpRequest) -> func.HttpResponse:
    """Every Microsoft.Scheduler ARM operation (job collections, jobs, history)."""
    from scheduler_core.api import ApiRequest  # imported on the first request: the app's import stays cheap
    from scheduler_core.wiring import management_api as api

    resource = req.route_params.get("resource", "")
    request = ApiRequest.under_subscriptions(
        req.method, req.url, resource, req.params, req.headers, req.get_body() or b""
    )
    return _http_response(api().handle(request))


@app.function_name("dispatch_tick")
@app.timer_trigger(schedule="%SCHEDULER_DISPATCH_SCHEDULE%", arg_name="timer", run_on_startup=True, use_monitor=True)
def dispatch_tick(timer: func.TimerRequest) -> None:
    """Every minute, and once when a host starts (a scan is idempotent, so a host that restarted, or died
    holding a tick's scans, catches up within seconds): one scan message per due-index shard."""
    triggers.on_dispatch_tick(past_due=timer.past_due)


@app.function_name("scan_shard")
@app.queue_trigger(arg_name="msg", queue_name="%SCHEDULER_SCAN_QUEUE%", connection="AzureWebJobsStorage")
def scan_shard(msg: func.QueueMessage) -> None:
    """Dispatch the due occurrences of one shard as execution messages, visible at their due second."""
    triggers.on_scan(msg.get_body())


def _declare_execution_function(function: triggers.ExecutionFunction) -> None:
    """One queue-triggered function per execution queue (SCHEDULER_EXECUTION_QUEUE_COUNT, read when the
    app is indexed): execute_occurrence on %SCHEDULER_EXECUTION_QUEUE%, execute_occurrence_<i> on
    %SCHEDULER_EXECUTION_QUEUE%-<i>. Each is a function of its own, so the scale controller scales each
    queue's consumers on their own. Their trigger's connection is SchedulerExecutionStorage when the execution
    queues have a storage account of their own (read when the app is indexed, as the count)."""

    def execute_occurrence(msg: func.QueueMessage) -> None:
        """Run one attempt of one occurrence of a job's action."""
        triggers.on_execution(msg.get_body())

    execute_occurrence.__name__ = execute_occurrence.__qualname__ = function.name
    app.function_name(function.name)(
        app.queue_trigger(arg_name="msg", queue_name=function.queue_binding, connection=function.connection)(
            execute_occurrence
        )
    )


for _function in triggers.execution_functions():
    _declare_execution_function(_function)
del _function


if triggers.regions_configured():

    @app.function_name("region_beat")
    @app.timer_trigger(schedule="*/15 * * * * *", arg_name="timer", run_on_startup=True, use_monitor=False)
    def region_beat(timer: func.TimerRequest) -> None:
        """Every 15 s, with a witness only (SchedulerWitness): this region renews its holding of the witness's
        lease, or tries to acquire it (docs/regions.md)."""
        triggers.on_region_beat()


if triggers.replication_configured():

    @app.function_name("region_replicate")
    @app.timer_trigger(schedule="*/10 * * * * *", arg_name="timer", run_on_startup=False, use_monitor=False)
    def region_replicate(timer: func.TimerRequest) -> None:
        """Every 10 s, with a witness and a peer only (SchedulerPeer): while this region is the standby, it copies
        the job collections and jobs the active region wrote (docs/regions.md)."""
        triggers.on_region_replicate()


@app.function_name("cleanup")
@app.timer_trigger(schedule="%SCHEDULER_CLEANUP_SCHEDULE%", arg_name="timer", run_on_startup=False, use_monitor=True)
def cleanup(timer: func.TimerRequest) -> None:
    """Daily: one cleanup message per subscription (the work is cleanup_collections')."""
    triggers.on_cleanup()


@app.function_name("cleanup_collections")
@app.queue_trigger(arg_name="msg", queue_name="%SCHEDULER_CLEANUP_QUEUE%", connection="AzureWebJobsStorage")
def cleanup_collections(msg: func.QueueMessage) -> None:
    """Trim history to 60 days / 1,000 rows per job and remove jobs finished 60 days ago: a subscription's
    collections, or one collection's jobs, per message."""
    triggers.on_cleanup_message(msg.get_body())


@app.function_name("openapi_document")
@app.route(
    route="openapi/{document}",  # scheduler_core.api.openapi.ROUTE_TEMPLATE
    # No method list: every method reaches the function, so that a write gets an ARM 405 error body with Allow
    # (the Functions host answers a method left out of a trigger's list with its own bare 404).
)
def openapi_document(req: func.HttpRequest) -> func.HttpResponse:
    """Microsoft's OpenAPI document of the management API, anonymous (public, no secret in it)."""
    from scheduler_core.api import openapi

    response = openapi.serve(req.method, req.route_params.get("document", openapi.DOCUMENT_NAME))
    return _http_response(response)


@app.function_name("dashboard")
# No method list: every method reaches the function, so that a write gets an ARM 405 error body.
@app.route(route="dashboard/{*path}")  # scheduler_core.dashboard.ROUTE
def dashboard(req: func.HttpRequest) -> func.HttpResponse:
    """The web dashboard: its page and assets (anonymous), its API (API key, as the management API), and the
    page's reads of the management API (``dashboard/api/arm/subscriptions/...``, handed to its handler)."""
    from scheduler_core import dashboard as web
    from scheduler_core.wiring import api_services, management_api

    response = web.serve(
        req.method,
        req.route_params.get("path", ""),
        dict(req.headers),
        dict(req.params),
        api_services,
        body=req.get_body(),
        url=req.url,
        management_api=management_api,
    )
    return _http_response(response)


@app.function_name("home")
# No method list: every method reaches the function, so that a write gets an ARM 405 error body (with a list,
# the Functions host would answer a method left out with its own home page: HomepageMiddleware).
@app.route(route="{ignored:maxlength(0)?}")  # scheduler_core.home.ROUTE: the empty path only, "/"
def home(req: func.HttpRequest) -> func.HttpResponse:
    """``/``: a 302 to the dashboard, with a page linking the dashboard, the API's documents and /health."""
    from scheduler_core import home as root

    return _http_response(root.serve(req.method))


@app.function_name("health")
# No method list: every method reaches the function, so that a write gets an ARM 405 error body.
@app.route(route="health")  # scheduler_core.health.ROUTE
def health(req: func.HttpRequest) -> func.HttpResponse:
    """Anonymous health answer: 503 when this instance cannot reach its storage, 200 (with warnings) otherwise."""
    from scheduler_core import health as probe
    from scheduler_core.wiring import services

    response = probe.serve(req.method, services)
    return _http_response(response)
