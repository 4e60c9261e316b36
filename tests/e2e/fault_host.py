"""A separate host process for the fault tests: the real function app on the local host (timer and queue
triggers), with the claim lease given on the command line, until it is killed.

    python -m tests.e2e.fault_host <lease seconds>

It logs at INFO (UTC timestamps with milliseconds, thread names) on its standard error, which
:func:`spawn` writes to a file when given one, so that a failing test can show what the host did.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import settings, wiring

ROOT = Path(__file__).resolve().parents[2]


def _configure_logging() -> None:
    logging.Formatter.converter = time.gmtime
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s.%(msecs)03dZ %(levelname)s %(threadName)s %(name)s: %(message)s",
        datefmt="%Y-%m-%dT%H:%M:%S",
    )
    for noisy in ("azure", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main(lease_seconds: float) -> None:
    _configure_logging()
    import function_app

    wiring.install(wiring.build(settings.load(), claim_lease=timedelta(seconds=lease_seconds)))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"timer", "queue"})):
        print("ready", flush=True)
        stop.wait()


def spawn(
    lease_seconds: float, environ: Mapping[str, str] | None = None, log: Path | None = None
) -> subprocess.Popen[str]:
    """Start a host process (environment: this one's, or ``environ``) and wait until it serves; its log
    goes to the file ``log`` when given (see :func:`log_tail`), else to this process's standard error."""
    with contextlib.ExitStack() as files:
        stderr = files.enter_context(log.open("a", encoding="utf-8")) if log is not None else None
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.fault_host", str(lease_seconds)],
            cwd=ROOT,
            env=dict(os.environ if environ is None else environ),
            stdout=subprocess.PIPE,
            stderr=stderr,
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
    process.wait(timeout=10)
    tail = f"\n{log_tail(log)}" if log is not None else ""
    raise AssertionError(f"the host process did not start (exit code {process.poll()}){tail}")


def log_tail(log: Path, lines: int = 150, keep: Callable[[str], bool] | None = None) -> str:
    """The last ``lines`` lines of a host's log file (those ``keep`` accepts, when given), for a failure
    message; the whole log stays in the file."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        return f"(no host log at {log}: {error})"
    kept = [line for line in text.splitlines() if keep is None or keep(line)]
    return f"host log {log} (last {min(lines, len(kept))} of {len(kept)} lines):\n" + "\n".join(kept[-lines:])


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
