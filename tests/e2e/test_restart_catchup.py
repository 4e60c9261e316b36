"""Restart catch-up: a host that was down when the dispatch timer should have ticked makes the tick up at
start-up (as the Functions host does for a timer with ``use_monitor``), so a job due just after the restart
fires at its second, not at the next minute's tick.

Real processes: each host is ``python -m local_host run`` against the session's Azurite; the
first is killed with SIGKILL (no clean shutdown), the second started from scratch.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests

from scheduler_core import auth
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.settings import Settings
from tests.e2e.host_process import HostProcess
from tests.support.http_target import http_target
from tests.support.jobs import http_action, job_body

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
JC = "subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"
LOOKAHEAD = 15  # seconds: a scan enqueues what is due within this window
#: The timer's lock: a killed host's lease (host.json listenerLockPeriod, 15 s) runs out before the second host
#: starts, so that it takes the lock at start-up (a lease still held would make it wait a recovery poll).
LEASE_OUT = 16
#: The tick comes this long after the first host is started: time enough for it to start, take a collection
#: and a job, and be killed before the tick (its lease runs out about when the tick comes).
TICK_AHEAD = LEASE_OUT + 2
#: The second host is started this long before the job is due: time enough for it to start and make the
#: missed tick up, which dispatches the job (a scan enqueues what is due within LOOKAHEAD).
RESTART_AHEAD = 8
#: The first host is killed within this many seconds of the job's due time being chosen (one PUT).
KILL_ALLOWANCE = 3


@pytest.fixture
def host_env(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, str], str]:
    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    monkeypatch.setenv("SCHEDULER_LOOKAHEAD_SECONDS", str(LOOKAHEAD))
    provision(storage_env)
    return dict(os.environ), key


def test_a_tick_missed_while_the_host_was_down_is_made_up_at_start_up_so_a_job_fires_on_time(
    host_env: tuple[dict[str, str], str], tmp_path: Path
) -> None:
    env, key = host_env
    # One tick a minute, at a second chosen so that the first host is down when it comes round: without
    # the catch-up, the job below would wait for the tick a minute later and fire ~50 s late.
    tick = (datetime.now(UTC) + timedelta(seconds=TICK_AHEAD)).replace(microsecond=0)
    env["SCHEDULER_DISPATCH_SCHEDULE"] = f"{tick.second} * * * * *"
    state = tmp_path / "state"
    headers = {"x-functions-key": key}
    first = HostProcess(env, state, tmp_path / "first.log")
    second: HostProcess | None = None
    try:
        first.wait_ready(key)
        url = f"{first.base_url}/{JC}?api-version=2016-03-01"
        assert requests.put(url, json={"location": "westus"}, headers=headers, timeout=10).status_code == 201
        with http_target() as target:
            # The second host starts once the tick has passed and the first host's lease has run out (it is
            # killed right after this write: within KILL_ALLOWANCE s), RESTART_AHEAD s before the job is due.
            restart = max(
                tick + timedelta(seconds=1), datetime.now(UTC) + timedelta(seconds=LEASE_OUT + KILL_ALLOWANCE)
            )
            due = (restart + timedelta(seconds=RESTART_AHEAD + 1)).replace(microsecond=0)
            assert due - datetime.now(UTC) > timedelta(seconds=LOOKAHEAD)  # beyond the lookahead: not dispatched
            assert due < tick + timedelta(seconds=45)  # the tick after the missed one would be ~45 s late or more
            job = job_body(due, http_action(target.base_url, method="GET", body=None))
            response = requests.put(
                f"{first.base_url}/{JC}/jobs/after-restart?api-version=2016-03-01",
                json=job,
                headers=headers,
                timeout=10,
            )
            assert response.status_code == 201, response.text
            first.kill()
            killed = datetime.now(UTC)
            assert killed < tick and killed + timedelta(seconds=LEASE_OUT) <= due - timedelta(seconds=RESTART_AHEAD), (
                "the first host took too long to start; the scenario needs it down at the tick, its lease run out"
            )
            # Down across the tick; back up a few seconds before the job is due.
            time.sleep(max(0.0, (due - timedelta(seconds=RESTART_AHEAD) - datetime.now(UTC)).total_seconds()))
            second = HostProcess(env, state, tmp_path / "second.log")
            try:
                [received] = target.wait_for(1, timeout=(due - datetime.now(UTC)).total_seconds() + 10)
            except AssertionError:
                raise AssertionError("the job did not fire after the restart:\n" + second.output()) from None
            lateness = received.at - due.timestamp()
            assert -0.05 <= lateness < 3.0, f"fired {lateness:.2f} s after its due second:\n{second.output()}"
            assert "function=dispatch_tick trigger=timer" in second.output()
            assert "past_due=True" in second.output()
    finally:
        first.stop()
        if second is not None:
            second.stop()
