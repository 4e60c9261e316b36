"""The name rule (docs/names.md) and the storage keys names become: every valid name fits every key, and
two valid names share a key only when they are the same name in another case."""

from __future__ import annotations

import sys
import unicodedata
from datetime import UTC, datetime

import pytest

from scheduler_core.api.paths import FORBIDDEN, check_name, name_problem
from scheduler_core.errors import ValidationError
from scheduler_core.model.job import first_generation
from scheduler_core.storage.keys import (
    MAX_KEY_BYTES,
    MAX_NAME_UNITS,
    CollectionRef,
    JobRef,
    due_row_key,
    escape_key,
    key_units,
    name_units,
)

FIELDS = tuple(MAX_NAME_UNITS)
#: The longest suffix the dispatcher appends to a due-index row key (pipeline/dispatch.py: a watched attempt,
#: "|watch|" + occurrence | trigger | action | attempt; a parked retry's "|retry{attempt}{action}" is shorter).
WATCH_SUFFIX = "|watch|9999-12-31T23:59:59.999999Z|schedule|error|999"


def longest(field: str, unit: str) -> str:
    """The longest valid name of ``field`` made of ``unit``."""
    name = unit * (MAX_NAME_UNITS[field] // name_units(unit))
    assert name_problem(field, name) is None, name_problem(field, name)
    return name


@pytest.mark.parametrize("unit", ["a", "Z", "|", "'", '"', "é", "日", "\U0001f600", "ǅ"])
def test_the_longest_valid_names_fit_every_storage_key(unit: str) -> None:
    collection = CollectionRef(
        longest("subscriptionId", unit), longest("resourceGroupName", unit), longest("jobCollectionName", unit)
    )
    job = JobRef(collection, longest("jobName", unit))
    keys = [
        collection.partition_key,
        collection.row_key,
        job.partition_key,
        job.row_key,
        job.identity,  # history and execution-claim partitions
        due_row_key(datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), job.identity, 10**16 - 1) + WATCH_SUFFIX,
    ]
    assert max(key_units(key) * 2 for key in keys) <= MAX_KEY_BYTES


def test_due_index_keys_have_one_length_whatever_the_names() -> None:
    due = datetime(2026, 1, 1, tzinfo=UTC)
    short = JobRef(CollectionRef("s", "r", "c"), "j")
    long = JobRef(CollectionRef("s" * 64, "r" * 90, "c" * 100), "j" * 200)
    # 27 for the instant, 32 for the job's digest, 16 for the generation (microseconds, first_generation)
    created = first_generation(datetime(2286, 11, 20, tzinfo=UTC))  # the last day a generation has 16 digits
    lengths = {len(due_row_key(due, ref.identity, g)) for ref in (short, long) for g in (1, created, created + 10**6)}
    assert lengths == {77}
    assert due_row_key(due, short.identity, 1) != due_row_key(due, long.identity, 1)
    assert due_row_key(due, short.identity, 1) == due_row_key(due, short.identity, 1)


def test_key_length_is_counted_in_utf16_as_table_storage_counts_it() -> None:
    # 300 characters of 3 UTF-8 bytes each are 600 UTF-16 bytes: a valid key (the old check counted 900
    # UTF-8 bytes); 513 ASCII characters are 1,026 UTF-16 bytes: too long (the old check let them pass).
    assert JobRef(CollectionRef("s", "r", "c"), "日" * 300).row_key
    with pytest.raises(ValidationError, match="too long"):
        _ = JobRef(CollectionRef("s", "r", "c"), "x" * 513).row_key


