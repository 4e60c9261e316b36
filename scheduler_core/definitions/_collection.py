"""Job collections: the PUT/PATCH body of a ``JobCollectionDefinition`` and its plan and quota rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.definitions._json import Fields, enum_value, join, str_map
from scheduler_core.errors import ValidationError
from scheduler_core.recurrence import nominal_gap, parse_frequency

__all__ = ["PLANS", "CollectionSpec", "Plan", "parse_collection"]


@dataclass(frozen=True)
class Plan:
    """A sku's limits (scheduler-plans-billing.md): the defaults, and the most a quota may allow."""

    max_job_count: int
    max_recurrence: tuple[str, int]


PLANS: dict[str, Plan] = {
    "Free": Plan(5, ("Hour", 1)),
    "Standard": Plan(50, ("Minute", 1)),
    "P10Premium": Plan(50, ("Minute", 1)),
    "P20Premium": Plan(1000, ("Minute", 1)),
}
_SKUS = {name.lower(): name for name in PLANS} | {"premium": "P10Premium"}  # 2014-08-01-preview
_CLIENT_STATES = {"enabled": "Enabled", "disabled": "Disabled"}
_ALL_STATES = _CLIENT_STATES | {"suspended": "Suspended", "deleted": "Deleted"}

#: Azure Resource Manager's tag limits.
MAX_TAGS = 50
MAX_TAG_NAME = 512
MAX_TAG_VALUE = 256
#: Largest integer the quotas accept (Int32, as the .NET service stored them).
_INT32 = 2**31 - 1


@dataclass(frozen=True)
class CollectionSpec:
    """A validated job collection. ``properties`` is the canonical ``JobCollectionProperties`` JSON."""

    location: str
    tags: dict[str, str]
    properties: dict[str, Any]
    sku: str
    state: str
    max_job_count: int
    max_recurrence: tuple[str, int]
    max_job_occurrence: int | None = field(default=None)


def parse_collection(body: Mapping[str, Any], *, name: str, validate_limits: bool = True) -> CollectionSpec:
    """Validate the body of a job collection PUT (or a PATCH merged into the stored collection).

    ``name`` is the collection name from the URL; a ``name`` in the body must match it (any casing).
    ``validate_limits=False`` reads a stored collection back: the service-set states ``Suspended`` and
    ``Deleted`` are then accepted.
    """
    top = Fields(body, "", ("name", "location", "tags", "properties"), ignored=("id", "type"))
    body_name = top.text("name")
    if body_name is not None and body_name.lower() != name.lower():
        raise ValidationError(top.where("name"), "must match the job collection name in the URL")
    location = top.text("location", required=True, rule="is required (the region, e.g. westus)")
    assert location is not None
    if not location.strip():
        raise ValidationError(top.where("location"), "must not be empty")
    tags = _tags(top.get("tags"), top.where("tags")) if "tags" in top else {}

    props = Fields(
        top.get("properties") if "properties" in top else {}, top.where("properties"), ("sku", "state", "quota")
    )
    sku = "Standard"
    if "sku" in props:
        sku_fields = Fields(props.get("sku"), props.where("sku"), ("name",))
        if "name" in sku_fields:
            sku = enum_value(sku_fields.get("name"), sku_fields.where("name"), _SKUS)
    state = "Enabled"
    if "state" in props:
        where = props.where("state")
        state = enum_value(props.get("state"), where, _ALL_STATES)
        if validate_limits and state not in _CLIENT_STATES.values():
            raise ValidationError(where, f"'{state}' is set by the service; a client may set only Enabled or Disabled")

    plan = PLANS[sku]
    max_job_count = plan.max_job_count
    max_recurrence = plan.max_recurrence
    max_job_occurrence: int | None = None
    if "quota" in props:
        quota = Fields(props.get("quota"), props.where("quota"), ("maxJobCount", "maxJobOccurrence", "maxRecurrence"))
        count = quota.integer("maxJobCount", 1, _INT32)
        if count is not None:
            if count > plan.max_job_count:
                raise ValidationError(
                    quota.where("maxJobCount"),
                    f"{count} exceeds the {sku} plan, which allows at most {plan.max_job_count} jobs "
                    "(a quota may only be set lower than the plan)",
                )
            max_job_count = count
        max_job_occurrence = quota.integer("maxJobOccurrence", 1, _INT32)
        if "maxRecurrence" in quota:
            max_recurrence = _max_recurrence(quota.get("maxRecurrence"), quota.where("maxRecurrence"), sku, plan)

    properties: dict[str, Any] = {
        "sku": {"name": sku},
        "state": state,
        "quota": {
            "maxJobCount": max_job_count,
            "maxRecurrence": {"frequency": max_recurrence[0], "interval": max_recurrence[1]},
        },
    }
    if max_job_occurrence is not None:
        properties["quota"]["maxJobOccurrence"] = max_job_occurrence
    return CollectionSpec(
        location=location,
        tags=tags,
        properties=properties,
        sku=sku,
        state=state,
        max_job_count=max_job_count,
        max_recurrence=max_recurrence,
        max_job_occurrence=max_job_occurrence,
    )


def _tags(value: object, path: str) -> dict[str, str]:
    tags = str_map(value, path)
    if len(tags) > MAX_TAGS:
        raise ValidationError(path, f"must have at most {MAX_TAGS} tags, not {len(tags)}")
    for key, item in tags.items():
        if not key or len(key) > MAX_TAG_NAME:
            raise ValidationError(path, f"tag names must be 1 to {MAX_TAG_NAME} characters")
        if len(item) > MAX_TAG_VALUE:
            raise ValidationError(join(path, key), f"must be at most {MAX_TAG_VALUE} characters")
    return tags


def _max_recurrence(value: object, path: str, sku: str, plan: Plan) -> tuple[str, int]:
    fields = Fields(value, path, ("frequency", "interval"))
    frequency = plan.max_recurrence[0]
    if "frequency" in fields:
        frequency = parse_frequency(fields.get("frequency"), fields.where("frequency")).value
    interval = fields.integer("interval", 1, _INT32)
    if interval is None:
        interval = 1
    if nominal_gap(frequency, interval) < nominal_gap(*plan.max_recurrence):
        plan_frequency, plan_interval = plan.max_recurrence
        raise ValidationError(
            path,
            f"every {interval} {frequency} exceeds the {sku} plan, which allows jobs to recur at most "
            f"every {plan_interval} {plan_frequency} (a quota may only be set lower than the plan)",
        )
    return frequency, interval
