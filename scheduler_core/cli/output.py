"""Output: aligned tables for people, JSON for scripts (``--output json``), progress on standard error.

Every value the command line prints may come from outside (an import file, the service's answers, a
hostile endpoint), and a terminal acts on some characters instead of showing them: escape sequences that
recolour, retitle or clear the screen, move the cursor or rewrite what was printed, C1 controls that some
terminals take as escapes, bidirectional overrides that show text in another order than it is. So text
is printed through this module, where :func:`visible`, the one rule, escapes such characters as it is
written: lines (:func:`write_line`, :func:`write_error`), tables, fields, the progress bar's detail. JSON
output (:func:`json_text`) writes the same characters as JSON escapes (``\\u001b``), which decode to the
same value. A command writes no text to standard output or error but through these.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import unicodedata
from collections.abc import Sequence
from typing import Any, TextIO

TABLE = "table"
JSON = "json"


def _hidden(code: int) -> bool:
    """Whether a terminal may act on the character ``code`` rather than show it."""
    return (
        code < 0x20  # C0 controls: ESC starts escape sequences; CR, BS and the like rewrite the line
        or 0x7F <= code <= 0x9F  # DEL and the C1 controls (CSI U+009B, OSC U+009D, ...)
        or code in (0x061C, 0x200E, 0x200F)  # the bidirectional marks (ALM, LRM, RLM)
        or 0x202A <= code <= 0x202E  # bidirectional embeddings and overrides (LRE, RLE, PDF, LRO, RLO)
        or 0x2066 <= code <= 0x2069  # bidirectional isolates (LRI, RLI, FSI, PDI)
        or code in (0x2028, 0x2029)  # the line and paragraph separators
    )


#: Each hidden character as text shows it (``\\x1b``, ``\\u202e``).
_VISIBLE = {
    code: {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}.get(code, f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    for code in range(0x2070)
    if _hidden(code)
}
#: ... and as a JSON escape, for those :func:`json.dumps` writes as they are (it escapes the C0 controls
#: in strings itself, and its own newlines and indents, outside strings, stay).
_JSON_ESCAPE = {code: f"\\u{code:04x}" for code in _VISIBLE if code >= 0x20}


def visible(text: str) -> str:
    """``text`` with every character a terminal may act on rather than show written as a visible escape, as
    Python writes it in a string literal: C0 controls (tabs and newlines too), DEL, C1 controls, the
    bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E, U+200F, U+202A to U+202E,
    U+2066 to U+2069) and the line and paragraph separators (U+2028, U+2029). ``"\\x1b[2J"`` prints as
    ``\\x1b[2J``, ``"\\u202e"`` as ``\\u202e``. Everything else is kept, backslashes included, so
    ``visible(visible(text)) == visible(text)``: text escaped once is never escaped again."""
    return text.translate(_VISIBLE)


def write_line(text: str = "", out: TextIO | None = None) -> None:
    """Print one line: :func:`visible` ``text``, then a newline (``out``: standard output by default). The
    way every line of text is printed; ``text`` is one line (a newline inside it shows as ``\\n``)."""
    (out or sys.stdout).write(visible(text) + "\n")


def write_error(message: str, out: TextIO | None = None) -> None:
    """Print ``error: <message>`` on standard error (or ``out``), through :func:`write_line`."""
    write_line(f"error: {message}", out or sys.stderr)


def json_text(document: Any, indent: int | None = 2) -> str:
    """``document`` as JSON text, non-ASCII letters kept, every character :func:`visible` escapes written as
    a JSON escape (``\\u001b``, ``\\u202e``; :func:`json.dumps` escapes only the C0 controls): the same
    value for a program, nothing a terminal acts on for a person."""
    return json.dumps(document, indent=indent, ensure_ascii=False).translate(_JSON_ESCAPE)


def add_output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        choices=(TABLE, JSON),
        default=TABLE,
        help="'table' for people (default), 'json' for scripts (stdout is then one JSON document)",
    )


def write_json(document: Any, out: TextIO | None = None) -> None:
    """``document`` as one JSON document (:func:`json_text`) and a newline."""
    stream = out or sys.stdout
    stream.write(json_text(document) + "\n")


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def _cell(value: Any, limit: int) -> str:
    """A table cell: on one line (whitespace runs are one space), :func:`visible`, at most ``limit``."""
    text = "" if value is None else str(value)
    text = visible(" ".join(text.split()))  # one line per row
    if limit and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def write_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO | None = None, limit: int = 60
) -> None:
    """Rows under upper-case headers, columns padded to their widest cell (each cell at most ``limit``)."""
    stream = out or sys.stdout
    cells = [[_cell(value, limit) for value in row] for row in rows]
    widths = [max([_width(h), *(_width(r[i]) for r in cells)]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        padded = [v + " " * (w - _width(v)) for v, w in zip(values, widths, strict=True)]
        return "  ".join(padded).rstrip()

    write_line(line([h.upper() for h in headers]), stream)
    for row in cells:
        write_line(line(row), stream)


def write_fields(pairs: Sequence[tuple[str, Any]], out: TextIO | None = None) -> None:
    """``name: value`` lines, names aligned, each through :func:`write_line`."""
    stream = out or sys.stdout
    width = max((len(name) for name, _ in pairs), default=0)
    for name, value in pairs:
        write_line(f"{name + ':':<{width + 1}} {'' if value is None else value}", stream)


class Progress:
    """Progress of long work on standard error: a bar redrawn in place on a terminal, otherwise a counter
    line every tenth of the way (and at the end). ``enabled=False`` writes nothing."""

    BAR = 30

    def __init__(self, label: str, total: int, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.label = label
        self.total = max(total, 0)
        self.stream = stream or sys.stderr
        self.enabled = enabled and self.total > 0
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.done = 0
        self.detail = ""
        self._last_step = -1
        self._last_draw = 0.0

    def advance(self, detail: str = "", count: int = 1) -> None:
        self.done = min(self.total, self.done + count)
        self.detail = detail
        if not self.enabled:
            return
        if self.tty:
            now = time.monotonic()
            if self.done == self.total or now - self._last_draw >= 0.1:
                self._last_draw = now
                self._draw()
            return
        step = self.done * 10 // self.total
        if step != self._last_step:
            self._last_step = step
            write_line(f"{self.label}: {self.done}/{self.total}", self.stream)
            self.stream.flush()

    def _draw(self) -> None:
        filled = self.done * self.BAR // self.total
        bar = "#" * filled + "-" * (self.BAR - filled)
        detail = _cell(self.detail, 40)
        self.stream.write(f"\r\x1b[2K{self.label} [{bar}] {self.done}/{self.total} {detail}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\r\x1b[2K" if self.done == self.total else "\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
