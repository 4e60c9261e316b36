"""The Bicep deploys what the code uses: every setting, table and queue; the right Python and runtime.

The lists are read from the code at test time (scheduler_core.settings.SETTINGS, storage.names), so a
setting, table or queue added to the code without its Bicep counterpart fails here.

Two substitutions are allowed, and only these:

* ``AzureWebJobsStorage`` (a connection string, which carries an account key) is replaced in Azure by
  the identity-based ``AzureWebJobsStorage__accountName``: the storage account has shared keys disabled,
  and the code falls back to the account name with DefaultAzureCredential when the connection string is
  unset. The Bicep must therefore set the account name and must *not* set ``AzureWebJobsStorage``.
  Likewise the connection strings ``SchedulerHistoryStorage`` and ``SchedulerExecutionStorage`` (the
  accounts of ``splitStorage``) by their identity-based ``__tableServiceUri`` and ``__queueServiceUri``;
  they are not set even empty (the Functions host would read an empty ``SchedulerExecutionStorage`` as a
  connection string). Where ``splitStorage`` puts what: ``test_split_storage.py``.
* ``FUNCTIONS_WORKER_RUNTIME`` is an app setting on Elastic Premium, but on Flex Consumption the platform
  rejects it: the runtime is ``functionAppConfig.runtime.name``. Both must say ``python``.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from scheduler_core import settings as settings_module
from scheduler_core.adapters.azure.provision import all_queue_names
from scheduler_core.storage import names
from tests.infra.bicep_eval import UNKNOWN, ModuleOutput, Template
from tests.infra.conftest import INFRA, ROOT, TOOL_TIMEOUT

pytestmark = pytest.mark.timeout(2 * TOOL_TIMEOUT)

#: Setting declared by the code -> the setting the Bicep sets instead (see the module docstring).
SUBSTITUTIONS = {
    "AzureWebJobsStorage": "AzureWebJobsStorage__accountName",
    "SchedulerHistoryStorage": "SchedulerHistoryStorage__tableServiceUri",
    "SchedulerExecutionStorage": "SchedulerExecutionStorage__queueServiceUri",
    "SchedulerHistoryStream": "SchedulerHistoryStream__queueServiceUri",
    "SchedulerWitness": "SchedulerWitness__blobServiceUri",
    "SchedulerPeer": "SchedulerPeer__tableServiceUri",
}
#: Settings whose Bicep value is computed at deployment (so not compared with the code's default).
COMPUTED = {"AzureWebJobsStorage__accountName", "SCHEDULER_API_KEYS"}

#: Built-in Azure role definition ids (constants of Azure, not of this project).
ROLE_IDS = {
    "Storage Table Data Contributor": "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3",
    "Storage Queue Data Contributor": "974c5e8b-45b9-4653-ba55-5f855dd0fb88",
    "Storage Blob Data Owner": "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",
    "Key Vault Secrets User": "4633458b-17de-408a-b874-0445c86b69e6",
    "Key Vault Secrets Officer": "b86a8fe4-44ce-4948-aee5-eccb2c155cd7",
    "Monitoring Metrics Publisher": "3913510d-42f4-4e42-8a64-420c390055eb",
    "Azure Service Bus Data Sender": "69a216fc-b8fb-44d8-bc22-1f3c2cd27a39",
    "Storage Blob Data Contributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
    "Storage Table Data Reader": "76199698-9eea-4c19-bc75-cec21354c6b6",
}
REQUIRED_ROLES = {
    "Storage Table Data Contributor",
    "Storage Queue Data Contributor",
    "Storage Blob Data Owner",
    "Key Vault Secrets User",
    "Azure Service Bus Data Sender",
}


#: The storage module, as main.bicep names it (the main account and, with splitStorage, two more).
STORAGE_MODULE = "modules/storage.bicep"
#: The storage account's endpoint of each storage.bicep output (a stand-in for a module output's value).
ENDPOINTS = {"tableEndpoint": "table", "queueEndpoint": "queue", "blobEndpoint": "blob"}


def app_environment(values: dict[str, Any]) -> dict[str, str]:
    """The app settings a deployment gives the app, from main.bicep's evaluated ``schedulerSettings``: a
    storage module's endpoint output becomes ``https://<module>.<service>.core.windows.net/``, what is
    computed at deployment (COMPUTED) takes a stand-in."""
    environ: dict[str, str] = {}
    for name, value in values.items():
        if isinstance(value, ModuleOutput) and value.output in ENDPOINTS:
            environ[name] = f"https://{value.module.lower()}.{ENDPOINTS[value.output]}.core.windows.net/"
        elif isinstance(value, str) and name not in COMPUTED:
            environ[name] = value
    environ["AzureWebJobsStorage__accountName"] = "account"
    return environ


def _default_settings() -> settings_module.Settings:
    """The settings the code runs with when nothing but the (required) storage account is set."""
    return settings_module.load({"AzureWebJobsStorage__accountName": "account"})


def _declared() -> dict[str, settings_module.SettingSpec]:
    return {spec.name: spec for spec in settings_module.SETTINGS}


def _bicep_setting_names(main: Template, app_settings_module: Template) -> set[str]:
    names_ = set(main.variable("schedulerSettings"))
    names_ |= set(app_settings_module.variable("platformSettings"))
    names_ |= set(app_settings_module.variable("elasticPremiumSettings"))
    return names_


def _unwrap(resource: dict[str, Any]) -> dict[str, Any]:
    """A resource's config, looking through pycep's wrapper of conditional and loop resources."""
    config: dict[str, Any] = resource["config"]
    if "loop_type" in config or "condition" in config:
        config = config["config"]
    return config


def test_every_declared_setting_is_set_by_the_bicep(main: Template, app_settings_module: Template) -> None:
    in_bicep = _bicep_setting_names(main, app_settings_module)
    missing = [
        spec.name for spec in settings_module.SETTINGS if SUBSTITUTIONS.get(spec.name, spec.name) not in in_bicep
    ]
    assert not missing, f"settings of scheduler_core.settings not set by infra/: {missing}"


def test_the_storage_connection_is_identity_based(main: Template, app_settings_module: Template) -> None:
    in_bicep = _bicep_setting_names(main, app_settings_module)
    assert "AzureWebJobsStorage" not in in_bicep, "a connection string needs a key; use __accountName"
    for connection_string in (
        "SchedulerHistoryStorage",
        "SchedulerExecutionStorage",
        "SchedulerHistoryStream",
        "SchedulerWitness",
    ):
        assert connection_string not in in_bicep, f"{connection_string}: a connection string needs a key"
    assert "AzureWebJobsStorage__accountName" in in_bicep
    assert main.variable("schedulerSettings")["AzureWebJobsStorage__accountName"] == "storageAccountName"
    assert main.modules["storage"]["config"]["params"]["name"] == "storageAccountName"


def test_the_bicep_sets_no_scheduler_setting_the_code_does_not_declare(main: Template) -> None:
    declared = set(_declared()) | set(SUBSTITUTIONS.values())
    unknown = sorted(set(main.variable("schedulerSettings")) - declared)
    assert not unknown, f"schedulerSettings in main.bicep not declared in scheduler_core.settings: {unknown}"


def test_bicep_values_are_the_code_defaults(main: Template) -> None:
    values = main.evaluate(main.variable("schedulerSettings"))
    declared = _declared()
    checked = 0
    for name, value in values.items():
        spec = declared.get(name)
        if spec is None or spec.default is None or name in COMPUTED:
            continue
        assert value is not UNKNOWN, f"{name}: value cannot be evaluated from parameter defaults"
        assert value == spec.default, f"{name}: Bicep default {value!r} != code default {spec.default!r}"
        checked += 1
    assert checked >= 5


def test_the_bicep_defaults_load_as_valid_settings(main: Template) -> None:
    values = main.evaluate(main.variable("schedulerSettings"))
    environ = {k: v for k, v in values.items() if isinstance(v, str) and k not in COMPUTED}
    environ["AzureWebJobsStorage__accountName"] = "account"
    loaded = settings_module.load(environ)
    assert loaded.storage_connection_string is None


def test_api_keys_are_a_key_vault_reference(main: Template) -> None:
    value = main.variable("schedulerSettings")["SCHEDULER_API_KEYS"]
    assert value.startswith("@Microsoft.KeyVault(") and value.endswith(")")
    assert "${keyVaultName}" in value and "${apiKeysSecretName}" in value
    assert main.modules["keyVault"]["config"]["params"]["apiKeysSecretName"] == "apiKeysSecretName"


def test_every_declared_setting_is_in_the_local_settings_sample() -> None:
    sample = json.loads((ROOT / "local.settings.sample.json").read_text())
    values = sample["Values"]
    missing = [spec.name for spec in settings_module.SETTINGS if spec.name not in values]
    assert not missing, f"not in local.settings.sample.json: {missing}"


def test_worker_runtime_is_python_on_both_plans(
    app_settings_module: Template, function_app: Template, main: Template
) -> None:
    declared = _declared()["FUNCTIONS_WORKER_RUNTIME"].default
    assert declared == "python"
    # Elastic Premium: an app setting.
    assert app_settings_module.variable("elasticPremiumSettings")["FUNCTIONS_WORKER_RUNTIME"] == declared
    # Flex Consumption: functionAppConfig.runtime (the setting is rejected there).
    flex = function_app.variable("flexConfig")
    assert flex["runtime"]["name"] == declared
    properties = function_app.resources["site"]["config"]["properties"]
    operands = properties["functionAppConfig"]["operator"]["operands"]
    assert operands["condition"] == "isFlex" and operands["true_value"] == "flexConfig"
    assert main.modules["appSettings"]["config"]["params"]["hostingPlan"] == "hostingPlan"
    assert main.modules["functionApp"]["config"]["params"]["hostingPlan"] == "hostingPlan"


def test_every_table_is_created(main: Template, bicep: dict[str, dict[str, Any]]) -> None:
    expected = set(names.table_names(_default_settings()))
    assert expected == set(names.TABLES)  # default prefix is empty
    created = set(main.evaluate(main.variable("tableNames")))
    assert expected <= created, f"tables not created by main.bicep: {sorted(expected - created)}"
    assert created <= expected, f"tables created but not used by the code: {sorted(created - expected)}"
    params = main.modules["storage"]["config"]["params"]
    assert params["tablePrefix"] == "tablePrefix"
    # Without splitStorage (the default) every table is in the one storage account.
    accounts = main.deployed_modules(STORAGE_MODULE)
    assert set(accounts) == {"storage"}
    assert set(accounts["storage"]["tableNames"]) == expected
    storage = Template(bicep["modules/storage.bicep"])
    loop = storage.resources["tables"]["config"]
    assert loop["loop_type"]["detail"]["array_name"] == "tableNames"
    item = loop["loop_type"]["detail"]["item_name"]
    assert loop["config"]["name"] == f"${{tablePrefix}}${{{item}}}"


def test_every_queue_is_created(main: Template, bicep: dict[str, dict[str, Any]]) -> None:
    expected = set(all_queue_names(_default_settings()))
    defaults = _declared()
    assert defaults["SCHEDULER_SCAN_QUEUE"].default in expected
    assert defaults["SCHEDULER_EXECUTION_QUEUE"].default in expected
    assert defaults["SCHEDULER_CLEANUP_QUEUE"].default in expected
    defaults_queues = ("scheduler-scan", "scheduler-executions", "scheduler-cleanup")
    assert {q + names.POISON_SUFFIX for q in defaults_queues} <= expected
    created = set(main.evaluate(main.variable("queueNames")))
    assert expected <= created, f"queues not created by main.bicep: {sorted(expected - created)}"
    assert created <= expected, f"queues created but not used by the code: {sorted(created - expected)}"
    accounts = main.deployed_modules(STORAGE_MODULE)
    assert set(accounts) == {"storage"}, "without splitStorage every queue is in the one storage account"
    assert set(accounts["storage"]["queueNames"]) == expected
    storage = Template(bicep["modules/storage.bicep"])
    loop = storage.resources["queues"]["config"]
    assert loop["loop_type"]["detail"]["array_name"] == "queueNames"
    assert loop["config"]["name"] == loop["loop_type"]["detail"]["item_name"]


def test_queue_names_follow_the_queue_settings(main: Template) -> None:
    """The queues are created from the same parameters as the settings the triggers read."""
    settings_ = main.variable("schedulerSettings")
    for setting in ("SCHEDULER_SCAN_QUEUE", "SCHEDULER_EXECUTION_QUEUE", "SCHEDULER_CLEANUP_QUEUE"):
        assert settings_[setting] in main.parameters
    assert settings_["SCHEDULER_EXECUTION_QUEUE_COUNT"] == {
        "function": {"type": "string", "parameters": {"value_to_convert": "executionQueueCount"}}
    }
    renamed_queues = {"scanQueueName": "scan-x", "executionQueueName": "exec-x", "cleanupQueueName": "tidy-x"}
    renamed = Template(main.parsed, parameters=renamed_queues)
    assert set(renamed.evaluate(renamed.variable("queueNames"))) == {
        "scan-x",
        "scan-x-poison",
        "exec-x",
        "exec-x-poison",
        "tidy-x",
        "tidy-x-poison",
    }


@pytest.mark.parametrize("split", [False, True], ids=["one-account", "splitStorage"])
@pytest.mark.parametrize("count", [1, 3, 32])
def test_every_execution_queue_is_created(main: Template, count: int, split: bool) -> None:
    """With executionQueueCount K the Bicep creates the K queues (and their poison queues) that the app,
    given the settings the Bicep sets, sends to and declares functions for; with splitStorage too, in
    the execution queues' account."""
    deployed = Template(
        main.parsed, parameters={"executionQueueCount": count, "executionQueueName": "exec-q", "splitStorage": split}
    )
    values = deployed.evaluate(deployed.variable("schedulerSettings"))
    assert values["SCHEDULER_EXECUTION_QUEUE_COUNT"] == str(count)
    environ = app_environment(values)
    loaded = settings_module.load(environ)
    assert len(loaded.execution_queues) == count
    expected = {loaded.scan_queue, *loaded.execution_queues, loaded.cleanup_queue}
    expected |= {queue + names.POISON_SUFFIX for queue in set(expected)}
    created = deployed.evaluate(deployed.variable("queueNames"))
    assert len(created) == len(set(created)), "a queue is created twice"
    assert set(created) == expected
    assert set(all_queue_names(loaded)) <= set(created)  # what provisioning creates, the Bicep creates too
    # ...and each in the account the app reads it from.
    in_accounts = [
        queue for params in deployed.deployed_modules(STORAGE_MODULE).values() for queue in params["queueNames"]
    ]
    assert sorted(in_accounts) == sorted(created), "every queue in exactly one account"
    execution_queues = set(names.execution_queue_names(loaded))
    if split:
        assert loaded.execution_storage is not None
        assert settings_module.execution_connection(environ) == settings_module.EXECUTION_CONNECTION
        assert set(deployed.deployed_modules(STORAGE_MODULE)["executionStorage"]["queueNames"]) == execution_queues
    else:
        assert loaded.execution_storage is None
        assert settings_module.execution_connection(environ) == settings_module.HOST_CONNECTION
        assert set(deployed.deployed_modules(STORAGE_MODULE)["storage"]["queueNames"]) == expected


