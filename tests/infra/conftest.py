"""Fixtures of the infrastructure checks: the offline Bicep tools in their own virtual environment.

checkov and pycep-parser are large and pin their own dependencies, so they live in ``.venv-infra/``
(git-ignored), not in the project's ``.venv``. The first session that needs them creates it with
``python -m venv`` and ``pip install -r requirements-infra.txt`` (about a minute; only package registries
are used); later sessions reuse it as long as requirements-infra.txt is unchanged (a hash is kept in
``.venv-infra/.installed``). Both tools build a Lark grammar on first use (~30 s); it is cached under
``.venv-infra/cache`` (their TMPDIR), so only the first run pays for it.

Several processes may want the tools at once (the workers of one ``pytest -n`` session, or two sessions in
the same checkout): an exclusive lock on ``.venv-infra/.lock`` is held while the environment is checked or
built and while a tool runs (its first run writes the grammar cache), so one process builds and the others
wait for it, then reuse its work.

The alert queries (KQL) are checked with Microsoft's Kusto.Language, the engine's parser and binder as an
npm package (``@kusto/language-service-next``, no dependencies), installed the same way with ``npm install
--prefix .venv-infra/kql`` and run by ``node`` (``kql_check.js``).

A missing or broken tool is a test failure, never a skip.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.infra.bicep_eval import Template

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
VENV = ROOT / ".venv-infra"
REQUIREMENTS = ROOT / "requirements-infra.txt"
CACHE = VENV / "cache"
MARKER = VENV / ".installed"
LOCK = VENV / ".lock"  # kept when the environment is rebuilt: the lock must stay on the same file
PYCEP_DUMP = Path(__file__).with_name("pycep_dump.py")
KQL_CHECK = Path(__file__).with_name("kql_check.js")
#: Microsoft's Kusto.Language (parser and binder of KQL) for JavaScript: no dependencies, MIT, ~30 MB.
KUSTO_LANGUAGE = "@kusto/language-service-next@12.4.1"
KQL_TOOL = VENV / "kql"  # npm --prefix: node_modules/ inside, and a marker with the installed spec

#: Generous: the first run installs checkov (~60-90 s) and builds the grammar (~30 s).
TOOL_TIMEOUT = 900


def bicep_files() -> list[Path]:
    """Every Bicep file of the project (main template and modules)."""
    return sorted(INFRA.rglob("*.bicep"))


def _bin(name: str) -> Path:
    folder = "Scripts" if os.name == "nt" else "bin"
    suffix = ".exe" if os.name == "nt" else ""
    return VENV / folder / f"{name}{suffix}"


def _requirements_hash() -> str:
    return hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()


def _run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)


@contextlib.contextmanager
def infra_lock() -> Iterator[None]:
    """Exclusive use of ``.venv-infra`` among processes (blocks until the holder is done)."""
    VENV.mkdir(exist_ok=True)
    with LOCK.open("a+b") as handle:
        if sys.platform == "win32":
            import msvcrt

            while True:
                try:
                    msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
                    break
                except OSError:
                    time.sleep(0.5)
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _ensure_venv() -> None:
    """Create or refresh the environment; the caller holds :func:`infra_lock`."""
    wanted = _requirements_hash()
    if MARKER.is_file() and MARKER.read_text().strip() == wanted and _bin("checkov").exists():
        return
    for entry in VENV.iterdir():  # everything but the lock file
        if entry == LOCK:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    created = _run([sys.executable, "-m", "venv", str(VENV)], timeout=TOOL_TIMEOUT)
    if created.returncode != 0:
        pytest.fail(f"could not create {VENV}:\n{created.stdout}\n{created.stderr}")
    installed = _run(
        [
            str(_bin("python")),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(REQUIREMENTS),
        ],
        timeout=TOOL_TIMEOUT,
    )
    if installed.returncode != 0:
        pytest.fail(f"pip install -r {REQUIREMENTS.name} failed:\n{installed.stdout}\n{installed.stderr}")
    MARKER.write_text(wanted + "\n")


def tool_env() -> dict[str, str]:
    """Environment of the tools: grammar cache in .venv-infra/cache, a fixed hash seed (stable results)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(
        {
            "TMPDIR": str(CACHE),
            "PYTHONHASHSEED": "0",
        }
    )
    env.pop("PYTHONPATH", None)
    return env


def prepare() -> None:
    """Make the tools ready ahead of the tests that use them, under :func:`infra_lock`: the environment, the
    KQL analyzer and the grammar cache (one pycep-parser run). ``make test`` starts it in the background when
    its session begins (``tests/conftest.py``), so that on a fresh clone the minute or two it takes overlaps
    the end-to-end modules, which run first, instead of holding every worker that reaches an infra module. A
    failure here is met again, and reported, by the fixtures below."""
    with infra_lock():
        _ensure_venv()
        _ensure_kusto_language()
        _run([str(_bin("python")), str(PYCEP_DUMP), "infra/main.bicep"], cwd=ROOT, env=tool_env(), timeout=TOOL_TIMEOUT)


