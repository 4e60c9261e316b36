"""JSON merge patch (RFC 7386) for PATCH of job collections and jobs."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from scheduler_core.errors import ValidationError

__all__ = ["merge_collection_patch", "merge_patch"]


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result: dict[str, Any] = (
        {key: copy.deepcopy(value) for key, value in target.items()} if isinstance(target, Mapping) else {}
    )
    for key, value in patch.items():
        # Field names are not case-sensitive on input, so a patch key replaces any spelling of it.
        existing = [k for k in result if isinstance(k, str) and isinstance(key, str) and k.lower() == key.lower()]
        previous = result[existing[0]] if existing else None
        for k in existing:
            del result[k]
        if value is not None:
            result[key] = _merge(previous, value)
    return result


def merge_patch(stored: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``patch`` into ``stored`` (neither is modified): objects merge recursively, ``null`` deletes
    a field, arrays and scalars replace. Field names match without regard to case, as everywhere on input;
    the patch's spelling wins. A body that is not a JSON object is a :class:`ValidationError`.

    Durations are stored as written (ISO 8601 or TimeSpan), so after the merge a duration the patch names
    carries the patch's style and every other keeps its own; parsing the merged job then answers each in
    its style (see :mod:`scheduler_core.definitions._job`)."""
    if not isinstance(patch, Mapping):
        raise ValidationError("", "the PATCH body must be a JSON object")
    merged: dict[str, Any] = _merge(stored, patch)
    return merged


def _get_ci(data: Any, key: str) -> Any:
    if isinstance(data, Mapping):
        for k, v in data.items():
            if isinstance(k, str) and k.lower() == key.lower():
                return v
    return None


def merge_collection_patch(stored: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`merge_patch` for job collections, plus one rule: a patch that changes the sku and does not
    name a quota field resets that field to the new plan's default (instead of carrying over the old
    plan's numbers, which a downgrade would then reject as exceeding the plan)."""
    merged = merge_patch(stored, patch)
    new_sku = _get_ci(_get_ci(_get_ci(patch, "properties"), "sku"), "name")
    old_sku = _get_ci(_get_ci(_get_ci(stored, "properties"), "sku"), "name")
    if not isinstance(new_sku, str) or (isinstance(old_sku, str) and old_sku.lower() == new_sku.lower()):
        return merged
    patch_quota = _get_ci(_get_ci(patch, "properties"), "quota")
    properties = _get_ci(merged, "properties")
    if not isinstance(properties, dict):
        return merged
    quota = _get_ci(properties, "quota")
    if not isinstance(quota, dict):
        return merged
    for name in ("maxJobCount", "maxRecurrence"):
        if _get_ci(patch_quota, name) is None:
            for k in [k for k in quota if isinstance(k, str) and k.lower() == name.lower()]:
                del quota[k]
    return merged
