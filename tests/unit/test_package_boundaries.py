"""The deployed code does not depend on the local host, and the local host is not deployed.

``local_host`` (``python -m local_host``) is a development tool that plays the Functions host. The
deployed package is ``function_app.py`` plus ``scheduler_core``; ``.funcignore`` keeps ``local_host/`` out
of it, so an import of ``local_host`` from deployed code would fail in Azure.
"""

from __future__ import annotations

import ast
from pathlib import Path

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
