"""``jobs rerun COLLECTION/JOB HISTORY_ID`` (``POST .../jobs/{job}/history/{historyId}/rerun``, api-version
2026-12-01-preview) against the real function app on the local host (Azurite, HTTP and queue triggers, so the
replay executes), a real HTTP target, and a Contributor's key and a Reader's: a failed occurrence found in
``jobs history`` runs again with its own expected time and a new execution id, recorded with trigger
``Replay``; ``--wait`` prints the replay's entry and exits as ``jobs run --wait`` does; the service's refusals
(an unknown entry or job, a Reader, a classic api-version) are printed as every ARM error is, with their exit
statuses."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.cli.conftest import RG, ROOT, SUB, Api, Cli, _cli
from tests.support.http_target import HttpTarget, http_target

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

EXECUTION_ID = re.compile(r"^[0-9a-f]{32}$")
EXECUTION_HEADER = "x-ms-scheduler-execution-id"
EXPECTED_HEADER = "x-ms-scheduler-expected-execution-time"


@pytest.fixture
def replay_cli(
    storage_env: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[tuple[Cli, str]]:
    """The command line (a Contributor's key) against the local host that executes jobs, and a Reader's key of
    the same host."""
    import function_app

    key, reader = auth.generate_key(), auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", f"{auth.hash_entry(key)};{auth.hash_entry(reader, role=auth.Role.READER)}")
    wiring.reset()
    provision(storage_env)
    enable = frozenset({"http", "queue"})
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=enable) as host:
        yield _cli(Api(host.base_url, key, storage_env), monkeypatch, capsys), reader


def failed_entry(cli: Cli, tmp_path: Path, target: HttpTarget) -> dict[str, Any]:
    """Job ``jc1/flaky`` (hourly from tomorrow, an Http call of ``target`` without retries) run now while the
    target answers 500: its one history entry, Failed."""
    assert cli("collections", "create", "jc1", "-l", "westus").code == 0
    start = (datetime.now(UTC) + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    properties = {
        "startTime": format_instant(start),
        "action": {
            "type": "Http",
            "request": {"uri": f"{target.base_url}/flaky", "method": "GET"},
            "retryPolicy": {"retryType": "None"},
        },
        "recurrence": {"frequency": "Hour", "interval": 1},
    }
    path = tmp_path / "flaky.json"
    path.write_text(json.dumps({"properties": properties}), encoding="utf-8")
    assert cli("jobs", "create", "jc1/flaky", "-f", str(path)).code == 0
    ran = cli("jobs", "run", "jc1/flaky", "--wait", "--wait-timeout", "60", "-o", "json")
    assert ran.code == 1, ran.err
    entry: dict[str, Any] = ran.json()
    assert entry["properties"]["status"] == "Failed"
    return entry


def history(cli: Cli, count: int, timeout: float = 60) -> list[dict[str, Any]]:
    """``jobs history jc1/flaky -o json`` once it lists at least ``count`` entries."""
    deadline = time.monotonic() + timeout
    while True:
        rows: list[dict[str, Any]] = cli("jobs", "history", "jc1/flaky", "-o", "json").json()
        if len(rows) >= count or time.monotonic() > deadline:
            assert len(rows) >= count, f"fewer than {count} history entries after {timeout} s: {rows}"
            return rows
        time.sleep(0.5)


def test_a_failed_occurrence_runs_again_and_wait_prints_the_replays_entry(
    replay_cli: tuple[Cli, str], tmp_path: Path
) -> None:
    cli, _ = replay_cli
    with http_target([500, 200]) as target:  # the run fails; the first two replays succeed
        failed = failed_entry(cli, tmp_path, target)
        failed_id = failed["name"]
        occurrence = failed["properties"]["expectedExecutionTime"]

        # The history table shows each entry's trigger and id: the HISTORY_ID to give.
        table = cli("jobs", "history", "jc1/flaky")
        assert table.code == 0, table.err
        header, row = table.out.splitlines()
        assert header.split()[5:8] == ["TRIGGER", "SECONDS", "ID"]
        assert row.split()[1] == "Failed" and row.split()[5] == "Manual" and failed_id in row.split()

        requested = cli("jobs", "rerun", "jc1/flaky", failed_id)
        assert requested.code == 0, requested.err
        fields = dict(line.split(":", 1) for line in requested.out.splitlines())
        assert fields["rerun requested"].strip() == f"job jc1/flaky, history entry {failed_id}"
        assert fields["scheduled time"].strip() == occurrence
        first_replay = fields["execution id"].strip()
        assert EXECUTION_ID.match(first_replay) and first_replay != failed_id
        _, call = target.wait_for(2, timeout=30)
        assert call.headers[EXECUTION_HEADER] == first_replay
        assert call.headers[EXPECTED_HEADER] == occurrence

        waited = cli("jobs", "rerun", "jc1/flaky", failed_id.upper(), "--wait", "--wait-timeout", "60", "-o", "json")
        assert waited.code == 0, waited.err
        second = waited.json()  # the replay's own history entry, as `jobs run --wait -o json` prints one
        assert second["name"] not in (failed_id, first_replay)
        assert (second["properties"]["status"], second["properties"]["trigger"]) == ("Completed", "Replay")
        assert second["properties"]["expectedExecutionTime"] == occurrence
        assert target.received[2].headers[EXECUTION_HEADER] == second["name"]

        target.answer([500])
        failing = cli("jobs", "rerun", "jc1/flaky", failed_id, "--wait", "--wait-timeout", "60")
        assert failing.code == 1, failing.err
        header, row = failing.out.splitlines()
        assert header.split()[:3] == ["START", "STATUS", "ACTION"]
        assert row.split()[1:3] == ["Failed", "MainAction"] and row.split()[5] == "Replay"
        assert len(target.received) == 4

    rows = history(cli, 4)
    by_id = {row["name"]: row["properties"] for row in rows}
    assert by_id[failed_id]["trigger"] == "Manual"
    replays = [props for name, props in by_id.items() if name != failed_id]
    assert [props["trigger"] for props in replays] == ["Replay"] * 3
    assert {props["expectedExecutionTime"] for props in replays} == {occurrence}
    assert sorted(props["status"] for props in replays) == ["Completed", "Completed", "Failed"]
    assert by_id[first_replay]["status"] == "Completed"


def test_refusals_are_printed_as_arm_errors_with_their_exit_status(replay_cli: tuple[Cli, str], tmp_path: Path) -> None:
    cli, reader_key = replay_cli
    with http_target([500]) as target:
        failed_id = failed_entry(cli, tmp_path, target)["name"]

        unknown = "0123456789abcdef0123456789abcdef"
        missing = cli("jobs", "rerun", "jc1/flaky", unknown)
        assert missing.code == 5 and missing.out == ""
        assert missing.err == (
            f"error: historyId: job 'flaky' has no history entry '{unknown}' (ResourceNotFound, HTTP 404)\n"
        )
        no_job = cli("jobs", "rerun", "jc1/nope", failed_id)
        assert no_job.code == 5
        assert no_job.err == "error: job 'nope' was not found in job collection 'jc1' (ResourceNotFound, HTTP 404)\n"

        as_reader = cli("jobs", "rerun", "jc1/flaky", failed_id, "--api-key", reader_key, "-o", "json")
        assert as_reader.code == 4 and as_reader.out == ""
        assert as_reader.err.startswith("error: ") and as_reader.err.endswith("(AuthorizationFailed, HTTP 403)\n")
        assert "'Microsoft.Scheduler/jobCollections/jobs/jobHistories/rerun/action'" in as_reader.err
        # The Reader may read the entry it may not replay.
        read = cli("jobs", "history", "jc1/flaky", "--api-key", reader_key, "-o", "json")
        assert read.code == 0 and [row["name"] for row in read.json()] == [failed_id]

        classic = cli("jobs", "rerun", "jc1/flaky", failed_id, "--api-version", "2016-03-01")
        assert classic.code == 1 and classic.out == ""
        assert classic.err.startswith(
            "error: api-version: re-running a history entry needs api-version 2026-12-01-preview"
        )
        assert classic.err.endswith("(BadRequest, HTTP 400)\n")
        blank = cli("jobs", "rerun", "jc1/flaky", " ")
        assert blank.code == 2
        assert blank.err == "error: no history entry: give HISTORY_ID (the ID column of `jobs history`)\n"
        assert len(target.received) == 1  # nothing of the above ran the occurrence again

    # The path names the entry as one encoded segment; an answer that is not a replay's is an error.
    with http_target([202]) as fake:
        fake.answer([202], headers={"Content-Type": "application/json"}, body=b'{"count": 1}')
        odd = cli("jobs", "rerun", "jc1/a b", "id/with?odd", "--endpoint", fake.base_url)
        [request] = fake.received
    assert odd.code == 1
    assert odd.err == "error: HTTP 202: the answer names no scheduledTime and executionId of a replay\n"
    assert (request.method, request.path) == (
        "POST",
        f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/jc1/jobs/a%20b"
        "/history/id%2Fwith%3Fodd/rerun?api-version=2026-12-01-preview",
    )
