"""Every setting the code reads is declared, documented and listed in local.settings.sample.json."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from local_host.app_index import AppIndex, setting_references
from scheduler_core import settings
from scheduler_core.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]

# Everything in the deployed code reads settings through scheduler_core.settings. The local host (the
# top-level package local_host, not deployed) plays the Functions host: it loads local.settings.json into the
# environment and reads the app settings that bindings name, so it is outside the walk below.
#: The service reads its settings in one module; the command line, a client on the user's machine that the
#: app never imports (tests/cli), reads the user's shell in one module of its own.
ENV_READERS_ALLOWED = ("scheduler_core/settings.py", "scheduler_core/cli/common.py")


def test_every_declared_setting_is_in_the_sample_and_documented() -> None:
    for spec in settings.SETTINGS:
        assert spec.name in SAMPLE, f"{spec.name} is missing from local.settings.sample.json"
        assert len(spec.doc) > 20, f"{spec.name} needs a real description"


def test_sample_lists_nothing_undeclared() -> None:
    declared = {spec.name for spec in settings.SETTINGS}
    assert set(SAMPLE) <= declared, f"undeclared settings in the sample: {set(SAMPLE) - declared}"


def _environment_reads(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") and isinstance(node.value, ast.Name)
        ) and node.value.id == "os":
            found.append(f"{path.relative_to(root)}:{node.lineno}")
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "os"
            and any(alias.name in ("environ", "getenv") for alias in node.names)
        ):
            found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_module_reads_the_environment_outside_the_settings_module() -> None:
    offenders = []
    for path in [*sorted((ROOT / "scheduler_core").rglob("*.py")), ROOT / "function_app.py"]:
        if str(path.relative_to(ROOT)).startswith(ENV_READERS_ALLOWED):
            continue
        offenders += _environment_reads(path)
    assert offenders == [], f"read settings through scheduler_core.settings instead: {offenders}"


def test_the_environment_check_detects_a_direct_read(tmp_path: Path) -> None:
    # Guards the test above against silently matching nothing. The probe lives in a copy of the layout under
    # tmp_path, never in scheduler_core itself, where tests walking the package on other workers would see it.
    probe = tmp_path / "scheduler_core" / "_probe_env_read_tmp.py"
    probe.parent.mkdir()
    probe.write_text("import os\nVALUE = os.environ.get('X')\n")
    assert _environment_reads(probe, root=tmp_path) == ["scheduler_core/_probe_env_read_tmp.py:2"]


def test_binding_setting_references_are_declared_and_in_the_sample(function_index: AppIndex) -> None:
    index = function_index
    references = []
    for timer in index.timers:
        references += setting_references(timer.schedule)
    for queue in index.queues:
        references += [*setting_references(queue.queue_name), queue.connection or "AzureWebJobsStorage"]
    for name in references:
        assert name in SAMPLE, f"binding refers to {name}, which local.settings.sample.json does not list"
        settings.raw(name, {})  # raises if undeclared


def test_undeclared_setting_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="not declared"):
        settings.raw("NOT_A_SETTING", {})


def test_load_parses_and_checks_values() -> None:
    env = {"AzureWebJobsStorage": "UseDevelopmentStorage=true", "SCHEDULER_DUE_SHARDS": "32"}
    loaded = settings.load(env)
    assert loaded.due_shards == 32
    assert loaded.lookahead_seconds == 75
    assert loaded.table_name("Jobs") == "Jobs"
    with pytest.raises(ConfigurationError, match="SCHEDULER_DUE_SHARDS"):
        settings.load({**env, "SCHEDULER_DUE_SHARDS": "zero"})
    with pytest.raises(ConfigurationError, match="SCHEDULER_DUE_SHARDS"):
        settings.load({**env, "SCHEDULER_DUE_SHARDS": "0"})
    with pytest.raises(ConfigurationError, match="SCHEDULER_TABLE_PREFIX"):
        settings.load({**env, "SCHEDULER_TABLE_PREFIX": "bad-prefix"})
    with pytest.raises(ConfigurationError, match="AzureWebJobsStorage"):
        settings.load({})


def test_identity_allowed_hosts_are_a_list_of_hosts_suffixes_and_addresses() -> None:
    env = {"AzureWebJobsStorage": "UseDevelopmentStorage=true"}
    assert settings.load(env).identity_allowed_hosts == ()
    listed = "servicebus.usgovcloudapi.net; 127.0.0.1,*.example.com  [::1] localhost"
    loaded = settings.load({**env, "SCHEDULER_IDENTITY_ALLOWED_HOSTS": listed})
    assert loaded.identity_allowed_hosts == (
        "servicebus.usgovcloudapi.net",
        "127.0.0.1",
        "*.example.com",
        "[::1]",
        "localhost",
    )
    for bad in ("https://example.com", "example.com/path", "user@example.com", "*", "."):
        with pytest.raises(ConfigurationError, match="SCHEDULER_IDENTITY_ALLOWED_HOSTS"):
            settings.load({**env, "SCHEDULER_IDENTITY_ALLOWED_HOSTS": bad})
