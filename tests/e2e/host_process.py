"""A real local host process (``python -m local_host run``) for tests that kill or measure it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

from local_host.azurite import free_port

ROOT = Path(__file__).resolve().parents[2]
STARTUP_ALLOWANCE = 20.0  # seconds a host process may take to answer after it is started


class HostProcess:
    """``python -m local_host run`` in a child process, with its output kept for failures."""

    def __init__(self, env: dict[str, str], state_dir: Path, log: Path, *options: str) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._log = log.open("w")
        command = [sys.executable, "-m", "local_host", "run", "--port", str(self.port)]
        command += ["--state-dir", str(state_dir), *options]
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        self.log = log

    def wait_ready(self, key: str) -> None:
        deadline = time.monotonic() + STARTUP_ALLOWANCE
        url = f"{self.base_url}/subscriptions/s/providers/Microsoft.Scheduler/jobCollections?api-version=2016-03-01"
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.output()
            try:
                requests.get(url, headers={"x-functions-key": key}, timeout=2)
                return
            except (requests.ConnectionError, requests.Timeout):  # not listening yet, or still starting up
                time.sleep(0.1)
        raise AssertionError("the host did not answer in time:\n" + self.output())

    def output(self) -> str:
        self._log.flush()
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self._log.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if not self._log.closed:
            self._log.close()
