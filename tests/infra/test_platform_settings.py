"""What the Azure platform is told to keep, checked against the code (issue 26, "a deployment that keeps the
promises"; docs/deploy.md "What each plan keeps").

The local host is not the platform. These checks pin down the settings that make Azure behave as the design
needs, each against the code or host.json it has to agree with:

* **Always-ready instances (Flex Consumption).** Flex scales each non-HTTP function on instances of its own
  and to zero when idle, and its queue scale metric counts only *visible* messages, while every execution
  message is invisible until its due second (Azure/azure-functions-host#10706, Azure/Azure-Functions#2581).
  ``functionAppConfig.scaleAndConcurrency.alwaysReady`` names ``dispatch_tick``, ``scan_shard`` and every
  execution function the app declares for the deployed ``executionQueueCount``, as ``function:<name>``
  (Microsoft's "Set always ready instance counts": groups are ``http``, ``blob``, ``durable``, any other
  function is ``function:<name>``). Every other non-HTTP function is exempt by name, with its reason.
* **The timer's singleton lock.** host.json ``singleton`` sets the listener lock's period and recovery
  polling within the bounds ``SingletonOptions`` enforces (azure-webjobs-sdk
  ``src/Microsoft.Azure.WebJobs.Host/Singleton/SingletonOptions.cs``: a lease of 15 to 60 s, a recovery
  interval of at least 15 s), at the minimum, so that a crashed holder's tick moves within 30 s.
* **Request bodies and HTTP concurrency.** ``FUNCTIONS_REQUEST_BODY_SIZE_LIMIT`` is twice the management
  API's own ``MAX_BODY_BYTES``, so that the API still answers a body somewhat over its limit with its own
  ARM 413; ``extensions.http`` bounds concurrency explicitly, and Flex Consumption's HTTP
  ``perInstanceConcurrency`` is the same number.
* **Elastic Premium's one thread pool.** ``PYTHON_THREADPOOL_THREAD_COUNT`` on Elastic Premium is computed
  from the functions the app declares and host.json: (batchSize + newBatchThreshold) per queue function, one
  per timer, maxConcurrentRequests for HTTP, at most what the app accepts; one worker process.
"""

from __future__ import annotations

import importlib.util
import json
import re
import uuid
from typing import Any

import azure.functions as func
import pytest

from local_host.hostjson import load_host_json, parse_timespan
from scheduler_core import settings as settings_module
from scheduler_core import triggers
from scheduler_core.api.handler import MAX_BODY_BYTES, _body
from scheduler_core.api.messages import ApiRequest
from scheduler_core.errors import ConfigurationError, PayloadTooLargeError
from tests.infra.bicep_eval import Template
from tests.infra.conftest import INFRA, ROOT, TOOL_TIMEOUT

pytestmark = pytest.mark.timeout(2 * TOOL_TIMEOUT)

HOST_JSON = ROOT / "host.json"
APP_SETTINGS_MODULE = "modules/appsettings.bicep"
FUNCTION_APP_MODULE = "modules/functionapp.bicep"

HTTP_TRIGGER, TIMER_TRIGGER, QUEUE_TRIGGER = "httpTrigger", "timerTrigger", "queueTrigger"

#: The functions the scheduler's timing depends on, kept on always-ready instances on Flex Consumption
#: besides the execution functions (``triggers.execution_functions``).
ALWAYS_READY = ("dispatch_tick", "scan_shard")
#: Non-HTTP functions left to scale from zero on Flex Consumption, and why. A function the app declares
#: that is neither here nor always ready fails :func:`test_always_ready_covers_every_function_that_keeps_time`.
NOT_ALWAYS_READY = {
    "cleanup": "the daily timer: the platform starts an instance for its occurrence, and a cold start delays "
    "only the cleanup",
    "cleanup_collections": "fed by cleanup with messages visible at once, which the scale controller counts; "
    "a cold start delays only the cleanup",
}

