"""What every importer produces: the jobs it converted (a PUT body each, with where the source holds it and
what the source system would have run), and the notes of what it could not carry."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

#: The longest job name an importer derives (the service takes 200 units; shorter names read better).
MAX_DERIVED_NAME = 80

#: The kinds of source schedule the dry run computes independently (:mod:`._oracle`).
UNIX, EVENTBRIDGE, RATE, AT = "unix", "eventbridge", "rate", "at"


@dataclass(frozen=True)
class Note:
    """One thing the source had that the job does not carry (or carries differently): where the source
    holds it, what it is, and why."""

    where: str
    what: str
    why: str

    def to_json(self) -> dict[str, str]:
        return {"where": self.where, "what": self.what, "why": self.why}


@dataclass(frozen=True)
class Expected:
    """What the source system would have run, for the dry run's side-by-side comparison.

    ``kind`` :data:`UNIX`: ``expression`` (5 fields or a macro) read in ``zone`` by the unix rule of
    Vixie cron and cronie (its daylight-saving handling included); :data:`EVENTBRIDGE`: ``expression`` is
    EventBridge's 6 fields (``minutes hours day-of-month month day-of-week year``, Sunday 1), read in
    ``zone`` by EventBridge Scheduler's rule, between ``start`` and ``end`` (exclusive); :data:`RATE`: every
    ``every`` from ``start`` (None: from the job's creation) until ``end``; :data:`AT`: once, at ``start``."""

    kind: str
    expression: str = ""
    zone: str = "UTC"
    start: datetime | None = None
    end: datetime | None = None
    every: timedelta | None = None
    system: str = ""  # the source system's name, as the comparison's column shows it


@dataclass
class SourceJob:
    """A job converted from the source: its name, where the source holds it, its PUT body
    (``{"properties": ...}`` of api-version 2026-12-01-preview) and what the source would have run."""

    name: str
    where: str
    body: dict[str, Any]
    expected: Expected | None = None


@dataclass
class Conversion:
    """An importer's result: the jobs, and every note of what was not carried (in source order)."""

    jobs: list[SourceJob] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    def note(self, where: str, what: str, why: str) -> None:
        self.notes.append(Note(where, what, why))

    def extend(self, other: Conversion) -> None:
        self.jobs.extend(other.jobs)
        self.notes.extend(other.notes)


_NOT_NAME = re.compile(r"[^a-z0-9]+")


def slug(text: str, limit: int = 48) -> str:
    """``text`` in lower case ASCII letters, digits and single dashes, at most ``limit`` characters."""
    return _NOT_NAME.sub("-", text.lower()).strip("-")[:limit].strip("-")


def digest(*parts: str) -> str:
    """Eight hex digits of the SHA-256 of ``parts``: a stable suffix that tells apart names of one stem."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:8]


class Names:
    """The job names of one import, unique as the service compares them (case-insensitively): a name taken
    before gets ``-2``, ``-3``, ... (in source order, so the same file gives the same names)."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def taken(self, name: str) -> bool:
        return name.casefold() in self._taken

    def claim(self, name: str) -> str:
        candidate, number = name, 1
        while self.taken(candidate):
            number += 1
            candidate = f"{name[: MAX_DERIVED_NAME - 8]}-{number}"
        self._taken.add(candidate.casefold())
        return candidate


def http_action(
    uri: str,
    method: str,
    headers: dict[str, str] | None = None,
    body: str | None = None,
    retry_policy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An HTTP action as the API takes it: type ``Https`` for an https URI, else ``Http`` (the service
    decides whether it accepts the URI)."""
    request: dict[str, Any] = {"uri": uri, "method": method}
    if headers:
        request["headers"] = dict(headers)
    if body is not None:
        request["body"] = body
    action: dict[str, Any] = {"type": "Https" if uri.lower().startswith("https:") else "Http", "request": request}
    if retry_policy is not None:
        action["retryPolicy"] = retry_policy
    return action
