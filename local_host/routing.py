"""Route templates of HTTP triggers, matched the way the Functions host (ASP.NET Core routing) does.

Supported forms: literal segments (matched case-insensitively), ``{name}``, ``{name?}``, ``{*name}``
(catch-all, may span segments) and ``{name:constraint}`` (``int``, ``alpha``, ``minlength(n)``,
``maxlength(n)`` and ``length(n)`` / ``length(min,max)`` are checked, others accepted). An optional parameter
that is absent is not checked, as ASP.NET Core's ``OptionalRouteConstraint`` does not, so
``{ignored:maxlength(0)?}`` matches the empty path alone (how a function owns ``/`` with the route prefix
"").
More specific routes win: a route is tried before another when it has more literal segments, and catch-all
routes come last.

Routes match the request path as ASP.NET Core gives it to routing (:func:`decode_path`): percent-escapes
decoded once, except ``%2F``, which stays encoded in the path and so in the route values (the Functions host
hands route values to the worker as routing found them: ``a%2Fb`` reaches the function as ``a%2Fb``, not
``a/b``, and is never a segment boundary).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

_PARAMETER = re.compile(r"^\{(\*)?([A-Za-z_][A-Za-z0-9_]*)(?::([A-Za-z]+)(?:\(([^)]*)\))?)?(\?)?\}$")
_CONSTRAINTS = {"int": r"-?\d+", "alpha": r"[A-Za-z]+"}
#: Constraints on a value's length, with their arguments: (fewest, most) characters of one segment.
_LENGTHS = {"minlength": (1, 1), "maxlength": (1, 1), "length": (1, 2)}


_HEX = frozenset("0123456789abcdefABCDEF")


def _escape_at(path: str, index: int) -> int | None:
    """The byte of the escape ``%XX`` at ``index``, or None: not an escape, or ``%2F``, which is never decoded."""
    if path[index] != "%" or index + 2 >= len(path):
        return None
    high, low = path[index + 1], path[index + 2]
    if high not in _HEX or low not in _HEX:
        return None
    value = int(high + low, 16)
    return None if value == 0x2F else value


def _sequence_length(lead: int) -> int:
    """How many bytes a UTF-8 sequence starting with ``lead`` has (0: not a lead byte)."""
    if lead < 0x80:
        return 1
    if lead & 0xE0 == 0xC0:
        return 2
    if lead & 0xF0 == 0xE0:
        return 3
    if lead & 0xF8 == 0xF0:
        return 4
    return 0


def decode_path(path: str) -> str:
    """``path`` decoded as Kestrel does before routing (ASP.NET Core ``UrlDecoder.DecodeInPlace`` with
    ``isFormEncoding: false``, called by Kestrel's ``PathDecoder.DecodePath``): each run of escapes that is
    valid UTF-8 (no overlong form, surrogate or code point above U+10FFFF) is decoded once; ``%2F`` (either
    case) stays encoded; an escape that does not begin a valid sequence stays as it was, as does a ``%``
    without two hex digits. ``+`` is not a space in a path.

    So ``a%2Fb`` stays ``a%2Fb`` (one segment), ``a%252F`` becomes ``a%2F``, ``%C3%A9`` becomes ``é`` and
    ``%FF`` stays ``%FF``. (Kestrel answers 400 to a path holding ``%00``; here it decodes to U+0000, which
    the app's name rule refuses. Kestrel also removes dot segments after decoding; this does not.)
    """
    out: list[str] = []
    index = 0
    while index < len(path):
        lead = _escape_at(path, index)
        if lead is None:
            out.append(path[index])
            index += 1
            continue
        length = _sequence_length(lead)
        sequence = [lead]
        end = index + 3
        while 0 < len(sequence) < length:
            following = _escape_at(path, end) if end < len(path) else None  # None also for %2F
            if following is None or following & 0xC0 != 0x80:
                break
            sequence.append(following)
            end += 3
        if length and len(sequence) == length:
            try:
                out.append(bytes(sequence).decode("utf-8"))
                index = end
                continue
            except UnicodeDecodeError:
                pass
        out.append(path[index : index + 3])  # not decodable from here: kept as sent; what follows is read anew
        index += 3
    return "".join(out)


def _value_pattern(template: str, constraint: str | None, argument: str | None) -> str:
    """The pattern of one parameter's value (a segment, never empty) under ``constraint``: ``int`` and
    ``alpha`` as ASP.NET Core checks them; ``minlength(n)``, ``maxlength(n)``, ``length(n)`` and
    ``length(min,max)`` as bounds on its length (a bound that leaves no length possible matches nothing);
    any other constraint is accepted unchecked."""
    name = (constraint or "").lower()
    if name in _CONSTRAINTS:
        return _CONSTRAINTS[name]
    if name not in _LENGTHS:
        return r"[^/]+"
    numbers = [part.strip() for part in (argument or "").split(",")]
    fewest, most = _LENGTHS[name]
    if not fewest <= len(numbers) <= most or not all(n.isascii() and n.isdigit() for n in numbers):
        raise ValueError(f"route {template!r}: {constraint}({argument or ''}) needs {most} whole number(s)")
    low, high = {
        "minlength": (int(numbers[0]), None),
        "maxlength": (1, int(numbers[0])),
        "length": (int(numbers[0]), int(numbers[-1])),
    }[name]
    low = max(low, 1)  # a segment holds at least one character
    if high is not None and high < low:
        return r"(?!)"
    return f"[^/]{{{low},{'' if high is None else high}}}"


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
        star, name, constraint, argument, optional = match.groups()
        if star:
            catch_all = True
            parts.append(f"(?:{separator}(?P<{name}>.*))?")
            continue
        value = _value_pattern(template, constraint, argument)
        if optional:
            parts.append(f"(?:{separator}(?P<{name}>{value}))?")
        else:
            parts.append(f"{separator}(?P<{name}>{value})")
    # Matched against the decoded path, which may hold any character (a decoded %0A too): "." spans line
    # breaks and the end is the string's end, never "before a final line break" as "$" allows.
    pattern = re.compile("^" + "".join(parts) + "/?\\Z", re.IGNORECASE | re.DOTALL)
    return CompiledRoute(template, pattern, literal, catch_all, target)


class Router(Generic[T]):
    """Routes ordered by specificity; :meth:`match` returns the target and the route parameters."""

    def __init__(self) -> None:
        self._routes: list[CompiledRoute[T]] = []

    def add(self, template: str, target: T) -> None:
        self._routes.append(compile_route(template, target))
        self._routes.sort(key=CompiledRoute.sort_key)

    def match(self, raw_path: str) -> list[tuple[T, dict[str, str]]]:
        """Every matching route, most specific first, with its parameters: the path is decoded once
        (:func:`decode_path`, ``%2F`` kept encoded) and then matched, as ASP.NET Core routing does."""
        path = decode_path(raw_path.split("?", 1)[0]).strip("/")
        found: list[tuple[T, dict[str, str]]] = []
        for route in self._routes:
            m = route.pattern.match(path)
            if m is not None:
                params = {k: v for k, v in m.groupdict().items() if v is not None}
                found.append((route.target, params))
        return found
