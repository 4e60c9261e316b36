"""The binding metadata of every function in function_app.py, so that a decorator typo fails CI."""

from __future__ import annotations

import azure.functions as func

from scheduler_core.host.app_index import AppIndex
from scheduler_core.host.routing import compile_route

EXPECTED_HTTP = {
    "management_api": ("subscriptions/{*resource}", {"GET", "PUT", "PATCH", "DELETE", "POST"}),
}
EXPECTED_TIMERS = {
    "dispatch_tick": "%SCHEDULER_DISPATCH_SCHEDULE%",
    "cleanup": "%SCHEDULER_CLEANUP_SCHEDULE%",
}
EXPECTED_QUEUES = {
    "scan_shard": ("%SCHEDULER_SCAN_QUEUE%", "AzureWebJobsStorage"),
    "execute_occurrence": ("%SCHEDULER_EXECUTION_QUEUE%", "AzureWebJobsStorage"),
}


def test_http_functions(function_index: AppIndex) -> None:
    found = {f.name: (f.route, set(f.methods)) for f in function_index.http}
    assert found == EXPECTED_HTTP


def test_timer_functions(function_index: AppIndex) -> None:
    found = {t.name: t.schedule for t in function_index.timers}
    assert found == EXPECTED_TIMERS
    assert all(not t.run_on_startup for t in function_index.timers), "runOnStartup must stay false"


def test_queue_functions(function_index: AppIndex) -> None:
    found = {q.name: (q.queue_name, q.connection) for q in function_index.queues}
    assert found == EXPECTED_QUEUES


def test_every_arm_path_reaches_the_management_api() -> None:
    route = compile_route(EXPECTED_HTTP["management_api"][0], "api")
    for path in (
        "subscriptions/s/providers/Microsoft.Scheduler/jobCollections",
        "subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc/jobs/j/history",
        "SUBSCRIPTIONS/s/resourcegroups/rg/providers/microsoft.scheduler/jobcollections/jc",
    ):
        match = route.pattern.match(path)
        assert match is not None, path
        assert "subscriptions/" + match.group("resource") == "subscriptions/" + path.split("/", 1)[1]


def test_http_functions_are_anonymous_at_the_host_level(function_index: AppIndex) -> None:
    # The management API authenticates every request itself (API keys); the host's function keys are not
    # used, so that ARM clients can call the paths unchanged.
    import function_app

    assert function_app.app.auth_level == func.AuthLevel.ANONYMOUS
