"""Schemathesis against the running service with Microsoft's published OpenAPI document of Microsoft.Scheduler,
and with the document of api-version 2026-12-01-preview derived from it.

The real function app runs on the local host over the test Azurite; schemathesis generates requests for each
of the 2016-03-01 document's 15 operations and of the preview document's 21 (valid and invalid bodies and
parameters, with a fixed seed and a bounded number of cases) and every answer must keep the contract: no 5xx,
status codes and bodies as the document says, and every error an ARM error body ``{"error": {"code",
"message"}}``.

The document is used as Microsoft published it, except for the amendments in :data:`AMENDMENTS` and the one
check exception in :func:`media_type_of_bodies`, each named and justified where the document is inconsistent
with the real 2016 service or with ARM conventions. No check is switched off globally. Path parameters are
mostly valid-looking names (so that bodies reach validation), sometimes hostile ones; bodies are mostly laid
over a valid definition (so that each generated field is judged on its own).
"""

from __future__ import annotations

import copy
import json
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import hypothesis
import jsonschema_rs
import pytest
import requests
import schemathesis
from hypothesis import strategies as st
from schemathesis.checks import CheckContext
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from local_host.azurite import Azurite, free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, settings, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.api import openapi
from tests.conftest import ROOT, sample_settings

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

#: Fixed seed and bound: the same few hundred cases on every run.
SEED = 20160301
MAX_EXAMPLES = 30  # per operation: 15 operations, at most 450 cases
PREVIEW_MAX_EXAMPLES = 20  # per operation of the preview document: 21 operations, at most 420 cases

SUBSCRIPTION, GROUP, COLLECTION, JOB, CALENDAR = "sub1", "rg", "jc", "j1", "holidays"
#: An enabled job that started in the past, so that a backfill has occurrences to send (``JOB`` is disabled,
#: and a disabled job's backfill is a 409).
BACKFILL_JOB = "j-backfill"
COLLECTION_PATH = f"subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}/providers/Microsoft.Scheduler/jobCollections"

# ------------------------------------------------------------------------------------------------ the document

ARM_ERROR_RESPONSE: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string", "minLength": 1}, "message": {"type": "string", "minLength": 1}},
        }
    },
}


def _add_arm_error_responses(document: dict[str, Any]) -> None:
    """Every operation may answer an ARM error (4xx with ``{"error": {"code", "message"}}``).

    Microsoft's document lists only the success codes: 404 on a missing job, 400 on an invalid body, 401/403
    without a valid credential, 409 on a quota, all of which the 2016 service answered, are absent. ARM's
    RPC (and every later azure-rest-api-specs document) declares them as ``default: ErrorResponse``; the
    amendment declares the same, with the ARM error body as its schema, so error bodies are validated too.
    """
    document.setdefault("definitions", {})["ErrorResponse"] = ARM_ERROR_RESPONSE
    for operations in document["paths"].values():
        for operation in operations.values():
            operation["responses"].setdefault(
                "default",
                {"description": "An ARM error.", "schema": {"$ref": "#/definitions/ErrorResponse"}},
            )


def _pin_api_version(document: dict[str, Any]) -> None:
    """``api-version`` is the document's version.

    The document declares the parameter as any string; the service (as ARM) refuses every version it does
    not serve with a 400. Declared as the one value this document describes, positive cases reach the
    operations and negative cases still send other values (which must be 400s).
    """
    document["parameters"]["apiVersion"]["enum"] = [document["info"]["version"]]


def _definitions_are_objects(document: dict[str, Any]) -> None:
    """A definition with ``properties`` is an object.

    Most definitions in the document give ``properties`` but no ``type``. AutoRest and the SDKs generated from
    the document read them as objects (the 2016 service refused anything else), but to JSON Schema a
    definition without ``type`` allows any value, so ``null``, ``true`` or ``[]`` would be "valid" job
    definitions. The amendment states the type the document means.
    """
    for definition in document["definitions"].values():
        if "properties" in definition and "type" not in definition:
            definition["type"] = "object"


#: The amendments to Microsoft's document, in order: name -> function (each says why in its docstring).
AMENDMENTS: dict[str, Callable[[dict[str, Any]], None]] = {
    "arm-error-responses": _add_arm_error_responses,
    "api-version-is-the-documents": _pin_api_version,
    "definitions-are-objects": _definitions_are_objects,
}


