"""Route templates of HTTP triggers, matched the way the Functions host (ASP.NET Core routing) does.

Supported forms: literal segments (matched case-insensitively), ``{name}``, ``{name?}``, ``{*name}``
(catch-all, may span segments) and ``{name:constraint}`` (``int`` and ``alpha`` are checked, others
accepted).
More specific routes win: a route is tried before another when it has more literal segments, and catch-all
routes come last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import unquote

T = TypeVar("T")

_PARAMETER = re.compile(r"^\{(\*)?([A-Za-z_][A-Za-z0-9_]*)(?::([A-Za-z]+)(?:\([^)]*\))?)?(\?)?\}$")
_CONSTRAINTS = {"int": r"-?\d+", "alpha": r"[A-Za-z]+"}


@dataclass(frozen=True)
class CompiledRoute(Generic[T]):
    template: str
    pattern: re.Pattern[str]
    literal_segments: int
    catch_all: bool
    target: T

    def sort_key(self) -> tuple[int, int, int]:
        return (1 if self.catch_all else 0, -self.literal_segments, -self.template.count("/"))


def compile_route(template: str, target: T) -> CompiledRoute[T]:
    """Compile a route template such as ``subscriptions/{subscriptionId}/providers/{*rest}``."""
    parts: list[str] = []
    literal = 0
    catch_all = False
    segments = [s for s in template.strip("/").split("/") if s]
    for index, segment in enumerate(segments):
        match = _PARAMETER.match(segment)
        separator = "/" if index else ""
        if match is None:
            if "{" in segment:
                raise ValueError(f"route {template!r}: unsupported segment {segment!r}")
            literal += 1
            parts.append(separator + re.escape(segment))
            continue
        star, name, constraint, optional = match.groups()
        if star:
            catch_all = True
            parts.append(f"(?:{separator}(?P<{name}>.*))?")
            continue
        value = _CONSTRAINTS.get((constraint or "").lower(), r"[^/]+")
        if optional:
            parts.append(f"(?:{separator}(?P<{name}>{value}))?")
        else:
            parts.append(f"{separator}(?P<{name}>{value})")
    pattern = re.compile("^" + "".join(parts) + "/?$", re.IGNORECASE)
    return CompiledRoute(template, pattern, literal, catch_all, target)


class Router(Generic[T]):
    """Routes ordered by specificity; :meth:`match` returns the target and the route parameters."""

    def __init__(self) -> None:
        self._routes: list[CompiledRoute[T]] = []

    def add(self, template: str, target: T) -> None:
        self._routes.append(compile_route(template, target))
        self._routes.sort(key=CompiledRoute.sort_key)

    def match(self, raw_path: str) -> list[tuple[T, dict[str, str]]]:
        """Every matching route, most specific first, with percent-decoded parameters."""
        path = raw_path.split("?", 1)[0].strip("/")
        found: list[tuple[T, dict[str, str]]] = []
        for route in self._routes:
            m = route.pattern.match(path)
            if m is not None:
                params = {k: unquote(v) for k, v in m.groupdict().items() if v is not None}
                found.append((route.target, params))
        return found
