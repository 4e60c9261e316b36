"""A history entry at the wire: the preview shows its ``trigger`` (what started the occurrence), 2016-03-01
exactly the properties it always answered; the preview document describes the field."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scheduler_core.api import views
from scheduler_core.definitions import Wire
from scheduler_core.model import ActionName, HistoryEntry, HistoryStatus
from scheduler_core.model.history import Trigger
from scheduler_core.storage.keys import CollectionRef, JobRef

REF = JobRef(CollectionRef("s1", "rg1", "jc1"), "j1")
T0 = datetime(2030, 5, 1, 6, 0, tzinfo=UTC)
OPENAPI = Path(views.__file__).parent / "openapi"
#: What 2016-03-01 answered for an entry with an end and an expected time (Microsoft's document's names).
CLASSIC_PROPERTIES = {
    "startTime",
    "endTime",
    "expectedExecutionTime",
    "actionName",
    "status",
    "message",
    "retryCount",
    "repeatCount",
}


def entry(trigger: Trigger = Trigger.SCHEDULED, due: datetime | None = None) -> HistoryEntry:
    return HistoryEntry(
        execution_id="e1",
        row_key="k",
        start_time=T0,
        end_time=T0 + timedelta(seconds=1),
        expected_execution_time=T0,
        action_name=ActionName.MAIN,
        status=HistoryStatus.COMPLETED,
        message="ok (backfill)",
        retry_count=0,
        repeat_count=3,
        trigger=trigger,
        due_time=due,
    )


def test_the_preview_shows_each_trigger() -> None:
    for trigger, text in ((Trigger.SCHEDULED, "Scheduled"), (Trigger.MANUAL, "Manual"), (Trigger.BACKFILL, "Backfill")):
        shown = views.history(REF, entry(trigger), Wire.PREVIEW)["properties"]
        assert shown["trigger"] == text
        assert set(shown) == CLASSIC_PROPERTIES | {"trigger"}


def test_2016_03_01_answers_as_it_always_did() -> None:
    for trigger in Trigger:
        shown = views.history(REF, entry(trigger), Wire.CLASSIC)
        assert set(shown["properties"]) == CLASSIC_PROPERTIES
        assert shown == views.history(REF, entry(Trigger.SCHEDULED))  # the classic wire is the default


def test_the_documents_describe_trigger_in_the_preview_only() -> None:
    preview = json.loads((OPENAPI / "microsoft-scheduler-2026-12-01-preview.json").read_text())
    classic = json.loads((OPENAPI / "microsoft-scheduler-2016-03-01.json").read_text())
    field = preview["definitions"]["JobHistoryDefinitionProperties"]["properties"]["trigger"]
    assert field["enum"] == [str(trigger) for trigger in Trigger] and field["readOnly"] is True
    assert "trigger" not in classic["definitions"]["JobHistoryDefinitionProperties"]["properties"]
    assert set(classic["definitions"]["JobHistoryDefinitionProperties"]["properties"]) == CLASSIC_PROPERTIES


def test_the_preview_shows_a_due_time_other_than_the_expected_time_and_2016_03_01_never() -> None:
    retried = entry(due=T0 + timedelta(seconds=30))
    assert views.history(REF, retried, Wire.PREVIEW)["properties"]["dueTime"] == "2030-05-01T06:00:30Z"
    assert set(views.history(REF, retried, Wire.CLASSIC)["properties"]) == CLASSIC_PROPERTIES
    assert "dueTime" not in views.history(REF, entry(), Wire.PREVIEW)["properties"]
    preview = json.loads((OPENAPI / "microsoft-scheduler-2026-12-01-preview.json").read_text())
    field = preview["definitions"]["JobHistoryDefinitionProperties"]["properties"]["dueTime"]
    assert (field["format"], field["readOnly"]) == ("date-time", True)
