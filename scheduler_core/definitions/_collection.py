"""Job collections: the PUT/PATCH body of a ``JobCollectionDefinition`` (plans, quotas, states), and the
canonical ``JobCollectionProperties`` JSON of a collection in both directions, for the stores and the API."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler_core.definitions._json import Fields, enum_value, join, str_map
from scheduler_core.definitions._retention import parse_history_retention, retention_json
from scheduler_core.definitions._versions import Wire
from scheduler_core.errors import ValidationError
from scheduler_core.model import CollectionState, MaxRecurrence, Quota, Sku
from scheduler_core.model.history import HistoryRetention
from scheduler_core.recurrence import Frequency, parse_frequency

__all__ = [
    "CollectionSpec",
    "collection_json",
    "parse_collection",
    "read_collection_properties",
    "read_collection_retention",
]

_SKUS = {sku.lower(): sku for sku in Sku} | {"premium": Sku.P10_PREMIUM}  # 2014-08-01-preview
_CLIENT_STATES = {"enabled": CollectionState.ENABLED, "disabled": CollectionState.DISABLED}
_ALL_STATES = _CLIENT_STATES | {"suspended": CollectionState.SUSPENDED, "deleted": CollectionState.DELETED}

#: Azure Resource Manager's tag limits.
MAX_TAGS = 50
MAX_TAG_NAME = 512
MAX_TAG_VALUE = 256
#: Largest integer the quotas accept (Int32, as the .NET service stored them).
_INT32 = 2**31 - 1


@dataclass(frozen=True)
class CollectionSpec:
    """A validated job collection: its location and tags, its plan (``sku``), ``state`` and ``quota``
    (the plan's limits where the body set none), and its ``historyRetention`` (None: not set)."""

    location: str
    tags: dict[str, str]
    sku: Sku
    state: CollectionState
    quota: Quota
    history_retention: HistoryRetention | None = None

    @property
    def properties(self) -> dict[str, Any]:
        """The canonical ``JobCollectionProperties`` JSON (:func:`collection_json`)."""
        return collection_json(self.sku, self.state, self.quota, self.history_retention)


def collection_json(
    sku: Sku, state: CollectionState, quota: Quota, history_retention: HistoryRetention | None = None
) -> dict[str, Any]:
    """A collection's canonical ``JobCollectionProperties``: what the stores keep and the API answers
    (key order: sku, state, quota, then historyRetention if set; in the quota: maxJobCount, maxRecurrence,
    then maxJobOccurrence if set). The classic wire is answered without ``history_retention``."""
    quota_json: dict[str, Any] = {
        "maxJobCount": quota.max_job_count,
        "maxRecurrence": {"frequency": str(quota.max_recurrence.frequency), "interval": quota.max_recurrence.interval},
    }
    if quota.max_job_occurrence is not None:
        quota_json["maxJobOccurrence"] = quota.max_job_occurrence
    properties: dict[str, Any] = {"sku": {"name": str(sku)}, "state": str(state), "quota": quota_json}
    if history_retention is not None:
        properties["historyRetention"] = retention_json(history_retention)
    return properties


def read_collection_properties(properties: Mapping[str, Any]) -> tuple[Sku, CollectionState, Quota]:
    """The plan, state and quota of a stored collection: ``properties`` as :func:`collection_json` wrote
    them. Trusted: nothing is validated again (the plan's limits were checked when it was written)."""
    quota = properties["quota"]
    recurrence = quota["maxRecurrence"]
    occurrences = quota.get("maxJobOccurrence")
    return (
        Sku(properties["sku"]["name"]),
        CollectionState(properties["state"]),
        Quota(
            max_job_count=int(quota["maxJobCount"]),
            max_recurrence=MaxRecurrence(Frequency(recurrence["frequency"]), int(recurrence["interval"])),
            max_job_occurrence=None if occurrences is None else int(occurrences),
        ),
    )


def read_collection_retention(properties: Mapping[str, Any]) -> HistoryRetention | None:
    """The ``historyRetention`` of a stored collection's ``properties`` (None: not set). Trusted."""
    stored = properties.get("historyRetention")
    return None if stored is None else parse_history_retention(dict(stored), "historyRetention")


def parse_collection(
    body: Mapping[str, Any], *, name: str, validate_limits: bool = True, wire: Wire = Wire.CLASSIC
) -> CollectionSpec:
    """Validate the body of a job collection PUT (or a PATCH merged into the stored collection).

    ``name`` is the collection name from the URL; a ``name`` in the body must match it (any casing).
    ``validate_limits=False`` reads a stored collection back: the service-set states ``Suspended`` and
    ``Deleted`` are then accepted. ``historyRetention`` is read on the preview ``wire`` only (on the classic
    one it is an error naming the api-version that accepts it).
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

    known = ("sku", "state", "quota", "historyRetention") if wire.preview else ("sku", "state", "quota")
    props = Fields(
        top.get("properties") if "properties" in top else {},
        top.where("properties"),
        known,
        preview=("historyRetention",),
    )
    sku = Sku.STANDARD
    if "sku" in props:
        sku_fields = Fields(props.get("sku"), props.where("sku"), ("name",))
        if "name" in sku_fields:
            sku = enum_value(sku_fields.get("name"), sku_fields.where("name"), _SKUS)
    state = CollectionState.ENABLED
    if "state" in props:
        where = props.where("state")
        state = enum_value(props.get("state"), where, _ALL_STATES)
        if validate_limits and state not in _CLIENT_STATES.values():
            raise ValidationError(where, f"'{state}' is set by the service; a client may set only Enabled or Disabled")
    quota = _quota(props, sku) if "quota" in props else sku.limits
    retention = None
    if "historyRetention" in props:
        retention = parse_history_retention(props.get("historyRetention"), props.where("historyRetention"))
    return CollectionSpec(location=location, tags=tags, sku=sku, state=state, quota=quota, history_retention=retention)


def _quota(props: Fields, sku: Sku) -> Quota:
    """``properties.quota``: each limit at most the plan's; what it does not set, the plan's."""
    plan = sku.limits
    quota = Fields(props.get("quota"), props.where("quota"), ("maxJobCount", "maxJobOccurrence", "maxRecurrence"))
    max_job_count = plan.max_job_count
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
    max_recurrence = plan.max_recurrence
    if "maxRecurrence" in quota:
        max_recurrence = _max_recurrence(quota.get("maxRecurrence"), quota.where("maxRecurrence"), sku)
    return Quota(max_job_count, max_recurrence, max_job_occurrence)


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


def _max_recurrence(value: object, path: str, sku: Sku) -> MaxRecurrence:
    plan = sku.limits.max_recurrence
    fields = Fields(value, path, ("frequency", "interval"))
    frequency = plan.frequency
    if "frequency" in fields:
        frequency = parse_frequency(fields.get("frequency"), fields.where("frequency"))
    interval = fields.integer("interval", 1, _INT32)
    limit = MaxRecurrence(frequency, 1 if interval is None else interval)
    if limit.gap < plan.gap:
        raise ValidationError(
            path,
            f"every {limit.interval} {limit.frequency} exceeds the {sku} plan, which allows jobs to recur at most "
            f"every {plan.interval} {plan.frequency} (a quota may only be set lower than the plan)",
        )
    return limit
