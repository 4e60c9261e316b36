"""Hostile values of the preview's policy properties, through the local host's HTTP API on Azurite (beside
``tests/e2e/test_attack_preview.py``, which attacks the other new properties): durations of every odd spelling
for ``jitter`` and ``missedRunPolicy.window``, ``missedRunPolicy`` itself, exclusions of 10,000 dates, calendar
names of every hostile spelling, placeholders nested, spaced and unterminated.

The rule for each refusal: a 400 whose message starts with the field and states the rule (a body over the
API's 64 KiB limit: a 413 saying so), never a 5xx, and nothing stored (every entity of every table, with its
ETag, and the execution queue compared before and after); what the rules allow is accepted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core.recurrence import format_instant
from tests.e2e.conftest import Api
from tests.e2e.test_attack_preview import JC, call, http, job, refused_with, snapshot

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


WINDOW = "properties.missedRunPolicy.window"


MODE = "properties.missedRunPolicy.mode"


JITTER = "properties.recurrence.jitter"


CALENDAR = "properties.recurrence.exclusions.calendars[0]"


BODY = "properties.action.request.body"


HEADER = "properties.action.request.headers.X-A"


URI = "properties.action.request.uri"


#: Durations no rule allows for ``missedRunPolicy.window`` (1 s to 30 days): what the 400 says.
BAD_WINDOWS: dict[str, tuple[Any, str]] = {
    "negative ISO": ("-PT1H", "must not be negative"),
    "negative TimeSpan": ("-00:01:00", "must not be negative"),
    "zero": ("PT0S", "between PT1S and P30D"),
    "zero days": ("P0D", "between PT1S and P30D"),
    "a tenth of a microsecond": ("PT0.0000001S", "between PT1S and P30D"),
    "half a second": ("PT0.5S", "between PT1S and P30D"),
    "one second past 30 days": ("P30DT1S", "between PT1S and P30D"),
    "huge days": ("P99999999999D", ""),
    "400 digits of seconds": ("PT" + "9" * 400 + "S", ""),
    "TimeSpan max": ("10675199.02:48:05.4775807", "between 00:00:01 and 30.00:00:00"),  # in the style written
    "years": ("P1Y", "years and months"),
    "months": ("P1M", "years and months"),
    "empty": ("", "duration"),
    "designators only": ("PT", "duration"),
    "P only": ("P", "duration"),
    "dangling T": ("P1DT", "duration"),
    "a number": (3600, "duration"),
    "true": (True, "duration"),
    "an array": ([], "duration"),
    "an object": ({}, "duration"),
    "a NUL": ("\u0000", "duration"),
    "exponent": ("PT1E6S", "duration"),
}


HOSTILE: dict[str, tuple[dict[str, Any], str, tuple[str, ...]]] = {}


for _name, (_value, _rule) in BAD_WINDOWS.items():
    HOSTILE[f"window {_name}"] = (
        job(missedRunPolicy={"mode": "RunAll", "window": _value}),
        WINDOW,
        (_rule,) if _rule else (),
    )
    if _name not in ("years", "months", "half a second", "a tenth of a microsecond"):
        HOSTILE[f"jitter {_name}"] = (job({"frequency": "Day", "jitter": _value}), JITTER, ())


HOSTILE.update(
    {
        "window with mode Skip": (
            job(missedRunPolicy={"mode": "Skip", "window": "PT1H"}),
            WINDOW,
            ("RunOnce and RunAll only",),
        ),
        "mode unknown": (job(missedRunPolicy={"mode": "Sometimes"}), MODE, ("RunOnce", "RunAll", "Skip")),
        "mode null": (job(missedRunPolicy={"mode": None}), MODE, ("required",)),
        "mode a number": (job(missedRunPolicy={"mode": 1}), MODE, ()),
        "missedRunPolicy a string": (job(missedRunPolicy="RunAll"), "properties.missedRunPolicy", ("JSON object",)),
        "missedRunPolicy an array": (job(missedRunPolicy=["RunAll"]), "properties.missedRunPolicy", ("JSON object",)),
        "missedRunPolicy unknown field": (
            job(missedRunPolicy={"mode": "RunAll", "catchUp": True}),
            "properties.missedRunPolicy.catchUp",
            (),
        ),
        "jitter of a week on a daily job": (job({"frequency": "Day", "jitter": "P1W"}), JITTER, ("half the smallest",)),
        "jitter of a day (TimeSpan) on a daily job": (
            job({"frequency": "Day", "jitter": "1.00:00:00"}),
            JITTER,
            ("half the smallest",),
        ),
    }
)


for _calendar in [
    "",
    " ",
    "a b",
    "a/b",
    "..",
    ".",
    "a\\b",
    "a?b",
    "a#b",
    "a%2Fb",
    "A" * 81,
    "A" * 5000,
    "\u00fc",
    "\u202e",
    "a\u0000",
    "\ufeffa",
    "\u65e5\u672c",
    "con",
    "a:b",
    "-a",
    "a-",
    "_a",
    "a.",
    "'; DROP TABLE x; --",
    "PartitionKey eq 'x'",
]:
    HOSTILE[f"calendar {_calendar[:20]!r}"] = (
        job({"frequency": "Hour", "exclusions": {"calendars": [_calendar]}}),
        CALENDAR,
        (),
    )


for _value in (None, 5, {}, ["x"], True):
    HOSTILE[f"calendar {_value!r}"] = (
        job({"frequency": "Hour", "exclusions": {"calendars": [_value]}}),
        CALENDAR,
        ("name of a calendar",),
    )


for _text, _rule in {
    "@{@{jobName}}": "@{",
    "@{jobName": "closing",
    "@{": "closing",
    "@{}": "unknown placeholder",
    "@{ }": "unknown placeholder",
    "@{job Name}": "unknown placeholder",
    "@{jobName}@{": "closing",
    "@{jobName}@{scheduledTime": "closing",
    "@{" * 2000: "@{",
    "@" * 10000 + "{": "closing",
    "@{jobName}}@{{": "@{",
    "@{executionId\u0000}": "unknown placeholder",
}.items():
    HOSTILE[f"body {_text[:20]!r}"] = (http({"body": _text}), BODY, (_rule,))
    HOSTILE[f"header {_text[:20]!r}"] = (http({"headers": {"X-A": _text}}), HEADER, (_rule,))
    if "\u0000" not in _text and len(_text) < 100:
        HOSTILE[f"query {_text[:20]!r}"] = (http({"uri": "https://example.org/hook?a=" + _text}), URI, ())


# the limits that come first for these (the placeholders are checked in a text the other rules allow)
HOSTILE[f"body {'@' * 20!r}"] = (http({"body": "@" * 10000 + "{"}), BODY, ("at most 8192 characters",))


HOSTILE[f"header {'@' * 20!r}"] = (
    http({"headers": {"X-A": "@" * 10000 + "{"}}),
    "properties.action.request.headers",
    ("at most 4096 characters",),
)


HOSTILE[f"header {'@{executionId' + chr(0) + '}'!r}"] = (
    http({"headers": {"X-A": "@{executionId\u0000}"}}),
    HEADER,
    ("NUL",),
)


def test_hostile_policy_values_are_400s_naming_field_and_rule_and_store_nothing(collection: Api) -> None:
    before = snapshot(collection)
    wrong = []
    for name, (body, field, rule) in HOSTILE.items():
        answer = call(collection, "PUT", f"{JC}/jobs/hostile", body)
        assert answer.status_code < 500, (name, answer.text)
        try:
            refused_with(answer, field, *rule)
        except AssertionError as error:
            wrong.append(f"{name}: {error}")
    assert not wrong, "\n".join(wrong)
    assert snapshot(collection) == before
    assert call(collection, "GET", f"{JC}/jobs/hostile").status_code == 404


def test_what_the_rules_allow_is_accepted_as_documented(collection: Api) -> None:
    """Spaces around a placeholder's name and any casing (the sender expands them alike); windows and jitter
    at the rules' edges; exclusions of 1,000 distinct dates."""
    dates = [format_instant(datetime(2030, 1, 1, tzinfo=UTC) + timedelta(days=n))[:10] for n in range(1000)]
    allowed = {
        "spaced placeholder": http({"body": "@{ jobName }", "headers": {"X-A": "@{\tJOBNAME\t}"}}),
        "@@{ is an @ and a placeholder": http({"body": "@@{jobName}}"}),
        "window one second": job(missedRunPolicy={"mode": "RunOnce", "window": "PT1S"}),
        "window 30 days": job(missedRunPolicy={"mode": "RunAll", "window": "P30D"}),
        "window 30 days TimeSpan": job(missedRunPolicy={"mode": "RunAll", "window": "30.00:00:00"}),
        "jitter half a day on a daily job": job({"frequency": "Day", "jitter": "PT12H"}),
        "1000 distinct dates": job({"frequency": "Hour", "exclusions": {"dates": dates}}),
    }
    for name, body in allowed.items():
        answer = call(collection, "PUT", f"{JC}/jobs/allowed", body)
        assert answer.status_code in (200, 201), (name, answer.text)
    answer = call(collection, "GET", f"{JC}/jobs/allowed")
    assert len(answer.json()["properties"]["recurrence"]["exclusions"]["dates"]) == 1000


def test_exclusions_of_10000_dates_are_a_413_and_store_nothing(collection: Api) -> None:
    before = snapshot(collection)
    many = [format_instant(datetime(2030, 1, 1, tzinfo=UTC) + timedelta(days=n))[:10] for n in range(10_000)]
    answer = call(collection, "PUT", f"{JC}/jobs/big", job({"frequency": "Hour", "exclusions": {"dates": many}}))
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"]["code"] == "RequestEntityTooLarge"
    assert "larger than 65536 bytes" in answer.json()["error"]["message"]
    answer = call(collection, "PUT", f"{JC}/calendars/big", {"properties": {"dates": many}})
    assert answer.status_code == 413, answer.text
    assert snapshot(collection) == before
