"""Preview features in plain sight (issue 27): a preview property written with a classic api-version is still
refused (a 400 naming the field, as 2016-03-01 always refused an unknown field), and the error says which
api-version accepts it. Every property the preview document adds to a writable definition is covered, at
every place it can appear; the list is read from the two OpenAPI documents, so a new preview property
without its hint fails here."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_core.api import openapi
from scheduler_core.definitions import CLASSIC_VERSION, PREVIEW_VERSION, Wire, parse_collection, parse_job
from scheduler_core.errors import ValidationError

NOW = datetime.now(UTC).replace(microsecond=0)
START = (NOW + timedelta(days=1)).strftime("%Y-%m-%dT%H:00:00Z")
HINT = f"is not a known field in api-version {CLASSIC_VERSION}; it is accepted with api-version={PREVIEW_VERSION}"
SECRET = "whsec_" + "a" * 32
DOCUMENTS = Path(openapi.__file__).parent

#: A value the preview accepts for each preview property, by the definition that holds it.
VALUES: dict[tuple[str, str], Any] = {
    ("JobProperties", "overlapPolicy"): "Skip",
    ("JobProperties", "missedRunPolicy"): {"mode": "Skip"},
    ("JobProperties", "pauseAfterFailures"): 3,
    ("JobProperties", "deleteAfterCompletion"): True,
    ("JobProperties", "tags"): {"team": "payments"},
    ("JobProperties", "description"): "Settles the day's payments",
    ("JobProperties", "notifications"): {
        "onFailure": {"type": "Https", "request": {"uri": "https://alerts.example/failed", "method": "POST"}}
    },
    ("JobRecurrence", "cron"): "0 9 * * MON-FRI",
    ("JobRecurrence", "jitter"): "PT1M",
    ("JobRecurrence", "exclusions"): {"dates": ["2031-01-01"]},
    ("JobAction", "expandPlaceholders"): True,
    ("JobAction", "flowControl"): {"ratePerSecond": 2, "parallelism": 1},
    ("HttpRequest", "signing"): {"scheme": "StandardWebhooks", "secret": SECRET},
    ("HttpRequest", "timeout"): "PT30S",
    ("HttpRequest", "asyncPolling"): {"maxDuration": "PT10M"},
    ("RetryPolicy", "retryOn"): ["5xx", "429", "Timeout"],
    ("RetryPolicy", "maxRetryDuration"): "PT1H",
}
#: A value the preview accepts for each preview property of a job collection.
COLLECTION_VALUES: dict[tuple[str, str], Any] = {
    ("JobCollectionProperties", "historyRetention"): {"succeeded": "P7D", "failed": 5000},
}
#: Where each definition sits in a job body (the JSON paths of its objects; an error action's request too).
PLACES: dict[str, tuple[tuple[str, ...], ...]] = {
    "JobProperties": (("properties",),),
    "JobRecurrence": (("properties", "recurrence"),),
    "JobAction": (("properties", "action"),),
    "HttpRequest": (("properties", "action", "request"), ("properties", "action", "errorAction", "request")),
    "RetryPolicy": (
        ("properties", "action", "retryPolicy"),
        ("properties", "action", "errorAction", "retryPolicy"),
    ),
}
#: Read-only preview properties: answered, never written (a client echoing them back is not refused for it).
READ_ONLY = {
    ("JobStatus", "disabledReason"),
    ("JobHistoryDefinitionProperties", "trigger"),
    ("JobHistoryDefinitionProperties", "dueTime"),
    ("JobHistoryDefinitionProperties", "flowWait"),
}


def body() -> dict[str, Any]:
    request = {"uri": "https://example.org/hook", "method": "POST", "body": "x"}
    retry = {"retryType": "Fixed", "retryInterval": "PT30S", "retryCount": 2}
    return {
        "properties": {
            "startTime": START,
            "action": {
                "type": "Https",
                "request": request,
                "retryPolicy": retry,
                "errorAction": {"type": "Https", "request": copy.deepcopy(request), "retryPolicy": dict(retry)},
            },
            "recurrence": {"frequency": "Hour", "interval": 1},
        }
    }


def refused(job: dict[str, Any], wire: Wire = Wire.CLASSIC) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        parse_job(job, now=NOW, wire=wire)
    return caught.value


def placed(place: tuple[str, ...], name: str, value: Any) -> dict[str, Any]:
    job = body()
    if name.lower() == "cron":  # a cron string replaces frequency and interval
        job["properties"]["recurrence"] = {}
    target = job
    for key in place:
        target = target[key]
    target[name] = copy.deepcopy(value)
    return job


def added_by_the_preview() -> set[tuple[str, str]]:
    """(definition, property) of every property the preview document adds to a 2016-03-01 definition."""
    classic = json.loads((DOCUMENTS / "microsoft-scheduler-2016-03-01.json").read_text())["definitions"]
    preview = json.loads((DOCUMENTS / "microsoft-scheduler-2026-12-01-preview.json").read_text())["definitions"]
    return {
        (name, prop)
        for name, definition in preview.items()
        if name in classic
        for prop in set(definition.get("properties", {})) - set(classic[name].get("properties", {}))
    }


def test_the_properties_covered_here_are_every_one_the_preview_adds() -> None:
    assert added_by_the_preview() == set(VALUES) | set(COLLECTION_VALUES) | READ_ONLY
    # calendars are resources of their own, not a collection property
    assert ("JobCollectionProperties", "calendars") not in added_by_the_preview()


@pytest.mark.parametrize(
    ("definition", "name", "place"),
    [(definition, name, place) for (definition, name) in VALUES for place in PLACES[definition]],
    ids=lambda part: ".".join(part) if isinstance(part, tuple) else str(part),
)
def test_a_preview_property_with_the_classic_version_names_the_version_that_accepts_it(
    definition: str, name: str, place: tuple[str, ...]
) -> None:
    value = VALUES[(definition, name)]
    for spelling in (name, name.upper()):  # field names are not case-sensitive
        error = refused(placed(place, spelling, value))
        assert (error.path, error.rule) == (".".join((*place, spelling)), HINT)
        assert str(error) == f"{'.'.join((*place, spelling))}: {HINT}"  # the ARM error's message
        assert error.status == 400 and error.code == "BadRequest"
    parse_job(placed(place, name, value), now=NOW, wire=Wire.PREVIEW)  # the preview takes it


@pytest.mark.parametrize("place", PLACES["HttpRequest"], ids=".".join)
def test_managed_identity_authentication_with_the_classic_version_names_the_version_that_accepts_it(
    place: tuple[str, ...],
) -> None:
    authentication = {"type": "managedServiceIdentity", "audience": "https://management.azure.com/"}
    error = refused(placed(place, "authentication", authentication))
    assert error.path == ".".join((*place, "authentication", "type"))
    assert error.rule == (
        f"is not a known authentication type ('ManagedServiceIdentity') in api-version {CLASSIC_VERSION}; "
        f"it is accepted with api-version={PREVIEW_VERSION}"
    )
    parse_job(placed(place, "authentication", authentication), now=NOW, wire=Wire.PREVIEW)


def test_a_field_that_no_version_knows_keeps_the_plain_error() -> None:
    for wire in Wire:
        error = refused(placed(("properties",), "flowControl", {"maxConcurrency": 1}), wire)
        assert error.rule.startswith("is not a known field (allowed: startTime, action, recurrence, state")
        assert PREVIEW_VERSION not in error.rule
    # expandPlaceholders belongs to the job's action, not its error action: no version takes it there
    for wire in Wire:
        error = refused(placed(("properties", "action", "errorAction"), "expandPlaceholders", True), wire)
        assert error.path == "properties.action.errorAction.expandPlaceholders"
        assert error.rule.startswith("is not a known field (allowed: ") and PREVIEW_VERSION not in error.rule


@pytest.mark.parametrize(("definition", "name"), list(COLLECTION_VALUES), ids=str)
def test_a_collection_preview_property_with_the_classic_version_names_the_version_that_accepts_it(
    definition: str, name: str
) -> None:
    value = COLLECTION_VALUES[(definition, name)]
    for spelling in (name, name.upper()):
        collection = {"location": "westus", "properties": {"sku": {"name": "Standard"}, spelling: value}}
        with pytest.raises(ValidationError) as caught:
            parse_collection(collection, name="jc1")
        assert (caught.value.path, caught.value.rule) == (f"properties.{spelling}", HINT)
        assert caught.value.status == 400
        assert parse_collection(collection, name="jc1", wire=Wire.PREVIEW).history_retention is not None


def test_an_unknown_collection_field_keeps_the_plain_error() -> None:
    collection = {"location": "westus", "properties": {"sku": {"name": "Standard"}, "calendars": {}}}
    allowed = {Wire.CLASSIC: "sku, state, quota", Wire.PREVIEW: "sku, state, quota, historyRetention"}
    for wire in Wire:
        with pytest.raises(ValidationError) as caught:
            parse_collection(collection, name="jc1", wire=wire)
        assert caught.value.path == "properties.calendars"
        assert caught.value.rule == f"is not a known field (allowed: {allowed[wire]})"
