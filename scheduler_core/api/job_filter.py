"""``$filter`` on a collection's jobs with api-version 2026-12-01-preview: clauses joined by ``and``.

* ``state eq 'Enabled'`` (any casing of the state; the only clause api-version 2016-03-01 takes);
* ``tags/<name> eq '<value>'``: the job has the tag (names without regard to case, values exactly);
* ``host eq '<host>'``: the host the job's action reaches (an HTTP action's URI host, a Storage queue's
  account, a Service Bus namespace), without regard to case;
* ``lastOutcome eq 'Failed'``: the history status of the job's last execution (``Completed`` or ``Failed``;
  a job that has not run has none and matches neither).

Values are OData string literals: in single quotes, a quote inside doubled (``'O''Brien'``). Anything else is a
400 naming ``$filter``, the clause and the rule.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from scheduler_core.errors import ValidationError
from scheduler_core.model import Job
from scheduler_core.model.actions import HttpAction, ServiceBusAction, StorageQueueAction

__all__ = ["JobFilter", "parse_job_filter"]

MAX_FILTER = 2000
MAX_CLAUSES = 20
_CLAUSE = re.compile(r"\s*(?P<field>tags/[^\s']+|[A-Za-z]+)\s+eq\s+'(?P<value>(?:[^']|'')*)'\s*", re.ASCII)
_AND = re.compile(r"and\b", re.IGNORECASE | re.ASCII)
_RULE = (
    "clauses \"state eq '<state>'\", \"tags/<name> eq '<value>'\", \"host eq '<host>'\" or "
    "\"lastOutcome eq '<Completed|Failed>'\" joined by 'and'"
)
_OUTCOMES = ("Completed", "Failed")


@dataclass(frozen=True)
class JobFilter:
    """What a job must match: its state (canonical casing), tags (name, value) and action host."""

    state: str | None = None
    tags: tuple[tuple[str, str], ...] = ()
    host: str | None = None
    last_outcome: str | None = None

    def matches(self, job: Job) -> bool:
        if self.state is not None and job.state != self.state:
            return False
        if self.last_outcome is not None and job.last_outcome != self.last_outcome:
            return False
        if any(job.definition.tag(name) != value for name, value in self.tags):
            return False
        return self.host is None or action_host(job) == self.host


def action_host(job: Job) -> str:
    """The host a job's action reaches, in lower case ("" when there is none)."""
    action = job.definition.action.main
    if isinstance(action, HttpAction):
        return (urlsplit(action.uri).hostname or "").lower()
    if isinstance(action, StorageQueueAction):
        return action.storage_account.lower()
    if isinstance(action, ServiceBusAction):
        return action.namespace.lower()
    return ""


def _clauses(text: str) -> list[tuple[str, str]]:
    """The (field, value) clauses of ``text``; a 400 naming where it stops reading."""
    found: list[tuple[str, str]] = []
    at = 0
    while True:
        match = _CLAUSE.match(text, at)
        if match is None:
            raise ValidationError("$filter", f"cannot read from character {at + 1} ({text[at : at + 30]!r}): {_RULE}")
        found.append((match.group("field"), match.group("value").replace("''", "'")))
        at = match.end()
        if at == len(text):
            return found
        joined = _AND.match(text, at)
        if joined is None:
            raise ValidationError("$filter", f"expected 'and' at character {at + 1} ({text[at : at + 30]!r}): {_RULE}")
        at = joined.end()
        if len(found) >= MAX_CLAUSES:
            raise ValidationError("$filter", f"at most {MAX_CLAUSES} clauses are allowed")


def parse_job_filter(text: str | None, states: Sequence[str]) -> JobFilter | None:
    """The filter of ``$filter`` (None when absent or blank); ``states`` are the job states' spellings."""
    if text is None or not text.strip():
        return None
    if len(text) > MAX_FILTER:
        raise ValidationError("$filter", f"is {len(text):,} characters long; at most {MAX_FILTER:,} are allowed")
    state: str | None = None
    host: str | None = None
    last_outcome: str | None = None
    tags: list[tuple[str, str]] = []
    for field, value in _clauses(text):
        lowered = field.lower()
        if lowered == "state":
            state = next((s for s in states if s.lower() == value.lower()), None)
            if state is None:
                raise ValidationError("$filter", f"state must be one of {', '.join(states)}, got '{value}'")
        elif lowered == "host":
            host = value.lower()
        elif lowered == "lastoutcome":
            last_outcome = next((o for o in _OUTCOMES if o.lower() == value.lower()), None)
            if last_outcome is None:
                raise ValidationError("$filter", f"lastOutcome must be one of {', '.join(_OUTCOMES)}, got '{value}'")
        elif lowered.startswith("tags/"):
            tags.append((field[len("tags/") :], value))
        else:
            raise ValidationError("$filter", f"'{field}' is not a field a job can be filtered by: {_RULE}")
    return JobFilter(state=state, tags=tuple(tags), host=host, last_outcome=last_outcome)
