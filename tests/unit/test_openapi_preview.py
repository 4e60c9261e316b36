"""The preview OpenAPI document: exactly what ``_derive`` makes of Microsoft's, a superset of it, and served
by name beside it."""

from __future__ import annotations

import json
from typing import Any

from scheduler_core.api import openapi
from scheduler_core.api.openapi import _derive


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
            else:
                assert added["properties"][key] == value
    new = set(preview["paths"]) - set(classic["paths"])
    assert {path.rsplit("/", 1)[-1] for path in new} == {"calendars", "{calendarName}", "occurrences"}
    job = preview["definitions"]["JobProperties"]["properties"]
    assert {"overlapPolicy", "missedRunPolicy", "pauseAfterFailures", "deleteAfterCompletion"} <= set(job)
    assert {"jitter", "exclusions"} <= set(preview["definitions"]["JobRecurrence"]["properties"])


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
