"""A collection's ``historyRetention`` at the wire (api-version 2026-12-01-preview): what it accepts, how it is
answered, every hostile value a 400 naming the field and the rule; and the rule itself (which entries go)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.definitions import (
    Wire,
    collection_json,
    parse_collection,
    read_collection_properties,
    read_collection_retention,
)
from scheduler_core.errors import ValidationError
from scheduler_core.model import HistoryStatus
from scheduler_core.model.history import DEFAULT_KEEP, DEFAULT_RETENTION, HistoryRetention, Keep
from scheduler_core.model.retry import Duration

NOW = datetime(2030, 6, 1, 12, tzinfo=UTC)
COMPLETED, FAILED, SKIPPED = HistoryStatus.COMPLETED, HistoryStatus.FAILED, HistoryStatus.SKIPPED


def body(retention: Any) -> dict[str, Any]:
    return {"location": "westus", "properties": {"sku": {"name": "Standard"}, "historyRetention": retention}}


def parsed(retention: Any) -> HistoryRetention | None:
    return parse_collection(body(retention), name="jc", wire=Wire.PREVIEW).history_retention


def answered(retention: Any) -> Any:
    """What the preview answers for a collection written with ``retention`` (through the stored form)."""
    spec = parse_collection(body(retention), name="jc", wire=Wire.PREVIEW)
    stored = json.loads(json.dumps(spec.properties))
    assert read_collection_properties(stored) == (spec.sku, spec.state, spec.quota)
    again = read_collection_retention(stored)
    assert again == spec.history_retention
    return collection_json(spec.sku, spec.state, spec.quota, again).get("historyRetention")


def test_each_kind_is_a_duration_or_a_count_and_a_kind_left_out_keeps_the_default() -> None:
    assert parsed({"succeeded": "P7D", "failed": 5000}) == HistoryRetention(
        succeeded=Keep(Duration(timedelta(days=7)), 10_000), failed=Keep(None, 5000)
    )
    assert parsed({"failed": "P180D"}) == HistoryRetention(DEFAULT_KEEP, Keep(Duration(timedelta(days=180)), 10_000))
    assert parsed({"SUCCEEDED": 1}) == HistoryRetention(Keep(None, 1), DEFAULT_KEEP)  # names in any casing
    assert parsed({"failed": 10_000.0}) == HistoryRetention(DEFAULT_KEEP, Keep(None, 10_000))  # a whole number


@pytest.mark.parametrize("retention", [None, {}, {"succeeded": None, "failed": None}])
def test_absent_null_or_empty_is_the_default_rule(retention: Any) -> None:
    assert parsed(retention) is None
    assert answered(retention) is None


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ({"succeeded": "P7D", "failed": 5000}, {"succeeded": "P7D", "failed": 5000}),
        ({"failed": "p2w"}, {"failed": "P14D"}),  # ISO 8601 normalised, in its style
        ({"failed": "30.00:00:00"}, {"failed": "30.00:00:00"}),  # a TimeSpan answered as one
        ({"failed": 1, "succeeded": "P365D"}, {"succeeded": "P365D", "failed": 1}),  # canonical order
        ({"succeeded": "PT24H"}, {"succeeded": "P1D"}),
    ],
)
def test_the_preview_answers_the_rule_as_written_in_canonical_form(written: Any, shown: Any) -> None:
    assert answered(written) == shown
    assert answered(shown) == shown  # what it answers, written back, is answered the same


@pytest.mark.parametrize(
    ("retention", "path", "rule"),
    [
        ("P7D", "properties.historyRetention", "must be a JSON object, not a string"),
        ([], "properties.historyRetention", "must be a JSON object, not an array"),
        ({"kept": 3}, "properties.historyRetention.kept", "is not a known field (allowed: succeeded, failed)"),
        ({"failed": 1, "FAILED": 2}, "properties.historyRetention.FAILED", "duplicates"),
        ({"failed": 0}, "properties.historyRetention.failed", "must be an integer between 1 and 10000, not 0"),
        ({"failed": -5}, "properties.historyRetention.failed", "must be an integer between 1 and 10000, not -5"),
        ({"failed": 10_001}, "properties.historyRetention.failed", "must be an integer between 1 and 10000"),
        ({"failed": 10**400}, "properties.historyRetention.failed", "must be an integer between 1 and 10000"),
        ({"failed": 2.5}, "properties.historyRetention.failed", "must be an integer between 1 and 10000"),
        ({"failed": True}, "properties.historyRetention.failed", "must be a duration of P1D to P365D"),
        ({"failed": {"days": 3}}, "properties.historyRetention.failed", "must be a duration of P1D to P365D"),
        ({"failed": ["P1D"]}, "properties.historyRetention.failed", "must be a duration of P1D to P365D"),
        ({"failed": "PT23H"}, "properties.historyRetention.failed", "must be between P1D (a day) and P365D"),
        ({"failed": "P366D"}, "properties.historyRetention.failed", "must be between P1D (a day) and P365D"),
        ({"failed": "P0D"}, "properties.historyRetention.failed", "must be between P1D (a day)"),
        ({"failed": "P1Y"}, "properties.historyRetention.failed", "years and months are not allowed"),
        ({"failed": "-P7D"}, "properties.historyRetention.failed", "must not be negative"),
        ({"failed": "7 days"}, "properties.historyRetention.failed", "must be a duration"),
        ({"failed": "P" + "9" * 5000 + "D"}, "properties.historyRetention.failed", "must be at most"),
        ({"failed": "P7D\r\nX-Injected: 1"}, "properties.historyRetention.failed", "must be a duration"),
    ],
)
def test_a_hostile_value_is_a_400_naming_the_field_and_the_rule(retention: Any, path: str, rule: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parsed(retention)
    assert caught.value.status == 400
    assert caught.value.path == path
    assert rule in caught.value.rule
    assert len(str(caught.value)) < 400  # a huge value is not echoed back


def entries(*rows: tuple[int, HistoryStatus]) -> list[tuple[str, datetime, HistoryStatus]]:
    """Entries (row key, start, status) from (days ago, status), newest first by key as the stores order them."""
    return [
        (f"{days * 100_000 + i:012d}", NOW - timedelta(days=days, minutes=i), status)
        for i, (days, status) in enumerate(rows)
    ]


def test_the_default_rule_is_azure_schedulers_sixty_days_and_a_thousand_entries_of_both_kinds() -> None:
    recent = entries(*[(0, FAILED if i % 2 else COMPLETED) for i in range(1100)])
    doomed = DEFAULT_RETENTION.doomed(recent, NOW)
    assert doomed == [key for key, _, _ in sorted(recent)[1000:]]  # the oldest 100, whatever their kind
    old = entries((59, COMPLETED), (61, FAILED), (61, COMPLETED))
    assert DEFAULT_RETENTION.doomed(old, NOW) == [old[1][0], old[2][0]]


def test_each_kind_is_counted_and_aged_apart() -> None:
    rule = HistoryRetention(succeeded=Keep(None, 2), failed=Keep(Duration(timedelta(days=30)), 10_000))
    rows = entries(
        (0, COMPLETED),
        (0, FAILED),
        (1, SKIPPED),
        (2, COMPLETED),
        (3, COMPLETED),
        (29, FAILED),
        (31, FAILED),
        (400, SKIPPED),
    )
    kept = {key for key, _, _ in rows} - set(rule.doomed(rows, NOW))
    # succeeded (Completed and Skipped): the newest two; failed: those younger than 30 days, however many
    assert sorted(kept) == sorted([rows[0][0], rows[2][0], rows[1][0], rows[5][0]])


def test_a_count_keeps_its_newest_entries_whatever_their_age_and_a_duration_at_most_ten_thousand() -> None:
    by_count = HistoryRetention(succeeded=Keep(None, 3), failed=DEFAULT_KEEP)
    ancient = entries((900, COMPLETED), (1000, COMPLETED), (1100, COMPLETED), (1200, COMPLETED))
    assert by_count.doomed(ancient, NOW) == [ancient[3][0]]
    by_age = HistoryRetention(succeeded=Keep(Duration(timedelta(days=365)), 10_000), failed=DEFAULT_KEEP)
    many = entries(*[(0, COMPLETED)] * 10_050)
    assert len(by_age.doomed(many, NOW)) == 50
