"""The package's layers hold: what may import what.

- The deployed code does not depend on the local host, and the local host is not deployed.
  ``local_host`` (``python -m local_host``) is a development tool that plays the Functions host. The
  deployed package is ``function_app.py`` plus ``scheduler_core``; ``.funcignore`` keeps ``local_host/``
  out of it, so an import of ``local_host`` from deployed code would fail in Azure.
- Only the adapters (``scheduler_core/adapters``) and the action senders (``scheduler_core/actions``)
  import an Azure SDK (``function_app.py``, outside the package, imports the Functions one).
- The core (the domain model, the ports, keys, recurrence and the ARM JSON definitions) imports no HTTP
  client and nothing of the adapters, the API or the composition root: it is decided over, never wired.

An import counts wherever it is written: at the top, inside a function, under ``if TYPE_CHECKING``, as a
relative import, or as ``importlib.import_module("...")`` / ``__import__("...")`` with a literal name.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOST_PACKAGE = "local_host"


def deployed_modules() -> list[Path]:
    """Every Python module that is deployed: ``function_app.py`` and all of ``scheduler_core``."""
    return [ROOT / "function_app.py", *sorted((ROOT / "scheduler_core").rglob("*.py"))]


def host_imports(source: str, filename: str) -> list[int]:
    """Line numbers of every ``import local_host[...]`` and ``from local_host[...] import ...`` in ``source``."""
    lines = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            names = [node.module]
        else:
            continue
        if any(name == HOST_PACKAGE or name.startswith(HOST_PACKAGE + ".") for name in names):
            lines.append(node.lineno)
    return lines


def test_no_deployed_module_imports_the_local_host() -> None:
    modules = deployed_modules()
    assert ROOT / "scheduler_core" / "__init__.py" in modules
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in modules
        for line in host_imports(path.read_text(encoding="utf-8"), str(path))
    ]
    assert offenders == [], f"deployed code imports the local host, which is not deployed: {offenders}"


def test_the_import_check_detects_every_spelling() -> None:
    # Guards the test above against silently matching nothing.
    source = (
        "import local_host\n"
        "import os, local_host.runtime\n"
        "from local_host import LocalHost\n"
        "from local_host.azurite import free_port\n"
        "def f() -> None:\n"
        "    import local_host.timers as timers\n"
    )
    assert host_imports(source, "<probe>") == [1, 2, 3, 4, 6]
    assert host_imports("import local_hosts\nfrom scheduler_core import host\nfrom . import local_host\n", "<p>") == []


def test_the_local_host_is_not_deployed() -> None:
    entries = [line.strip() for line in (ROOT / ".funcignore").read_text(encoding="utf-8").splitlines()]
    assert "local_host/" in entries
    assert (ROOT / HOST_PACKAGE / "__main__.py").is_file()
    assert list((ROOT / "scheduler_core" / "host").glob("*.py")) == []  # the old place of the host, not a copy


# ------------------------------------------------------------------------------------------------ layers

PACKAGE = "scheduler_core"


def module_name(relative: Path) -> str:
    """The dotted name of a module given by its path from the project root (a package by its ``__init__``)."""
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _dynamic_import(node: ast.Call) -> str | None:
    """The literal module name of ``importlib.import_module("x")``, ``import_module("x")`` or ``__import__("x")``."""
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    if name not in ("import_module", "__import__") or not node.args:
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def imported_modules(source: str, relative: Path) -> list[tuple[int, str]]:
    """Every module ``source`` (the module at ``relative``) imports, as ``(line, absolute dotted name)``, at
    any depth. ``from a import b`` names ``a`` and ``a.b`` (``b`` may be a module); relative imports are
    resolved against the module's package."""
    name = module_name(relative)
    package = name if relative.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename=str(relative))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            if base:
                found.append((node.lineno, base))
            found.extend((node.lineno, f"{base}.{alias.name}" if base else alias.name) for alias in node.names)
        elif isinstance(node, ast.Call) and (dynamic := _dynamic_import(node)) is not None:
            found.append((node.lineno, dynamic))
    return found


def names_any(module: str, packages: Iterable[str]) -> str | None:
    """The first of ``packages`` that ``module`` is or lies inside (``azure`` covers ``azure.core``, not ``azurex``)."""
    return next((package for package in packages if module == package or module.startswith(package + ".")), None)


@dataclass(frozen=True)
class Layer:
    """A rule: the product modules ``covers`` selects (by path from the root) import none of ``forbidden``."""

    name: str
    covers: Callable[[Path], bool]
    forbidden: tuple[str, ...]

    def violations(self, modules: Mapping[Path, str]) -> list[str]:
        """``path:line imports name`` for every forbidden import of a covered module."""
        return [
            f"{path}:{line} imports {imported}"
            for path, source in sorted(modules.items())
            if self.covers(path)
            for line, imported in imported_modules(source, path)
            if names_any(imported, self.forbidden)
        ]


def _inside(path: Path, *folders: str) -> bool:
    return any(path.parts[: len(Path(folder).parts)] == Path(folder).parts for folder in folders)


#: Only the adapters and the action senders speak to Azure through its SDKs.
AZURE_AT_THE_EDGES = Layer(
    "no Azure SDK outside the adapters and the senders",
    lambda path: _inside(path, PACKAGE) and not _inside(path, f"{PACKAGE}/adapters", f"{PACKAGE}/actions"),
    ("azure",),
)

CORE_FOLDERS = tuple(f"{PACKAGE}/{folder}" for folder in ("model", "storage", "recurrence", "definitions"))

