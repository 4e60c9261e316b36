"""Shared fixtures: one in-memory Azurite per test session, on free ports, started by the project's code.

``make test`` runs the suite on parallel workers (pytest-xdist, ``-n auto --dist loadfile``): every worker is
a session of its own (its own Azurite), a test module runs whole on one worker, and every test has tables and
queues of its own, so no test sees another's data. The two hooks below size and order that run; a plain
``pytest`` runs in one process as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _pytest.nodeid import coerce_node_id

from local_host.app_index import AppIndex, index_app
from local_host.azurite import Azurite
from scheduler_core import settings

#: At most this many workers for ``-n auto``: every worker costs an Azurite and a collection of the suite.
MAX_AUTO_WORKERS = 10
#: Workers per CPU for ``-n auto``. The suite mostly waits (real time, Azurite, child processes): measured on
#: 2 CPUs, the same machine and day, 4,389 tests took 6 min 55 s with six workers, 5 min 44 s with eight,
#: 5 min 15 s with ten and 5 min 54 s with twelve (the CPUs 48 %, 65 % and 75 % busy on average with six, eight
#: and ten; twelve thrash).
WORKERS_PER_CPU = 5


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """Workers for ``-n auto``: :data:`WORKERS_PER_CPU` per CPU (at most :data:`MAX_AUTO_WORKERS`), since most
    of the suite waits on real time, Azurite and child processes rather than computing.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` and ``-n logical`` keep pytest-xdist's own meaning (None hands over to
    its hook)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or config.option.numprocesses != "auto":
        return None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MAX_AUTO_WORKERS, WORKERS_PER_CPU * cpus))


def pytest_sessionstart(session: pytest.Session) -> None:
    """When the run includes ``tests/infra`` (the whole suite does), prepare its tools in a background process
    (:func:`tests.infra.conftest.prepare`) as the run begins: on a fresh clone they take a minute or two to
    install, under a lock that every worker reaching an infra module would otherwise wait on. Once by the
    process that starts the run (pytest-xdist's controller, or the only process). It runs at the lowest CPU
    priority (``nice`` 19, inherited by pip and npm): its installs overlap the first end-to-end modules, whose
    real-time assertions (a rate limit's spacing, a lease's expiry) must not wait behind them."""
    if "PYTEST_XDIST_WORKER" in os.environ or not _runs_infra(session.config):
        return
    subprocess.Popen(
        [sys.executable, "-c", "import os; os.nice(19); from tests.infra.conftest import prepare; prepare()"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _runs_infra(config: pytest.Config) -> bool:
    """Whether the run's paths include ``tests/infra`` (a path at or above it, or in it)."""
    infra = ROOT / "tests" / "infra"
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::", 1)[0]).resolve()
        if path == infra or infra in path.parents or path in infra.parents:
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a pytest-xdist worker, the modules marked ``long(seconds)`` first, longest first (a real-time scenario of a
    minute or more: started late, it would end the suite alone), then the other end-to-end modules, those with fewest
    tests first among them.

    With ``--dist loadfile --no-loadscope-reorder`` modules are handed out in this order. A real-time
    scenario (restart catch-up, storage and worker faults: 30-40 s each) is a single test in a module of its
    own; started last, it would run alone at the end of the suite. The order is the same on every worker
    (pytest-xdist requires it); a run in one process keeps the collection order.
    """
    for item in items:
        # Schemathesis gives the items of one operation-parametrized test (one per API operation) the same
        # node id, and pytest-xdist's --dist loadfile keeps one item per node id: the suite fuzzed one
        # operation of each OpenAPI document instead of all of them. The operation's label makes each unique.
        # (pytest keeps a node's id in a structured private field; coerce_node_id builds one from the text.)
        label = getattr(item, "operation_label", None)
        if isinstance(label, str) and not item.nodeid.endswith("]"):
            item._id = coerce_node_id(f"{item.nodeid}[{label}]")
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    per_module = Counter(item.nodeid.split("::", 1)[0] for item in items)

    def rank(item: pytest.Item) -> tuple[int, float]:
        long = item.get_closest_marker("long")
        if long is not None:
            return (0, -float(long.args[0]))
        if item.get_closest_marker("e2e") is None:
            return (2, 0)
        return (1, per_module[item.nodeid.split("::", 1)[0]])

    items.sort(key=rank)


@pytest.fixture(scope="session")
def function_index() -> AppIndex:
    """What function_app.py declares, indexed once (FunctionApp.get_functions keeps state)."""
    import function_app

    return index_app(function_app.app)


ROOT = Path(__file__).resolve().parents[1]


def sample_settings() -> dict[str, str]:
    """The values of local.settings.sample.json: what `make run` gives the app before its own changes."""
    values: dict[str, str] = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
    return values


@contextmanager
def private_azurite() -> Iterator[Azurite]:
    """A private Azurite (in memory, on ports the kernel picks as it binds them): never the user's own instance,
    never another worker's."""
    with Azurite() as instance:
        yield instance


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    """The session's :func:`private_azurite`. Each pytest-xdist worker is a session of its own, so each worker
    starts its own."""
    with private_azurite() as instance:
        yield instance


@pytest.fixture(autouse=True)
def rewind_signing_keys() -> None:
    """Each test's signing keys differ from one another (``tests.support.oidc.KEYS``); a test that never
    imported the OpenID provider has none."""
    oidc = sys.modules.get("tests.support.oidc")
    if oidc is not None:
        oidc.KEYS.rewind()


@pytest.fixture
def storage_env(azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> Iterator[settings.Settings]:
    """Environment for one test: the session's Azurite and tables and queues of its own (unique names)."""
    from scheduler_core import wiring

    suffix = uuid.uuid4().hex[:8]
    for name, value in sample_settings().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AzureWebJobsStorage", azurite.connection_string)
    monkeypatch.setenv("SCHEDULER_TABLE_PREFIX", f"t{suffix}")
    monkeypatch.setenv("SCHEDULER_SCAN_QUEUE", f"scan-{suffix}")
    monkeypatch.setenv("SCHEDULER_EXECUTION_QUEUE", f"exec-{suffix}")
    monkeypatch.setenv("SCHEDULER_CLEANUP_QUEUE", f"cleanup-{suffix}")
    wiring.reset()
    yield settings.load(os.environ)
    wiring.reset()


@pytest.fixture
def memory_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[settings.Settings]:
    """Settings for a deployment on the memory adapter (no Azurite): the sample settings; the connection
    string names nothing that is ever called (``wiring.build(..., storage=memory_storage(...))``)."""
    from scheduler_core import wiring

    for name, value in sample_settings().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AzureWebJobsStorage", "UseDevelopmentStorage=true")
    wiring.reset()
    yield settings.load(os.environ)
    wiring.reset()
