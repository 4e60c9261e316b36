"""``python -m scheduler_core verify`` against the real function app on the local host with every trigger
(HTTP, timers, queues) on Azurite, in real time: the jobs GET the host's own ``/health``; and how a
scenario is measured from history entries (:func:`scheduler_core.cli.verify.measure`, no host)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.cli import verify
from scheduler_core.cli.client import SchedulerClient, Unreachable
from scheduler_core.cli.verify import EXIT_NOT_MET, PlannedJob, measure, percentile
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.cli.conftest import RG, ROOT, Api, Cli, _cli


@pytest.fixture
def live_api(storage_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    """The local host serving the real function app with all its triggers: HTTP, timers (the dispatch tick
    runs on startup and every minute) and queues."""
    import function_app

    key = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
    wiring.reset()
    provision(storage_env)
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port()) as host:
        yield Api(host.base_url, key, storage_env)


@pytest.fixture
def live_cli(live_api: Api, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return _cli(live_api, monkeypatch, capsys)


def table(text: str) -> dict[str, dict[str, str]]:
    """The rows of ``verify``'s table by scenario, each cell under its header (columns are 2+ spaces apart)."""
    lines = [line for line in text.splitlines() if line.strip()]
    headers = re.split(r"\s{2,}", lines[0].strip())
    rows: dict[str, dict[str, str]] = {}
    for line in lines[1:]:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) == len(headers):
            rows[cells[0]] = dict(zip(headers, cells, strict=True))
    return rows


def leftovers(cli: Cli) -> list[str]:
    """The names of the verify collections in the test's resource group."""
    listed = cli("collections", "list", "-g", RG, "-o", "json")
    assert listed.code == 0, listed.err
    return [c["name"] for c in listed.json() if str(c["name"]).startswith("verify-")]


@pytest.mark.azurite
@pytest.mark.e2e
def test_verify_meets_its_bounds_and_leaves_nothing(live_cli: Cli) -> None:
    ran = live_cli("verify", "--one-shot", "3", "--idle", "2", "--burst", "10", "--lead", "3", "--deadline", "30")
    assert ran.code == 0, ran.out + ran.err
    rows = table(ran.out)
    assert list(rows) == ["one-shot", "idle", "burst"], ran.out
    expected = {"one-shot": 3, "idle": 1, "burst": 10}
    for name, row in rows.items():
        assert row["OCCURRENCES"] == row["RAN"] == str(expected[name]), ran.out
        assert (row["DUPLICATES"], row["MISSES"], row["FAILED"], row["RESULT"]) == ("0", "0", "0", "met"), ran.out
        p50, p99, late_max = (float(v) for v in row["START LATE S P50 / P99 / MAX"].split(" / "))
        assert 0 <= p50 <= p99 <= late_max <= float(row["BOUND S"]), ran.out
    assert f"jobs call {live_cli.api.base_url}/health" in ran.err
    assert re.search(r"deleted job collection verify-[0-9a-f]{8} with its jobs", ran.err), ran.err
    assert "all 3 scenario(s) met their bounds" in ran.err
    assert leftovers(live_cli) == []


@pytest.mark.azurite
@pytest.mark.e2e
def test_verify_exits_non_zero_when_a_bound_is_not_met_and_still_cleans_up(live_cli: Cli) -> None:
    ran = live_cli(
        "verify", "--one-shot", "2", "--idle", "0", "--burst", "0", "--lead", "2", "--max-late", "0", "-o", "json"
    )
    assert ran.code == EXIT_NOT_MET, ran.out + ran.err
    report = ran.json()
    [scenario] = report["scenarios"]
    assert (scenario["name"], scenario["ran"], scenario["misses"], scenario["duplicates"]) == ("one-shot", 2, 0, 0)
    assert scenario["passed"] is False and report["passed"] is False and report["removed"] is True
    assert any("above the bound 0 s (--max-late)" in problem for problem in scenario["problems"])
    assert "1 of 1 scenario(s) did not meet their bounds: one-shot" in ran.err
    assert leftovers(live_cli) == []


