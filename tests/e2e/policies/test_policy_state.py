"""What the policies keep survives every write and read: their state on a job's row (``Job.running``,
``waiting``, ``paused``) reads back as written on both adapters (the in-memory one and the Azure one on
Azurite), and a row written before them reads as having none (the rule the contract suite,
``tests/contract``, holds every port to); history entries keep their trigger (written with their claims or
into ``JobHistory``); a ``Skipped`` entry is listed by the preview and not by 2016-03-01; a 2016-03-01 write
keeps the preview's properties it cannot express."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.adapters.azure.tables import TableHistory
from scheduler_core.api import ApiRequest, ManagementApi, views
from scheduler_core.api.handler import ApiServices
from scheduler_core.auth.keys import ApiKey
from scheduler_core.auth.roles import Role
from scheduler_core.definitions import Wire
from scheduler_core.model import JobState
from scheduler_core.model.history import Trigger
from scheduler_core.ports import Stores
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import JobRef
from tests.contract import records
from tests.contract.conftest import BACKENDS
from tests.contract.records import JOB, history_entry, job
from tests.e2e.policies.scenario import MINUTE, T0, hook, preview_job, put, put_preview
from tests.support.harness import Deployment, near_now
from tests.support.http_target import HttpTarget
from tests.support.jobs import fixed_retries

pytestmark = [pytest.mark.e2e]

HOUR = timedelta(hours=1)


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
# The pipeline (real dispatcher and executor, simulated time, the harness's in-memory execution queue) over the
# Azure adapter on Azurite: a history entry written into its claim's row (Claims.record) or into JobHistory
# keeps its trigger.


def azurite_pipeline(settings: Settings, target: HttpTarget) -> tuple[Deployment, datetime]:
    """A pipeline on Azurite whose job ``j`` (hourly, started three hours ago) calls ``target``."""
    now = datetime.now(UTC).replace(microsecond=0)
    pipeline = near_now(settings, azurite=True, start=now)
    body = {
        "properties": {
            "startTime": format_instant(now - 3 * HOUR),
            "action": {"type": "Http", "request": {"uri": f"{target.base_url}/hook", "method": "POST"}},
            "recurrence": {"frequency": "Hour"},
        }
    }
    pipeline.services.service.put_job(pipeline.ref("j"), body, wire=Wire.PREVIEW)
    return pipeline, now


@pytest.mark.azurite
def test_backfill_and_run_now_entries_keep_their_trigger_on_azurite(storage_env: Settings, target: HttpTarget) -> None:
    pipeline, now = azurite_pipeline(storage_env, target)
    ref = pipeline.ref("j")
    window = {"startTime": format_instant(now - 3 * HOUR), "endTime": format_instant(now - HOUR)}
    assert pipeline.services.service.backfill_job(ref, window) == 2
    pipeline.services.service.run_job(ref)
    reports = pipeline.deliver()
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
    entry = history_entry(records.T0)
    assert "Trigger" not in TableHistory.entity(JOB, entry)  # a scheduled entry is stored as it always was
    assert TableHistory.entity(JOB, replace(entry, trigger=Trigger.BACKFILL))["Trigger"] == "Backfill"
    history.table.upsert_entity(TableHistory.entity(JOB, entry))  # as a row written before the field is
    [read] = list(history.list(JOB))
    assert read.trigger is Trigger.SCHEDULED and read == entry


# ------------------------------------------------------------------------------------ the api-versions


def test_a_skipped_entry_is_listed_by_the_preview_and_not_by_2016_03_01(
    deployment: Deployment, target: HttpTarget
) -> None:
    """Skipped is not in 2016-03-01's JobExecutionStatus (an enum in Microsoft's document): that version's
    history lists the job's other entries and refuses a $filter on Skipped, the preview lists them all."""
    target.answer([500, 200])
    put(deployment, target, {"frequency": "Minute", "count": 3}, fixed_retries(1, "PT90S"), overlapPolicy="Skip")
    deployment.run_until(T0 + 4 * MINUTE)
    key = "sks_test-history-versions"
    services = ApiServices(deployment.service, (ApiKey(hashlib.sha256(key.encode()).digest(), None, Role.READER),))
    api = ManagementApi(lambda: services)
    path = f"{deployment.ref('j').resource_id}/history"

    def listed(version: str, **query: str) -> tuple[int, Any]:
        query = {"api-version": version, **query}
        url = f"http://127.0.0.1{path}?" + "&".join(f"{k}={v}" for k, v in query.items())
        response = api.handle(ApiRequest("GET", url, path, query, {"Authorization": f"Bearer {key}"}, b""))
        return response.status, json.loads(response.body)

    status, preview = listed("2026-12-01-preview")
    assert status == 200
    assert sorted(item["properties"]["status"] for item in preview["value"]) == [
        "Completed",
        "Completed",
        "Failed",
        "Skipped",
    ]
    status, classic = listed("2016-03-01")
    assert status == 200
    assert sorted(item["properties"]["status"] for item in classic["value"]) == ["Completed", "Completed", "Failed"]
    status, refused = listed("2016-03-01", **{"$filter": "status eq Skipped"})
    assert status == 400 and "status" in refused["error"]["message"]
    assert listed("2026-12-01-preview", **{"$filter": "status eq Skipped"})[1]["value"][0]["properties"]["status"] == (
        "Skipped"
    )


def test_a_classic_write_keeps_what_a_preview_write_set(deployment: Deployment, target: HttpTarget) -> None:
    put_preview(
        deployment,
        "j",
        preview_job(
            hook(target),
            {"frequency": "Hour", "jitter": "PT5M"},
            overlapPolicy="Skip",
            pauseAfterFailures=2,
        ),
    )
    classic = views.job(deployment.job("j"), Wire.CLASSIC)
    assert "jitter" not in json.dumps(classic) and "overlapPolicy" not in json.dumps(classic)
    classic["properties"]["action"]["request"]["body"] = "edited"
    deployment.service.put_job(deployment.ref("j"), {"properties": classic["properties"]})
    kept = deployment.job("j").definition
    assert (kept.overlap_policy.value, kept.pause_after_failures) == ("Skip", 2)
    assert kept.jitter is not None and kept.jitter.value == timedelta(minutes=5)
    patched = deployment.service.patch_job(deployment.ref("j"), {"properties": {"state": "Disabled"}})
    assert patched.state == JobState.DISABLED and patched.definition.jitter == kept.jitter
