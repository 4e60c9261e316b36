"""The preview OpenAPI document: exactly what ``_derive`` makes of Microsoft's, a superset of it, and served
by name beside it."""

from __future__ import annotations

import json
from typing import Any

from scheduler_core.api import openapi
from scheduler_core.api.openapi import _derive
from scheduler_core.api.paths import PREVIEW_KINDS, parse_path
from scheduler_core.api.views import EXECUTION_STATUSES
from scheduler_core.definitions._preview import BACKFILL_FIELDS
from scheduler_core.model.history import Trigger
from scheduler_core.model.job import OverlapPolicy

JC = "subscriptions/s1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc1"


def load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(openapi.document(name))
    return document


def test_the_committed_preview_document_is_the_derivation_of_microsofts() -> None:
    classic = load(openapi.DOCUMENT_NAME)
    assert openapi.document(openapi.PREVIEW_DOCUMENT_NAME) == _derive.render(_derive.derive(classic))


def test_the_preview_document_keeps_every_classic_operation_and_definition() -> None:
    classic, preview = load(openapi.DOCUMENT_NAME), load(openapi.PREVIEW_DOCUMENT_NAME)
    assert preview["info"]["version"] == "2026-12-01-preview"
    for path, operations in classic["paths"].items():
        assert preview["paths"][path] == operations
    for name, definition in classic["definitions"].items():
        added = preview["definitions"][name]
        for key, value in definition.get("properties", {}).items():
            if name == "HttpAuthentication" and key == "type":
                assert added["properties"][key]["enum"] == [*value["enum"], "ManagedServiceIdentity"]
            elif name == "JobHistoryDefinitionProperties" and key == "actionName":
                assert added["properties"][key]["enum"] == [*value["enum"], "NotificationAction"]
            else:
                assert added["properties"][key] == value
    new = set(preview["paths"]) - set(classic["paths"])
    assert {path.rsplit("/", 1)[-1] for path in new} == {
        "calendars",
        "{calendarName}",
        "occurrences",
        "backfill",
        "rerun",
    }
    job = preview["definitions"]["JobProperties"]["properties"]
    assert {"overlapPolicy", "missedRunPolicy", "pauseAfterFailures", "deleteAfterCompletion"} <= set(job)
    assert {"jitter", "exclusions"} <= set(preview["definitions"]["JobRecurrence"]["properties"])
    statuses = classic["definitions"]["JobExecutionStatus"]["enum"]
    assert preview["definitions"]["JobExecutionStatus"]["enum"] == [*statuses, "Skipped"]
    assert set(preview["definitions"]["JobStatus"]["properties"]) == {
        *classic["definitions"]["JobStatus"]["properties"],
        "disabledReason",
    }


def test_the_preview_document_carries_what_the_preview_wire_answers() -> None:
    """The backfill operation, the job status's disabledReason and the history status Skipped, as the
    handler, views and model answer them."""
    preview = load(openapi.PREVIEW_DOCUMENT_NAME)
    definitions = preview["definitions"]
    assert definitions["JobExecutionStatus"]["enum"] == [str(status) for status in EXECUTION_STATUSES]
    post = preview["paths"][f"{_derive._JC}/jobs/{{jobName}}/backfill"]["post"]
    assert post["operationId"] == "Jobs_Backfill" and set(post["responses"]) == {"202", "409"}  # 409: a backfill limit
    assert post["responses"]["202"]["schema"] == {"$ref": "#/definitions/JobBackfillResult"}
    (body,) = [parameter for parameter in post["parameters"] if parameter.get("in") == "body"]
    assert body["schema"] == {"$ref": "#/definitions/JobBackfillRequest"} and body["required"] is True
    request = definitions["JobBackfillRequest"]
    assert tuple(request["properties"]) == BACKFILL_FIELDS and request["required"] == ["startTime", "endTime"]
    assert request["properties"]["overlapPolicy"]["enum"] == [policy.value for policy in OverlapPolicy]
    assert definitions["JobBackfillResult"]["required"] == ["count"]
    assert definitions["JobStatus"]["properties"]["disabledReason"]["readOnly"] is True
    rerun = preview["paths"][f"{_derive._JC}/jobs/{{jobName}}/history/{{historyId}}/rerun"]["post"]
    assert rerun["operationId"] == "JobHistory_Rerun" and set(rerun["responses"]) == {"202", "404"}
    assert rerun["responses"]["202"]["schema"] == {"$ref": "#/definitions/JobRerunResult"}
    assert definitions["JobRerunResult"]["required"] == ["scheduledTime", "executionId"]  # as the handler answers
    trigger = definitions["JobHistoryDefinitionProperties"]["properties"]["trigger"]["enum"]
    assert trigger == [str(value) for value in Trigger]


def test_every_path_of_each_document_is_a_route_and_the_preview_only_ones_are_preview_kinds() -> None:
    classic, preview = load(openapi.DOCUMENT_NAME), load(openapi.PREVIEW_DOCUMENT_NAME)
    names = {"subscriptionId": "s1", "resourceGroupName": "rg1", "jobCollectionName": "jc1", "jobName": "j1"}
    names["calendarName"] = "holidays"
    names["historyId"] = "0f" * 16
    kinds: set[str] = set()
    for template in preview["paths"]:
        path = template
        for name, value in names.items():
            path = path.replace("{" + name + "}", value)
        route = parse_path(path)
        assert route.preview_only == (template not in classic["paths"]), template
        if route.preview_only:
            kinds.add(route.kind)
    assert kinds == PREVIEW_KINDS
    backfill = parse_path(f"{JC}/jobs/j1/BACKFILL/")
    assert (backfill.kind, backfill.job, backfill.preview_only) == ("job_backfill", "j1", True)
    assert parse_path(f"{JC}/jobs/backfill").kind == "job"


def test_each_document_is_served_by_its_name_and_an_unknown_one_is_a_404() -> None:
    for name in openapi.DOCUMENT_NAMES:
        answer = openapi.serve("GET", name)
        assert answer.status == 200 and answer.body == openapi.document(name)
    assert openapi.serve("GET", openapi.PREVIEW_DOCUMENT_NAME.upper()).status == 200
    assert openapi.serve("GET").body == openapi.document(openapi.DOCUMENT_NAME)
    missing = openapi.serve("GET", "other.json")
    assert missing.status == 404 and json.loads(missing.body)["error"]["code"] == "ResourceNotFound"
    refused = openapi.serve("PUT", openapi.PREVIEW_DOCUMENT_NAME)
    assert refused.status == 405 and refused.headers["Allow"] == "GET, HEAD"