@pytest.mark.parametrize("field", FIELDS)
def test_a_name_one_unit_over_its_limit_is_refused_naming_the_field(field: str) -> None:
    limit = MAX_NAME_UNITS[field]
    check_name(field, "x" * limit)
    for name in ("x" * (limit + 1), "\U0001f600" * (limit // 2 + 1), "|" * (limit // 3 + 1), "x" * 1024):
        with pytest.raises(ValidationError) as caught:
            check_name(field, name)
        assert caught.value.path == field
        assert "too long" in caught.value.message
        assert caught.value.message.startswith(f"{field}: ")


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("", "empty"),
        (".", "'.' or '..'"),
        ("..", "'.' or '..'"),
        ("job.", "end with a dot or a space"),
        ("job ", "end with a dot or a space"),
        ("a\x00b", "control characters (found U+0000)"),
        ("a\nb", "control characters (found U+000A)"),
        ("a\x7fb", "control characters (found U+007F)"),
        ("a\x85b", "control characters (found U+0085)"),
        ("a/b", "/ \\ ? # %"),
        ("a\\b", "/ \\ ? # %"),
        ("a?b", "/ \\ ? # %"),
        ("a#b", "/ \\ ? # %"),
        ("a%41", "/ \\ ? # %"),
        ("a\ud800", "lone surrogate"),
        ("a\U000e0080", "unassigned"),
        ("a\ufdd0", "unassigned"),
        ("\u212a", "case mapping"),  # Kelvin sign: lower case is the letter k
        ("\u0130", "case mapping"),  # İ: lower case is two characters
        ("\u03c2", "case mapping"),  # final sigma: upper case Σ lower-cases to σ
        ("\u1e9e", "case mapping"),  # capital sharp s: lower case ß upper-cases to SS
    ],
)
def test_names_that_cannot_be_stored_or_round_tripped_are_refused(name: str, fragment: str) -> None:
    for field in FIELDS:
        problem = name_problem(field, name)
        assert problem is not None and fragment in problem, (name, problem)
        with pytest.raises(ValidationError) as caught:
            check_name(field, name)
        assert caught.value.status == 400 and caught.value.path == field


@pytest.mark.parametrize(
    "name",
    ["payroll", "Job Name", "it's", "a|b", 'say "hi"', "été", "日本語", "\U0001f600", ".hidden", "a..b", " lead",
     "ß", "ΟΔΟΣ", "ǅ", "a~b!$&()*+,;=:@"],
)  # fmt: skip
def test_ordinary_names_are_valid(name: str) -> None:
    for field in FIELDS:
        assert name_problem(field, name) is None


def test_valid_names_share_a_key_exactly_when_they_are_equal_ignoring_case() -> None:
    # Every valid character folds to one character that folds back, so comparing keys is comparing names
    # case-insensitively (one character at a time), whatever the context of the character.
    valid = [chr(c) for c in range(sys.maxunicode + 1) if name_problem("jobName", f"a{chr(c)}") is None]
    assert len(valid) > 100_000
    valid_set = set(valid)
    by_key: dict[str, str] = {}
    for char in valid:
        key = escape_key(char)
        assert key_units(key) == name_units(char)
        other = by_key.setdefault(key, char)
        assert other.upper() == char.upper(), (other, char)
        upper = char.upper()
        if len(upper) == 1 and upper in valid_set:
            assert escape_key(upper) == key
    # A context-dependent fold would give one name two keys (str.lower: 'ΟΔΟΣ' -> 'οδος', 'οδοσ' -> 'οδοσ').
    assert escape_key("ΟΔΟΣ") == escape_key("οδοσ")
    # Escaping keeps distinct texts distinct: '%' is escaped too, and '|' never appears unescaped.
    names = ["a|b", "a%7Cb", "a'b", "a%27b", "a|", "|a"]
    assert len({escape_key(name) for name in names}) == len(names)
    assert all("|" not in escape_key(name) for name in names)
    parts = [("a|b", "c"), ("a", "b|c")]
    assert len({CollectionRef("s", rg, jc).identity for rg, jc in parts}) == 2


def test_forbidden_characters_are_exactly_those_documented() -> None:
    assert set(FORBIDDEN) == set("/\\?#%")
    assert all(unicodedata.category(c) != "Cc" for c in FORBIDDEN)