def test_the_queue_count_parameter_has_the_settings_bounds(main: Template) -> None:
    decorators = {d["type"]: d["argument"] for d in main.parameters["executionQueueCount"]["decorators"]}
    assert (decorators["min_value"], decorators["max_value"]) == (1, settings_module.MAX_EXECUTION_QUEUES)
    assert main.evaluate("executionQueueCount") == int(_declared()["SCHEDULER_EXECUTION_QUEUE_COUNT"].default or "")


def test_the_worker_thread_count_is_the_code_default(main: Template, app_settings_module: Template) -> None:
    """PYTHON_THREADPOOL_THREAD_COUNT: the Bicep's default (a platform setting) is the declared one on Flex
    Consumption (Elastic Premium's, computed from it: test_platform_settings.py)."""
    declared = _declared()["PYTHON_THREADPOOL_THREAD_COUNT"].default
    assert str(main.evaluate("pythonThreadpoolThreadCount")) == declared == "40"
    assert main.modules["appSettings"]["config"]["params"]["pythonThreadCount"] == "workerThreadCount"
    assert str(main.evaluate("workerThreadCount")) == declared  # the default plan is Flex Consumption
    given = Template(app_settings_module.parsed, parameters={"pythonThreadCount": int(declared)})
    assert given.evaluate(given.variable("platformSettings"))["PYTHON_THREADPOOL_THREAD_COUNT"] == declared


