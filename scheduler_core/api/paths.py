"""ARM resource paths of Microsoft.Scheduler, and the rule every name in them must follow.

Paths are parsed case-insensitively (ARM clients send mixed case). A path is percent-encoded, as on the
wire: it is split at ``/`` first and each name is then decoded exactly once (strict UTF-8), so that an
encoded ``/``, ``?`` or ``%`` stays inside the name it belongs to, where the name rule refuses it. The rule
is documented in ``docs/names.md``.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from scheduler_core.errors import NotFoundError, ValidationError
from scheduler_core.storage.keys import MAX_NAME_UNITS, name_units

#: The path parameter of each name, as the Microsoft.Scheduler REST API calls it.
SUBSCRIPTION = "subscriptionId"
RESOURCE_GROUP = "resourceGroupName"
COLLECTION = "jobCollectionName"
JOB = "jobName"
#: A collection's calendar (api-version 2026-12-01-preview); its names follow the rule of job names.
CALENDAR = "calendarName"
#: A job's history entry (its execution id), run again by ``.../history/{historyId}/rerun`` (preview).
HISTORY = "historyId"

_FIELDS = {"sub": SUBSCRIPTION, "rg": RESOURCE_GROUP, "jc": COLLECTION, "job": JOB, "cal": CALENDAR, "hist": HISTORY}
_NAME = r"(?P<{}>[^/]+)"
_PATTERNS: tuple[tuple[str, str], ...] = (
    ("subscription_collections", r"subscriptions/{sub}/providers/microsoft\.scheduler/jobcollections"),
    (
        "group_collections",
        r"subscriptions/{sub}/resourcegroups/{rg}/providers/microsoft\.scheduler/jobcollections",
    ),
    ("collection", r"{jc_path}"),
    ("collection_action", r"{jc_path}/(?P<action>enable|disable)"),
    ("jobs", r"{jc_path}/jobs"),
    ("job", r"{jc_path}/jobs/{job}"),
    ("job_run", r"{jc_path}/jobs/{job}/run"),
    ("job_backfill", r"{jc_path}/jobs/{job}/backfill"),
    ("job_history", r"{jc_path}/jobs/{job}/history"),
    ("job_history_rerun", r"{jc_path}/jobs/{job}/history/{hist}/rerun"),
    ("job_occurrences", r"{jc_path}/jobs/{job}/occurrences"),
    ("calendars", r"{jc_path}/calendars"),
    ("calendar", r"{jc_path}/calendars/{cal}"),
)
#: The kinds of path that exist with api-version 2026-12-01-preview only.
PREVIEW_KINDS = frozenset({"job_backfill", "job_history_rerun", "job_occurrences", "calendars", "calendar"})
_JC = r"subscriptions/{sub}/resourcegroups/{rg}/providers/microsoft\.scheduler/jobcollections/{jc}"
#: Where each name sits (segments after the ``subscriptions`` segment): the literal segment before it -> its field.
_SEGMENT_FIELDS: dict[int, dict[str, str]] = {
    1: {"subscriptions": SUBSCRIPTION},
    3: {"resourcegroups": RESOURCE_GROUP},
    7: {"jobcollections": COLLECTION},
    9: {"jobs": JOB, "calendars": CALENDAR},
    11: {"history": HISTORY},
}


def _compile() -> tuple[tuple[str, re.Pattern[str]], ...]:
    names = {key: _NAME.format(key) for key in _FIELDS}
    compiled = []
    for kind, template in _PATTERNS:
        text = template.replace("{jc_path}", _JC).format(**names)
        compiled.append((kind, re.compile(f"^{text}/?$", re.IGNORECASE)))
    return tuple(compiled)


_COMPILED = _compile()


@dataclass(frozen=True)
class ResourcePath:
    """What a request path addresses: ``kind`` and the names in it (decoded, case kept, rule checked)."""

    kind: str
    subscription: str
    resource_group: str | None = None
    collection: str | None = None
    job: str | None = None
    action: str | None = None
    calendar: str | None = None
    #: The history entry a rerun names (its execution id).
    history: str | None = None

    @property
    def preview_only(self) -> bool:
        """Whether the path exists with api-version 2026-12-01-preview only (calendars, occurrences, backfill)."""
        return self.kind in PREVIEW_KINDS


# ------------------------------------------------------------------------------------------- the name rule

#: Characters no name may hold: path and URL syntax, which Table Storage also forbids in keys (``/ \\ ? #``),
#: and ``%``: the Functions host decodes the path before the app sees it but leaves ``%2F`` encoded, so a
#: ``%`` that reaches the app cannot be told apart from an encoded character.
FORBIDDEN = "/\\?#%"


def _case_stable(char: str) -> bool:
    """Whether ``char`` folds to one character that folds back: a one-to-one case-insensitive match.

    Refused, for example: ``İ`` (lower case is two characters), the Kelvin sign ``K`` (its lower case is
    the letter ``k``, whose upper case is ``K``), the final sigma ``ς`` (upper case ``Σ``, whose lower case
    is ``σ``), the capital sharp s ``ẞ``, the dotless ``ı``.
    """
    lower, upper = char.lower(), char.upper()
    return len(lower) == 1 and lower.upper() == upper and (len(upper) != 1 or upper.lower() == lower)


def _show(name: str) -> str:
    shown = name if len(name) <= 60 else name[:60] + "..."
    return ascii(shown) if any(unicodedata.category(c) in ("Cc", "Cs") for c in shown) else f"'{shown}'"


@functools.lru_cache(maxsize=4096)
def name_problem(field: str, name: str) -> str | None:
    """The part of the name rule that ``name`` (a ``field``: ``jobName``, ...) breaks, or None (remembered
    for the last few thousand names: most requests name the same subscription, group and collection)."""
    if not name:
        return "must not be empty"
    for char in name:
        code = ord(char)
        category = unicodedata.category(char)
        if category == "Cs":
            return f"must be valid Unicode, not a lone surrogate (U+{code:04X})"
        if category == "Cc":
            return f"must not contain control characters (found U+{code:04X})"
        if char in FORBIDDEN:
            return f"must not contain any of / \\ ? # % (found {char!r})"
        if category == "Cn":
            return f"must not contain unassigned or noncharacter code points (found U+{code:04X})"
        if not _case_stable(char):
            return (
                f"must not contain {char!r} (U+{code:04X}): it has no one-to-one case mapping, so the name "
                "could not be matched case-insensitively"
            )
    if name in (".", ".."):
        return "must not be '.' or '..'"
    if name.endswith((".", " ")):
        return "must not end with a dot or a space"
    units, limit = name_units(name), MAX_NAME_UNITS.get(field, MAX_NAME_UNITS[JOB])
    if units > limit:
        return (
            f"is too long: {units} units where at most {limit} are allowed (a character counts 1, a character "
            "outside the Basic Multilingual Plane 2, and | ' \" count 3 each)"
        )
    return None


def check_name(field: str, name: str) -> None:
    """Raise a 400 :class:`ValidationError` naming ``field`` if ``name`` breaks the name rule."""
    problem = name_problem(field, name)
    if problem is not None:
        raise ValidationError(field, f"{_show(name)} is not a valid name: it {problem} (see docs/names.md)")


# ----------------------------------------------------------------------------------------------- parsing


def _decode(field: str, raw: str) -> str:
    try:
        return unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise ValidationError(field, f"'{raw[:60]}' is not valid percent-encoded UTF-8") from None


def parse_path(path: str) -> ResourcePath:
    """Parse a percent-encoded ARM path (``subscriptions/S/resourceGroups/R/providers/Microsoft.Scheduler/...``).

    Each name is decoded exactly once and checked against the name rule. Raises :class:`NotFoundError`
    for a path that names no Scheduler resource or operation, :class:`ValidationError` (400, naming the
    name) for a name that breaks the rule.
    """
    clean = path.strip("/")
    for kind, pattern in _COMPILED:
        match = pattern.match(clean)
        if match is None:
            continue
        names: dict[str, str] = {}
        for key, field in _FIELDS.items():
            raw = match.group(key) if key in pattern.groupindex else None
            if raw is not None:
                names[key] = _decode(field, raw)
                check_name(field, names[key])
        return ResourcePath(
            kind=kind,
            subscription=names["sub"],
            resource_group=names.get("rg"),
            collection=names.get("jc"),
            job=names.get("job"),
            action=match.group("action").lower() if "action" in pattern.groupindex else None,
            calendar=names.get("cal"),
            history=names.get("hist"),
        )
    raise NotFoundError(f"no Microsoft.Scheduler resource or operation at path '/{clean}'")


def check_url(url: str) -> None:
    """Refuse a request URL whose path holds an encoded ``/`` (``%2F``) or bytes that are not UTF-8.

    A host that decoded ``%2F`` before routing would move the names after it into other segments
    (``jobs/a%2Frun`` would become the run operation of job ``a``), and one that replaced bytes that are not
    UTF-8 by U+FFFD would lose them. The Functions host (Kestrel's path decoding) keeps both encoded, and its
    URL as well; the local host does the same. The URL keeps the client's segments, so the
    check is made on it, before the path is parsed.
    """
    segments = urlsplit(url).path.strip("/").split("/")
    lowered = [segment.lower() for segment in segments]
    start = lowered.index("subscriptions") if "subscriptions" in lowered else None
    for index, segment in enumerate(segments):
        if "%2f" in lowered[index]:
            problem = "it must not contain any of / \\ ? # % (found an encoded '/', %2F) (see docs/names.md)"
        else:
            try:
                unquote(segment, errors="strict")
                continue
            except UnicodeDecodeError:
                problem = "it is not valid percent-encoded UTF-8"
        fields = _SEGMENT_FIELDS.get(index - start, {}) if start is not None else {}
        field = fields.get(lowered[index - 1], "url") if index > 0 else "url"
        raise ValidationError(field, f"'{segment[:60]}' is not a valid name: {problem}")
