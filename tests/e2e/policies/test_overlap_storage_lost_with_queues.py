"""overlapPolicy BufferOne when storage is lost as the occurrence ahead ends, the Queue service with the Table
service: the waiting occurrence still runs, exactly once, after the outage; the job completes with one history
entry per occurrence and no call twice.

The scenario of ``test_overlap_storage_lost.py`` (a real host process reaching Azurite only through
fault-injecting TCP proxies, the first occurrence's call held until the second one waits for it, then the
storage endpoints cut for 10 s and partitioned for 10 s, the held call answered at the start of the cut), with
both proxies failing instead of the tables' alone; a module of its own so that the two scenarios, each waiting
a minute for its second occurrence, can run side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from local_host.azurite import Azurite
from scheduler_core.settings import Settings
from tests.e2e.policies.test_overlap_storage_lost import lose_storage_as_the_one_ahead_ends
from tests.support.http_target import HttpTarget

pytestmark = [pytest.mark.azurite, pytest.mark.e2e, pytest.mark.long(90)]


def test_the_waiting_occurrence_runs_once_when_tables_and_queues_are_lost_as_the_one_ahead_ends(
    storage_env: Settings, azurite: Azurite, target: HttpTarget, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lose_storage_as_the_one_ahead_ends("tables and queues", storage_env, azurite, target, monkeypatch, tmp_path)
