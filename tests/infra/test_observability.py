"""The Bicep wires what an operator needs to see the scheduler: alerts, the health check, the worker's threads.

* Four log search alert rules (modules/alerts.bicep), deployed when ``deployAlerts`` is true, each on
  Application Insights, each notifying the one action group (whose e-mail receiver is the
  ``alertEmailAddress`` parameter), each reading its metric by the exact name the app emits, with its
  threshold from a parameter. Their KQL is parsed and bound by Microsoft's Kusto.Language against the
  ``customMetrics`` schema, and the column each rule measures must be a numeric output of its query.
* The App Service health check on ``/health`` on Elastic Premium; not on Flex Consumption, where
  Microsoft does not offer it.
* ``PYTHON_THREADPOOL_THREAD_COUNT`` set on both plans, to the executions host.json lets one instance run.
* Elastic Premium runs from a package blob read with the app's identity (no content share, no remote
  build), as Microsoft requires for an app without Azure Files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.infra.bicep_eval import UNKNOWN, Template
from tests.infra.conftest import ROOT, TOOL_TIMEOUT

pytestmark = pytest.mark.timeout(2 * TOOL_TIMEOUT)

#: Rule (resource symbol in alerts.bicep) -> the metric it reads, as the app's OpenTelemetry instruments
#: name them (issue 13), and the column of its query that the rule measures.
RULES = {
    "poisonAlert": ("scheduler.poison_queue.length", "PoisonMessages"),
    "failureRateAlert": ("scheduler.attempts", "FailureRatePercent"),
    "tickMissingAlert": ("scheduler.dispatch.ticks", "MinutesSinceLastTick"),
    "latenessAlert": ("scheduler.lateness", "LatenessP99LowerBoundSeconds"),
}

#: Rule -> (its threshold: a parameter of alerts.bicep or a literal, the main.bicep parameter feeding it,
#: the default).
THRESHOLDS = {
    "poisonAlert": (0, None, 0),
    "failureRateAlert": ("failureRatePercent", "alertFailureRatePercent", 10),
    "tickMissingAlert": ("tickMissingMinutes", "alertTickMissingMinutes", 3),
    "latenessAlert": ("latenessP99Seconds", "alertLatenessP99Seconds", 10),
}

#: Application Insights' customMetrics table (classic schema, as log search alerts on the component see
#: it), in Kusto schema syntax.
CUSTOM_METRICS_SCHEMA = (
    "(timestamp:datetime, name:string, value:real, valueCount:int, valueSum:real, valueMin:real, valueMax:real,"
    " valueStdDev:real, customDimensions:dynamic, operation_Name:string, operation_Id:string,"
    " operation_ParentId:string, cloud_RoleName:string, cloud_RoleInstance:string, appId:string,"
    " appName:string, iKey:string, sdkVersion:string, itemId:string, itemType:string, itemCount:int,"
    " _ResourceId:string)"
)
NUMERIC = {"real", "long", "int", "decimal"}


@pytest.fixture(scope="module")
def alerts(bicep: dict[str, dict[str, Any]]) -> Template:
    return Template(bicep["modules/alerts.bicep"])


def _accessor(node: Any) -> list[str]:
    """``a.b.c`` as pycep renders it (nested property_accessor operators) -> ["a", "b", "c"]."""
    if isinstance(node, str):
        return [node]
    operator = node["operator"]
    assert operator["type"] == "property_accessor", node
    operands = operator["operands"]
    return _accessor(operands["operand_1"]) + _accessor(operands["operand_2"])


def _decorator(parameter: dict[str, Any], kind: str) -> Any:
    return next((d["argument"] for d in parameter.get("decorators", []) if d["type"] == kind), None)


def _bicep_unescape(text: str) -> str:
    """Bicep's escapes in a single-quoted string (pycep keeps them as written)."""
    escapes = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", "'": "'", "$": "$"}
    return re.sub(r"\\(.)", lambda m: escapes.get(m.group(1), m.group(0)), text)


def _rule(alerts: Template, symbol: str) -> dict[str, Any]:
    resource = alerts.resources[symbol]
    assert resource["type"] == "Microsoft.Insights/scheduledQueryRules", symbol
    config: dict[str, Any] = resource["config"]
    return config


def _query(alerts: Template, symbol: str) -> str:
    criterion = _rule(alerts, symbol)["properties"]["criteria"]["allOf"]
    assert len(criterion) == 1, symbol
    query = alerts.evaluate(criterion[0]["query"])
    assert isinstance(query, str) and query is not UNKNOWN, (symbol, query)
    return _bicep_unescape(query)


# ---- Alerts: presence, gating, action group -----------------------------------------------------------


