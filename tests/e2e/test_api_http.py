"""Raw HTTP against the management API: what the SDK never sends, errors, auth, concurrency."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core import auth
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

JC_PATH = "subscriptions/sub1/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"


def in_days(days: int) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def lowercase_job(**overrides: Any) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "startTime": in_days(1),
        "action": {
            "type": "http",
            "request": {"uri": "http://example.org/x", "method": "GET"},
            "retryPolicy": {"retryType": "fixed", "retryInterval": "00:01:00", "retryCount": 2},
        },
        "recurrence": {"frequency": "day", "interval": 1, "schedule": {"hours": [6], "minutes": [0]}},
        "state": "enabled",
    }
    properties.update(overrides)
    return {"properties": properties}


@pytest.fixture
def collection(api: Api) -> str:
    response = api.call("PUT", JC_PATH, {"location": "westus", "properties": {"sku": {"name": "standard"}}})
    assert response.status_code == 201, response.text
    return JC_PATH


def test_lowercase_enums_are_returned_canonical_and_timespans_as_written(api: Api, collection: str) -> None:
    response = api.call("PUT", f"{collection}/jobs/j", lowercase_job())
    assert response.status_code == 201, response.text
    properties = response.json()["properties"]
    assert properties["action"]["type"] == "Http"
    assert properties["action"]["retryPolicy"] == {
        "retryType": "Fixed",
        "retryInterval": "00:01:00",  # written as a .NET TimeSpan, answered as one (patched SDK clients)
        "retryCount": 2,
    }
    assert properties["recurrence"]["frequency"] == "Day"
    assert properties["state"] == "Enabled"
    assert response.headers["ETag"]
    again = api.call("PUT", f"{collection}/jobs/j", lowercase_job())
    assert again.status_code == 200


def test_read_only_fields_sent_by_a_client_are_ignored(api: Api, collection: str) -> None:
    body = lowercase_job(status={"executionCount": 99, "nextExecutionTime": "2000-01-01T00:00:00Z"})
    body.update({"id": "/whatever", "type": "x", "name": "jc/other"})
    response = api.call("PUT", f"{collection}/jobs/j", body)
    assert response.status_code == 201, response.text
    assert response.json()["properties"]["status"]["executionCount"] == 0
    assert response.json()["name"] == "jc/j"


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[]", 400, "JSON object"),
        (b"", 400, "body is required"),
        (
            b'{"properties": {"action": {"type": "http", "request": {"uri": "http://x.org"}}, "bogus": 1}}',
            400,
            "bogus",
        ),
        (b'{"properties": {"recurrence": {"frequency": "day", "interval": "2"}}}', 400, "interval"),
        (b"{" + b'"x": "' + b"a" * 70000 + b'"}', 413, "larger than"),
    ],
)
def test_invalid_bodies_get_arm_errors_and_store_nothing(
    api: Api, collection: str, body: bytes, status: int, fragment: str
) -> None:
    response = api.call("PUT", f"{collection}/jobs/bad", body, headers={"Content-Type": "application/json"})
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"]
    assert fragment in error["message"]
    assert api.call("GET", f"{collection}/jobs/bad").status_code == 404


def test_job_definition_over_16000_characters_is_refused(api: Api, collection: str) -> None:
    job = lowercase_job()
    job["properties"]["action"]["request"]["headers"] = {f"h{i}": "v" * 300 for i in range(49)}
    response = api.call("PUT", f"{collection}/jobs/big", job)
    assert response.status_code == 400
    assert api.call("GET", f"{collection}/jobs/big").status_code == 404


def test_a_put_that_omits_a_secret_keeps_the_stored_one(api: Api, collection: str) -> None:
    job = lowercase_job()
    job["properties"]["action"]["request"]["authentication"] = {
        "type": "basic",
        "username": "user",
        "password": "s3cret",
    }
    assert api.call("PUT", f"{collection}/jobs/secret", job).status_code == 201
    read = api.call("GET", f"{collection}/jobs/secret").json()
    assert "password" not in read["properties"]["action"]["request"]["authentication"]
    read["properties"]["recurrence"]["interval"] = 2  # GET, edit, PUT back: the password was never returned
    response = api.call("PUT", f"{collection}/jobs/secret", read)
    assert response.status_code == 200, response.text
    assert response.json()["properties"]["recurrence"]["interval"] == 2
    stored = api.call("GET", f"{collection}/jobs/secret").json()
    assert stored["properties"]["action"]["request"]["authentication"]["username"] == "user"
    # A new job without the secret is still refused, naming the field.
    del job["properties"]["action"]["request"]["authentication"]["password"]
    refused = api.call("PUT", f"{collection}/jobs/nosecret", job)
    assert refused.status_code == 400
    assert "password" in refused.json()["error"]["message"]


def test_api_version_rules(api: Api, collection: str) -> None:
    ok = api.call("GET", collection, query={"api-version": "2016-01-01"})
    assert ok.status_code == 200
    for query in ({"api-version": "2099-01-01"}, {"api-version": ""}):
        response = api.call("GET", api.base_url + "/" + collection + "?api-version=" + query["api-version"])
        assert response.status_code == 400
        assert "api-version" in response.json()["error"]["message"]


def test_authentication_is_required_everywhere(api: Api, collection: str) -> None:
    for key in ("sks_wrong", ""):
        response = api.call(
            "GET", collection, headers={"Authorization": f"Bearer {key}"} if key else {}, key=key or "x"
        )
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "AuthenticationFailed"


def test_key_scoped_to_another_subscription_learns_nothing(
    api: Api, collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scheduler_core import wiring

    other = auth.generate_key()
    monkeypatch.setenv("SCHEDULER_API_KEYS", f"{auth.hash_entry(api.key)};{auth.hash_entry(other, ['sub2'])}")
    wiring.reset()
    existing = api.call("GET", collection, key=other)
    missing = api.call("GET", collection.replace("/jc", "/nope"), key=other)
    assert existing.status_code == missing.status_code == 403
    assert existing.json()["error"]["code"] == missing.json()["error"]["code"]
    assert "jc" not in existing.json()["error"]["message"]
    own = api.call("GET", collection.replace("sub1", "sub2"), key=other)
    assert own.status_code == 404


def test_unsupported_method_is_405(api: Api, collection: str) -> None:
    response = api.call("POST", f"{collection}/jobs/j")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "InvalidHttpVerb"
    options = api.call("OPTIONS", collection)
    assert options.status_code == 405
    assert options.json()["error"]["code"] == "InvalidHttpVerb"
    head = api.call("HEAD", collection)
    assert head.status_code == 405
    assert head.headers["x-ms-request-id"]


def test_if_match_is_honoured(api: Api, collection: str) -> None:
    created = api.call("PUT", f"{collection}/jobs/j", lowercase_job())
    etag = created.headers["ETag"]
    stale = api.call(
        "PATCH", f"{collection}/jobs/j", {"properties": {"state": "disabled"}}, headers={"If-Match": '"W/stale"'}
    )
    assert stale.status_code == 412
    assert api.call("GET", f"{collection}/jobs/j").json()["properties"]["state"] == "Enabled"
    fresh = api.call("PATCH", f"{collection}/jobs/j", {"properties": {"state": "disabled"}}, headers={"If-Match": etag})
    assert fresh.status_code == 200, fresh.text
    assert fresh.headers["ETag"] != etag
    gone = api.call("DELETE", f"{collection}/jobs/j", headers={"If-Match": etag})
    assert gone.status_code == 412
    assert api.call("DELETE", f"{collection}/jobs/j", headers={"If-Match": fresh.headers["ETag"]}).status_code == 200


def test_a_collections_etag_holds_while_jobs_come_and_go_and_moves_with_its_own_writes(
    api: Api, collection: str
) -> None:
    """On Azurite, through the API: creating and deleting jobs rewrites the collection's row (its job counter),
    not the ETag its clients see; a PATCH of the collection is guarded by it."""
    opened = api.call("GET", collection).headers["ETag"]
    for name in ("a", "b"):
        assert api.call("PUT", f"{collection}/jobs/{name}", lowercase_job()).status_code == 201
    assert api.call("DELETE", f"{collection}/jobs/a").status_code == 200
    assert api.call("GET", collection).headers["ETag"] == opened
    tagged = api.call("PATCH", collection, {"tags": {"team": "ops"}}, headers={"If-Match": opened})
    assert tagged.status_code == 200, tagged.text
    assert tagged.headers["ETag"] != opened
    stale = api.call("PATCH", collection, {"tags": {"team": "dev"}}, headers={"If-Match": opened})
    assert stale.status_code == 412
    assert api.call("GET", collection).json()["tags"] == {"team": "ops"}


def test_paging_links_are_absolute_and_keep_the_query(api: Api, collection: str) -> None:
    for name in ("a", "b", "c"):
        assert api.call("PUT", f"{collection}/jobs/{name}", lowercase_job()).status_code == 201
    first = api.call("GET", f"{collection}/jobs", query={"$top": "2", "$filter": "state eq enabled"}).json()
    assert [job["name"] for job in first["value"]] == ["jc/a", "jc/b"]
    link = first["nextLink"]
    assert link.startswith(api.base_url)
    assert "api-version=2016-03-01" in link
    assert "%24top=2" in link.replace("$", "%24")
    second = api.call("GET", link).json()
    assert [job["name"] for job in second["value"]] == ["jc/c"]
    assert "nextLink" not in second
    for bad in ("0", "101", "x"):
        assert api.call("GET", f"{collection}/jobs", query={"$top": bad}).status_code == 400
    assert api.call("GET", f"{collection}/jobs", query={"$filter": "name eq 'a'"}).status_code == 400


def test_concurrent_creates_never_exceed_max_job_count(api: Api) -> None:
    from concurrent.futures import ThreadPoolExecutor

    small = JC_PATH.replace("/jc", "/small")
    body = {"location": "westus", "properties": {"quota": {"maxJobCount": 5}}}
    assert api.call("PUT", small, body).status_code == 201
    with ThreadPoolExecutor(max_workers=12) as pool:
        statuses = list(
            pool.map(lambda i: api.call("PUT", f"{small}/jobs/j{i}", lowercase_job()).status_code, range(12))
        )
    assert sorted(statuses) == [201] * 5 + [409] * 7
    assert len(api.call("GET", f"{small}/jobs").json()["value"]) == 5
    # Deleting one frees a slot; replacing an existing job needs none.
    listed = api.call("GET", f"{small}/jobs").json()["value"]
    first, second = (job["name"].split("/")[1] for job in listed[:2])
    assert api.call("PUT", f"{small}/jobs/{first}", lowercase_job()).status_code == 200
    assert api.call("DELETE", f"{small}/jobs/{second}").status_code == 200
    assert api.call("PUT", f"{small}/jobs/new", lowercase_job()).status_code == 201
    assert api.call("PUT", f"{small}/jobs/newer", lowercase_job()).status_code == 409


def test_free_collections_default_retries_to_hourly_and_refuse_faster_ones(api: Api) -> None:
    free = JC_PATH.replace("/jc", "/free")
    body = {"location": "westus", "properties": {"sku": {"name": "free"}}}
    assert api.call("PUT", free, body).status_code == 201
    plain = lowercase_job(recurrence={"frequency": "hour", "interval": 1})
    del plain["properties"]["action"]["retryPolicy"]
    created = api.call("PUT", f"{free}/jobs/plain", plain)
    assert created.status_code == 201, created.text
    assert created.json()["properties"]["action"]["retryPolicy"] == {
        "retryType": "Fixed",
        "retryInterval": "PT1H",
        "retryCount": 4,
    }
    fast = lowercase_job(recurrence={"frequency": "hour", "interval": 1})
    fast["properties"]["action"]["retryPolicy"] = {"retryType": "fixed", "retryInterval": "PT30S"}
    refused = api.call("PUT", f"{free}/jobs/fast", fast)
    assert refused.status_code == 409
    assert "retryInterval" in refused.json()["error"]["message"]
    assert api.call("GET", f"{free}/jobs/fast").status_code == 404
    patched = api.call("PATCH", f"{free}/jobs/plain", {"properties": {"recurrence": {"interval": 2}}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["properties"]["action"]["retryPolicy"]["retryInterval"] == "PT1H"
