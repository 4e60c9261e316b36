"""The policies' state on a job row (``Job.running``, ``waiting``, ``paused``) reads back as written on both
adapters (the in-memory one and the Azure one on Azurite), and a row written before them reads as having
none: the same rule the contract suite (``tests/contract``) holds every port to. On Azurite: history entries
keep their trigger (written with their claims or into ``JobHistory``), and a catch-up's Skipped entry."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core.adapters.azure.tables import TableHistory
from scheduler_core.definitions import Wire
from scheduler_core.model import HistoryStatus, JobState
from scheduler_core.model.history import Trigger
from scheduler_core.ports import Stores
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import JobRef
from tests.contract.conftest import BACKENDS
from tests.contract.records import JOB, T0, history_entry, job
from tests.e2e.pipeline_harness import Pipeline
from tests.support.http_target import HttpTarget

pytestmark = [pytest.mark.e2e]


@pytest.fixture(params=["memory", pytest.param("azurite", marks=pytest.mark.azurite)])
def stores(request: pytest.FixtureRequest) -> Stores:
    return BACKENDS[str(request.param)](request).stores


def test_the_policies_state_reads_back_and_is_cleared_by_a_write(stores: Stores) -> None:
    saved = stores.jobs.save(job(), create=True)
    assert (saved.running, saved.waiting, saved.paused) == ("", "", "")
    busy = replace(saved, running=f"{saved.generation}|2030-01-01T12:00:00Z", waiting='{"v":1}')
    written = stores.jobs.save(busy, create=False, etag=saved.etag)
    got = stores.jobs.get(JOB)
    assert got == written and got.running_occurrence() is not None
    assert got.waiting == '{"v":1}'
    paused = stores.jobs.save(
        replace(got, running="", waiting="", state=JobState.DISABLED, paused="Disabled after 2"),
        create=False,
        etag=got.etag,
    )
    again = stores.jobs.get(JOB)
    assert again == paused and (again.running, again.waiting, again.paused) == ("", "", "Disabled after 2")
    assert stores.jobs.get_many(JOB.partition_key, [JOB.row_key])[JOB.row_key] == paused
    listed = [item for item in stores.jobs.list(JOB.collection) if item.ref.name == JOB.name]
    assert listed == [paused]


def test_an_unfinished_occurrence_of_another_generation_is_none(stores: Stores) -> None:
    saved = stores.jobs.save(job(generation=2, running="1|2030-01-01T12:00:00Z"), create=True)
    assert isinstance(saved.ref, JobRef) and saved.running_occurrence() is None


# ----------------------------------------------------------------------- history on Azurite (the Azure adapter)
#
# The pipeline (real dispatcher and executor, a simulated clock and the harness's captured queue) over the
# Azure adapter on Azurite: a history entry written into its claim's row (Claims.record) or into JobHistory
# keeps its trigger, and a catch-up's Skipped entry is written there once.

HOUR = timedelta(hours=1)


def azurite_pipeline(settings: Settings, target: HttpTarget) -> tuple[Pipeline, datetime]:
    """A pipeline on Azurite whose job ``j`` (hourly, started three hours ago) calls ``target``."""
    now = datetime.now(UTC).replace(microsecond=0)
    pipeline = Pipeline(settings, now)
    body = {
        "properties": {
            "startTime": format_instant(now - 3 * HOUR),
            "action": {"type": "Http", "request": {"uri": f"{target.base_url}/hook", "method": "POST"}},
            "recurrence": {"frequency": "Hour"},
        }
    }
    pipeline.services.service.put_job(pipeline.job_ref("j"), body, wire=Wire.PREVIEW)
    return pipeline, now


@pytest.mark.azurite
def test_backfill_and_run_now_entries_keep_their_trigger_on_azurite(storage_env: Settings, target: HttpTarget) -> None:
    pipeline, now = azurite_pipeline(storage_env, target)
    ref = pipeline.job_ref("j")
    window = {"startTime": format_instant(now - 3 * HOUR), "endTime": format_instant(now - HOUR)}
    assert pipeline.services.service.backfill_job(ref, window) == 2
    pipeline.services.service.run_job(ref)
    reports = pipeline.deliver_visible()
    assert sorted(report.outcome.value for report in reports) == ["succeeded"] * 3
    history = list(pipeline.services.stores.history.list(ref))
    assert sorted(str(entry.trigger) for entry in history) == ["Backfill", "Backfill", "Manual"]
    backfilled = sorted(
        e.expected_execution_time for e in history if e.trigger is Trigger.BACKFILL if e.expected_execution_time
    )
    assert backfilled == [now - 3 * HOUR, now - 2 * HOUR]
    # the entries were written with their claims (one merge each); trimmed off the claims, they keep it
    pipeline.services.executor.claims.delete_all(ref.identity)
    assert sorted(str(e.trigger) for e in pipeline.services.stores.history.list(ref)) == [
        "Backfill",
        "Backfill",
        "Manual",
    ]


@pytest.mark.azurite
def test_a_row_without_a_trigger_reads_as_scheduled_and_scheduled_is_not_written(
    request: pytest.FixtureRequest,
) -> None:
    history = BACKENDS["azurite"](request).stores.history
    assert isinstance(history, TableHistory)
    entry = history_entry(T0)
    assert "Trigger" not in TableHistory.entity(JOB, entry)  # a scheduled entry is stored as it always was
    assert TableHistory.entity(JOB, replace(entry, trigger=Trigger.BACKFILL))["Trigger"] == "Backfill"
    history.table.upsert_entity(TableHistory.entity(JOB, entry))  # as a row written before the field is
    [read] = list(history.list(JOB))
    assert read.trigger is Trigger.SCHEDULED and read == entry


@pytest.mark.azurite
def test_a_catch_up_writes_one_skipped_entry_on_azurite(storage_env: Settings, target: HttpTarget) -> None:
    now = datetime.now(UTC).replace(second=0, microsecond=0) + HOUR
    pipeline = Pipeline(storage_env, now - timedelta(minutes=30))
    body = {
        "properties": {
            "startTime": format_instant(now),
            "action": {"type": "Http", "request": {"uri": f"{target.base_url}/hook", "method": "POST"}},
            "recurrence": {"frequency": "Minute"},
            "missedRunPolicy": {"mode": "Skip"},
        }
    }
    ref = pipeline.job_ref("j")
    pipeline.services.service.put_job(ref, body, wire=Wire.PREVIEW)
    pipeline.clock.set(now + timedelta(minutes=20, seconds=30))  # down for 21 occurrences
    pipeline.scan_all()
    pipeline.scan_all()  # a second scan finds nothing more to drop
    [skipped] = list(pipeline.services.stores.history.list(ref))
    assert skipped.status is HistoryStatus.SKIPPED
    assert skipped.message == (
        f"Skipped: 21 occurrence(s) from {format_instant(now)} to {format_instant(now + timedelta(minutes=20))} "
        "missed while the service was down (missedRunPolicy Skip)"
    )
    assert pipeline.deliver_visible() == []  # none of them ran