#: Azure Storage's bounds of a blob lease, which SingletonOptions enforces on lockPeriod and
#: listenerLockPeriod (MinimumLeasePeriod, MaximumLeasePeriod) and, as a lower bound, on
#: listenerLockRecoveryPollingInterval (azure-webjobs-sdk, Singleton/SingletonOptions.cs).
LEASE_MIN_SECONDS, LEASE_MAX_SECONDS = 15.0, 60.0
#: The properties of SingletonOptions, as host.json's ``singleton`` section names them.
SINGLETON_KEYS = {
    "lockPeriod",
    "listenerLockPeriod",
    "listenerLockRecoveryPollingInterval",
    "lockAcquisitionTimeout",
    "lockAcquisitionPollingInterval",
}
#: Longest a timer may go without a lock holder after the holder's process died (see the singleton test).
LOCK_TAKEOVER_BOUND_SECONDS = 30.0


def host_json() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(HOST_JSON.read_text())
    return data


def declared_functions(monkeypatch: pytest.MonkeyPatch, count: int) -> dict[str, str]:
    """The functions ``function_app.py`` declares with SCHEDULER_EXECUTION_QUEUE_COUNT = ``count`` (imported
    afresh as a module of its own, as the Functions worker indexes it in such a deployment): name -> the
    binding type of its trigger (``httpTrigger``, ``timerTrigger``, ``queueTrigger``)."""
    monkeypatch.setenv("SCHEDULER_EXECUTION_QUEUE_COUNT", str(count))
    spec = importlib.util.spec_from_file_location(f"function_app_{uuid.uuid4().hex}", ROOT / "function_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app: func.FunctionApp = module.app
    declared: dict[str, str] = {}
    for function in app.get_functions():
        name, trigger = function.get_function_name(), function.get_trigger()
        assert name is not None and trigger is not None, function
        declared[name] = trigger.get_binding_name()
    return declared


def flex_always_ready(main: Template, **parameters: Any) -> list[dict[str, Any]]:
    """main.bicep's always-ready list for a deployment with ``parameters``."""
    deployed = Template(main.parsed, parameters=parameters)
    value = deployed.evaluate(deployed.variable("flexAlwaysReady"))
    assert isinstance(value, list), f"flexAlwaysReady cannot be evaluated: {value!r}"
    return value


def decorator(template: Template, parameter: str, kind: str) -> Any:
    return next(d["argument"] for d in template.parameters[parameter]["decorators"] if d["type"] == kind)


# ------------------------------------------------------------------------------ always ready (Flex Consumption)


@pytest.mark.parametrize("count", [1, 3, 32])
def test_always_ready_covers_every_function_that_keeps_time(
    main: Template, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """For the default K and other K, the always-ready list is exactly dispatch_tick, scan_shard and the K
    execution functions the app then declares; every other non-HTTP function is exempt by name."""
    declared = declared_functions(monkeypatch, count)
    execution = [function.name for function in triggers.execution_functions()]
    assert len(execution) == count
    assert set(execution) <= set(declared)
    stale = set(NOT_ALWAYS_READY) - set(declared)
    assert not stale, f"exempt from always-ready but not declared by function_app.py: {sorted(stale)}"

    entries = flex_always_ready(main, executionQueueCount=count)
    names = [entry["name"] for entry in entries]
    assert len(names) == len(set(names)), f"a function is named twice: {names}"
    assert all(entry["instanceCount"] == 1 for entry in entries), entries
    expected = {f"function:{name}" for name in (*ALWAYS_READY, *execution)}
    assert set(names) == expected
    for name, trigger in declared.items():
        if trigger == HTTP_TRIGGER:
            continue  # the http group (alwaysReadyHttpInstanceCount)
        assert (f"function:{name}" in names) != (name in NOT_ALWAYS_READY), (
            f"{name} ({trigger}): keep it always ready, or exempt it in NOT_ALWAYS_READY with a reason"
        )


def test_always_ready_reaches_the_flex_site(main: Template, function_app: Template) -> None:
    """The list is passed to the function app module, which puts it into functionAppConfig (Flex only)."""
    params = main.modules["functionApp"]["config"]["params"]
    assert params["alwaysReady"] == "flexAlwaysReady"
    scale = function_app.variable("flexConfig")["scaleAndConcurrency"]
    assert scale["alwaysReady"] == "alwaysReady"
    properties = function_app.resources["site"]["config"]["properties"]
    assert properties["functionAppConfig"]["operator"]["operands"]["true_value"] == "flexConfig"


def test_always_ready_count_is_a_parameter(main: Template) -> None:
    """Default 1 of each; 0 lets them scale to zero; a larger count applies to each function; azd passes it."""
    assert main.evaluate("alwaysReadyInstanceCount") == 1
    assert decorator(main, "alwaysReadyInstanceCount", "min_value") == 0
    assert flex_always_ready(main, alwaysReadyInstanceCount=0) == []
    two = flex_always_ready(main, alwaysReadyInstanceCount=2, executionQueueCount=3)
    assert len(two) == len(ALWAYS_READY) + 3 and {entry["instanceCount"] for entry in two} == {2}
    document = json.loads((INFRA / "main.parameters.json").read_text())
    assert document["parameters"]["alwaysReadyInstanceCount"]["value"] == "${SCHEDULER_ALWAYS_READY_INSTANCES=1}"


def test_the_http_group_is_always_ready_only_on_request(main: Template) -> None:
    assert main.evaluate("alwaysReadyHttpInstanceCount") == 0
    assert not [entry for entry in flex_always_ready(main) if entry["name"] == "http"]
    entries = flex_always_ready(main, alwaysReadyHttpInstanceCount=2, alwaysReadyInstanceCount=0)
    assert entries == [{"name": "http", "instanceCount": 2}]


def test_elastic_premium_keeps_its_minimum_instances(main: Template, function_app: Template) -> None:
    """Elastic Premium has no scale to zero: at least one instance, running every function, always."""
    assert main.evaluate("elasticPremiumMinimumInstances") == 1
    assert decorator(main, "elasticPremiumMinimumInstances", "min_value") >= 1
    assert decorator(function_app, "minimumElasticInstanceCount", "min_value") >= 1
    params = main.modules["functionApp"]["config"]["params"]
    assert params["minimumElasticInstanceCount"] == "elasticPremiumMinimumInstances"
    site_config = function_app.resources["site"]["config"]["properties"]["siteConfig"]
    for plan, expected in (("ElasticPremium", 1), ("FlexConsumption", None)):
        deployed = Template(function_app.parsed, parameters={"hostingPlan": plan})
        assert deployed.evaluate(site_config["minimumElasticInstanceCount"]) == expected, plan


# ------------------------------------------------------------------------------------ the timer's singleton


def test_the_singleton_lock_moves_within_seconds() -> None:
    """A timer's listener holds a blob lease of ``listenerLockPeriod``, renewed at half the period; the other
    instances try for it every ``listenerLockRecoveryPollingInterval``. After the holder dies, its lease runs
    out within one period and another instance takes it within one polling interval more: both at their
    minimum, 15 s, the dispatch tick moves within 30 s (the defaults, 60 s and 60 s, allow 2 minutes)."""
    singleton = host_json()["singleton"]
    unknown = set(singleton) - SINGLETON_KEYS
    assert not unknown, f"host.json singleton: not SingletonOptions properties: {sorted(unknown)}"
    period = parse_timespan(singleton["listenerLockPeriod"])
    recovery = parse_timespan(singleton["listenerLockRecoveryPollingInterval"])
    assert LEASE_MIN_SECONDS <= period <= LEASE_MAX_SECONDS, f"listenerLockPeriod {period} s is outside 15-60 s"
    assert recovery >= LEASE_MIN_SECONDS, f"listenerLockRecoveryPollingInterval {recovery} s is below 15 s"
    assert recovery == LEASE_MIN_SECONDS, "recovery polling at its minimum"
    assert period + recovery <= LOCK_TAKEOVER_BOUND_SECONDS
    for optional in ("lockPeriod",):  # function-level singletons: none in this app, but a value must be valid
        if optional in singleton:
            assert LEASE_MIN_SECONDS <= parse_timespan(singleton[optional]) <= LEASE_MAX_SECONDS


# ------------------------------------------------------------------------- request bodies, HTTP concurrency


def test_the_request_body_limit_lets_the_api_answer_first(main: Template, app_settings_module: Template) -> None:
    """FUNCTIONS_REQUEST_BODY_SIZE_LIMIT is twice the API's MAX_BODY_BYTES on both plans: a body up to that
    size reaches the API, which refuses anything over its own limit with its ARM 413; the host refuses a
    larger one itself, before reading it whole (unset, it reads up to 100 MB per request)."""
    assert main.evaluate("managementApiMaxBodyBytes") == MAX_BODY_BYTES
    limit = main.evaluate("requestBodySizeLimit")
    assert limit == 2 * MAX_BODY_BYTES
    assert main.modules["appSettings"]["config"]["params"]["requestBodySizeLimit"] == "requestBodySizeLimit"
    given = Template(app_settings_module.parsed, parameters={"requestBodySizeLimit": limit, "pythonThreadCount": 40})
    platform = given.evaluate(given.variable("platformSettings"))  # applied on both plans
    assert platform["FUNCTIONS_REQUEST_BODY_SIZE_LIMIT"] == str(limit)
    assert "FUNCTIONS_REQUEST_BODY_SIZE_LIMIT" not in app_settings_module.variable("elasticPremiumSettings")
    for size in (MAX_BODY_BYTES + 1, limit):
        request = ApiRequest("PUT", "https://app/subscriptions/s", "subscriptions/s", {}, {}, b" " * size)
        with pytest.raises(PayloadTooLargeError) as refused:
            _body(request)
        assert refused.value.status == 413 and refused.value.to_arm()["error"]["code"] == "RequestEntityTooLarge"


def test_http_concurrency_is_explicit(main: Template, function_app: Template) -> None:
    """host.json bounds HTTP concurrency (maxConcurrentRequests running, maxOutstandingRequests in all, then
    429) on every plan, with dynamic throttles off; Flex Consumption's perInstanceConcurrency (Python's
    default there is 1) is the same number, and fits in a Flex instance's worker threads."""
    http = host_json()["extensions"]["http"]
    concurrent, outstanding = http["maxConcurrentRequests"], http["maxOutstandingRequests"]
    assert isinstance(concurrent, int) and concurrent >= 1
    assert isinstance(outstanding, int) and outstanding >= concurrent
    # On Linux the throttle sees no sandbox counters and acts on the host's throttle manager alone; a 429 from
    # it would also fail App Service's health check pings (Elastic Premium).
    assert http["dynamicThrottlesEnabled"] is False
    assert main.evaluate("httpMaxConcurrentRequests") == concurrent
    assert main.modules["functionApp"]["config"]["params"]["httpPerInstanceConcurrency"] == "httpMaxConcurrentRequests"
    triggers_config = function_app.variable("flexConfig")["scaleAndConcurrency"]["triggers"]
    assert triggers_config["http"]["perInstanceConcurrency"] == "httpPerInstanceConcurrency"
    assert concurrent <= main.evaluate("pythonThreadpoolThreadCount"), "each sync HTTP request holds a thread"
    local = load_host_json(HOST_JSON).http  # the local host bounds its pool by the same numbers
    assert (local.max_concurrent_requests, local.max_outstanding_requests) == (concurrent, outstanding)


# ------------------------------------------------------------------------- Elastic Premium's thread pool


def _largest_thread_count_the_app_accepts() -> int:
    """The largest PYTHON_THREADPOOL_THREAD_COUNT ``settings.load`` accepts (found, not copied)."""
    base = {"AzureWebJobsStorage__accountName": "account"}
    accepted, refused = 1, 1 << 20
    with pytest.raises(ConfigurationError):
        settings_module.load({**base, "PYTHON_THREADPOOL_THREAD_COUNT": str(refused)})
    while refused - accepted > 1:
        middle = (accepted + refused) // 2
        try:
            settings_module.load({**base, "PYTHON_THREADPOOL_THREAD_COUNT": str(middle)})
            accepted = middle
        except ConfigurationError:
            refused = middle
    return accepted


@pytest.mark.parametrize("count", [1, 3, 23, 24, 32])
def test_elastic_premium_threads_hold_everything_an_instance_is_handed(
    main: Template, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """Elastic Premium: T = Q x (batchSize + newBatchThreshold) + timers + maxConcurrentRequests, at most
    what the app accepts, with Q the queue functions and timers the timer functions the app declares for K
    (Q = K + 2). Flex Consumption: batchSize + newBatchThreshold, one queue function per instance."""
    declared = declared_functions(monkeypatch, count)
    queue_functions = [name for name, trigger in declared.items() if trigger == QUEUE_TRIGGER]
    timers = [name for name, trigger in declared.items() if trigger == TIMER_TRIGGER]
    assert len(queue_functions) == count + 2
    host = host_json()
    queues, http = host["extensions"]["queues"], host["extensions"]["http"]
    per_queue_function = queues["batchSize"] + queues["newBatchThreshold"]
    ceiling = _largest_thread_count_the_app_accepts()
    expected = min(ceiling, len(queue_functions) * per_queue_function + len(timers) + http["maxConcurrentRequests"])

    elastic = Template(main.parsed, parameters={"hostingPlan": "ElasticPremium", "executionQueueCount": count})
    threads = elastic.deployed_modules(APP_SETTINGS_MODULE)["appSettings"]["pythonThreadCount"]
    assert threads == expected, f"K={count}: Elastic Premium thread count {threads}, expected {expected}"
    assert main.evaluate("timerFunctionCount") == len(timers)
    flex = Template(main.parsed, parameters={"executionQueueCount": count})
    assert flex.deployed_modules(APP_SETTINGS_MODULE)["appSettings"]["pythonThreadCount"] == per_queue_function
    loaded = settings_module.load(
        {"AzureWebJobsStorage__accountName": "account", "PYTHON_THREADPOOL_THREAD_COUNT": str(threads)}
    )
    assert loaded.python_threadpool_thread_count == threads


def test_elastic_premium_runs_one_worker_process(app_settings_module: Template) -> None:
    """The thread count is per process: one process per instance, set explicitly on Elastic Premium only."""
    assert app_settings_module.variable("elasticPremiumSettings")["FUNCTIONS_WORKER_PROCESS_COUNT"] == "1"
    assert "FUNCTIONS_WORKER_PROCESS_COUNT" not in app_settings_module.variable("platformSettings")


# --------------------------------------------------------------------------------------------------- docs


def test_the_deploy_guide_says_what_each_plan_keeps(main: Template) -> None:
    """docs/deploy.md states, per plan, what holds for firing precision and recovery, marks what only Azure
    can show, and prices the always-ready baseline with its formula and source."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    match = re.search(r"^## (?:\d+\. )?What each plan keeps\n(.*?)(?=^## )", text, re.MULTILINE | re.DOTALL)
    assert match, "docs/deploy.md has no section 'What each plan keeps'"
    section = match.group(1)
    for needle in (
        "Flex Consumption with always-ready",
        "Flex Consumption without always-ready",
        "Elastic Premium",
        "to be confirmed by `verify`",
        "python -m scheduler_core verify",
        "alwaysReadyInstanceCount",
        "listenerLockRecoveryPollingInterval",
        "FUNCTIONS_REQUEST_BODY_SIZE_LIMIT",
        "PYTHON_THREADPOOL_THREAD_COUNT",
        "FUNCTIONS_WORKER_PROCESS_COUNT",
        "GB-s",
        "azure.microsoft.com/pricing/details/functions",
    ):
        assert needle in section, needle
    assert str(main.evaluate("requestBodySizeLimit")) in section
