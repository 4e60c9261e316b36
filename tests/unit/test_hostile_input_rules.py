"""The pure rules behind the hostile-input tests (``tests/e2e/test_hostile_answers.py``,
``tests/cli/test_cli_hostile_output.py``): how JSON nesting is counted, which headers every answer gets,
and what the command line escapes."""

from __future__ import annotations

import json

import pytest

from scheduler_core.cli.output import json_text, visible
from scheduler_core.definitions._json import MAX_DEPTH, nesting_depth, read_json
from scheduler_core.errors import ValidationError
from scheduler_core.triggers import answer_headers


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ('"[[[["', 0),
        ("{}", 1),
        ('{"a": [1, {"b": "]]]}}}"}]}', 3),
        ('["\\"[[", ["\\\\"], "{"]', 2),  # an escaped quote does not end a string; an escaped backslash does
        ("[" * 10 + "]" * 10, 10),
        ("[[[", 3),  # malformed: the depth its brackets spell
    ],
)
def test_nesting_is_counted_outside_strings(text: str, depth: int) -> None:
    assert nesting_depth(text) == depth


def test_counting_stops_past_the_limit() -> None:
    assert nesting_depth("[" * 100_000, limit=MAX_DEPTH) == MAX_DEPTH + 1


def test_read_json_takes_what_json_loads_takes_and_bounds_the_depth() -> None:
    document = {"properties": {"x": [[["\u00e9", "[{"]]]}}
    text = json.dumps(document)
    for data in (text, text.encode("utf-16"), b"\xef\xbb\xbf" + text.encode()):
        assert read_json(data, "the body") == document
    at_limit = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert read_json(at_limit, "the body") == json.loads(at_limit)
    with pytest.raises(ValidationError, match=f"^the body must not nest deeper than {MAX_DEPTH} levels"):
        read_json("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "the body")
    with pytest.raises(ValidationError, match=r"^f\.json is not valid JSON \(Expecting"):
        read_json("{", "f.json")
    with pytest.raises(ValidationError, match=r"^the body is not valid JSON \(.*codec"):
        read_json(b'{"a": "\xff"}', "the body")


def test_every_answer_gets_nosniff_and_no_store_unless_a_success_names_its_caching() -> None:
    assert answer_headers(200, {"Content-Type": "application/json"}) == {
        "Content-Type": "application/json",
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
    }
    assert answer_headers(200, {"cache-control": "no-cache"})["cache-control"] == "no-cache"
    assert answer_headers(304, {"Cache-Control": "no-cache"})["Cache-Control"] == "no-cache"
    for status in (301, 400, 401, 404, 405, 500, 503):  # an error never keeps a cache policy of its own
        headers = answer_headers(status, {"cache-control": "public, max-age=3600", "x-content-type-options": "x"})
        assert headers == {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}, status


def test_visible_escapes_what_a_terminal_acts_on_once_and_json_text_keeps_the_value() -> None:
    hostile = "a\x1b[2J\x00\t\n\r\x7f\x85\x9b\u061c\u200e\u200f\u202a\u202e\u2066\u2069\u2028\u2029é中\\x1b"
    shown = visible(hostile)
    assert shown == (
        r"a\x1b[2J\x00\t\n\r\x7f\x85\x9b\u061c\u200e\u200f\u202a\u202e\u2066\u2069\u2028\u2029" + "é中\\x1b"
    )
    assert visible(shown) == shown
    text = json_text({"k": hostile})
    assert json.loads(text) == {"k": hostile}
    bidi = "\u061c\u200e\u200f\u202a\u202e\u2066\u2069\u2028\u2029"
    assert [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F or c in bidi] == []
    assert "é中" in text  # letters stay as they are
