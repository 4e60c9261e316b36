"""The example jobs of the seed documents (old Azure Scheduler docs), as JSON bodies a client would PUT.

The documents show job JSON in the old style: lowercase enum values, ``//`` comments, trailing commas,
sometimes flattened onto one line (a comment then swallows the rest of its line, so a comment here ends
where the next ``"key":`` starts), excerpts with ``…`` for elided parts, and dates in 2012. This module
finds every JSON block in the documents and classifies it:

* a job (an object with ``startTime``, ``action`` or ``recurrence``) -> ``{"properties": block}``;
* an action (``type`` plus a payload) or an ``"action": {...}`` fragment -> a job with that action;
* anything else (schedule snippets of a reference table, URL templates) is not a job: it is listed in
  :attr:`SeedScan.others`, and the schedule snippets are offered by :func:`seed_schedules`.

An excerpt that elides its action (``…``) gets :data:`PLACEHOLDER_ACTION`. Dates are moved into the
future by a whole number of weeks (so week days stay the same) so that the earliest ``startTime`` or
``endTime`` of an example lies a week or two after ``now``; spans between dates are kept.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

SEEDS = Path(__file__).resolve().parents[1] / "fixtures" / "seeds"

PLACEHOLDER_ACTION: dict[str, Any] = {
    "type": "http",
    "request": {"uri": "https://example.org/placeholder", "method": "GET"},
}

_KEY_AHEAD = re.compile(r'"[A-Za-z_]\w*"\s*:')
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
_ELLIPSIS_LINE = re.compile(r"^\s*(…|\.\.\.)\s*$", re.MULTILINE)
_JOB_KEYS = {"starttime", "action", "recurrence", "state", "status"}
_PAYLOADS = {"request", "queuemessage", "servicebusqueuemessage", "servicebustopicmessage"}
_SCHEDULE_KEYS = {"minutes", "hours", "weekdays", "monthdays", "monthlyoccurrences"}


def strip_comments(text: str) -> str:
    """Remove ``//`` comments outside JSON strings. Strings never span lines, so the string state is reset
    at each line (prose with stray quotes cannot derail it). A comment ends at the end of its line, or
    just before a ``"key":`` that follows it on the same line (documents flattened onto one line)."""
    out_lines = []
    for line in text.split("\n"):
        out: list[str] = []
        i = 0
        in_string = False
        while i < len(line):
            char = line[i]
            if in_string:
                out.append(char)
                if char == "\\" and i + 1 < len(line):
                    out.append(line[i + 1])
                    i += 1
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
                out.append(char)
            elif line.startswith("//", i):
                ahead = _KEY_AHEAD.search(line, i + 2)
                if ahead is None:
                    break
                i = ahead.start()
                continue
            else:
                out.append(char)
            i += 1
        out_lines.append("".join(out))
    return "\n".join(out_lines)


def _block_end(text: str, start: int) -> int | None:
    """Index just past the ``}`` that closes the ``{`` at ``start`` (strings respected), or None."""
    depth = 0
    in_string = False
    i = start
    while i < len(text):
        char = text[i]
        if in_string:
            if char == "\\":
                i += 1
            elif char in {'"', "\n"}:
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _clean(block: str) -> tuple[str, bool]:
    elided = bool(_ELLIPSIS_LINE.search(block))
    block = _ELLIPSIS_LINE.sub("", block)
    return _TRAILING_COMMA.sub(r"\1", block), elided


@dataclass
class SeedExample:
    """One example job: where it came from, and the body to PUT (``{"properties": {...}}``)."""

    source: str
    index: int
    body: dict[str, Any]
    kind: str  # "job", "action" or "action fragment"
    elided: bool = False

    @property
    def label(self) -> str:
        return f"{self.source}#{self.index} ({self.kind})"


@dataclass
class SeedScan:
    jobs: list[SeedExample] = field(default_factory=list)
    others: list[tuple[str, str]] = field(default_factory=list)  # (source, raw block) that are not jobs


def _lower_keys(value: dict[str, Any]) -> set[str]:
    return {key.lower() for key in value}


def scan_document(name: str, text: str) -> SeedScan:
    scan = SeedScan()
    stripped = strip_comments(text)
    i = 0
    index = 0
    while True:
        start = stripped.find("{", i)
        if start < 0:
            break
        end = _block_end(stripped, start)
        if end is None:
            break
        raw = stripped[start:end]
        if '":' not in raw and ":" not in raw:
            i = start + 1  # prose such as {subscriptionId}
            continue
        i = end
        cleaned, elided = _clean(raw)
        line_start = stripped.rfind("\n", 0, start) + 1
        before = stripped[line_start:start]
        fragment = re.search(r'"action"\s*:\s*$', before)
        try:
            value = json.loads(cleaned)
        except json.JSONDecodeError:
            scan.others.append((name, raw))
            continue
        if not isinstance(value, dict):
            scan.others.append((name, raw))
            continue
        keys = _lower_keys(value)
        if fragment is not None:
            kind, properties = "action fragment", {"action": value}
        elif keys & {"starttime", "action", "recurrence"} and keys <= _JOB_KEYS:
            kind, properties = "job", value
        elif "type" in keys and keys & _PAYLOADS:
            kind, properties = "action", {"action": value}
        else:
            scan.others.append((name, raw))
            continue
        if elided and "action" not in _lower_keys(properties):
            properties = {**properties, "action": dict(PLACEHOLDER_ACTION)}
        index += 1
        scan.jobs.append(SeedExample(name, index, {"properties": properties}, kind, elided))
    return scan


def _dates(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _dates(item)
    elif isinstance(value, list):
        for item in value:
            yield from _dates(item)
    elif isinstance(value, str) and _DATE.match(value):
        yield value


def _shift(value: Any, days: int) -> Any:
    if isinstance(value, dict):
        return {key: _shift(item, days) for key, item in value.items()}
    if isinstance(value, list):
        return [_shift(item, days) for item in value]
    if isinstance(value, str):
        match = _DATE.match(value)
        if match:
            moved = date(int(match[1]), int(match[2]), int(match[3])) + timedelta(days=days)
            return moved.isoformat() + value[match.end() :]
    return value


def move_into_future(body: dict[str, Any], now: datetime) -> dict[str, Any]:
    """Shift every date of the example by whole weeks so that its earliest ``startTime``/``endTime`` is
    7 to 14 days after ``now`` (``status`` dates move along; they are read-only and ignored)."""
    properties = body.get("properties", {})
    scheduling = {key: value for key, value in properties.items() if key.lower() in ("starttime", "recurrence")}
    found = [date.fromisoformat(text[:10]) for text in _dates(scheduling)]
    if not found:
        return body
    target = (now + timedelta(days=7)).date()
    weeks = max(0, math.ceil((target - min(found)).days / 7))
    shifted: dict[str, Any] = _shift(body, weeks * 7)
    return shifted


def seed_documents() -> list[Path]:
    return sorted(SEEDS.glob("*.txt"))


def scan_seeds() -> dict[str, SeedScan]:
    return {path.name: scan_document(path.name, path.read_text(encoding="utf-8")) for path in seed_documents()}


def seed_jobs(now: datetime | None = None) -> list[SeedExample]:
    """Every example job of every seed document, dates moved into the future relative to ``now``."""
    now = now or datetime.now(UTC)
    out = []
    for scan in scan_seeds().values():
        for example in scan.jobs:
            example.body = move_into_future(example.body, now)
            out.append(example)
    return out


# ------------------------------------------------------------------------- schedule table snippets

_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z]+)(\s*:)")
_MISSING_OPEN_QUOTE = re.compile(r'([{,]\s*)([A-Za-z]+")')
_MISSING_COMMA = re.compile(r'([\]}"0-9])(\s+)(")')


def _repair(snippet: str) -> str:
    """The table's snippets have typos: ``{hours":...``, ``{minutes:[0]}``, a missing comma."""
    snippet = _MISSING_OPEN_QUOTE.sub(r'\1"\2', snippet)
    snippet = _BARE_KEY.sub(r'\1"\2"\3', snippet)
    return _MISSING_COMMA.sub(r"\1,\2\3", snippet)


def seed_schedules() -> list[tuple[str, dict[str, Any]]]:
    """The ``schedule`` snippets of the recurrence reference table (one per line, typos repaired)."""
    out = []
    for path in seed_documents():
        for line in strip_comments(path.read_text(encoding="utf-8")).split("\n"):
            if not line.lstrip().startswith("{"):
                continue
            repaired = _repair(line.strip())
            end = _block_end(repaired, 0)
            if end is None:
                continue
            try:
                value = json.loads(repaired[:end])
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict) and value and _lower_keys(value) <= _SCHEDULE_KEYS:
                out.append((path.name, value))
    return out


def frequency_for(schedule: dict[str, Any]) -> str:
    """The frequency a schedule snippet is meant for (the table's text says so per row)."""
    keys = _lower_keys(schedule)
    if "weekdays" in keys:
        return "week"
    if keys & {"monthdays", "monthlyoccurrences"}:
        return "month"
    return "day"