def test_alerts_module_is_deployed_only_when_deploy_alerts_is_true(main: Template) -> None:
    parameter = main.parameters["deployAlerts"]
    assert parameter["type"] == "bool"
    # On by default: the alerts are the operator's only warning that jobs fail (docs/deploy.md, Alerts).
    assert parameter["default"] is True
    module = main.modules["alerts"]
    assert module["detail"]["path"] == "modules/alerts.bicep"
    assert module["config"]["condition"] == "deployAlerts"
    assert module["config"]["config"]["scope"] == "rg"


def test_there_are_exactly_the_four_alert_rules(alerts: Template) -> None:
    rules = {s for s, r in alerts.resources.items() if r["type"] == "Microsoft.Insights/scheduledQueryRules"}
    assert rules == set(RULES)
    groups = [s for s, r in alerts.resources.items() if r["type"] == "Microsoft.Insights/actionGroups"]
    assert groups == ["actionGroup"]


@pytest.mark.parametrize("symbol", sorted(RULES))
def test_every_rule_notifies_the_action_group(alerts: Template, symbol: str) -> None:
    properties = _rule(alerts, symbol)["properties"]
    groups = properties["actions"]["actionGroups"]
    assert [_accessor(g) for g in groups] == [["actionGroup", "id"]]
    assert properties["enabled"] is True
    assert properties["autoMitigate"] is True


def test_the_action_group_mails_the_alert_email_parameter(main: Template, alerts: Template) -> None:
    receivers = alerts.resources["actionGroup"]["config"]["properties"]["emailReceivers"]["operator"]
    assert receivers["type"] == "conditional"
    operands = receivers["operands"]
    assert operands["condition"]["function"] == {"type": "empty", "parameters": {"item_to_test": "alertEmailAddress"}}
    assert operands["true_value"] == []
    [receiver] = operands["false_value"]
    assert receiver["emailAddress"] == "alertEmailAddress"
    assert receiver["useCommonAlertSchema"] is True
    assert main.modules["alerts"]["config"]["config"]["params"]["alertEmailAddress"] == "alertEmailAddress"
    assert main.parameters["alertEmailAddress"]["default"] == ""
    group = alerts.resources["actionGroup"]["config"]
    assert group["properties"]["enabled"] is True
    assert len(group["properties"]["groupShortName"]) <= 12  # Azure's limit


@pytest.mark.parametrize("symbol", sorted(RULES))
def test_every_rule_queries_application_insights(main: Template, alerts: Template, symbol: str) -> None:
    properties = _rule(alerts, symbol)["properties"]
    assert properties["scopes"] == ["appInsightsId"]
    assert _rule(alerts, symbol)["kind"] == "LogAlert"
    passed = main.modules["alerts"]["config"]["config"]["params"]["appInsightsId"]
    assert _accessor(passed) == ["monitoring", "outputs", "appInsightsId"]


def test_monitoring_outputs_the_application_insights_id(bicep: dict[str, dict[str, Any]]) -> None:
    outputs = Template(bicep["modules/monitoring.bicep"]).parsed["outputs"]
    assert _accessor(outputs["appInsightsId"]["value"]) == ["appInsights", "id"]


# ---- Alerts: metrics, thresholds, queries -------------------------------------------------------------


@pytest.mark.parametrize("symbol", sorted(RULES))
def test_every_rule_reads_its_metric_by_its_exact_name(alerts: Template, symbol: str) -> None:
    metric, _column = RULES[symbol]
    query = _query(alerts, symbol)
    names = set(re.findall(r'\bname\s*==\s*"([^"]+)"', query))
    assert names == {metric}, f"{symbol}: reads {names}, should read {metric}"


@pytest.mark.parametrize("symbol", sorted(RULES))
def test_every_threshold_comes_from_its_parameter(main: Template, alerts: Template, symbol: str) -> None:
    threshold, main_parameter, default = THRESHOLDS[symbol]
    criterion = _rule(alerts, symbol)["properties"]["criteria"]["allOf"][0]
    assert criterion["threshold"] == threshold
    assert criterion["operator"] == "GreaterThan"
    assert criterion["metricMeasureColumn"] == RULES[symbol][1]
    if main_parameter is None:
        return
    assert isinstance(threshold, str) and threshold in alerts.parameters
    params = main.modules["alerts"]["config"]["config"]["params"]
    assert params[threshold] == main_parameter
    assert main.evaluate(main_parameter) == default
    assert alerts.evaluate(threshold) == default