@pytest.mark.azurite
@pytest.mark.e2e
def test_verify_interrupted_still_deletes_its_collection(live_cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt(instant: datetime) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(verify, "_sleep_until", interrupt)  # Ctrl-C while waiting for the first job's second
    ran = live_cli("verify", "--one-shot", "1", "--idle", "0", "--burst", "0", "--lead", "2")
    assert ran.code == 130, ran.out + ran.err
    assert "deleted job collection verify-" in ran.err
    assert leftovers(live_cli) == []


@pytest.mark.azurite
@pytest.mark.e2e
def test_verify_says_what_to_delete_by_hand_when_its_delete_fails(
    live_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_delete = SchedulerClient.delete_collection
    failures = [Unreachable("cannot reach the endpoint: connection reset")]

    def flaky_delete(self: SchedulerClient, group: str, collection: str) -> None:
        if failures:
            raise failures.pop()
        real_delete(self, group, collection)

    monkeypatch.setattr(SchedulerClient, "delete_collection", flaky_delete)
    ran = live_cli("verify", "--one-shot", "1", "--idle", "0", "--burst", "0", "--lead", "1", "-o", "json")
    assert ran.code == 3, ran.out + ran.err  # the delete's failure: no answer
    assert ran.json()["removed"] is False and ran.json()["passed"] is True
    [left] = leftovers(live_cli)
    assert (
        f"error: could not delete job collection {left} (resource group {RG}): cannot reach the endpoint: "
        f"connection reset. Delete it by hand: python -m scheduler_core collections delete {left} -g {RG} --yes"
    ) in ran.err
    assert live_cli("collections", "delete", left, "-g", RG, "--yes").code == 0
    assert leftovers(live_cli) == []


def test_verify_refuses_an_empty_or_oversized_run(capsys: pytest.CaptureFixture[str]) -> None:
    from scheduler_core.cli import main

    assert main(["verify", "--one-shot", "0", "--idle", "0", "--burst", "0", "--subscription", "s"]) == 2
    assert "every scenario is switched off" in capsys.readouterr().err
    assert main(["verify", "--one-shot", "1000", "--burst", "1", "--subscription", "s"]) == 2
    assert "a P20Premium collection holds at most 1000" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ measuring, no host

DUE = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)


def entry(due: datetime, start: float, end: float, status: str = "Completed", retry: int = 0) -> dict[str, Any]:
    return {
        "properties": {
            "actionName": "MainAction",
            "status": status,
            "retryCount": retry,
            "expectedExecutionTime": format_instant(due),
            "startTime": format_instant(due + timedelta(seconds=start)),
            "endTime": format_instant(due + timedelta(seconds=end)),
        }
    }


def test_measure_counts_lateness_duplicates_misses_failures_and_strays() -> None:
    jobs = [PlannedJob(f"j{i}", "burst", (DUE,), 5.0) for i in range(4)]
    recurring = PlannedJob("r", "recurring", (DUE, DUE + timedelta(minutes=1)), 4.0)
    histories = {
        "j0": [entry(DUE, 0.25, 0.5)],
        "j1": [entry(DUE, 1.5, 2.0), entry(DUE, 0.5, 0.75)],  # the same attempt twice: one duplicate
        "j2": [entry(DUE, 0.125, 0.25, status="Failed")],
        # j3: nothing (a miss)
        "r": [entry(DUE, 0.0625, 0.125), entry(DUE + timedelta(seconds=30), 0, 0)],  # one stray entry
    }
    result = measure("burst", [*jobs, recurring], histories, bound=1.0, bound_option="--max-late-burst")
    assert (result.jobs, result.occurrences, result.ran) == (5, 6, 4)
    assert (result.duplicates, result.misses, result.failed, result.unexpected) == (1, 2, 1, 1)
    assert (result.start.p50, result.start.max) == (0.125, 0.5)  # j1 counts its earliest entry
    assert result.done.max == 0.75 and result.lead == 4.0
    assert not result.passed
    assert result.problems == [
        "2 occurrence(s) with no history entry within the deadline (misses)",
        "1 duplicate execution(s)",
        "1 occurrence(s) whose call failed",
        "1 history entry(ies) of an instant that is no occurrence",
    ]


def test_measure_passes_within_the_bound_and_fails_above_it_or_when_created_late() -> None:
    jobs = [PlannedJob("a", "one-shot", (DUE,), 3.0), PlannedJob("b", "one-shot", (DUE + timedelta(seconds=1),), 2.0)]
    histories = {"a": [entry(DUE, 0.5, 0.75)], "b": [entry(DUE + timedelta(seconds=1), 0.25, 0.5, retry=0)]}
    assert measure("one-shot", jobs, histories, 0.5, "--max-late").passed
    above = measure("one-shot", jobs, histories, 0.25, "--max-late")
    assert above.problems == ["start lateness max 0.5 s is above the bound 0.25 s (--max-late)"]
    late = measure("one-shot", [PlannedJob("a", "one-shot", (DUE,), -1.5)], histories, 5, "--max-late")
    assert late.problems == [
        "a job was created 1.5 s after its due second (creating the jobs took longer than planned: raise --lead)"
    ]


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (50.0, 99.0, 100.0)
    assert percentile([0.5], 99) == 0.5 and percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0


def test_a_one_shot_created_after_its_due_second_is_measured_at_the_instant_the_service_scheduled() -> None:
    planned = (datetime(2026, 1, 1, 12, 0, 1, tzinfo=UTC),)
    created = {"properties": {"status": {"nextExecutionTime": "2026-01-01T12:00:19Z"}}}
    assert verify.as_scheduled(planned, created) == (datetime(2026, 1, 1, 12, 0, 19, tzinfo=UTC),)
    on_time = {"properties": {"status": {"nextExecutionTime": "2026-01-01T12:00:01Z"}}}
    assert verify.as_scheduled(planned, on_time) == planned
    assert verify.as_scheduled(planned, {"properties": {}}) == planned  # no next time said: as planned
    recurring = (planned[0], planned[0] + timedelta(minutes=1))
    assert verify.as_scheduled(recurring, created) == recurring  # a series keeps its planned instants
