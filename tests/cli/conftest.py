"""Fixtures of the command-line tests: the real function app on the local host (the end-to-end ``api``
fixture: Azurite, tables and queues of the test's own), and the command line run against it, in this
process (``cli``) or as ``python -m scheduler_core`` (``run_cli``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.cli import main
from scheduler_core.settings import Settings
from tests.e2e.conftest import Api, api  # the end-to-end fixture, reused

__all__ = ["Api", "Cli", "Ran", "api", "cli", "running_api"]

ROOT = Path(__file__).resolve().parents[2]
SUB = "00000000-0000-0000-0000-0000000000c1"
RG = "rg-cli"

#: The client-side variables of the command line (cleared, then set to the test's host).
CLI_VARIABLES = (
    "SCHEDULER_ENDPOINT",
    "SCHEDULER_API_KEY",
    "SCHEDULER_API_KEY_FILE",
    "SCHEDULER_SUBSCRIPTION",
    "SCHEDULER_RESOURCE_GROUP",
    "SCHEDULER_COLLECTION",
)


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Cli:
    """``python -m scheduler_core`` against one running host, with its endpoint, key, subscription and
    resource group in the environment."""

    api: Api
    capsys: pytest.CaptureFixture[str]
    env: dict[str, str]

    def __call__(self, *argv: str) -> Ran:
        """Run in this process (``main``), capturing standard output and error."""
        self.capsys.readouterr()
        code = main(list(argv))
        captured = self.capsys.readouterr()
        return Ran(code, captured.out, captured.err)

    def process(self, *argv: str, env: dict[str, str] | None = None, stdin: str | None = None) -> Ran:
        """Run as a child process, as a person or a script would."""
        environment = {k: v for k, v in os.environ.items() if k not in CLI_VARIABLES}
        environment.update(self.env if env is None else env)
        done = subprocess.run(
            [sys.executable, "-m", "scheduler_core", *argv],
            cwd=ROOT,
            env=environment,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return Ran(done.returncode, done.stdout, done.stderr)


def _cli(api: Api, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    for name in CLI_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    env = {
        "SCHEDULER_ENDPOINT": api.base_url,
        "SCHEDULER_API_KEY": api.key,
        "SCHEDULER_SUBSCRIPTION": SUB,
        "SCHEDULER_RESOURCE_GROUP": RG,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Cli(api, capsys, env)


@pytest.fixture
def cli(api: Api, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """The command line against the local host serving the management API (HTTP triggers only)."""
    return _cli(api, monkeypatch, capsys)


@pytest.fixture
def running_api(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    """The local host with its HTTP and queue triggers: a job run on demand executes."""
    import function_app

    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    wiring.reset()
    provision(storage_env)
    enable = frozenset({"http", "queue"})
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=enable) as host:
        yield Api(host.base_url, key, storage_env)


@pytest.fixture
def running_cli(running_api: Api, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """The command line against the local host that also executes jobs."""
    return _cli(running_api, monkeypatch, capsys)
