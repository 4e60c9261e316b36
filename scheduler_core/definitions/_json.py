"""Strict reading of JSON: the one decoder of JSON from outside (:func:`read_json`), then known fields only,
exact JSON types, errors that name the path.

Keys match without regard to case (the recurrence engine does the same, and old clients wrote
``Occurrence`` and ``occurrence`` alike); a JSON ``null`` counts as absent. Error messages never repeat a
value a client sent, except short enum names, so a secret typed into the wrong field is not echoed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from scheduler_core.definitions._versions import CLASSIC_VERSION, PREVIEW_VERSION
from scheduler_core.errors import ValidationError

__all__ = [
    "MAX_DEPTH",
    "Fields",
    "enum_value",
    "int_value",
    "join",
    "nesting_depth",
    "read_json",
    "str_map",
    "str_value",
]

E = TypeVar("E")

#: Enum values longer than this are not repeated in error messages.
_ECHO_LIMIT = 40

#: How deep a JSON document from outside may nest (arrays and objects; the outermost one is level 1). The
#: deepest definition the service reads (a job's ``properties.action.errorAction.request.authentication``,
#: a recurrence's ``monthlyOccurrences``) nests about 7 levels; Python's decoder, and every recursive walk
#: of a decoded value after it (copies, merge patches, encoders), fail with ``RecursionError`` near 1,000.
MAX_DEPTH = 32
#: What opens or closes a level, or a JSON string (escapes included), skipped whole: a bracket inside one
#: is text.
_BRACKET = re.compile(r'[\[\]{}]|"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def nesting_depth(text: str, limit: int | None = None) -> int:
    """How deep the arrays and objects of JSON ``text`` nest (0 for a scalar), read without recursion and
    without decoding; with ``limit``, counting stops as soon as the depth exceeds it (``limit + 1``).

    Brackets inside strings are not counted. ``text`` need not be valid JSON: a malformed document gives
    the depth its brackets spell (the decoder then refuses it anyway)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > deepest:
                deepest = depth
                if limit is not None and deepest > limit:
                    break
        elif token in ("]", "}"):
            depth -= 1
    return deepest


