"""Cold start: the Functions worker imports ``function_app.py`` to index the app, on every cold start. That
import loads the Functions library and the app's settings and trigger list, nothing of the API, the pipeline,
the composition root or the SDKs they use; those come with the first invocation. Checked in a fresh
interpreter (this one has imported them). The time it takes is measured in docs/operations.md, not here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: What the first invocation imports and indexing must not (about 0.28 s of imports, measured).
DEFERRED = (
    "scheduler_core.api",
    "scheduler_core.wiring",
    "scheduler_core.pipeline",
    "scheduler_core.service",
    "scheduler_core.actions",
    "scheduler_core.adapters",
    "scheduler_core.definitions",
    "requests",
    "cryptography",
    "jwt",
    "azure.data",
    "azure.storage",
    "azure.servicebus",
    "azure.identity",
)

PROBE = """
import json, sys
import {module}
print(json.dumps(sorted(sys.modules)))
"""


def loaded_after(module: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout))


def deferred_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == d or m.startswith(d + ".") for d in DEFERRED))


def test_indexing_the_function_app_imports_nothing_the_first_invocation_needs() -> None:
    assert deferred_in(loaded_after("function_app")) == []


@pytest.mark.parametrize("module", ["scheduler_core.wiring", "scheduler_core.api"])
def test_the_probe_sees_what_the_first_invocation_imports(module: str) -> None:
    # Guards the test above against a probe that finds nothing whatever is imported.
    assert module in deferred_in(loaded_after(module))