#: The core is decided over, never wired: no HTTP client, no adapter, no API, no composition root.
CORE_STANDS_ALONE = Layer(
    "the core imports no HTTP client, adapter, API or composition root",
    lambda path: _inside(path, *CORE_FOLDERS) or path == Path(PACKAGE, "ports.py"),
    ("azure", "requests", f"{PACKAGE}.adapters", f"{PACKAGE}.api", f"{PACKAGE}.wiring"),
)


def product_modules() -> dict[Path, str]:
    """Every module of ``scheduler_core``, by its path from the project root."""
    return {path.relative_to(ROOT): path.read_text(encoding="utf-8") for path in sorted((ROOT / PACKAGE).rglob("*.py"))}


@pytest.mark.parametrize("layer", [AZURE_AT_THE_EDGES, CORE_STANDS_ALONE], ids=lambda layer: layer.name)
def test_the_layers_hold(layer: Layer) -> None:
    modules = product_modules()
    assert sum(1 for path in modules if layer.covers(path)) >= 10  # the rule selects real modules
    violations = layer.violations(modules)
    assert violations == [], f"{layer.name}: {violations}"


def test_the_layers_select_the_modules_they_name() -> None:
    modules = set(product_modules())
    edge = {Path(PACKAGE, "adapters", "azure", "tables.py"), Path(PACKAGE, "actions", "service_bus.py")}
    assert edge <= modules
    assert not any(AZURE_AT_THE_EDGES.covers(path) for path in edge)
    for path in (Path(PACKAGE, "service.py"), Path(PACKAGE, "pipeline", "dispatch.py"), Path(PACKAGE, "ports.py")):
        assert AZURE_AT_THE_EDGES.covers(path)
    core = [
        Path(PACKAGE, "ports.py"),
        Path(PACKAGE, "model", "job.py"),
        Path(PACKAGE, "storage", "keys.py"),
        Path(PACKAGE, "recurrence", "__init__.py"),
        Path(PACKAGE, "definitions", "__init__.py"),
    ]
    assert set(core) <= modules
    assert all(CORE_STANDS_ALONE.covers(path) for path in core)
    for path in (Path(PACKAGE, "wiring.py"), Path(PACKAGE, "adapters", "memory", "due.py"), Path("function_app.py")):
        assert not CORE_STANDS_ALONE.covers(path)
    assert not AZURE_AT_THE_EDGES.covers(Path("function_app.py"))
    assert not CORE_STANDS_ALONE.covers(Path(PACKAGE, "models.py"))  # a folder's name, not a prefix of a name


def test_the_import_finder_sees_every_spelling() -> None:
    # Guards the layer tests above against silently matching nothing.
    source = (
        "import azure\n"  # 1
        "import os, azure.data.tables as tables\n"  # 2
        "from azure.core.exceptions import AzureError\n"  # 3
        "from typing import TYPE_CHECKING\n"  # 4
        "if TYPE_CHECKING:\n"  # 5
        "    from azure.data.tables import TableClient\n"  # 6
        "def f() -> None:\n"  # 7
        "    import azure.identity\n"  # 8
        "    importlib.import_module('azure.servicebus')\n"  # 9
        "    __import__('azure')\n"  # 10
        "from .. import wiring\n"  # 11
        "from ..adapters.memory import memory_storage\n"  # 12
        "from . import keys\n"  # 13
        "import azurelib, requests_toolbelt\n"  # 14
        "x = 'import azure'\n"  # 15
    )
    found = imported_modules(source, Path(PACKAGE, "storage", "probe.py"))
    azure = [line for line, name in found if names_any(name, ("azure",))]
    assert sorted(set(azure)) == [1, 2, 3, 6, 8, 9, 10]
    assert (11, "scheduler_core.wiring") in found
    assert (12, "scheduler_core.adapters.memory") in found
    assert (13, "scheduler_core.storage.keys") in found
    in_a_package = imported_modules("from .. import wiring\n", Path(PACKAGE, "api", "__init__.py"))
    assert (1, "scheduler_core.wiring") in in_a_package
    assert not any(names_any(name, ("azure", "requests")) for line, name in found if line in (14, 15))
    assert names_any("scheduler_core.api_keys", (f"{PACKAGE}.api",)) is None


@pytest.mark.parametrize(
    ("layer", "path", "line"),
    [
        (AZURE_AT_THE_EDGES, f"{PACKAGE}/service.py", "import azure.core"),
        (AZURE_AT_THE_EDGES, f"{PACKAGE}/pipeline/dispatch.py", "from azure.data.tables import TableClient"),
        (AZURE_AT_THE_EDGES, f"{PACKAGE}/wiring.py", "def f():\n    from azure.identity import X"),
        *(
            (CORE_STANDS_ALONE, path, line)
            for path in (*(f"{folder}/probe.py" for folder in CORE_FOLDERS), f"{PACKAGE}/ports.py")
            for line in (
                "import requests",
                "from scheduler_core.adapters.azure import connect",
                "from scheduler_core import api",
                "import scheduler_core.wiring",
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from azure.core import X",
            )
        ),
    ],
)
def test_each_layer_rule_can_fail(layer: Layer, path: str, line: str) -> None:
    assert layer.violations({Path(path): line + "\n"}) != []
    outside = {Path(PACKAGE, "adapters", "azure", "probe.py"): line, Path(PACKAGE, "actions", "probe.py"): line}
    assert layer.violations(outside) == []