def read_json(data: bytes | str, what: str, max_depth: int = MAX_DEPTH) -> Any:
    """The one way JSON from outside (a request body, a file the command line reads) is decoded.

    ``data`` is bytes in UTF-8, UTF-16 or UTF-32 (as :func:`json.loads` detects them) or text. Refused with a
    :class:`ValidationError` whose rule starts with ``what`` (``"the request body"``, a file's name), never
    a ``RecursionError`` or another exception:

    - a document that nests deeper than ``max_depth`` levels (checked before decoding, without recursion):
      ``<what> must not nest deeper than <max_depth> levels (arrays and objects)``;
    - anything that is not JSON (syntax, encoding, an integer of more digits than Python converts):
      ``<what> is not valid JSON (<where and why>)``.
    """
    try:
        text = data.decode(json.detect_encoding(data), "surrogatepass") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise ValidationError("", f"{what} is not valid JSON ({exc})") from None
    if nesting_depth(text, max_depth) > max_depth:
        raise ValidationError("", f"{what} must not nest deeper than {max_depth} levels (arrays and objects)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError("", f"{what} is not valid JSON ({exc})") from None
    except ValueError:  # an integer longer than sys.get_int_max_str_digits() (4,300 digits)
        raise ValidationError("", f"{what} is not valid JSON (a number has too many digits)") from None
    except RecursionError:  # not reached within max_depth; kept so that no decoder failure is a 500
        raise ValidationError("", f"{what} must not nest deeper than {max_depth} levels (arrays and objects)") from None


def preview_only(path: str, what: str = "field") -> ValidationError:
    """The error of a ``field`` (or a ``type``, ...) that only the preview api-version knows, written with a
    classic one: ``is not a known field in api-version 2016-03-01; it is accepted with
    api-version=2026-12-01-preview`` (a 400 ARM error body naming ``path``)."""
    accepted = f"it is accepted with api-version={PREVIEW_VERSION}"
    return ValidationError(path, f"is not a known {what} in api-version {CLASSIC_VERSION}; {accepted}")


def join(path: str, key: str) -> str:
    """``path.key`` (just ``key`` at the top level)."""
    return f"{path}.{key}" if path else key


def kind(value: object) -> str:
    """The JSON type name of a decoded value, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


class Fields:
    """The fields of one JSON object, checked against the names it may carry.

    ``known`` are the canonical (swagger) spellings; ``ignored`` are read-only fields that a client may
    echo back (``status``, ``id``): they are accepted and dropped. ``preview`` are the fields only the
    preview api-version knows, given when a classic one is spoken: such a field is an error naming
    ``path.key`` and the api-version that accepts it (:func:`preview_only`). Anything else is an error naming
    ``path.key`` and the allowed names.
    """

    def __init__(
        self,
        data: object,
        path: str,
        known: tuple[str, ...],
        ignored: tuple[str, ...] = (),
        hint: str = "",
        preview: tuple[str, ...] = (),
    ) -> None:
        if not isinstance(data, Mapping):
            raise ValidationError(path, f"must be a JSON object, not {kind(data)}")
        self.path = path
        by_lower = {key.lower(): key for key in known}
        skip = {key.lower() for key in ignored}
        preview_names = {key.lower() for key in preview}
        self._written: dict[str, str] = {}
        self._values: dict[str, Any] = {}
        for key, value in data.items():
            if not isinstance(key, str):
                raise ValidationError(path, "must be a JSON object with string keys")
            lower = key.lower()
            canonical = by_lower.get(lower)
            if canonical is None:
                if lower in skip:
                    continue
                if lower in preview_names:
                    raise preview_only(join(path, key))
                allowed = ", ".join(known)
                raise ValidationError(join(path, key), f"is not a known field (allowed: {allowed}){hint}")
            if canonical in self._written:
                first = self._written[canonical]
                raise ValidationError(
                    join(path, key), f"duplicates {join(path, first)} (field names are not case-sensitive)"
                )
            self._written[canonical] = key
            if value is not None:
                self._values[canonical] = value

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def get(self, name: str) -> Any:
        """The value of a known field, or None when absent or null."""
        return self._values.get(name)

    def where(self, name: str) -> str:
        """The JSON path of a field, spelled as the client wrote it (canonical when absent)."""
        return join(self.path, self._written.get(name, name))

    def present(self) -> tuple[str, ...]:
        """The canonical names of the non-null fields, in the order the client wrote them."""
        return tuple(self._values)

    def text(self, name: str, *, required: bool = False, rule: str = "") -> str | None:
        value = self.get(name)
        if value is None:
            if required:
                raise ValidationError(self.where(name), rule or "is required")
            return None
        return str_value(value, self.where(name))

    def integer(self, name: str, low: int, high: int) -> int | None:
        value = self.get(name)
        return None if value is None else int_value(value, self.where(name), low, high)

    def boolean(self, name: str) -> bool | None:
        value = self.get(name)
        if value is None:
            return None
        if not isinstance(value, bool):
            raise ValidationError(self.where(name), f"must be true or false, not {kind(value)}")
        return value


def str_value(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(path, f"must be a string, not {kind(value)}")
    return value


def int_value(value: object, path: str, low: int, high: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(path, f"must be an integer between {low} and {high}, not {kind(value)}")
    if not low <= value <= high:
        shown = str(value) if abs(value) < 10**_ECHO_LIMIT else f"a number of {len(str(abs(value)))} digits"
        raise ValidationError(path, f"must be an integer between {low} and {high}, not {shown}")
    return value


def enum_value(value: object, path: str, table: Mapping[str, E], extra: str = "") -> E:
    """Look ``value`` up in ``table`` (lower-case keys); the rule lists the canonical names."""
    names = ", ".join(dict.fromkeys(str(v) for v in table.values()))
    if isinstance(value, str) and value.strip().lower() in table:
        return table[value.strip().lower()]
    shown = kind(value)
    if isinstance(value, str):
        shown = repr(value) if len(value) <= _ECHO_LIMIT else "the given value"
    raise ValidationError(path, f"must be one of {names} (any casing){extra}, not {shown}")


def str_map(value: object, path: str) -> dict[str, str]:
    """A JSON object of string values (``headers``, ``tags``, ``customMessageProperties``)."""
    if not isinstance(value, Mapping):
        raise ValidationError(path, f"must be a JSON object of strings, not {kind(value)}")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise ValidationError(path, "must be a JSON object with string keys")
        if not isinstance(item, str):
            raise ValidationError(join(path, key), f"must be a string, not {kind(item)}")
        out[key] = item
    return out
