"""Names in request paths, through the local host with raw HTTP (the exact bytes of each path are sent):
a name addresses exactly the resource it spells, or the request is a 400 naming it and stores nothing."""

from __future__ import annotations

import http.client
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from scheduler_core.adapters.azure.clients import table_service
from scheduler_core.storage.keys import MAX_NAME_UNITS
from scheduler_core.storage.names import TABLES
from tests.e2e.conftest import API_VERSION, Api, give_back_slots_ahead
from tests.support.jobs import every, http_action, job_body

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

JC = "/subscriptions/sub1/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"


def send(api: Api, method: str, target: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    """Send ``target`` byte for byte (no client-side normalisation of dot segments or escapes)."""
    parts = urlsplit(api.base_url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    payload = json.dumps(body).encode() if body is not None else b""
    headers = {"Authorization": f"Bearer {api.key}", "Content-Length": str(len(payload))}
    if body is not None:
        headers["Content-Type"] = "application/json"
    separator = "&" if "?" in target else "?"
    try:
        connection.putrequest(method, f"{target}{separator}api-version={API_VERSION}", skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders(payload)
        response = connection.getresponse()
        data = response.read()
    finally:
        connection.close()
    return response.status, json.loads(data) if data else {}


def hourly_job() -> dict[str, Any]:
    start = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return job_body(start, http_action("http://127.0.0.1:9/x", method="GET", body=None), every("Hour"))


COLLECTION_BODY = {"location": "westus", "properties": {"sku": {"name": "Standard"}}}


def stored(api: Api) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table of this test (job rows, due-index rows, collection rows with JobCount...)."""
    give_back_slots_ahead()
    service = table_service(api.settings)
    snapshot: dict[str, list[dict[str, Any]]] = {}
    for base in TABLES:
        rows = service.get_table_client(api.settings.table_name(base)).list_entities()
        snapshot[base] = sorted((dict(row) for row in rows), key=lambda r: (r["PartitionKey"], r["RowKey"]))
    return snapshot


@pytest.fixture
def payroll(api: Api) -> dict[str, Any]:
    assert send(api, "PUT", JC, COLLECTION_BODY)[0] == 201
    status, job = send(api, "PUT", f"{JC}/jobs/payroll", hourly_job())
    assert status == 201, job
    return job


REFUSED_JOB_NAMES = [
    "payroll%3Fcopy",
    "payroll%3Fother",
    "payroll%3F",
    "a%2541",
    "payroll%2541",
    "payroll%2Frun",
    "payroll%2fhistory",
    "payroll%252Frun",
    "payroll%23x",
    "payroll%5Cx",
    "..",
    ".",
    "%2E%2E",
    "%2e",
    "pay%0Aroll",
    "pay%00roll",
    "pay%7Froll",
    "payroll.",
    "payroll%20",
    "%FF",
    "x" * 201,
    "x" * 513,
    "y" * 700,
    "z" * 1024,
    "%E6%97%A5" * 201,
    "%F0%9F%98%80" * 101,
    "%E2%84%AA",
]


@pytest.mark.parametrize("name", REFUSED_JOB_NAMES)
def test_a_bad_job_name_is_a_400_naming_it_and_changes_nothing(api: Api, payroll: dict[str, Any], name: str) -> None:
    before = stored(api)
    for method, suffix, body in (
        ("PUT", "", hourly_job()),
        ("PATCH", "", {"properties": {"state": "Disabled"}}),
        ("DELETE", "", None),
        ("POST", "/run", None),
        ("GET", "", None),
        ("GET", "/history", None),
    ):
        status, error = send(api, method, f"{JC}/jobs/{name}{suffix}", body)
        assert status == 400, (method, name, status, error)
        assert error["error"]["code"] == "BadRequest"
        assert error["error"]["message"].startswith("jobName: "), error
    assert stored(api) == before  # no job, no due-index row, no reserved slot, no history
    status, job = send(api, "GET", f"{JC}/jobs/payroll")
    assert status == 200 and job == payroll


def test_payroll_is_untouched_by_names_that_once_reached_it(api: Api, payroll: dict[str, Any]) -> None:
    # Before the fix, the first replaced 'payroll', the second deleted it and the third ran it.
    assert send(api, "PUT", f"{JC}/jobs/payroll%3Fcopy", {**hourly_job(), "properties": {}})[0] == 400
    assert send(api, "DELETE", f"{JC}/jobs/payroll%3Fother")[0] == 400
    assert send(api, "POST", f"{JC}/jobs/payroll%2Frun")[0] == 400
    assert send(api, "GET", f"{JC}/jobs/payroll") == (200, payroll)
    assert send(api, "GET", f"{JC}/jobs/payroll/history") == (200, {"value": []})


def test_dot_segments_do_not_reach_the_collection(api: Api, payroll: dict[str, Any]) -> None:
    for name in ("..", "%2E%2E", ".", "%2e"):
        assert send(api, "DELETE", f"{JC}/jobs/{name}")[0] == 400
    assert send(api, "GET", JC)[0] == 200
    assert send(api, "GET", f"{JC}/jobs/payroll") == (200, payroll)


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("%E6%97%A5%E6%9C%AC", "日本"),
        ("%C3%A9t%C3%A9", "été"),
        ("%F0%9F%98%80" * 100, "\U0001f600" * 100),
        ("%E6%97%A5" * 200, "日" * 200),
        ("x" * 200, "x" * 200),
        ("Job%20Name", "Job Name"),
        ("it's", "it's"),
        ("a%7Cb", "a|b"),
        ("%CE%9F%CE%94%CE%9F%CE%A3", "ΟΔΟΣ"),
    ],
)
def test_a_valid_name_addresses_exactly_the_resource_it_spells(api: Api, raw: str, name: str) -> None:
    assert send(api, "PUT", JC, COLLECTION_BODY)[0] == 201
    status, job = send(api, "PUT", f"{JC}/jobs/{raw}", hourly_job())
    assert status == 201, job
    assert job["name"] == f"jc/{name}"
    assert job["id"].endswith(f"/jobs/{name}")
    status, read = send(api, "GET", f"{JC}/jobs/{quote(name.upper(), safe='')}")  # names ignore case
    assert status == 200 and read["name"] == f"jc/{name}"
    assert send(api, "GET", f"{JC}/jobs/payroll")[0] == 404
    listed = send(api, "GET", f"{JC}/jobs")[1]["value"]
    assert [item["name"] for item in listed] == [f"jc/{name}"]
    assert send(api, "DELETE", f"{JC}/jobs/{raw}")[0] == 200
    assert send(api, "GET", f"{JC}/jobs/{raw}")[0] == 404


@pytest.mark.parametrize(
    ("template", "field"),
    [
        ("/subscriptions/{}/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc", "subscriptionId"),
        ("/subscriptions/sub1/resourceGroups/{}/providers/Microsoft.Scheduler/jobCollections/jc", "resourceGroupName"),
        ("/subscriptions/sub1/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/{}", "jobCollectionName"),
    ],
)
@pytest.mark.parametrize("raw", ["jc%3Fx", "jc%2Fx", "a%2541", "..", "jc%0A", "jc.", "jc%20", "w" * 513])
def test_collection_names_follow_the_same_rule(api: Api, template: str, field: str, raw: str) -> None:
    before = stored(api)
    for method, body in (("PUT", COLLECTION_BODY), ("GET", None), ("DELETE", None)):
        status, error = send(api, method, template.format(raw), body)
        assert status == 400, (method, raw, status, error)
        assert error["error"]["message"].startswith(f"{field}: "), error
    assert stored(api) == before


def test_the_longest_names_of_every_kind_are_stored_and_found(api: Api) -> None:
    sub, rg, jc, job = ("|" * (MAX_NAME_UNITS[f] // 3) for f in MAX_NAME_UNITS)
    collection = (
        f"/subscriptions/{quote(sub)}/resourceGroups/{quote(rg)}/providers/Microsoft.Scheduler/jobCollections/"
        f"{quote(jc)}"
    )
    assert send(api, "PUT", collection, COLLECTION_BODY)[0] == 201
    status, created = send(api, "PUT", f"{collection}/jobs/{quote(job)}", hourly_job())
    assert status == 201, created
    longest = "d" * MAX_NAME_UNITS["jobName"]
    assert send(api, "PUT", f"{collection}/jobs/{longest}", hourly_job())[0] == 201
    assert send(api, "POST", f"{collection}/jobs/{longest}/run")[0] == 200
    assert len(send(api, "GET", f"{collection}/jobs")[1]["value"]) == 2
    rows = stored(api)
    assert len(rows["DueIndex"]) >= 2  # one per job, and the run's watch row
    assert send(api, "DELETE", collection)[0] == 200


def test_a_name_is_one_name_in_any_case_even_with_a_final_sigma(api: Api) -> None:
    # str.lower folds a word-final 'Σ' to 'ς' but a lone one to 'σ': 'ΟΔΟΣ' and 'οδοσ' once had two keys.
    assert send(api, "PUT", JC, COLLECTION_BODY)[0] == 201
    assert send(api, "PUT", f"{JC}/jobs/{quote('ΟΔΟΣ')}", hourly_job())[0] == 201
    status, job = send(api, "GET", f"{JC}/jobs/{quote('οδοσ')}")
    assert status == 200 and job["name"] == "jc/ΟΔΟΣ"
    assert send(api, "PUT", f"{JC}/jobs/{quote('ΟδΟσ')}", hourly_job())[0] == 200  # the same job, updated
    assert len(send(api, "GET", f"{JC}/jobs")[1]["value"]) == 1