def test_failure_rate_minimum_attempts_reaches_the_query(main: Template, alerts: Template) -> None:
    params = main.modules["alerts"]["config"]["config"]["params"]
    assert params["failureRateMinimumAttempts"] == "alertFailureRateMinimumAttempts"
    minimum = alerts.evaluate("failureRateMinimumAttempts")
    assert minimum == main.evaluate("alertFailureRateMinimumAttempts") == 10
    query = _query(alerts, "failureRateAlert")
    assert query.startswith(f"let minAttempts = {minimum};\n")
    assert "| where Finished >= minAttempts" in query


def test_tick_missing_rule_runs_every_minute_over_a_longer_window(main: Template, alerts: Template) -> None:
    properties = _rule(alerts, "tickMissingAlert")["properties"]
    assert properties["evaluationFrequency"] == "PT1M"
    window = re.fullmatch(r"PT(\d+)M", properties["windowSize"])
    assert window, properties["windowSize"]
    # A tick-less window reads as "very long ago", so the threshold must stay shorter than the window.
    for template, name in ((alerts, "tickMissingMinutes"), (main, "alertTickMissingMinutes")):
        assert _decorator(template.parameters[name], "max_value") < int(window.group(1)), name
    assert properties["severity"] == 1  # nothing is dispatched: the most severe of the four


@pytest.fixture(scope="module")
def analyzed(alerts: Template, kql_analyzer: Callable[[dict[str, str], dict[str, str]], dict[str, Any]]) -> Any:
    return kql_analyzer({"customMetrics": CUSTOM_METRICS_SCHEMA}, {s: _query(alerts, s) for s in RULES})


@pytest.mark.parametrize("symbol", sorted(RULES))
def test_every_query_compiles_against_custom_metrics(analyzed: Any, symbol: str) -> None:
    result = analyzed[symbol]
    assert result["diagnostics"] == [], f"{symbol}: Kusto.Language reports {result['diagnostics']}"
    columns = dict(result["columns"])
    measured = RULES[symbol][1]
    assert measured in columns, f"{symbol}: {measured} is not an output column ({columns})"
    assert columns[measured] in NUMERIC, f"{symbol}: {measured} is {columns[measured]}"


def test_the_analyzer_rejects_a_wrong_column(
    kql_analyzer: Callable[[dict[str, str], dict[str, str]], dict[str, Any]],
) -> None:
    """The check above can fail: a misspelt column and a misspelt table are reported."""
    result = kql_analyzer(
        {"customMetrics": CUSTOM_METRICS_SCHEMA},
        {
            "column": 'customMetrics | where name == "x" | summarize P = percentilew(valueMinimum, valueCount, 99)',
            "table": "customMetric | summarize count()",
            "escape": "let minAttempts = 10;\\ncustomMetrics | where valueCount >= minAttempts",
        },
    )
    assert any("valueMinimum" in d for d in result["column"]["diagnostics"])
    assert any("customMetric" in d for d in result["table"]["diagnostics"])
    assert result["escape"]["diagnostics"], "a Bicep escape left in the query must not parse"


def test_alert_parameters_are_in_the_azd_parameters_file(main: Template) -> None:
    document = json.loads((ROOT / "infra" / "main.parameters.json").read_text())["parameters"]
    assert document["deployAlerts"]["value"] == "${SCHEDULER_DEPLOY_ALERTS=true}"
    assert document["alertEmailAddress"]["value"] == "${SCHEDULER_ALERT_EMAIL}"


# ---- Health check ------------------------------------------------------------------------------------


def test_health_check_is_on_the_health_route_on_elastic_premium_only(function_app: Template) -> None:
    assert function_app.evaluate("healthCheckPath") == "/health"
    site_config = function_app.resources["site"]["config"]["properties"]["siteConfig"]
    check = site_config["healthCheckPath"]["operator"]
    assert check["type"] == "conditional"
    assert check["operands"] == {"condition": "isFlex", "true_value": None, "false_value": "healthCheckPath"}
    is_flex = function_app.variable("isFlex")["operator"]
    assert is_flex == {"type": "equals", "operands": {"operand_1": "hostingPlan", "operand_2": "FlexConsumption"}}


def test_host_json_has_no_route_prefix_in_front_of_health() -> None:
    """The health check pings the path as given; the app's route is `health` only with routePrefix ''."""
    host = json.loads((ROOT / "host.json").read_text())
    assert host["extensions"]["http"]["routePrefix"] == ""


# ---- Python worker threads ---------------------------------------------------------------------------


def test_thread_count_is_set_on_both_plans(main: Template, app_settings_module: Template) -> None:
    platform = app_settings_module.variable("platformSettings")
    value = platform["PYTHON_THREADPOOL_THREAD_COUNT"]["function"]
    assert value == {"type": "string", "parameters": {"value_to_convert": "pythonThreadCount"}}
    # The count per plan (pythonThreadpoolThreadCount on Flex Consumption, computed on Elastic Premium:
    # test_platform_settings.py).
    assert main.modules["appSettings"]["config"]["params"]["pythonThreadCount"] == "workerThreadCount"
    # platformSettings is applied whatever the plan (elasticPremiumSettings only on Elastic Premium).
    union = app_settings_module.resources["appSettings"]["config"]["properties"]["function"]
    assert union["type"] == "union"
    assert list(union["parameters"].values())[:2] == ["schedulerSettings", "platformSettings"]