@pytest.fixture(scope="session")
def infra_venv() -> Path:
    """The tools' virtual environment, created and installed when missing or out of date."""
    with infra_lock():
        _ensure_venv()
    return VENV


def _ensure_kusto_language() -> Path:
    """Install KUSTO_LANGUAGE with npm into .venv-infra/kql when missing; the caller holds :func:`infra_lock`."""
    marker = KQL_TOOL / ".installed"
    modules = KQL_TOOL / "node_modules"
    if marker.is_file() and marker.read_text().strip() == KUSTO_LANGUAGE and modules.is_dir():
        return modules
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is needed to install the KQL analyzer (Node.js is a prerequisite of make install)")
    if KQL_TOOL.exists():
        shutil.rmtree(KQL_TOOL)
    KQL_TOOL.mkdir(parents=True)
    installed = _run(
        [
            npm,
            "install",
            "--prefix",
            str(KQL_TOOL),
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            KUSTO_LANGUAGE,
        ],
        timeout=TOOL_TIMEOUT,
    )
    if installed.returncode != 0:
        pytest.fail(f"npm install {KUSTO_LANGUAGE} failed:\n{installed.stdout}\n{installed.stderr}")
    marker.write_text(KUSTO_LANGUAGE + "\n")
    return modules


@pytest.fixture(scope="session")
def kql_analyzer(infra_venv: Path) -> Callable[[dict[str, str], dict[str, str]], dict[str, Any]]:
    """Analyze KQL queries with Kusto.Language: (tables as schema text, queries) -> diagnostics and columns."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed to run the KQL analyzer (Node.js is a prerequisite of make install)")
    with infra_lock():
        modules = _ensure_kusto_language()

    def analyze(tables: dict[str, str], queries: dict[str, str]) -> dict[str, Any]:
        done = _run(
            [node, str(KQL_CHECK), str(modules)],
            input=json.dumps({"tables": tables, "queries": queries}),
            timeout=TOOL_TIMEOUT,
        )
        if done.returncode != 0:
            pytest.fail(f"kql_check.js failed (rc={done.returncode}):\n{done.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    return analyze


@pytest.fixture(scope="session")
def pycep_results(infra_venv: Path) -> dict[str, dict[str, Any]]:
    """pycep-parser's result for every Bicep file, keyed by path relative to the project root."""
    files = [str(path.relative_to(ROOT)) for path in bicep_files()]
    with infra_lock():
        done = _run(
            [str(_bin("python")), str(PYCEP_DUMP), *files],
            cwd=ROOT,
            env=tool_env(),
            timeout=TOOL_TIMEOUT,
        )
    if done.returncode != 0:
        pytest.fail(f"pycep_dump.py failed (rc={done.returncode}):\n{done.stderr[-4000:]}")
    results: dict[str, dict[str, Any]] = json.loads(done.stdout)
    return results


@pytest.fixture(scope="session")
def bicep(pycep_results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Parsed templates keyed by file name relative to infra/ ('main.bicep', 'modules/storage.bicep')."""
    parsed: dict[str, dict[str, Any]] = {}
    for name, entry in pycep_results.items():
        if not entry["ok"]:
            pytest.fail(f"{name} does not parse with pycep-parser: {entry['error']}")
        parsed[Path(name).relative_to("infra").as_posix()] = entry["result"]
    return parsed


@pytest.fixture(scope="module")
def main(bicep: dict[str, dict[str, Any]]) -> Template:
    return Template(bicep["main.bicep"])


@pytest.fixture(scope="module")
def app_settings_module(bicep: dict[str, dict[str, Any]]) -> Template:
    return Template(bicep["modules/appsettings.bicep"])


@pytest.fixture(scope="module")
def function_app(bicep: dict[str, dict[str, Any]]) -> Template:
    return Template(bicep["modules/functionapp.bicep"])


@pytest.fixture(scope="session")
def checkov_report(infra_venv: Path) -> dict[str, Any]:
    """checkov's JSON report on infra/, run offline (--skip-download) with the project's .checkov.yaml."""
    with infra_lock():
        done = _run(
            [
                str(_bin("checkov")),
                "--config-file",
                str(ROOT / ".checkov.yaml"),
                "--directory",
                "infra",
                "--framework",
                "bicep",
                "--skip-download",
                "--output",
                "json",
                "--soft-fail",
            ],
            cwd=ROOT,
            env=tool_env(),
            timeout=TOOL_TIMEOUT,
        )
    if done.returncode != 0:
        pytest.fail(f"checkov did not run (rc={done.returncode}):\n{done.stderr[-4000:]}")
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"checkov printed no JSON report:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    if isinstance(report, list):  # one report per framework when several ran
        report = next(r for r in report if r.get("check_type") == "bicep")
    assert isinstance(report, dict)
    return report
