"""Parse Bicep files with pycep-parser and print the result as JSON (run inside .venv-infra).

Usage: python pycep_dump.py FILE.bicep...  ->  {"FILE.bicep": {"ok": true, "result": {...}} |
{"ok": false, "error": "..."}}. It runs in the tools' environment, not the project's, so it imports
nothing from the project.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pycep import BicepParser  # type: ignore[import-not-found]


def main(paths: list[str]) -> int:
    parser = BicepParser()
    out: dict[str, object] = {}
    for name in paths:
        try:
            out[name] = {"ok": True, "result": parser.parse(file_path=Path(name))}
        except Exception as exc:
            out[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    json.dump(out, sys.stdout, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