def contract(name: str = openapi.DOCUMENT_NAME) -> dict[str, Any]:
    """A shipped document with :data:`AMENDMENTS` applied (the shipped bytes stay as published)."""
    document: dict[str, Any] = copy.deepcopy(json.loads(openapi.document(name)))
    for amend in AMENDMENTS.values():
        amend(document)
    return document


def config(max_examples: int) -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "generation": {"mode": "all", "max-examples": max_examples, "database": "none", "deterministic": True},
            # Fuzzing only. The documents have no examples; the coverage phase would add thousands of
            # deterministic cases (about 2,100 for the job PUT alone), over the bound; its probes of methods
            # a document does not list are test_a_method_the_contract_does_not_list_gets_an_arm_405 below.
            "phases": {"examples": {"enabled": False}, "coverage": {"enabled": False}, "fuzzing": {"enabled": True}},
        }
    )


CONTRACT = contract()
PREVIEW_CONTRACT = contract(openapi.PREVIEW_DOCUMENT_NAME)
#: Each document by its api-version.
CONTRACTS = {CONTRACT["info"]["version"]: CONTRACT, PREVIEW_CONTRACT["info"]["version"]: PREVIEW_CONTRACT}
schema = schemathesis.openapi.from_dict(CONTRACT, config=config(MAX_EXAMPLES))
preview_schema = schemathesis.openapi.from_dict(PREVIEW_CONTRACT, config=config(PREVIEW_MAX_EXAMPLES))

# ------------------------------------------------------------------------------------ names the fuzzing uses

#: Names of resources that exist (the collection and job are put back before each operation's cases) or that
#: the fuzzing may create: most cases use them, so that bodies reach validation and stored resources.
VALID_NAMES: dict[str, list[str]] = {
    "subscriptionId": [SUBSCRIPTION],
    "resourceGroupName": [GROUP],
    "jobCollectionName": [COLLECTION, COLLECTION, "jc-fuzz"],
    "jobName": [JOB, "j-fuzz"],
    "calendarName": [CALENDAR, "c-fuzz"],
    "historyId": ["0" * 32, "0f" * 16],  # no entry of the seeded jobs has them: a rerun of each is a 404
}
#: Hostile names tried besides the ones schemathesis generates (any string: the document sets no pattern).
HOSTILE_NAMES = [
    "..",
    ".",
    "a/b",
    "a%2Fb",
    "%00",
    "a b",
    "x" * 300,
    "jc?x=1",
    "jc#frag",
    "Ünïcødé",
    "'; DROP TABLE Jobs; --",
    "PartitionKey eq 'x'",
    "\u202ertl",
    "-",
    "_",
    "CON",
]


#: The job names of a backfill: mostly the enabled job with a past (its 202s), sometimes the disabled one.
BACKFILL_NAMES: dict[str, list[str]] = {**VALID_NAMES, "jobName": [BACKFILL_JOB, BACKFILL_JOB, BACKFILL_JOB, JOB]}


