"""The history tables and the execution queues in storage accounts of their own: the settings
(``SchedulerHistoryStorage``, ``SchedulerExecutionStorage`` and their identity-based forms), the trigger
connection the app is indexed with, and the clients each part gets. No storage is called here
(tests/e2e/test_storage_split.py runs a deployment over three Azurite accounts)."""

from __future__ import annotations

import pytest

from scheduler_core import settings, triggers
from scheduler_core.adapters.azure.clients import queue_client, queue_service, table_service
from scheduler_core.errors import ConfigurationError
from scheduler_core.settings import StorageAccount
from tests.unit.test_execution_queues import load_function_app

BASE = {"AzureWebJobsStorage__accountName": "mainacct"}
HISTORY = "DefaultEndpointsProtocol=http;AccountName=historyacct;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:1/h"
EXECUTIONS = "DefaultEndpointsProtocol=http;AccountName=execacct;AccountKey=a2V5;QueueEndpoint=http://127.0.0.1:1/e"


def test_by_default_every_part_stays_in_azurewebjobsstorages_account() -> None:
    loaded = settings.load(BASE)
    assert loaded.history_storage is None
    assert loaded.execution_storage is None
    assert settings.execution_connection(BASE) == "AzureWebJobsStorage"
    assert table_service(loaded).url.startswith("https://mainacct.table.core.windows.net")
    assert queue_client(loaded, "q").url.startswith("https://mainacct.queue.core.windows.net/q")


def test_connection_strings_give_the_parts_their_accounts() -> None:
    environ = {**BASE, "SchedulerHistoryStorage": HISTORY, "SchedulerExecutionStorage": EXECUTIONS}
    loaded = settings.load(environ)
    assert loaded.history_storage == StorageAccount(HISTORY)
    assert loaded.execution_storage == StorageAccount(EXECUTIONS)
    assert settings.execution_connection(environ) == "SchedulerExecutionStorage"
    assert table_service(loaded, loaded.history_storage).url.startswith("http://127.0.0.1:1/h")
    assert queue_client(loaded, "q", account=loaded.execution_storage).url.startswith("http://127.0.0.1:1/e/q")
    assert table_service(loaded).url.startswith("https://mainacct.table.")  # the rest stays where it was


def test_identity_based_endpoints_give_the_parts_their_accounts() -> None:
    environ = {
        **BASE,
        "SchedulerHistoryStorage__tableServiceUri": "https://historyacct.table.core.windows.net/",
        "SchedulerExecutionStorage__queueServiceUri": "https://execacct.queue.core.windows.net",
    }
    loaded = settings.load(environ)
    assert loaded.history_storage == StorageAccount(None, "https://historyacct.table.core.windows.net")
    assert loaded.execution_storage == StorageAccount(None, "https://execacct.queue.core.windows.net")
    assert settings.execution_connection(environ) == "SchedulerExecutionStorage"
    assert table_service(loaded, loaded.history_storage).url.startswith("https://historyacct.table.core.windows.net")
    assert queue_service(loaded, loaded.execution_storage).url.startswith("https://execacct.queue.core.windows.net")
    assert queue_client(loaded, "q", account=loaded.execution_storage).url.startswith(
        "https://execacct.queue.core.windows.net/q"
    )


def test_a_connection_string_wins_over_an_endpoint_as_for_azurewebjobsstorage() -> None:
    environ = {
        **BASE,
        "SchedulerHistoryStorage": HISTORY,
        "SchedulerHistoryStorage__tableServiceUri": "https://other.table.core.windows.net",
    }
    assert settings.load(environ).history_storage == StorageAccount(HISTORY)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SchedulerHistoryStorage__tableServiceUri", "http://historyacct.table.core.windows.net"),
        ("SchedulerHistoryStorage__tableServiceUri", "historyacct"),
        ("SchedulerExecutionStorage__queueServiceUri", "https:///no-host"),
        ("SchedulerHistoryStorage", "not a connection string with a secret-looking tail"),
        ("SchedulerExecutionStorage", "historyacct"),
        ("SchedulerExecutionStorage", f" {EXECUTIONS}"),  # the app would strip it, the host would not read it
        ("SchedulerHistoryStorage", f"{HISTORY}\n"),
        ("SchedulerExecutionStorage__queueServiceUri", "https://execacct.queue.core.windows.net "),
        ("SchedulerHistoryStorage__tableServiceUri", HISTORY),  # a connection string in the endpoint's place
        ("SchedulerHistoryStorage__tableServiceUri", "https://h.table.core.windows.net/?sv=2024&sig=SECRET"),
        ("SchedulerExecutionStorage__queueServiceUri", "https://user:SECRET@execacct.queue.core.windows.net"),
    ],
)
def test_a_bad_value_is_a_clear_error_naming_the_setting_and_never_repeats_it(name: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=name) as raised:
        settings.load({**BASE, name: value})
    assert value.strip() not in raised.value.message  # it may hold a key or a signature
    assert "SECRET" not in raised.value.message and "a2V5" not in raised.value.message


def test_a_connection_string_is_never_printed_with_the_settings() -> None:
    loaded = settings.load({**BASE, "SchedulerHistoryStorage": HISTORY, "SchedulerExecutionStorage": EXECUTIONS})
    assert "a2V5" not in repr(loaded) and "AccountKey" not in repr(loaded)


def test_the_execution_functions_are_indexed_on_the_connection_of_their_account(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def connections() -> dict[str, str]:
        app = load_function_app(monkeypatch, 2)
        found: dict[str, str] = {}
        for function in app.get_functions():
            for binding in function.get_bindings():
                if binding.type == "queueTrigger":
                    found[str(function.get_function_name())] = str(binding.get_dict_repr()["connection"])
        return found

    assert connections() == {
        "scan_shard": "AzureWebJobsStorage",
        "execute_occurrence": "AzureWebJobsStorage",
        "execute_occurrence_1": "AzureWebJobsStorage",
        "cleanup_collections": "AzureWebJobsStorage",
    }
    monkeypatch.setenv("SchedulerExecutionStorage__queueServiceUri", "https://execacct.queue.core.windows.net")
    assert connections() == {
        "scan_shard": "AzureWebJobsStorage",
        "execute_occurrence": "SchedulerExecutionStorage",
        "execute_occurrence_1": "SchedulerExecutionStorage",
        "cleanup_collections": "AzureWebJobsStorage",
    }
    assert {f.connection for f in triggers.execution_functions()} == {"SchedulerExecutionStorage"}
