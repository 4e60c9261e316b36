"""Log levels an operator can set: host.json's ``logging.logLevel`` per category, as the Functions host filters
its logs (the local host's invocation lines are category ``Function.<name>``: the project's host.json quiets
those of the scans, the dashboard's polls (its reads of the management API too: they take the dashboard's
route) and ``/health``), ``SCHEDULER_LOG_LEVEL`` for the scheduler's own
lines, and the local host's ``--log-level`` for its console.

The real function app on the local host over Azurite, real HTTP requests; the records are read as pytest
captures them."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from local_host.__main__ import _apply_log_level
from local_host.azurite import free_port
from local_host.hostjson import load_log_levels
from local_host.runtime import LocalHost
from scheduler_core import auth, settings, telemetry
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.errors import ConfigurationError
from scheduler_core.settings import Settings
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
LIST_PATH = "/subscriptions/x/providers/Microsoft.Scheduler/jobCollections?api-version=2016-03-01"


@pytest.fixture
def restored_levels() -> Iterator[None]:
    """Loggers' levels as they were before the test (the levels are the process's)."""
    names = ["", "scheduler_core", "Function", "Function.scan_shard", "Function.dashboard", "Function.health"]
    before = {name: logging.getLogger(name).level for name in names}
    environ = os.environ.get("SCHEDULER_LOG_LEVEL")
    yield
    for name, level in before.items():
        logging.getLogger(name).setLevel(level)
    if environ is None:
        os.environ.pop("SCHEDULER_LOG_LEVEL", None)
    else:
        os.environ["SCHEDULER_LOG_LEVEL"] = environ


def test_the_polls_invocation_lines_are_quiet_and_the_apis_are_not(
    storage_env: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, restored_levels: None
) -> None:
    import function_app

    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    provision(storage_env)
    caplog.set_level(logging.DEBUG)  # the handler takes everything: the categories' own levels decide
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
        assert requests.get(host.base_url + "/health", timeout=30).status_code in (200, 503)
        assert requests.get(host.base_url + "/dashboard/", timeout=30).status_code == 200
        listed = requests.get(host.base_url + LIST_PATH, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert listed.status_code == 200
    invocations = [record for record in caplog.records if record.name.startswith("Function.")]
    assert {record.name for record in invocations} == {"Function.management_api"}
    assert "function=management_api trigger=http GET" in invocations[0].getMessage()


COLLECTION = "subscriptions/x/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"
#: What the page reads and polls: the collections, a collection, its jobs (a page), a job, its history.
READS = [
    LIST_PATH,
    f"/{COLLECTION}?api-version=2016-03-01",
    f"/{COLLECTION}/jobs?api-version=2016-03-01&$top=1",
    f"/{COLLECTION}/jobs/j?api-version=2016-03-01",
    f"/{COLLECTION}/jobs/j/history?api-version=2016-03-01",
]


def invocation_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The per-invocation lines captured (category ``Function.<name>``)."""
    return [record for record in caplog.records if record.name.startswith("Function.")]


def write(method: str, url: str, key: str, body: dict[str, Any]) -> None:
    """A write to the management API (``url`` without its api-version), which must succeed."""
    answer = requests.request(
        method, url + "?api-version=2016-03-01", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    assert answer.status_code in (200, 201), answer.text


def test_the_dashboards_reads_log_no_invocation_line_and_a_write_does(
    storage_env: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, restored_levels: None
) -> None:
    """The page's reads (every list, job and history it polls) go through the dashboard's read route, an
    invocation of ``dashboard``, whose lines host.json keeps below Information; a write the page sends to the
    management API is still an Information line of ``management_api``."""
    import function_app

    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    provision(storage_env)
    start = (datetime.now(UTC) + timedelta(days=30)).strftime("%Y-%m-%dT00:00:00Z")  # nothing runs meanwhile
    action = {"type": "Http", "request": {"uri": "http://127.0.0.1:9/", "method": "GET"}}
    caplog.set_level(logging.DEBUG)  # the handler takes everything: the categories' own levels decide
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
        collection = f"{host.base_url}/{COLLECTION}"
        write("PUT", collection, key, {"location": "westeurope", "properties": {"sku": {"name": "Standard"}}})
        write("PUT", f"{collection}/jobs/j", key, {"properties": {"startTime": start, "action": action}})
        # The host logs a line once it has answered: both PUTs' lines are in before the reads are counted.
        wait_until(lambda: len(invocation_lines(caplog)) == 2, timeout=10, what="the PUTs' invocation lines")
        caplog.clear()
        for _ in range(3):  # as the page polls
            for path in READS:
                answer = requests.get(
                    host.base_url + "/dashboard/api/arm" + path, headers={"Authorization": f"Bearer {key}"}, timeout=30
                )
                assert answer.status_code == 200, answer.text
        quiet = invocation_lines(caplog)
        write("PATCH", collection, key, {"properties": {"state": "Enabled"}})
        wait_until(lambda: invocation_lines(caplog) != [], timeout=10, what="the PATCH's invocation line")
    assert quiet == []  # fifteen reads, no per-invocation line at Information (nor at DEBUG: below Warning)
    invocations = invocation_lines(caplog)
    assert [(record.name, record.levelno) for record in invocations] == [("Function.management_api", logging.INFO)]
    assert "function=management_api trigger=http PATCH /subscriptions/x/" in invocations[0].getMessage()


def test_host_json_levels_are_read_and_a_wrong_one_is_refused_naming_it() -> None:
    assert load_log_levels({"default": "Information", "Function.scan_shard": "warning", "Host": "None"}) == (
        ("default", logging.INFO),
        ("Function.scan_shard", logging.WARNING),
        ("Host", logging.CRITICAL + 10),
    )
    with pytest.raises(ConfigurationError, match=r"logging\.logLevel\.Function must be one of Trace, Debug"):
        load_log_levels({"Function": "Verbose"})


def test_scheduler_log_level_sets_the_apps_own_lines(monkeypatch: pytest.MonkeyPatch, restored_levels: None) -> None:
    monkeypatch.setenv("SCHEDULER_LOG_LEVEL", "Warning")
    assert settings.log_level() == logging.WARNING
    telemetry.set_log_level(settings.log_level())
    assert not logging.getLogger("scheduler_core.execute").isEnabledFor(logging.INFO)
    monkeypatch.setenv("SCHEDULER_LOG_LEVEL", "loud")
    with pytest.raises(ConfigurationError, match="SCHEDULER_LOG_LEVEL must be one of debug, info, warning, error"):
        settings.log_level()


def test_the_local_hosts_log_level_wins_and_reaches_the_worker(
    monkeypatch: pytest.MonkeyPatch, restored_levels: None
) -> None:
    monkeypatch.setenv("SCHEDULER_LOG_LEVEL", "error")
    _apply_log_level("debug", ROOT / "host.json")  # --log-level debug
    assert logging.getLogger().level == logging.DEBUG
    assert os.environ["SCHEDULER_LOG_LEVEL"] == "debug"  # the worker process and the app read it
    assert logging.getLogger("Function.scan_shard").level == logging.WARNING  # host.json's category still rules
    monkeypatch.delenv("SCHEDULER_LOG_LEVEL")
    _apply_log_level(None, ROOT / "host.json")
    assert logging.getLogger().level == logging.INFO  # host.json's default