def test_thread_count_is_what_host_json_lets_one_instance_run() -> None:
    """40 = batchSize + newBatchThreshold: the queue executions the host hands one instance at once."""
    queues = json.loads((ROOT / "host.json").read_text())["extensions"]["queues"]
    expected = queues["batchSize"] + queues["newBatchThreshold"]
    main_text = (ROOT / "infra" / "main.bicep").read_text()
    match = re.search(r"^param pythonThreadpoolThreadCount int = (\d+)$", main_text, re.MULTILINE)
    assert match, "main.bicep: param pythonThreadpoolThreadCount"
    assert int(match.group(1)) == expected == 40


def test_thread_count_default_evaluates(main: Template) -> None:
    assert main.evaluate("pythonThreadpoolThreadCount") == 40
    assert _decorator(main.parameters["pythonThreadpoolThreadCount"], "min_value") == 1


# ---- Elastic Premium: run from a package blob, no content share ------------------------------------


def test_elastic_premium_runs_from_a_blob_with_its_identity(main: Template, app_settings_module: Template) -> None:
    settings = app_settings_module.variable("elasticPremiumSettings")
    assert settings["WEBSITE_RUN_FROM_PACKAGE"] == "elasticPremiumPackageUrl"  # a URL, not '1'
    assert settings["WEBSITE_RUN_FROM_PACKAGE_BLOB_MI_RESOURCE_ID"] == "SystemAssigned"
    assert settings["SCM_DO_BUILD_DURING_DEPLOYMENT"] == "false"
    assert settings["ENABLE_ORYX_BUILD"] == "false"
    url = main.modules["appSettings"]["config"]["params"]["elasticPremiumPackageUrl"]
    assert url == "${storage.outputs.blobEndpoint}${deploymentContainerName}/${elasticPremiumPackageBlobName}"
    assert main.evaluate("elasticPremiumPackageBlobName").endswith(".zip")  # App Service runs .zip only


def test_no_content_share_setting_anywhere(bicep: dict[str, dict[str, Any]]) -> None:
    """Azure Files needs a key (shared keys are off): no content share on any plan."""
    for name in bicep:
        text = (ROOT / "infra" / name).read_text()
        for setting in ("WEBSITE_CONTENTAZUREFILECONNECTIONSTRING", "WEBSITE_CONTENTSHARE"):
            assert not re.search(rf"^\s*{setting}\s*:", text, re.MULTILINE), (name, setting)


def test_the_package_uploader_role_is_for_elastic_premium_on_the_container(
    main: Template, bicep: dict[str, dict[str, Any]]
) -> None:
    params = main.modules["roles"]["config"]["params"]
    uploader = params["packageUploaderPrincipalId"]["operator"]
    assert uploader["type"] == "conditional"
    assert uploader["operands"] == {"condition": "isElasticPremium", "true_value": "principalId", "false_value": ""}
    is_ep = main.variable("isElasticPremium")["operator"]
    assert is_ep == {"type": "equals", "operands": {"operand_1": "hostingPlan", "operand_2": "ElasticPremium"}}
    assert params["deploymentContainerName"] == "deploymentContainerName"
    roles = Template(bicep["modules/roles.bicep"])
    role = roles.resources["packageUploaderRole"]["config"]
    assert role["condition"]["operator"]["type"] == "not"
    assert role["config"]["scope"] == "deploymentContainer"


# ---- Docs ---------------------------------------------------------------------------------------------


def test_deploy_docs_explain_every_alert_the_health_check_and_the_threads() -> None:
    text = (ROOT / "docs" / "deploy.md").read_text()
    for metric, _column in RULES.values():
        assert f"`{metric}`" in text, metric
    for heading in (
        "### Poison messages present",
        "### Failure rate high",
        "### Dispatch tick missing",
        "### Lateness p99 high",
    ):
        assert heading in text, heading
        section = text.split(heading, 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
        assert "**What it means.**" in section and "**What to do.**" in section, heading
    for needle in (
        "PYTHON_THREADPOOL_THREAD_COUNT",
        "healthCheckPath",
        "Health check isn't an option for the Flex Consumption",
        "deployAlerts",
        "alertEmailAddress",
        "WEBSITE_RUN_FROM_PACKAGE",
    ):
        assert needle in text, needle