def _minimum_python(requires: str) -> str:
    match = re.search(r">=\s*(\d+\.\d+)", requires)
    assert match, f"requires-python {requires!r} has no lower bound"
    return match.group(1)


#: The Bicep's default Python: that of Microsoft's Flex Consumption quickstart (issue 13).
BICEP_DEFAULT_PYTHON = "3.12"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_python_version_matches_pyproject(main: Template, function_app: Template) -> None:
    """The default is 3.12; it and every version the parameter allows are ones pyproject.toml admits."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    requires = pyproject["project"]["requires-python"]
    minimum = _version(_minimum_python(requires))
    assert main.evaluate("pythonVersion") == BICEP_DEFAULT_PYTHON
    allowed = next(d["argument"] for d in main.parameters["pythonVersion"]["decorators"] if d["type"] == "allowed")
    assert BICEP_DEFAULT_PYTHON in allowed
    for version in allowed:
        assert _version(version) >= minimum, f"Bicep allows Python {version}, pyproject requires {requires}"
        below = re.search(r"<\s*(\d+\.\d+)", requires)
        assert below is None or _version(version) < _version(below.group(1)), (version, requires)
    assert main.modules["functionApp"]["config"]["params"]["pythonVersion"] == "pythonVersion"
    assert function_app.variable("flexConfig")["runtime"]["version"] == "pythonVersion"
    linux_fx = function_app.resources["site"]["config"]["properties"]["siteConfig"]["linuxFxVersion"]
    assert linux_fx["operator"]["operands"]["false_value"] == "Python|${pythonVersion}"


def test_host_json_uses_extension_bundle_v4(app_settings_module: Template) -> None:
    host = json.loads((ROOT / "host.json").read_text())
    assert host["version"] == "2.0"
    bundle = host["extensionBundle"]
    assert bundle["id"] == "Microsoft.Azure.Functions.ExtensionBundle"
    assert re.fullmatch(r"\[4\.\*,\s*5\.0\.0\)", bundle["version"]), bundle["version"]
    # Functions runtime 4.x, the only one for Python 3.11 and later (Elastic Premium sets it; Flex has only 4.x).
    assert app_settings_module.variable("elasticPremiumSettings")["FUNCTIONS_EXTENSION_VERSION"] == "~4"


def test_requirements_have_the_python_worker_library() -> None:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    assert any(re.match(r"azure-functions\b", line.strip()) for line in lines)


def test_plan_is_flex_consumption_by_default_with_elastic_premium_option(
    main: Template, function_app: Template
) -> None:
    assert main.evaluate("hostingPlan") == "FlexConsumption"
    allowed = next(d["argument"] for d in main.parameters["hostingPlan"]["decorators"] if d["type"] == "allowed")
    assert set(allowed) == {"FlexConsumption", "ElasticPremium"}
    sku = function_app.resources["plan"]["config"]["sku"]["operator"]["operands"]
    assert sku["true_value"] == {"name": "FC1", "tier": "FlexConsumption"}
    assert sku["false_value"]["tier"] == "ElasticPremium"


def test_security_baseline(bicep: dict[str, dict[str, Any]]) -> None:
    storage = _unwrap(Template(bicep["modules/storage.bicep"]).resources["account"])["properties"]
    assert storage["allowSharedKeyAccess"] is False
    assert storage["minimumTlsVersion"] == "TLS1_2"
    assert storage["supportsHttpsTrafficOnly"] is True
    assert storage["allowBlobPublicAccess"] is False
    site = Template(bicep["modules/functionapp.bicep"]).resources["site"]["config"]
    assert site["identity"] == {"type": "SystemAssigned"}
    assert site["properties"]["httpsOnly"] is True
    assert site["properties"]["siteConfig"]["ftpsState"] == "Disabled"
    assert site["properties"]["siteConfig"]["minTlsVersion"] == "1.2"
    insights = Template(bicep["modules/monitoring.bicep"]).resources["appInsights"]["config"]["properties"]
    assert insights["DisableLocalAuth"] is True
    assert "WorkspaceResourceId" in insights
    vault = Template(bicep["modules/keyvault.bicep"]).resources["vault"]["config"]["properties"]
    assert vault["enableRbacAuthorization"] is True
    bus = Template(bicep["modules/servicebus.bicep"]).resources["namespace"]["config"]["properties"]
    assert bus["disableLocalAuth"] is True
    platform = Template(bicep["modules/appsettings.bicep"]).variable("platformSettings")
    assert platform["APPLICATIONINSIGHTS_AUTHENTICATION_STRING"] == "Authorization=AAD"


def test_app_service_authentication_is_a_switch(main: Template, function_app: Template) -> None:
    assert main.evaluate("enableAppServiceAuth") is False
    auth = _unwrap(function_app.resources["authSettings"])
    assert auth["name"] == "authsettingsV2"
    assert auth["properties"]["platform"]["enabled"] == "enableAppServiceAuth"
    assert auth["properties"]["globalValidation"]["requireAuthentication"] is True


def test_role_assignments_are_named_by_guid_and_commented(bicep: dict[str, dict[str, Any]]) -> None:
    found: set[str] = set()
    for name, parsed in bicep.items():
        template = Template(parsed)
        source = (INFRA / name).read_text().splitlines()
        for symbol, resource in template.resources.items():
            if resource["type"] != "Microsoft.Authorization/roleAssignments":
                continue
            config = _unwrap(resource)
            guid = config["name"]["function"]
            assert guid["type"] == "guid", f"{name}:{symbol}"
            arguments = list(guid["parameters"].values())
            assert len(arguments) == 3, f"{name}:{symbol}: guid(scope, principal, roleDefinitionId)"
            scope, principal, role_variable = arguments
            assert scope["operator"]["operands"] == {"operand_1": config["scope"], "operand_2": "id"}
            assert principal == config["properties"]["principalId"]
            definition = config["properties"]["roleDefinitionId"]["function"]["parameters"]
            assert definition["resource_name_1"] == role_variable
            role_id = template.evaluate(role_variable)
            role_name = next((k for k, v in ROLE_IDS.items() if v == role_id), None)
            assert role_name, f"{name}:{symbol}: unknown role id {role_id}"
            declaration = next(i for i, line in enumerate(source) if line.startswith(f"resource {symbol} "))
            assert source[declaration - 1].startswith(f"// Role: {role_name}"), f"{name}:{symbol}"
            variable_line = next(i for i, line in enumerate(source) if line.startswith(f"var {role_variable} "))
            assert source[variable_line - 1] == f"// {role_name}", f"{name}: var {role_variable}"
            found.add(role_name)
    assert found >= REQUIRED_ROLES, sorted(REQUIRED_ROLES - found)


def test_parameters_file_matches_main(main: Template) -> None:
    document = json.loads((INFRA / "main.parameters.json").read_text())
    given = set(document["parameters"])
    unknown = given - set(main.parameters)
    assert not unknown, f"main.parameters.json sets parameters main.bicep lacks: {sorted(unknown)}"
    required = {name for name, p in main.parameters.items() if "default" not in p}
    assert required <= given, f"required parameters missing: {sorted(required - given)}"


def test_azure_yaml_deploys_the_function_app(function_app: Template) -> None:
    text = (ROOT / "azure.yaml").read_text()
    service = re.search(r"^services:\s*\n\s+(\S+):", text, re.MULTILINE)
    assert service, "azure.yaml has no service"
    assert re.search(r"^\s+host:\s*function\s*$", text, re.MULTILINE)
    assert re.search(r"^\s+language:\s*(python|py)\s*$", text, re.MULTILINE)
    assert re.search(r"^\s+path:\s*\.?/?infra\s*$", text, re.MULTILINE)
    tags = function_app.resources["site"]["config"]["tags"]["function"]["parameters"]
    service_tags = [
        value
        for tag in tags.values()
        if isinstance(tag, dict)
        for key, value in tag.items()
        if key.strip("'") == "azd-service-name"
    ]
    assert service_tags == [service.group(1)]


def test_docs_describe_the_deployment() -> None:
    text = (ROOT / "docs" / "deploy.md").read_text()
    for needle in (
        "azd up",
        "az deployment sub create",
        "python -m local_host keygen",
        "azure-mgmt-scheduler",
        "curl",
        "scripts/import_jobs.py",
        "Storage Queue Data Message Sender",
        "Azure Service Bus Data Sender",
        "x-functions-key",
        "splitStorage",
        "SchedulerHistoryStorage__tableServiceUri",
        "SchedulerExecutionStorage__queueServiceUri",
        "SCHEDULER_SPLIT_STORAGE",
    ):
        assert needle in text, needle


def test_infra_readme_is_not_a_placeholder() -> None:
    text = (INFRA / "README.md").read_text()
    assert "will\nlive here" not in text and "main.bicep" in text
    assert Path(INFRA / "modules").is_dir()
