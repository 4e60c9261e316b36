"""Run in a local host's worker process before it serves (``LocalHost(worker_init=...)``): what the fault tests
install in the app's process, as ``tests/e2e/fault_host.py`` does for a host process of its own."""

from __future__ import annotations

import os
from datetime import timedelta

from scheduler_core import settings, wiring

#: The setting the worker process reads the claim lease from (seconds), set by the test before the host starts.
LEASE_SETTING = "TEST_CLAIM_LEASE_SECONDS"


def short_claim_lease() -> None:
    """The app's services with the claim lease of :data:`LEASE_SETTING`, so a lost attempt is taken over in
    seconds, not minutes."""
    lease = timedelta(seconds=float(os.environ[LEASE_SETTING]))
    wiring.install(wiring.build(settings.load(), claim_lease=lease))
