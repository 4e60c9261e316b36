"""Reading source files safely: bounded in size, UTF-8 text only (binary refused), JSON by the service's
strict reader, YAML by ``yaml.safe_load_all`` (no object construction) with the expansion of its anchors
and aliases bounded (a "billion laughs" file is refused, not expanded)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

import yaml

from scheduler_core.cli.common import MAX_FILE_DEPTH, CliError
from scheduler_core.definitions import read_json
from scheduler_core.errors import ValidationError

#: The largest source file read (bytes).
MAX_SOURCE_BYTES = 8 * 1024 * 1024
#: How many values a YAML file may hold once its aliases are expanded (each alias counts its whole value).
MAX_YAML_VALUES = 200_000
#: How deep a YAML file may nest.
MAX_YAML_DEPTH = 64


def read_text(path: str, stdin: TextIO | None = None) -> str:
    """The text of ``path`` (``-``: standard input): at most :data:`MAX_SOURCE_BYTES`, UTF-8 (a BOM is
    accepted), without NUL characters (a binary file); else a :class:`CliError` naming the file."""
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(MAX_SOURCE_BYTES + 1) if stdin is None else stdin.read().encode()
        else:
            with Path(path).open("rb") as handle:
                raw = handle.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_SOURCE_BYTES:
        raise CliError(f"{path} is larger than {MAX_SOURCE_BYTES // (1024 * 1024)} MiB")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CliError(f"{path} is not UTF-8 text (a binary file?): byte {exc.start} cannot be decoded") from None
    if "\x00" in text:
        raise CliError(f"{path} holds NUL characters: a binary file, not a text source")
    return text


def read_json_text(text: str, origin: str) -> Any:
    """A JSON document, by the service's strict reader (depth bounded)."""
    try:
        return read_json(text, origin, MAX_FILE_DEPTH)
    except ValidationError as exc:
        raise CliError(exc.rule) from None


def _check_expansion(document: Any, origin: str) -> None:
    """Refuse a YAML value that holds more than :data:`MAX_YAML_VALUES` values or nests deeper than
    :data:`MAX_YAML_DEPTH` once its aliases are expanded (aliases share one Python object: each use counts)."""
    budget = MAX_YAML_VALUES
    stack: list[tuple[Any, int]] = [(document, 0)]
    while stack:
        value, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise CliError(
                f"{origin}: more than {MAX_YAML_VALUES:,} values once its YAML aliases are expanded (refused: an "
                "alias bomb, or not a source file)"
            )
        if depth > MAX_YAML_DEPTH:
            raise CliError(f"{origin}: nests deeper than {MAX_YAML_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for pair in value.items() for item in pair)
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)


def read_yaml_documents(text: str, origin: str) -> list[Any]:
    """The documents of a YAML stream (``---`` separated), by ``yaml.safe_load_all``, bounded (see
    :func:`_check_expansion`); a syntax error is a :class:`CliError` naming the line."""
    try:
        documents = list(yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CliError(f"{origin} is not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise CliError(f"{origin}: nests too deep to read") from None
    for document in documents:
        _check_expansion(document, origin)
    return documents


def read_documents(text: str, origin: str) -> list[Any]:
    """The documents of a JSON or YAML file: JSON when it begins with ``{`` or ``[`` (one document; YAML
    when it is no JSON but YAML), else YAML (one or more)."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return [read_json_text(text, origin)]
        except CliError as json_error:
            try:  # a YAML flow collection ({a: 1}) begins so too
                return read_yaml_documents(text, origin)
            except CliError:
                raise json_error from None
    return read_yaml_documents(text, origin)
