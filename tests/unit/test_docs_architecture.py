"""docs/architecture.md names the structure that is on disk: every package and top-level module of
``scheduler_core`` has a row in its module table, the packages it lists module by module name each of their
modules in that row, every module a row names exists, and every function ``function_app.py`` declares is
named on the page.

Only modules git tracks count (a module being written in a working tree is not yet part of the structure);
without git, every module on disk does. A new module needs its mention in docs/architecture.md."""

from __future__ import annotations

import ast
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "scheduler_core"
DOC = ROOT / "docs" / "architecture.md"

#: The packages whose row lists each of their modules (the others are described as a whole).
LISTED_MODULE_BY_MODULE = ("model", "api", "service", "definitions", "pipeline", "actions", "auth", "adapters/azure")


def module_rows() -> dict[str, str]:
    """The module table of the ``scheduler_core`` section: its first cell (without backticks) to the row."""
    section = DOC.read_text(encoding="utf-8").split("## `scheduler_core`", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        match = re.match(r"\| `([^`]+)` \|(.*)\|$", line)
        if match:
            rows[match[1]] = match[2]
    return rows


@cache
def tracked() -> frozenset[Path] | None:
    """The files of ``scheduler_core`` git tracks (None: no git here, so every file counts)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "scheduler_core"], cwd=ROOT, capture_output=True, check=True, timeout=30
        ).stdout.decode()
    except (OSError, subprocess.SubprocessError):
        return None
    files = frozenset(ROOT / name for name in listed.split("\0") if name)
    return files or None


def counts(path: Path) -> bool:
    files = tracked()
    return files is None or path in files or (path / "__init__.py") in files


def modules_of(package: Path) -> list[str]:
    return sorted(p.name for p in package.glob("*.py") if p.name not in ("__init__.py", "__main__.py") and counts(p))


def test_the_table_is_found() -> None:
    rows = module_rows()
    assert len(rows) >= 15, rows.keys()
    assert "queue_router.py" in rows and "auth/" in rows


def test_every_package_and_top_level_module_has_a_row() -> None:
    rows = module_rows()
    packages = sorted(f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file() and counts(p))
    missing = [name for name in [*packages, *modules_of(PACKAGE)] if name not in rows]
    assert missing == [], f"docs/architecture.md has no row for {missing}"


def test_every_row_names_something_that_exists() -> None:
    gone = [name for name in module_rows() if not (PACKAGE / name.rstrip("/")).exists()]
    assert gone == [], f"docs/architecture.md describes modules that are not in scheduler_core: {gone}"


@pytest.mark.parametrize("package", LISTED_MODULE_BY_MODULE)
def test_a_package_listed_module_by_module_names_each_module(package: str) -> None:
    rows = module_rows()
    top, _, sub = package.partition("/")
    row = rows[f"{top}/"]
    if sub:  # a subpackage's modules are named after its name within the row (`azure/`: `tables.py`, ...)
        assert f"`{sub}/`" in row, f"the {top}/ row does not describe {package}/"
        row = row.split(f"`{sub}/`", 1)[1]
    unnamed = [name for name in modules_of(PACKAGE / package) if f"`{name}`" not in row]
    assert unnamed == [], f"the {top}/ row of docs/architecture.md does not name {package}/{unnamed}"


def declared_functions() -> list[str]:
    """The names in ``@app.function_name("...")`` of ``function_app.py`` (literal ones)."""
    tree = ast.parse((ROOT / "function_app.py").read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "function_name"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.append(node.args[0].value)
    return names


def test_every_declared_function_is_on_the_page() -> None:
    names = declared_functions()
    assert {"management_api", "dispatch_tick", "scan_shard", "cleanup"} <= set(names)
    overview = DOC.read_text(encoding="utf-8").split("## Layers and ports", 1)[0]
    assert [name for name in names if name not in overview] == []
    assert "execute_occurrence" in overview  # declared once per execution queue, by a loop
