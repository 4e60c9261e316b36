"""Output: aligned tables for people, JSON for scripts (``--output json``), progress on standard error."""

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


def add_output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        choices=(TABLE, JSON),
        default=TABLE,
        help="'table' for people (default), 'json' for scripts (stdout is then one JSON document)",
    )


def write_json(document: Any, out: TextIO | None = None) -> None:
    stream = out or sys.stdout
    stream.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def _cell(value: Any, limit: int) -> str:
    text = "" if value is None else str(value)
    text = " ".join(text.split())  # one line per row
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

    stream.write(line([h.upper() for h in headers]) + "\n")
    for row in cells:
        stream.write(line(row) + "\n")


def write_fields(pairs: Sequence[tuple[str, Any]], out: TextIO | None = None) -> None:
    """``name: value`` lines, names aligned."""
    stream = out or sys.stdout
    width = max((len(name) for name, _ in pairs), default=0)
    for name, value in pairs:
        stream.write(f"{name + ':':<{width + 1}} {'' if value is None else value}\n")


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
            self.stream.write(f"{self.label}: {self.done}/{self.total}\n")
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
