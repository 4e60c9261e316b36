"""``$top``, ``$skip``, ``$filter`` and absolute ``nextLink`` URLs for list operations.

The SDK follows ``nextLink`` verbatim, so the link carries every query parameter of the request
(``api-version``, ``$top``, ``$filter``) with ``$skip`` advanced by one page. A job's occurrences (an
endless list) page by instant instead: ``$top`` and ``after``, the link's ``after`` being the last one
answered (:func:`parse_occurrence_query`, :func:`link_after`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from scheduler_core.errors import ValidationError
from scheduler_core.recurrence import format_instant, parse_instant

T = TypeVar("T")

MAX_TOP = 100
DEFAULT_PAGE = 100
#: Occurrences answered when ``$top`` is not given.
DEFAULT_OCCURRENCES = 10
#: The range of ``after`` (the local dates of exclusions and calendars span the same years): near year 1 a
#: schedule's jitter and time zone would take instants out of what Python can hold.
FIRST_AFTER = datetime(1900, 1, 1, tzinfo=UTC)
LAST_AFTER = datetime(9998, 12, 31, 23, 59, 59, tzinfo=UTC)

_INTEGER = re.compile(r"-?[0-9]{1,18}", re.ASCII)
_FILTER = re.compile(r"^\s*(?P<field>[A-Za-z]+)\s+eq\s+(?P<quote>'?)(?P<value>[A-Za-z]+)(?P=quote)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Paging:
    top: int | None
    skip: int


@dataclass(frozen=True)
class Page(Generic[T]):
    items: Sequence[T]
    next_link: str | None


def _integer(query: Mapping[str, str], name: str, minimum: int, maximum: int | None) -> int | None:
    text = query.get(name)
    if text is None:
        return None
    # ASCII digits only: int() would also read ' 5', '1_0', fullwidth and Arabic-Indic digits.
    if _INTEGER.fullmatch(text) is None:
        raise ValidationError(name, f"must be an integer (ASCII digits), got '{text[:40]}'")
    value = int(text)
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise ValidationError(name, f"must be {bound}, got {value}")
    return value


def parse_paging(query: Mapping[str, str]) -> Paging:
    return Paging(top=_integer(query, "$top", 1, MAX_TOP), skip=_integer(query, "$skip", 0, None) or 0)


def parse_filter(query: Mapping[str, str], field: str, allowed: Sequence[str]) -> str | None:
    """The value of ``$filter=<field> eq 'Value'`` (quotes optional, any casing), in canonical casing."""
    text = query.get("$filter")
    if text is None or not text.strip():
        return None
    match = _FILTER.match(text)
    if match is None or match.group("field").lower() != field.lower():
        raise ValidationError("$filter", f"only \"{field} eq '<value>'\" is supported, got '{text}'")
    value = match.group("value").lower()
    for candidate in allowed:
        if candidate.lower() == value:
            return candidate
    raise ValidationError("$filter", f"{field} must be one of {', '.join(allowed)}, got '{match.group('value')}'")


def paginate(items: Sequence[T], paging: Paging, url: str) -> Page[T]:
    size = paging.top or DEFAULT_PAGE
    window = items[paging.skip : paging.skip + size]
    if paging.skip + size >= len(items):
        return Page(window, None)
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "$skip"]
    query.append(("$skip", str(paging.skip + size)))
    return Page(window, urlunsplit(parts._replace(query=urlencode(query, safe="$',"))))


def parse_occurrence_query(query: Mapping[str, str]) -> tuple[int, datetime | None]:
    """``$top`` (1 to :data:`MAX_TOP`, default :data:`DEFAULT_OCCURRENCES`) and ``after`` (an ISO 8601
    instant; without an offset, UTC) of a job's occurrences. ``$skip`` does not apply (follow ``nextLink``)."""
    if query.get("$skip") is not None:
        raise ValidationError("$skip", "is not supported for occurrences; page with 'after' (the nextLink does)")
    top = _integer(query, "$top", 1, MAX_TOP) or DEFAULT_OCCURRENCES
    after_text = query.get("after")
    if after_text is None:
        return top, None
    after = parse_instant(after_text, "after")
    if not FIRST_AFTER <= after <= LAST_AFTER:
        raise ValidationError(
            "after",
            f"must be from {format_instant(FIRST_AFTER)} to {format_instant(LAST_AFTER)}, not {format_instant(after)}",
        )
    return top, after


def link_after(url: str, after: datetime) -> str:
    """``url`` with its ``after`` parameter set to ``after`` (the next page of occurrences)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "after"]
    query.append(("after", format_instant(after)))
    return urlunsplit(parts._replace(query=urlencode(query, safe="$',:")))
