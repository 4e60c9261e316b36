"""History retention per collection (issue 29), on the memory adapter through the management API: the preview
sets, answers and merges ``historyRetention``; a classic client never sees it and its PUT and PATCH keep it; a bad
rule is a 400 that changes nothing; and the daily cleanup keeps each job's entries by its collection's rule."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from typing import Any

from scheduler_core.api import ApiRequest, ManagementApi
from scheduler_core.api.handler import ApiServices
from scheduler_core.auth.keys import ApiKey
from scheduler_core.auth.roles import Role
from scheduler_core.model import ActionName, HistoryEntry, HistoryStatus
from scheduler_core.pipeline.cleanup import cleanup
from scheduler_core.storage.keys import history_row_key
from tests.support.harness import Deployment
from tests.support.jobs import every, http_job

KEY = "k" * 40
PREVIEW = "2026-12-01-preview"
CLASSIC = "2016-03-01"


def call(
    deployment: Deployment, method: str, version: str, body: Any = None, if_match: str | None = None
) -> tuple[int, Any, dict[str, str]]:
    """One request to the collection's resource, as a Contributor."""
    services = ApiServices(deployment.service, (ApiKey(hashlib.sha256(KEY.encode()).digest(), None, Role.CONTRIBUTOR),))
    path = deployment.collection.resource_id
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    if if_match is not None:
        headers["If-Match"] = if_match
    data = b"" if body is None else json.dumps(body).encode()
    request = ApiRequest(
        method, f"http://127.0.0.1{path}?api-version={version}", path, {"api-version": version}, headers, data
    )
    answer = ManagementApi(lambda: services).handle(request)
    return answer.status, json.loads(answer.body) if answer.body else None, dict(answer.headers)


def collection(retention: Any = None, **properties: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"location": "westus", "properties": {"sku": {"name": "Standard"}, **properties}}
    if retention is not None:
        body["properties"]["historyRetention"] = retention
    return body


def test_the_preview_sets_answers_and_merges_the_rule(deployment: Deployment) -> None:
    status, body, _ = call(deployment, "PUT", PREVIEW, collection({"succeeded": "P7D", "failed": 5000}))
    assert status == 200, body
    assert body["properties"]["historyRetention"] == {"succeeded": "P7D", "failed": 5000}
    assert call(deployment, "GET", PREVIEW)[1]["properties"]["historyRetention"] == {"succeeded": "P7D", "failed": 5000}

    status, body, _ = call(deployment, "PATCH", PREVIEW, {"properties": {"historyRetention": {"failed": "P90D"}}})
    assert status == 200, body
    assert body["properties"]["historyRetention"] == {"succeeded": "P7D", "failed": "P90D"}  # merged, as JSON merge
    status, body, _ = call(deployment, "PATCH", PREVIEW, {"properties": {"historyRetention": {"succeeded": None}}})
    assert body["properties"]["historyRetention"] == {"failed": "P90D"}
    status, body, _ = call(deployment, "PATCH", PREVIEW, {"properties": {"historyRetention": None}})
    assert status == 200 and "historyRetention" not in body["properties"]  # the default rule again
    assert deployment.stores.collections.get(deployment.collection).history_retention is None


def test_a_classic_client_never_sees_the_rule_and_its_writes_keep_it(deployment: Deployment) -> None:
    rule = {"succeeded": 50, "failed": "P30D"}
    assert call(deployment, "PUT", PREVIEW, collection(rule))[0] == 200
    status, body, headers = call(deployment, "GET", CLASSIC)
    assert status == 200 and "historyRetention" not in body["properties"]
    assert set(body["properties"]) == {"sku", "state", "quota"}  # exactly as 2016-03-01 answered

    # a classic PUT (what azure-mgmt-scheduler's create_or_update sends) and PATCH keep what they cannot see
    status, body, _ = call(deployment, "PUT", CLASSIC, collection(quota={"maxJobCount": 20}), headers["ETag"])
    assert status == 200, body
    status, body, _ = call(deployment, "PATCH", CLASSIC, {"tags": {"team": "payments"}})
    assert status == 200, body
    status, body, _ = call(deployment, "GET", PREVIEW)
    assert body["properties"]["historyRetention"] == rule
    assert body["properties"]["quota"]["maxJobCount"] == 20 and body["tags"] == {"team": "payments"}


