"""``jobs list|pause|resume|delete --tag`` against the real function app on the local host: the service's
``$filter`` decides what matches, a dry run counts and names the jobs and changes nothing, and the command
acts on every match and on nothing else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Cli

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


def create(cli: Cli, tmp_path: Path, name: str, tags: dict[str, str]) -> None:
    properties: dict[str, Any] = {
        "action": {"type": "Https", "request": {"uri": "https://example.org/ping", "method": "GET"}},
        "recurrence": {"frequency": "Hour"},
        "tags": tags,
    }
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"properties": properties}), encoding="utf-8")
    created = cli("jobs", "create", f"jc1/{name}", "-f", str(path))
    assert created.code == 0, created.err


def states(cli: Cli) -> dict[str, str]:
    listed = cli("jobs", "list", "-c", "jc1", "-o", "json")
    assert listed.code == 0, listed.err
    return {job["name"].rsplit("/", 1)[-1]: job["properties"]["state"] for job in listed.json()}


@pytest.fixture
def tagged(cli: Cli, tmp_path: Path) -> Cli:
    assert cli("collections", "create", "jc1", "-l", "westus").code == 0
    create(cli, tmp_path, "pay-1", {"team": "payments", "env": "prod"})
    create(cli, tmp_path, "pay-2", {"team": "payments", "env": "test"})
    create(cli, tmp_path, "ops-1", {"team": "ops"})
    return cli


def test_list_by_tag_names_only_the_matching_jobs(tagged: Cli) -> None:
    listed = tagged("jobs", "list", "-c", "jc1", "--tag", "team=payments", "-o", "json")
    assert listed.code == 0, listed.err
    assert sorted(job["name"].rsplit("/", 1)[-1] for job in listed.json()) == ["pay-1", "pay-2"]
    both = tagged("jobs", "list", "-c", "jc1", "--tag", "team=payments", "--tag", "env=prod", "-o", "json")
    assert [job["name"].rsplit("/", 1)[-1] for job in both.json()] == ["pay-1"]


def test_a_dry_run_counts_and_names_and_changes_nothing(tagged: Cli) -> None:
    before = states(tagged)
    dry = tagged("jobs", "pause", "-c", "jc1", "--tag", "team=payments", "--dry-run")
    assert dry.code == 0, dry.err
    assert dry.err == "2 job(s) of jc1 tagged team=payments: pay-1, pay-2\n"
    assert dry.out == ""
    assert states(tagged) == before


def test_pause_resume_and_delete_act_on_every_match_and_nothing_else(tagged: Cli) -> None:
    paused = tagged("jobs", "pause", "-c", "jc1", "--tag", "team=payments", "--yes")
    assert paused.code == 0, paused.err
    assert paused.out.splitlines() == ["pay-1: paused", "pay-2: paused"]
    assert states(tagged) == {"pay-1": "Disabled", "pay-2": "Disabled", "ops-1": "Enabled"}
    resumed = tagged("jobs", "resume", "-c", "jc1", "--tag", "env=test", "--yes")
    assert resumed.out.splitlines() == ["pay-2: resumed"]
    deleted = tagged("jobs", "delete", "-c", "jc1", "--tag", "team=payments", "--yes")
    assert deleted.code == 0 and deleted.out.splitlines() == ["pay-1: deleted", "pay-2: deleted"]
    assert states(tagged) == {"ops-1": "Enabled"}
    none = tagged("jobs", "delete", "-c", "jc1", "--tag", "team=payments", "--yes")
    assert none.code == 0 and none.err == "0 job(s) of jc1 tagged team=payments: none\n"


def test_a_job_and_a_tag_together_or_neither_is_refused(tagged: Cli) -> None:
    both = tagged("jobs", "pause", "jc1/pay-1", "--tag", "team=ops")
    assert both.code == 2 and "give a JOB or --tag, not both" in both.err
    neither = tagged("jobs", "pause", "-c", "jc1")
    assert neither.code == 2 and "no job" in neither.err
    assert states(tagged)["pay-1"] == "Enabled"
