"""Job collection definitions (plans, quotas, states) and JSON merge patch."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from scheduler_core.definitions import (
    CollectionSpec,
    collection_json,
    merge_collection_patch,
    merge_patch,
    parse_collection,
    read_collection_properties,
)
from scheduler_core.errors import ValidationError
from scheduler_core.model import CollectionState, MaxRecurrence, Quota, Sku
from scheduler_core.recurrence import Frequency

HOUR = Frequency.HOUR
MINUTE = Frequency.MINUTE


def collection(**properties: Any) -> dict[str, Any]:
    return {"location": "westus", "properties": properties}


def parse(data: dict[str, Any], name: str = "jc") -> CollectionSpec:
    return parse_collection(data, name=name)


def rejects(data: Any, path: str, *words: str) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        parse(data)
    assert caught.value.path == path, caught.value.message
    assert caught.value.status == 400
    for word in words:
        assert word in caught.value.message
    return caught.value


@pytest.mark.parametrize(
    ("sku", "name", "jobs", "recurrence"),
    [
        ("Free", Sku.FREE, 5, MaxRecurrence(HOUR, 1)),
        ("free", Sku.FREE, 5, MaxRecurrence(HOUR, 1)),
        ("Standard", Sku.STANDARD, 50, MaxRecurrence(MINUTE, 1)),
        ("p10premium", Sku.P10_PREMIUM, 50, MaxRecurrence(MINUTE, 1)),
        ("Premium", Sku.P10_PREMIUM, 50, MaxRecurrence(MINUTE, 1)),
        ("P20PREMIUM", Sku.P20_PREMIUM, 1000, MaxRecurrence(MINUTE, 1)),
    ],
)
def test_plan_defaults(sku: str, name: Sku, jobs: int, recurrence: MaxRecurrence) -> None:
    spec = parse(collection(sku={"name": sku}))
    assert (spec.sku, spec.quota) == (name, Quota(jobs, recurrence))
    assert spec.quota == name.limits
    assert json.dumps(spec.properties) == json.dumps(
        {
            "sku": {"name": str(name)},
            "state": "Enabled",
            "quota": {
                "maxJobCount": jobs,
                "maxRecurrence": {"frequency": str(recurrence.frequency), "interval": recurrence.interval},
            },
        }
    )


def test_defaults_without_properties() -> None:
    spec = parse({"location": "westeurope"})
    assert (spec.sku, spec.state, spec.quota) == (
        Sku.STANDARD,
        CollectionState.ENABLED,
        Quota(50, MaxRecurrence(MINUTE, 1)),
    )
    assert spec.tags == {}
    assert spec.location == "westeurope"
    assert spec.quota.max_job_occurrence is None


def test_full_body_round_trips() -> None:
    data = {
        "id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/JC",
        "type": "Microsoft.Scheduler/jobCollections",
        "name": "JC",
        "location": "westus",
        "tags": {"env": "test"},
        "properties": {
            "sku": {"name": "standard"},
            "state": "disabled",
            "quota": {
                "maxJobCount": 10,
                "maxJobOccurrence": 100,
                "maxRecurrence": {"frequency": "hour", "interval": 2},
            },
        },
    }
    spec = parse(data, name="jc")
    assert spec.state is CollectionState.DISABLED
    assert spec.quota == Quota(10, MaxRecurrence(HOUR, 2), max_job_occurrence=100)
    assert json.dumps(spec.properties["quota"]) == json.dumps(
        {"maxJobCount": 10, "maxRecurrence": {"frequency": "Hour", "interval": 2}, "maxJobOccurrence": 100}
    )
    again = parse({"location": spec.location, "tags": spec.tags, "properties": spec.properties})
    assert again == spec


def test_the_canonical_json_reads_back_as_the_same_values_and_writes_the_same_bytes() -> None:
    for body in (
        collection(),
        collection(sku={"name": "Free"}, state="Disabled"),
        collection(sku={"name": "P20Premium"}, quota={"maxJobOccurrence": 3, "maxRecurrence": {"frequency": "Week"}}),
    ):
        spec = parse(body)
        stored = json.loads(json.dumps(spec.properties))  # as a store keeps it: JSON text
        assert read_collection_properties(stored) == (spec.sku, spec.state, spec.quota)
        assert json.dumps(collection_json(*read_collection_properties(stored))) == json.dumps(spec.properties)
    stored = collection_json(Sku.FREE, CollectionState.SUSPENDED, Quota(2, MaxRecurrence(Frequency.DAY, 1)))
    assert read_collection_properties(stored) == (
        Sku.FREE,
        CollectionState.SUSPENDED,
        Quota(2, MaxRecurrence(Frequency.DAY, 1)),
    )


def test_quota_may_be_stricter_than_the_plan() -> None:
    spec = parse(
        collection(sku={"name": "Free"}, quota={"maxJobCount": 1, "maxRecurrence": {"frequency": "Day", "interval": 1}})
    )
    assert spec.quota == Quota(1, MaxRecurrence(Frequency.DAY, 1))
    # missing parts of maxRecurrence default to the plan's frequency and interval 1
    free_every_3 = parse(collection(sku={"name": "Free"}, quota={"maxRecurrence": {"interval": 3}}))
    assert free_every_3.quota.max_recurrence == MaxRecurrence(HOUR, 3)
    weekly = parse(collection(quota={"maxRecurrence": {"frequency": "week"}}))
    assert weekly.quota.max_recurrence == MaxRecurrence(Frequency.WEEK, 1)
    # equal to the plan is fine
    assert parse(
        collection(sku={"name": "Free"}, quota={"maxRecurrence": {"frequency": "Minute", "interval": 60}})
    ).quota.max_recurrence == MaxRecurrence(MINUTE, 60)


@pytest.mark.parametrize(
    ("data", "path", "words"),
    [
        ({}, "location", ("required",)),
        ({"location": ""}, "location", ("empty",)),
        ({"location": 1}, "location", ("string",)),
        ({"location": "westus", "name": "other"}, "name", ("URL",)),
        ({"location": "westus", "sku": {"name": "Free"}}, "sku", ("not a known field",)),
        ({"location": "westus", "tags": {"a": 1}}, "tags.a", ("string",)),
        ({"location": "westus", "tags": {f"t{i}": "" for i in range(51)}}, "tags", ("50",)),
        ({"location": "westus", "properties": []}, "properties", ("object",)),
        (collection(sku={"name": "Gold"}), "properties.sku.name", ("Free, Standard, P10Premium, P20Premium",)),
        (collection(sku={"tier": "Free"}), "properties.sku.tier", ("not a known field",)),
        (collection(state="Suspended"), "properties.state", ("set by the service", "Enabled or Disabled")),
        (collection(state="deleted"), "properties.state", ("set by the service",)),
        (collection(state="on"), "properties.state", ("Enabled, Disabled",)),
        (
            collection(sku={"name": "Free"}, quota={"maxJobCount": 6}),
            "properties.quota.maxJobCount",
            ("exceeds the Free plan", "5"),
        ),
        (
            collection(sku={"name": "Standard"}, quota={"maxJobCount": 51}),
            "properties.quota.maxJobCount",
            ("exceeds the Standard plan",),
        ),
        (collection(quota={"maxJobCount": 0}), "properties.quota.maxJobCount", ("between 1",)),
        (collection(quota={"maxJobCount": "5"}), "properties.quota.maxJobCount", ("integer",)),
        (collection(quota={"maxJobOccurrence": -1}), "properties.quota.maxJobOccurrence", ("between 1",)),
        (
            collection(sku={"name": "Free"}, quota={"maxRecurrence": {"frequency": "Minute", "interval": 59}}),
            "properties.quota.maxRecurrence",
            ("exceeds the Free plan",),
        ),
        (
            collection(quota={"maxRecurrence": {"frequency": "Second", "interval": 1}}),
            "properties.quota.maxRecurrence.frequency",
            (),
        ),
        (
            collection(quota={"maxRecurrence": {"frequency": "Hour", "interval": 0}}),
            "properties.quota.maxRecurrence.interval",
            (),
        ),
        (collection(quota={"maxJobs": 3}), "properties.quota.maxJobs", ("not a known field",)),
        (collection(provisioningState="Succeeded"), "properties.provisioningState", ("not a known field",)),
    ],
)
def test_collection_rules_name_the_path(data: dict[str, Any], path: str, words: tuple[str, ...]) -> None:
    rejects(data, path, *words)


def test_body_name_matches_the_url_in_any_casing() -> None:
    assert parse({"location": "westus", "name": "MyJobs"}, name="myjobs").location == "westus"


def test_stored_collections_may_carry_service_states() -> None:
    spec = parse_collection(collection(state="Suspended"), name="jc", validate_limits=False)
    assert spec.state is CollectionState.SUSPENDED


# ----------------------------------------------------------------------------------- merge patch


def test_merge_patch_rfc7386() -> None:
    stored = {"a": {"b": 1, "c": [1, 2], "d": {"e": 1}}, "f": "x", "g": 1}
    snapshot = copy.deepcopy(stored)
    patch = {"a": {"b": None, "c": [3], "d": {"n": 2}}, "f": {"new": True}, "h": None, "i": [None]}
    assert merge_patch(stored, patch) == {
        "a": {"c": [3], "d": {"e": 1, "n": 2}},
        "f": {"new": True},
        "g": 1,
        "i": [None],
    }
    assert stored == snapshot  # neither input is modified
    assert merge_patch(stored, {}) == stored
    assert merge_patch({"a": 1}, {"a": {"b": None}}) == {"a": {}}


def test_merge_patch_result_shares_nothing_with_its_inputs() -> None:
    stored: dict[str, Any] = {"a": {"b": [1]}}
    patch: dict[str, Any] = {"c": {"d": [2]}}
    merged = merge_patch(stored, patch)
    merged["a"]["b"].append(9)
    merged["c"]["d"].append(9)
    assert stored == {"a": {"b": [1]}}
    assert patch == {"c": {"d": [2]}}


def test_merge_patch_matches_field_names_in_any_casing() -> None:
    stored = {"properties": {"action": {"retryPolicy": {"retryType": "Fixed", "retryCount": 4}}}}
    merged = merge_patch(stored, {"Properties": {"action": {"retryPolicy": {"retrytype": "none"}}}})
    assert merged == {"Properties": {"action": {"retryPolicy": {"retrytype": "none", "retryCount": 4}}}}


def test_merge_patch_rejects_a_body_that_is_not_an_object() -> None:
    with pytest.raises(ValidationError):
        merge_patch({}, [1, 2])  # type: ignore[arg-type]


def test_collection_patch_of_state_and_quota() -> None:
    stored = parse(collection(sku={"name": "Standard"}, quota={"maxJobCount": 20}))
    output = {"location": stored.location, "tags": stored.tags, "properties": stored.properties}
    patched = parse(merge_patch(output, {"properties": {"state": "Disabled"}, "tags": {"k": "v"}}))
    assert (patched.state, patched.quota.max_job_count, patched.tags) == (CollectionState.DISABLED, 20, {"k": "v"})


def test_collection_downgrade_through_plain_merge_patch_fails_and_merge_collection_patch_resets_the_quota() -> None:
    stored = parse(collection(sku={"name": "Standard"}))
    output = {"location": stored.location, "tags": stored.tags, "properties": stored.properties}
    to_free = {"properties": {"sku": {"name": "free"}}}
    with pytest.raises(ValidationError):
        parse(merge_patch(output, to_free))
    spec = parse(merge_collection_patch(output, to_free))
    assert (spec.sku, spec.quota) == (Sku.FREE, Quota(5, MaxRecurrence(HOUR, 1)))
    # a quota the patch names is kept
    spec = parse(merge_collection_patch(output, {"properties": {"sku": {"name": "Free"}, "quota": {"maxJobCount": 2}}}))
    assert spec.quota == Quota(2, MaxRecurrence(HOUR, 1))
    # without a sku change, the stored quota stays
    stricter = parse(collection(quota={"maxJobCount": 3}))
    output = {"location": stricter.location, "tags": stricter.tags, "properties": stricter.properties}
    assert parse(merge_collection_patch(output, {"properties": {"sku": {"name": "STANDARD"}}})).quota.max_job_count == 3