def test_the_rule_is_part_of_the_version_and_removing_it_gives_the_version_back(deployment: Deployment) -> None:
    before = call(deployment, "GET", CLASSIC)[2]["ETag"]
    set_etag = call(deployment, "PATCH", PREVIEW, {"properties": {"historyRetention": {"failed": 10}}})[2]["ETag"]
    assert set_etag != before
    status, body, _ = call(deployment, "PATCH", PREVIEW, {"properties": {"historyRetention": {"failed": 20}}}, before)
    assert status == 412, body  # an edit started before the rule changed is refused
    removed = call(deployment, "PATCH", PREVIEW, {"properties": {"historyRetention": None}}, set_etag)[2]["ETag"]
    assert removed == before  # a collection that never set one keeps the version it always had


def test_a_bad_rule_is_a_400_naming_the_field_and_nothing_changes(deployment: Deployment) -> None:
    assert call(deployment, "PUT", PREVIEW, collection({"failed": 100}))[0] == 200
    stored = deployment.stores.collections.get(deployment.collection)
    for method, body, path, rule in [
        ("PUT", collection({"failed": 0}), "properties.historyRetention.failed", "between 1 and 10000"),
        ("PATCH", {"properties": {"historyRetention": {"succeeded": "P2Y"}}}, "historyRetention.succeeded", "years"),
        ("PATCH", {"properties": {"historyRetention": {"kept": 1}}}, "historyRetention.kept", "not a known field"),
        ("PATCH", {"properties": {"historyRetention": "P7D"}}, "properties.historyRetention", "JSON object"),
    ]:
        status, answer, _ = call(deployment, method, PREVIEW, body)
        assert status == 400, answer
        assert set(answer["error"]) >= {"code", "message"} and path in answer["error"]["message"]
        assert rule in answer["error"]["message"]
    for body in (collection({"failed": 100}), {"properties": {"historyRetention": {"failed": 100}}}):
        status, answer, _ = call(deployment, "PATCH" if "location" not in body else "PUT", CLASSIC, body)
        assert status == 400 and f"api-version={PREVIEW}" in answer["error"]["message"], answer
    after = deployment.stores.collections.get(deployment.collection)
    assert after is not None and stored is not None
    assert (after.etag, after.history_retention) == (stored.etag, stored.history_retention)


def entry(start: datetime, status: HistoryStatus, n: int) -> HistoryEntry:
    execution = f"e{n}"
    return HistoryEntry(
        execution, history_row_key(start, execution), start, start, start, ActionName.MAIN, status, "", 0, 0
    )


def test_the_cleanup_keeps_each_jobs_entries_by_its_collections_rule(deployment: Deployment) -> None:
    assert (
        call(deployment, "PATCH", PREVIEW, {"properties": {"historyRetention": {"succeeded": 3, "failed": "P30D"}}})[0]
        == 200
    )
    deployment.put_job("job", http_job("https://example.org/hook", recurrence=every("Hour")))
    now = deployment.clock()
    history = deployment.stores.history
    ref = deployment.ref("job")
    rows = [
        entry(now - timedelta(days=days), status, n)
        for n, (days, status) in enumerate(
            [
                (0, "Completed"),
                (1, "Failed"),
                (2, "Skipped"),
                (3, "Completed"),
                (4, "Completed"),
                (29, "Failed"),
                (31, "Failed"),
                (200, "Completed"),
            ]
        )
    ]
    for row in rows:
        history.add(ref, row)
    report = cleanup(deployment.stores, now)
    assert report.history_removed == 3
    kept = [(h.execution_id, h.status) for h in history.list(ref)]
    assert kept == [("e0", "Completed"), ("e1", "Failed"), ("e2", "Skipped"), ("e3", "Completed"), ("e5", "Failed")]
    assert cleanup(deployment.stores, now).history_removed == 0  # a second pass removes nothing more


def test_a_collection_without_a_rule_keeps_sixty_days_and_a_thousand_entries(deployment: Deployment) -> None:
    deployment.put_job("job", http_job("https://example.org/hook", recurrence=every("Hour")))
    now = deployment.clock()
    ref = deployment.ref("job")
    for n in range(1010):
        deployment.stores.history.add(ref, entry(now - timedelta(minutes=n), "Failed" if n % 3 else "Completed", n))
    deployment.stores.history.add(ref, entry(now - timedelta(days=61), "Completed", 5000))
    assert cleanup(deployment.stores, now).history_removed == 11
    kept = list(deployment.stores.history.list(ref))
    assert [h.execution_id for h in kept] == [f"e{n}" for n in range(1000)]
