"""``$top``, ``$skip``, ``$filter`` and absolute ``nextLink`` URLs for list operations.

The SDK follows ``nextLink`` verbatim, so the link carries every query parameter of the request
(``api-version``, ``$top``, ``$filter``) with ``$skip`` advanced by one page.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from scheduler_core.errors import ValidationError

T = TypeVar("T")

MAX_TOP = 100
DEFAULT_PAGE = 100

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
