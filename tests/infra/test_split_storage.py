"""``splitStorage``: the history tables and the execution queues each in a storage account of their own.

Off (the default), the deployment is the one-account deployment: every table and queue in the main
account, the identity-based settings of the two other accounts empty, no more accounts or roles. On, the
history tables (``names.HISTORY_TABLES``) are in the history account and the execution queues with their
poison queues (``names.execution_queue_names``) in the execution account, and nowhere else; the app's
identity has the table role on the one and the main account's queue roles on the other; and the app
settings name those accounts' endpoints, so that the app, loading them, reads each part where the Bicep
put it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from scheduler_core import settings as settings_module
from scheduler_core.adapters.azure.provision import all_queue_names
from scheduler_core.storage import names
from tests.infra.bicep_eval import ModuleOutput, Template, accessor_path
from tests.infra.conftest import INFRA, TOOL_TIMEOUT
from tests.infra.test_consistency import ROLE_IDS, STORAGE_MODULE, app_environment

pytestmark = pytest.mark.timeout(2 * TOOL_TIMEOUT)

HISTORY_URI = "SchedulerHistoryStorage__tableServiceUri"
EXECUTION_URI = "SchedulerExecutionStorage__queueServiceUri"
#: uniqueString() is 13 characters; a storage account name has at most 24.
UNIQUE_STRING_LENGTH = 13


def _deploy(main: Template, **parameters: Any) -> Template:
    return Template(main.parsed, parameters=parameters)


def _accounts(deployed: Template) -> dict[str, dict[str, Any]]:
    """The storage accounts the deployment creates: module symbol -> its evaluated params."""
    return deployed.deployed_modules(STORAGE_MODULE)


def _tables(params: dict[str, Any]) -> list[str]:
    return [f"{params.get('tablePrefix', '')}{table}" for table in params["tableNames"]]


def _settings(deployed: Template) -> dict[str, Any]:
    values: dict[str, Any] = deployed.evaluate(deployed.variable("schedulerSettings"))
    return values


def _roles_by_account(roles: Template) -> dict[str, set[str]]:
    """Role names the roles module grants the app on each storage account, keyed by the parameter that
    names the account, for the parameters ``roles`` was given."""
    accounts = {
        symbol: _unwrap(resource)["name"]
        for symbol, resource in roles.resources.items()
        if resource["type"] == "Microsoft.Storage/storageAccounts" and resource.get("existing")
    }
    granted: dict[str, set[str]] = {}
    for resource in roles.resources.values():
        if resource["type"] != "Microsoft.Authorization/roleAssignments":
            continue
        if "condition" in resource["config"] and roles.evaluate(resource["config"]["condition"]) is not True:
            continue
        config = _unwrap(resource)
        if config["scope"] not in accounts or config["properties"]["principalId"] != "principalId":
            continue
        role_variable = config["properties"]["roleDefinitionId"]["function"]["parameters"]["resource_name_1"]
        role = next(name for name, role_id in ROLE_IDS.items() if role_id == roles.evaluate(role_variable))
        granted.setdefault(accounts[config["scope"]], set()).add(role)
    return granted


def _unwrap(resource: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = resource["config"]
    return config["config"] if "condition" in config else config


def test_the_parameter_is_a_bool_off_by_default(main: Template) -> None:
    parameter = main.parameters["splitStorage"]
    assert parameter["type"] == "bool"
    assert main.evaluate("splitStorage") is False
    description = next(d["argument"] for d in parameter["decorators"] if d["type"] == "description")
    assert "20,000 requests/s" in description and "docs/capacity.md" in description
    azd = json.loads((INFRA / "main.parameters.json").read_text())["parameters"]
    assert azd["splitStorage"] == {"value": "${SCHEDULER_SPLIT_STORAGE=false}"}


@pytest.mark.parametrize("prefix", ["", "t1"])
def test_off_every_table_and_queue_is_in_the_main_account(main: Template, prefix: str) -> None:
    deployed = _deploy(main, tablePrefix=prefix, executionQueueCount=3)
    accounts = _accounts(deployed)
    assert set(accounts) == {"storage"}, "no more storage accounts without splitStorage"
    values = _settings(deployed)
    assert values[HISTORY_URI] == values[EXECUTION_URI] == ""
    environ = app_environment(values)
    loaded = settings_module.load(environ)
    assert loaded.history_storage is None and loaded.execution_storage is None
    assert settings_module.execution_connection(environ) == settings_module.HOST_CONNECTION
    assert sorted(_tables(accounts["storage"])) == sorted(names.table_names(loaded))
    assert sorted(accounts["storage"]["queueNames"]) == sorted(all_queue_names(loaded))
    roles_params = deployed.evaluate(deployed.modules["roles"]["config"]["params"])
    assert roles_params["historyStorageAccountName"] == roles_params["executionStorageAccountName"] == ""
    outputs = deployed.parsed["outputs"]
    for output in ("SCHEDULER_HISTORY_STORAGE_ACCOUNT", "SCHEDULER_EXECUTION_STORAGE_ACCOUNT"):
        assert deployed.evaluate(outputs[output]["value"]) == ""


@pytest.mark.parametrize("prefix", ["", "t1"])
def test_on_the_history_tables_are_in_their_own_account(main: Template, prefix: str) -> None:
    deployed = _deploy(main, splitStorage=True, tablePrefix=prefix)
    accounts = _accounts(deployed)
    assert set(accounts) == {"storage", "historyStorage", "executionStorage"}
    loaded = settings_module.load(app_environment(_settings(deployed)))
    history = {loaded.table_name(table) for table in names.HISTORY_TABLES}
    assert history == {prefix + names.CLAIMS_TABLE, prefix + names.HISTORY_TABLE}
    assert sorted(_tables(accounts["historyStorage"])) == sorted(history)
    assert not history & set(_tables(accounts["storage"])), "a history table still in the main account"
    assert sorted(_tables(accounts["storage"])) == sorted(set(names.table_names(loaded)) - history)
    assert _tables(accounts["executionStorage"]) == []
    assert accounts["historyStorage"]["queueNames"] == []
    assert loaded.history_storage is not None


@pytest.mark.parametrize("count", [1, 4])
def test_on_the_execution_queues_are_in_their_own_account(main: Template, count: int) -> None:
    deployed = _deploy(main, splitStorage=True, executionQueueCount=count, executionQueueName="exec-q")
    accounts = _accounts(deployed)
    loaded = settings_module.load(app_environment(_settings(deployed)))
    execution = names.execution_queue_names(loaded)
    assert len(loaded.execution_queues) == count
    assert set(execution) == {*loaded.execution_queues, *(q + names.POISON_SUFFIX for q in loaded.execution_queues)}
    assert sorted(accounts["executionStorage"]["queueNames"]) == sorted(execution)
    main_queues = accounts["storage"]["queueNames"]
    assert not set(execution) & set(main_queues), "an execution queue still in the main account"
    assert sorted(main_queues) == sorted(set(all_queue_names(loaded)) - set(execution))
    assert {loaded.scan_queue, loaded.cleanup_queue} <= set(main_queues)


def test_on_the_settings_name_the_new_accounts_endpoints(main: Template, bicep: dict[str, dict[str, Any]]) -> None:
    deployed = _deploy(main, splitStorage=True)
    values = _settings(deployed)
    assert values[HISTORY_URI] == ModuleOutput("historyStorage", "tableEndpoint")
    assert values[EXECUTION_URI] == ModuleOutput("executionStorage", "queueEndpoint")
    assert values["AzureWebJobsStorage__accountName"] == _settings(main)["AzureWebJobsStorage__accountName"]
    outputs = Template(bicep[STORAGE_MODULE]).parsed["outputs"]
    assert accessor_path(outputs["tableEndpoint"]["value"]) == ["account", "properties", "primaryEndpoints", "table"]
    assert accessor_path(outputs["queueEndpoint"]["value"]) == ["account", "properties", "primaryEndpoints", "queue"]
    environ = app_environment(values)
    loaded = settings_module.load(environ)
    assert loaded.history_storage is not None and loaded.history_storage.connection_string is None
    assert loaded.history_storage.endpoint.startswith("https://historystorage.table.")
    assert loaded.execution_storage is not None and loaded.execution_storage.connection_string is None
    assert loaded.execution_storage.endpoint.startswith("https://executionstorage.queue.")
    assert settings_module.execution_connection(environ) == settings_module.EXECUTION_CONNECTION
    outputs = deployed.parsed["outputs"]
    for output, variable in (
        ("SCHEDULER_HISTORY_STORAGE_ACCOUNT", "historyStorageAccountName"),
        ("SCHEDULER_EXECUTION_STORAGE_ACCOUNT", "executionStorageAccountName"),
    ):
        operands = outputs[output]["value"]["operator"]["operands"]
        assert (operands["condition"], operands["true_value"]) == ("splitStorage", variable), output


def test_on_the_new_accounts_are_storage_accounts_like_the_main_one(
    main: Template, bicep: dict[str, dict[str, Any]]
) -> None:
    """The same module (so the same hardening, which test_security_baseline and checkov check), the same
    replication, distinct names that fit, and no deployment container in the new ones."""
    deployed = _deploy(main, splitStorage=True)
    modules = {symbol: main.modules[symbol]["config"] for symbol in _accounts(deployed)}
    modules = {symbol: config.get("config", config) for symbol, config in modules.items()}
    assert len({config["name"] for config in modules.values()}) == 3, "deployment names must differ"
    prefixes = set()
    for symbol, config in modules.items():
        assert config["params"]["storageSkuName"] == "storageSku", symbol
        name = main.variable(config["params"]["name"])
        match = re.fullmatch(r"([a-z0-9]+)\$\{resourceToken\}", name)
        assert match, f"{symbol}: {name}"
        assert len(match.group(1)) + UNIQUE_STRING_LENGTH <= 24, f"{symbol}: {name} may be too long"
        prefixes.add(match.group(1))
    assert len(prefixes) == 3, "three accounts, three names"
    assert set(modules["storage"]["params"]) - set(modules["historyStorage"]["params"]) == {"deploymentContainerName"}
    assert set(modules["historyStorage"]["params"]) == set(modules["executionStorage"]["params"])
    storage = Template(bicep[STORAGE_MODULE])
    container = storage.resources["deploymentContainer"]["config"]
    assert (
        Template(storage.parsed, parameters={"deploymentContainerName": ""}).evaluate(container["condition"]) is False
    )
    assert (
        Template(storage.parsed, parameters={"deploymentContainerName": "c"}).evaluate(container["condition"]) is True
    )


def test_on_the_app_has_its_roles_on_the_new_accounts(main: Template, bicep: dict[str, dict[str, Any]]) -> None:
    deployed = _deploy(main, splitStorage=True)
    params = deployed.evaluate(deployed.modules["roles"]["config"]["params"])
    assert params["historyStorageAccountName"] == ModuleOutput("historyStorage", "name")
    assert params["executionStorageAccountName"] == ModuleOutput("executionStorage", "name")
    assert params["principalId"] == ModuleOutput("functionApp", "principalId")
    assert accessor_path(Template(bicep[STORAGE_MODULE]).parsed["outputs"]["name"]["value"]) == ["account", "name"]
    given = {"principalId": "app", "storageAccountName": "st", "keyVaultName": "kv", "appInsightsName": "ai"}
    given["deploymentContainerName"] = "c"
    roles = Template(
        bicep["modules/roles.bicep"],
        parameters={**given, "historyStorageAccountName": "sth", "executionStorageAccountName": "ste"},
    )
    granted = _roles_by_account(roles)
    assert granted["historyStorageAccountName"] == {"Storage Table Data Contributor"}
    main_queue_roles = {role for role in granted["storageAccountName"] if "Queue" in role}
    assert main_queue_roles == {"Storage Queue Data Contributor"}
    assert granted["executionStorageAccountName"] == main_queue_roles
    off = _roles_by_account(Template(bicep["modules/roles.bicep"], parameters=given))
    assert set(off) == {"storageAccountName"}, "no roles on accounts that are not deployed"
