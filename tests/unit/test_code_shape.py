"""The shape the pipeline core was given (docs/architecture.md): small units, and one home for an attempt.

- No class in ``scheduler_core`` is over :data:`MAX_CLASS_LINES` lines and no function over :data:`MAX_FUNCTION_LINES`
  (decorators and docstrings included): a unit a reader holds in mind at once.
- An execution message is built in one product module, ``scheduler_core/pipeline/attempts.py``: every cause of an
  attempt (a scan, a retry, an error action, run-now, a backfill, the watchdog) goes through it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_CLASS_LINES = 250
MAX_FUNCTION_LINES = 60


def _units(kinds: tuple[type[ast.AST], ...], limit: int) -> list[str]:
    over = []
    for path in sorted((ROOT / "scheduler_core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, kinds):
                assert isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
                lines = (node.end_lineno or node.lineno) - first + 1
                if lines > limit:
                    over.append(f"{path.relative_to(ROOT)}: {node.name} ({lines} lines)")
    return over


def test_no_class_is_over_250_lines() -> None:
    assert _units((ast.ClassDef,), MAX_CLASS_LINES) == []


def test_no_function_is_over_60_lines() -> None:
    assert _units((ast.FunctionDef, ast.AsyncFunctionDef), MAX_FUNCTION_LINES) == []


def test_an_execution_message_is_built_in_one_product_module() -> None:
    product = [ROOT / "function_app.py", *sorted((ROOT / "scheduler_core").rglob("*.py"))]
    building = [
        str(path.relative_to(ROOT)) for path in product if re.search(r"\bExecutionMessage\(", path.read_text("utf-8"))
    ]
    assert building == ["scheduler_core/pipeline/attempts.py"]
