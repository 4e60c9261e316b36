"""A separate host process for the fault tests: the real function app on the local host (timer and queue
triggers), with the claim lease given on the command line, until it is killed.

    python -m tests.e2e.fault_host <lease seconds>
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import settings, wiring

ROOT = Path(__file__).resolve().parents[2]


def main(lease_seconds: float) -> None:
    import function_app

    wiring.install(wiring.build(settings.load(), claim_lease=timedelta(seconds=lease_seconds)))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"timer", "queue"})):
        print("ready", flush=True)
        stop.wait()


def spawn(lease_seconds: float, environ: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    """Start a host process (environment: this one's, or ``environ``) and wait until it serves."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.fault_host", str(lease_seconds)],
        cwd=ROOT,
        env=dict(os.environ if environ is None else environ),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.strip() == "ready":
            return process
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError(f"the host process did not start (exit code {process.poll()})")


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


if __name__ == "__main__":
    main(float(sys.argv[1]))
