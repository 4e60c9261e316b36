"""Cold start: importing the function app imports no telemetry package. The OpenTelemetry API is imported on
the first instrument or span, the SDK and the Azure Monitor exporter (about 0.4 s of imports) only when the
exporter is configured on the first invocation. Checked in a fresh interpreter (this one has imported them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TELEMETRY_PACKAGES = ("opentelemetry", "azure.monitor", "psutil")

PROBE = """
import json, sys
import {module}
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry" or m.startswith({prefixes!r}))))
"""


def imported_by(module: str) -> list[str]:
    """The telemetry modules a fresh interpreter has loaded after ``import module``."""
    code = PROBE.format(module=module, prefixes=TELEMETRY_PACKAGES)
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_importing_the_function_app_imports_no_telemetry_package() -> None:
    assert imported_by("function_app") == []


def test_importing_the_azure_monitor_adapter_imports_neither_the_exporter_nor_the_sdk() -> None:
    assert imported_by("scheduler_core.adapters.azure.monitor") == []


def test_the_probe_sees_an_import() -> None:
    # Guards the tests above against a probe that finds nothing whatever is imported.
    assert "azure.monitor.opentelemetry.exporter" in imported_by("azure.monitor.opentelemetry.exporter")
    assert "opentelemetry.trace" in imported_by("opentelemetry.trace")