def flatmap_path_parameters(ctx: schemathesis.HookContext, path_parameters: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Three cases in four use valid-looking names only; the others make one name hostile (from
    :data:`HOSTILE_NAMES` or schemathesis' own string)."""
    assert ctx.operation is not None
    choices = BACKFILL_NAMES if ctx.operation.path.endswith("/backfill") else VALID_NAMES
    names = sorted(path_parameters)
    valid = st.fixed_dictionaries({name: st.sampled_from(choices[name]) for name in names})

    def spoil(chosen: dict[str, Any], name: str, hostile: str | None) -> dict[str, Any]:
        return {**chosen, name: path_parameters[name] if hostile is None else hostile}

    hostile = st.builds(spoil, valid, st.sampled_from(names), st.one_of(st.none(), st.sampled_from(HOSTILE_NAMES)))
    return st.integers(0, 3).flatmap(lambda roll: hostile if roll == 0 else valid)


#: Valid bodies: most generated bodies are laid over them, so that each generated field is judged inside an
#: otherwise valid definition (instead of every case stopping at the first missing field).
VALID_COLLECTION: dict[str, Any] = {"location": "westus", "properties": {"sku": {"name": "Standard"}}}
VALID_JOB: dict[str, Any] = {
    "properties": {
        "startTime": (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "action": {"type": "Http", "request": {"uri": "http://127.0.0.1:9/never", "method": "GET"}},
        "recurrence": {"frequency": "Day", "interval": 1},
        "state": "Disabled",
    }
}


def overlay(base: Any, generated: Any) -> Any:
    """``generated`` laid over ``base``: objects merged key by key, anything else replaced."""
    if not (isinstance(base, dict) and isinstance(generated, dict)):
        return generated
    merged = copy.deepcopy(base)
    for key, value in generated.items():
        merged[key] = overlay(base[key], value) if key in base else value
    return merged


VALID_CALENDAR: dict[str, Any] = {"properties": {"dates": ["2031-12-25"]}}
_NOW = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
#: :data:`BACKFILL_JOB`: daily since 30 days ago, so that any backfill window holds at most 31 occurrences.
VALID_BACKFILL_JOB: dict[str, Any] = {
    "properties": {
        "startTime": (_NOW - timedelta(days=30, hours=-1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "action": {"type": "Http", "request": {"uri": "http://127.0.0.1:9/never", "method": "GET"}},
        "recurrence": {"frequency": "Day", "interval": 1},
        "state": "Enabled",
    }
}
#: A window of the last three days (three of :data:`BACKFILL_JOB`'s occurrences).
VALID_BACKFILL: dict[str, Any] = {
    "startTime": (_NOW - timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "endTime": _NOW.strftime("%Y-%m-%dT%H:%M:%SZ"),
}


#: The preview document's schema of a backfill window's bounds, its format asserted (as schemathesis generates).
WINDOW_BOUND = jsonschema_rs.validator_for(
    PREVIEW_CONTRACT["definitions"]["JobBackfillRequest"]["properties"]["startTime"], validate_formats=True
)


def pin_window(body: Any) -> Any:
    """A backfill body whose bounds are both valid date-times, with :data:`VALID_BACKFILL`'s bounds instead.

    Generated bounds almost never fall in the last 30 days, so without this no case would reach the 202. Only
    bounds the document accepts are replaced, by bounds it accepts: a case is exactly as valid (or invalid,
    elsewhere: ``overlapPolicy``, the body's type) as schemathesis generated it.
    """
    if isinstance(body, dict) and all(WINDOW_BOUND.is_valid(body.get(key)) for key in VALID_BACKFILL):
        return {**body, **VALID_BACKFILL}
    return body


def flatmap_body(ctx: schemathesis.HookContext, body: Any) -> st.SearchStrategy[Any]:
    """Two bodies in three are laid over a valid definition; the others are sent as generated (a backfill's:
    half with its window pinned by :func:`pin_window`, a quarter laid over the valid window)."""
    assert ctx.operation is not None
    path = ctx.operation.path
    if path.endswith("/jobs/{jobName}/backfill"):
        return st.sampled_from([pin_window(body), pin_window(body), overlay(VALID_BACKFILL, body), body])
    if path.endswith("/jobs/{jobName}"):
        base = VALID_JOB
    elif path.endswith("/calendars/{calendarName}"):
        base = VALID_CALENDAR
    else:
        base = VALID_COLLECTION
    return st.sampled_from([True, True, False]).map(lambda laid: overlay(base, body) if laid else body)


for _schema in (schema, preview_schema):
    _schema.hook(flatmap_path_parameters)
    _schema.hook(flatmap_body)


# ---------------------------------------------------------------------------------------------- the service


@dataclass
class Service:
    base_url: str
    key: str

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@pytest.fixture(scope="module")
def service(azurite: Azurite) -> Iterator[Service]:
    """The real function app on the local host over the test Azurite, with one collection and one job."""
    import function_app

    suffix = uuid.uuid4().hex[:8]
    key = auth.generate_key()
    with pytest.MonkeyPatch.context() as env:
        for name, value in sample_settings().items():
            env.setenv(name, value)
        env.setenv("AzureWebJobsStorage", azurite.connection_string)
        env.setenv("SCHEDULER_TABLE_PREFIX", f"t{suffix}")
        env.setenv("SCHEDULER_SCAN_QUEUE", f"scan-{suffix}")
        env.setenv("SCHEDULER_EXECUTION_QUEUE", f"exec-{suffix}")
        env.setenv("SCHEDULER_API_KEYS", auth.hash_entry(key))
        wiring.reset()
        provision(settings.load(os.environ))
        try:
            with LocalHost(function_app.app, ROOT / "host.json", port=free_port(), enable=frozenset({"http"})) as host:
                running = Service(host.base_url, key)
                _seed(running)
                yield running
        finally:
            wiring.reset()


def _seed(service: Service) -> None:
    def put(path: str, body: dict[str, Any], version: str = "2016-03-01") -> None:
        url = f"{service.base_url}/{path}?api-version={version}"
        response = requests.put(url, json=body, headers=service.headers(), timeout=30)
        assert response.status_code in (200, 201), response.text

    collection = f"{COLLECTION_PATH}/{COLLECTION}"
    put(collection, VALID_COLLECTION)
    put(f"{collection}/jobs/{JOB}", VALID_JOB)
    put(f"{collection}/jobs/{BACKFILL_JOB}", VALID_BACKFILL_JOB)
    put(f"{collection}/calendars/{CALENDAR}", VALID_CALENDAR, PREVIEW_CONTRACT["info"]["version"])


# --------------------------------------------------------------------------------------------------- checks


def is_arm_error(response: Any) -> None:
    """Every 4xx carries an ARM error body: ``{"error": {"code": <non-empty>, "message": <non-empty>}}``."""
    if response.status_code < 400:
        return
    try:
        body = json.loads(response.content)
    except ValueError:
        raise AssertionError(f"{response.status_code} without a JSON body: {response.content[:200]!r}") from None
    error = body.get("error") if isinstance(body, dict) else None
    assert isinstance(error, dict), f"{response.status_code} without an ARM error body: {body!r}"
    assert isinstance(error.get("code"), str) and error["code"], f"ARM error without a code: {body!r}"
    assert isinstance(error.get("message"), str) and error["message"], f"ARM error without a message: {body!r}"


@schemathesis.check
def arm_error_body(ctx: CheckContext, response: schemathesis.Response, case: schemathesis.Case) -> bool | None:
    is_arm_error(response)
    return None


@schemathesis.check
def no_server_error(ctx: CheckContext, response: schemathesis.Response, case: schemathesis.Case) -> bool | None:
    assert response.status_code < 500, f"{response.status_code}: {response.content[:500]!r}"
    return None


def documented_without_body(case: schemathesis.Case, status: int) -> bool:
    """The document gives ``status`` for this operation and no schema for it (nothing to return). The
    preview document holds every operation of the 2016-03-01 one, with the same responses."""
    responses = PREVIEW_CONTRACT["paths"][case.operation.path][case.method.lower()]["responses"]
    documented = responses.get(str(status))
    return documented is not None and "schema" not in documented


@schemathesis.check
def media_type_of_bodies(ctx: CheckContext, response: schemathesis.Response, case: schemathesis.Case) -> bool | None:
    """``content_type_conformance``, except for an empty body where the document gives no schema.

    Exception "empty-success-bodies-have-no-media-type": the document's global ``produces`` makes schemathesis
    expect a Content-Type on every answer, but DELETE, enable, disable and run answer 200 with nothing to
    return (the document gives their 200s no schema; ARM and the 2016 service answer them with an empty
    body, and an empty body has no media type). Any answer with a body is still checked.
    """
    if not response.content and documented_without_body(case, response.status_code):
        return None
    return content_type_conformance(ctx, response, case)


CHECKS = [
    no_server_error,
    status_code_conformance,
    media_type_of_bodies,
    response_schema_conformance,
    negative_data_rejection,
    arm_error_body,
]


# ---------------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("name", openapi.DOCUMENT_NAMES)
def test_the_contract_is_served_at_its_documented_path(service: Service, name: str) -> None:
    url = f"{service.base_url}/openapi/{name}"
    response = requests.get(url, timeout=30)  # anonymous: the document is public
    assert response.status_code == 200
    assert response.content == (ROOT / "scheduler_core/api/openapi" / name).read_bytes()
    version = name.removeprefix("microsoft-scheduler-").removesuffix(".json")
    assert response.json()["info"]["title"] == "SchedulerManagementClient"
    assert response.json()["info"]["version"] == version
    head = requests.head(url, timeout=30)
    assert head.status_code == 200
    assert not head.content
    refused = requests.post(url, json={}, timeout=30)
    assert refused.status_code == 405
    assert refused.json()["error"]["code"] == "InvalidHttpVerb"


@pytest.fixture
def seeded(service: Service) -> Service:
    """The collection and the job as the fixture made them, before each operation's cases."""
    _seed(service)
    return service


@schema.parametrize()
# `seeded` runs once per operation on purpose: the examples of one operation share the state they build.
@hypothesis.settings(suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
def test_the_service_keeps_microsofts_contract(case: schemathesis.Case, seeded: Service) -> None:
    service = seeded
    response = case.call(base_url=service.base_url, headers=service.headers(), timeout=30)
    case.validate_response(response, checks=CHECKS, headers=service.headers())


@preview_schema.parametrize()
@hypothesis.settings(suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
def test_the_service_keeps_the_preview_contract(case: schemathesis.Case, seeded: Service) -> None:
    service = seeded
    response = case.call(base_url=service.base_url, headers=service.headers(), timeout=30)
    case.validate_response(response, checks=CHECKS, headers=service.headers())


PROBED_METHODS = ("GET", "PUT", "PATCH", "DELETE", "POST", "OPTIONS", "TRACE")


@pytest.mark.parametrize("version", sorted(CONTRACTS))
@pytest.mark.parametrize("method", PROBED_METHODS)
def test_a_method_the_contract_does_not_list_gets_an_arm_405(service: Service, method: str, version: str) -> None:
    names = {
        "{subscriptionId}": SUBSCRIPTION,
        "{resourceGroupName}": GROUP,
        "{jobCollectionName}": COLLECTION,
        "{jobName}": JOB,
        "{calendarName}": CALENDAR,
        "{historyId}": "0" * 32,
    }
    probed = 0
    for template, operations in CONTRACTS[version]["paths"].items():
        if method.lower() in operations:
            continue
        path = template
        for placeholder, name in names.items():
            path = path.replace(placeholder, name)
        url = f"{service.base_url}{path}?api-version={version}"
        response = requests.request(method, url, headers=service.headers(), data=b"{}", timeout=30)
        assert response.status_code == 405, f"{method} {path}: {response.status_code} {response.content[:300]!r}"
        is_arm_error(response)
        probed += 1
    assert probed > 0


def test_a_backfill_of_the_seeded_job_answers_the_documented_202(seeded: Service) -> None:
    """The fuzzing of ``Jobs_Backfill`` reaches its success: the valid window holds three occurrences."""
    path = f"{COLLECTION_PATH}/{COLLECTION}/jobs/{BACKFILL_JOB}/backfill"
    preview = PREVIEW_CONTRACT["info"]["version"]
    response = requests.post(
        f"{seeded.base_url}/{path}?api-version={preview}", json=VALID_BACKFILL, headers=seeded.headers(), timeout=30
    )
    assert (response.status_code, response.json()) == (202, {"count": 3})
    assert response.headers["Content-Type"].startswith("application/json")
    (documented,) = [item for key, item in PREVIEW_CONTRACT["paths"].items() if key.endswith("/{jobName}/backfill")]
    assert documented["post"]["responses"]["202"]["schema"] == {"$ref": "#/definitions/JobBackfillResult"}
    classic = requests.post(
        f"{seeded.base_url}/{path}?api-version=2016-03-01", json=VALID_BACKFILL, headers=seeded.headers(), timeout=30
    )
    assert classic.status_code == 400 and "api-version" in classic.json()["error"]["message"]


#: Values of ``$top`` and ``$skip`` that are not the document's integers, though Python's ``int()`` reads most of
#: them (found by the fuzzing: ``$top=`` was answered 200).
NOT_INTEGERS = ["", " 5", "5 ", "1_0", "\uff15", "\u0663", "0x10", "5.0"]


@pytest.mark.parametrize("name", ["$top", "$skip"])
@pytest.mark.parametrize("value", NOT_INTEGERS, ids=[repr(v) for v in NOT_INTEGERS])
def test_paging_parameters_that_are_not_integers_are_refused(service: Service, name: str, value: str) -> None:
    for path in (
        f"{COLLECTION_PATH}/{COLLECTION}/jobs",
        f"{COLLECTION_PATH}/{COLLECTION}/jobs/{JOB}/history",
    ):
        response = requests.get(
            f"{service.base_url}/{path}",
            params={"api-version": "2016-03-01", name: value},
            headers=service.headers(),
            timeout=30,
        )
        assert response.status_code == 400, f"GET {response.url}: {response.status_code} {response.content[:200]!r}"
        is_arm_error(response)
        assert name in response.json()["error"]["message"]
