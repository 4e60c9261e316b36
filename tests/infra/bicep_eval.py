"""A small evaluator of pycep-parser's view of Bicep expressions, enough for the consistency checks.

pycep renders an identifier and a string literal the same way (``scanQueueName`` vs ``'scanQueueName'``),
so a bare string that names a parameter, variable or loop variable of the template is read as a reference
to it; any other string is a literal, with ``${...}`` interpolations resolved. Parameters take their
default values, or the values a test gives (``Template(parsed, parameters={...})``, as a deployment's
parameters would). ``[for i in range(a, n): ...]`` and ``[for x in array: ...]`` loops, ``concat``,
``string``, ``union``, ``empty``, ``min``, ``max``, ``!``, ``==``, ``!=``, the integer arithmetic
``+ - * / %`` (``/`` and ``%`` truncate toward zero, as ARM's do), the comparisons ``< <= > >=`` and ``? :``
are evaluated. A module's output
(``storage.outputs.blobEndpoint``) evaluates to a :class:`ModuleOutput` naming it, so that a test can tell
which module's output a value is; any other use of it, and what else cannot be known before deployment
(``uniqueString``, resource properties...), evaluates to :data:`UNKNOWN`, which spreads through
interpolations.
"""

from __future__ import annotations

import operator as op
import re
from collections.abc import Callable
from typing import Any, NamedTuple


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


class ModuleOutput(NamedTuple):
    """``<module>.outputs.<output>``: known only at deployment, but known to be that module's output."""

    module: str
    output: str


def accessor_path(node: Any) -> list[str] | None:
    """``a.b.c`` (pycep's nested ``property_accessor`` operators) as ``['a', 'b', 'c']``; None otherwise."""
    if isinstance(node, str):
        return [node] if _IDENTIFIER.match(node) else None
    if not isinstance(node, dict) or (node.get("operator") or {}).get("type") != "property_accessor":
        return None
    operands = node["operator"].get("operands") or {}
    head, tail = accessor_path(operands.get("operand_1")), accessor_path(operands.get("operand_2"))
    return None if head is None or tail is None else head + tail


_INTERPOLATION = re.compile(r"\$\{([^}]*)\}")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Template:
    """One parsed Bicep file (pycep result) with its parameters' defaults and variables."""

    def __init__(self, parsed: dict[str, Any], parameters: dict[str, Any] | None = None) -> None:
        self.parsed = parsed
        self.parameters: dict[str, Any] = parsed.get("parameters") or {}
        self.variables: dict[str, Any] = parsed.get("variables") or {}
        self.resources: dict[str, Any] = parsed.get("resources") or {}
        self.modules: dict[str, Any] = parsed.get("modules") or {}
        unknown = set(parameters or {}) - set(self.parameters)
        if unknown:
            raise KeyError(f"the template has no parameters {sorted(unknown)}")
        self.given: dict[str, Any] = dict(parameters or {})

    def variable(self, name: str) -> Any:
        """A variable's raw (unevaluated) value."""
        return self.variables[name]["value"]

    def deployed_modules(self, path: str) -> dict[str, dict[str, Any]]:
        """The modules of file ``path`` (as written after ``module <symbol>``) that this deployment deploys
        (no condition, or one that is true): symbol -> their evaluated ``params``."""
        deployed: dict[str, dict[str, Any]] = {}
        for symbol, module in self.modules.items():
            if (module.get("detail") or {}).get("path") != path:
                continue
            config = module["config"]
            if "condition" in config:
                condition = self.evaluate(config["condition"])
                if not isinstance(condition, bool):
                    raise ValueError(f"module {symbol}: condition cannot be evaluated")
                if not condition:
                    continue
                config = config["config"]
            deployed[symbol] = self.evaluate(config.get("params") or {})
        return deployed

    def evaluate(self, node: Any, depth: int = 0, scope: dict[str, Any] | None = None) -> Any:
        """The value of ``node``; ``scope`` holds the loop variables in force."""
        if depth > 50:
            raise RecursionError("Bicep expression too deep")
        scope = scope or {}
        if isinstance(node, bool | int | float) or node is None:
            return node
        if isinstance(node, list):
            return [self.evaluate(item, depth + 1, scope) for item in node]
        if isinstance(node, str):
            return self._string(node, depth, scope)
        if isinstance(node, dict):
            if "function" in node:
                return self._function(node["function"], depth, scope)
            if "operator" in node:
                return self._operator(node["operator"], depth, scope)
            if "loop_type" in node:
                return self._loop(node, depth, scope)
            return {key: self.evaluate(value, depth + 1, scope) for key, value in node.items()}
        return UNKNOWN

    def _reference(self, name: str, depth: int, scope: dict[str, Any]) -> Any:
        if name in scope:
            return scope[name]
        if name in self.given:
            return self.given[name]
        if name in self.parameters:
            parameter = self.parameters[name]
            return self.evaluate(parameter["default"], depth + 1) if "default" in parameter else UNKNOWN
        if name in self.variables:
            return self.evaluate(self.variables[name]["value"], depth + 1)
        return None  # not a reference

    def _string(self, text: str, depth: int, scope: dict[str, Any]) -> Any:
        if _IDENTIFIER.match(text):
            value = self._reference(text, depth, scope)
            return text if value is None else value
        parts: list[str] = []
        position = 0
        for match in _INTERPOLATION.finditer(text):
            parts.append(text[position : match.start()])
            inner = match.group(1).strip()
            value = self._reference(inner, depth, scope) if _IDENTIFIER.match(inner) else UNKNOWN
            if value is None or value is UNKNOWN or isinstance(value, dict | list | ModuleOutput):
                return UNKNOWN
            parts.append(_to_text(value))
            position = match.end()
        parts.append(text[position:])
        return "".join(parts)

    def _loop(self, node: dict[str, Any], depth: int, scope: dict[str, Any]) -> Any:
        """``[for i in range(start, count): body]`` or ``[for item in array: body]`` (no filter)."""
        loop = node["loop_type"]
        detail = loop.get("detail") or {}
        if node.get("condition") is not None:
            return UNKNOWN
        if loop.get("type") == "range":
            start = self.evaluate(detail.get("start_index"), depth + 1, scope)
            count = self.evaluate(detail.get("count"), depth + 1, scope)
            if not isinstance(start, int) or not isinstance(count, int):
                return UNKNOWN
            bindings = [{detail["index_name"]: i} for i in range(start, start + count)]
        elif loop.get("type") == "array":
            items = self.evaluate(detail.get("array_name"), depth + 1, scope)
            if not isinstance(items, list):
                return UNKNOWN
            index_name = detail.get("index_name")
            bindings = [
                {detail["item_name"]: item, **({index_name: i} if index_name else {})} for i, item in enumerate(items)
            ]
        else:
            return UNKNOWN
        values = [self.evaluate(node["config"], depth + 1, {**scope, **binding}) for binding in bindings]
        return UNKNOWN if any(value is UNKNOWN for value in values) else values

    def _function(self, function: dict[str, Any], depth: int, scope: dict[str, Any]) -> Any:
        parameters = (function.get("parameters") or {}).values()
        arguments = [self.evaluate(value, depth + 1, scope) for value in parameters]
        if any(argument is UNKNOWN or isinstance(argument, ModuleOutput) for argument in arguments):
            return UNKNOWN
        kind = function.get("type")
        if kind == "empty" and len(arguments) == 1 and isinstance(arguments[0], str | list | dict):
            return len(arguments[0]) == 0
        if kind == "string" and len(arguments) == 1:
            return _to_text(arguments[0])
        if kind == "union" and all(isinstance(a, dict) for a in arguments):
            merged: dict[str, Any] = {}
            for argument in arguments:
                merged.update(argument)
            return merged
        if kind == "concat" and arguments and all(isinstance(a, list) for a in arguments):
            return [item for argument in arguments for item in argument]
        if kind == "concat" and all(isinstance(a, str | int | bool) for a in arguments):
            return "".join(_to_text(a) for a in arguments)
        if kind in ("min", "max") and arguments and all(_is_int(a) for a in arguments):
            return min(arguments) if kind == "min" else max(arguments)
        return UNKNOWN

    def _operator(self, operator: dict[str, Any], depth: int, scope: dict[str, Any]) -> Any:
        operands = operator.get("operands") or {}
        if operator.get("type") == "property_accessor":
            path = accessor_path({"operator": operator})
            if path and len(path) == 3 and path[0] in self.modules and path[1] == "outputs" and path[0] not in scope:
                return ModuleOutput(path[0], path[2])
            return UNKNOWN
        if operator.get("type") == "not":
            value = self.evaluate(operands.get("bool_value"), depth + 1, scope)
            return (not value) if isinstance(value, bool) else UNKNOWN
        if operator.get("type") == "conditional":
            condition = self.evaluate(operands.get("condition"), depth + 1, scope)
            if isinstance(condition, bool):
                branch = "true_value" if condition else "false_value"
                return self.evaluate(operands.get(branch), depth + 1, scope)
        kind = operator.get("type")
        if kind in _ARITHMETIC or kind in _COMPARISONS:
            left = self.evaluate(operands.get("operand_1"), depth + 1, scope)
            right = self.evaluate(operands.get("operand_2"), depth + 1, scope)
            if not (_is_int(left) and _is_int(right)):
                return UNKNOWN
            if kind in _COMPARISONS:
                return _COMPARISONS[kind](left, right)
            if kind in ("divide", "modulo") and right == 0:
                return UNKNOWN
            return _ARITHMETIC[kind](left, right)
        if operator.get("type") in ("equals", "not_equals"):
            left = self.evaluate(operands.get("operand_1"), depth + 1, scope)
            right = self.evaluate(operands.get("operand_2"), depth + 1, scope)
            if left is UNKNOWN or right is UNKNOWN or isinstance(left, ModuleOutput) or isinstance(right, ModuleOutput):
                return UNKNOWN
            return (left == right) == (operator["type"] == "equals")
        return UNKNOWN


def _is_int(value: Any) -> bool:
    """A Bicep int (a bool is not one, though Python's bool is an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _truncating_divide(left: int, right: int) -> int:
    """ARM's integer division (``div``, Bicep's ``/``), which truncates toward zero."""
    quotient = abs(left) // abs(right)
    return quotient if (left >= 0) == (right > 0) else -quotient


def _truncating_modulo(left: int, right: int) -> int:
    """ARM's remainder (``mod``, Bicep's ``%``), which takes the sign of the dividend."""
    return left - right * _truncating_divide(left, right)


#: pycep's names of Bicep's integer operators, and what each computes.
_ARITHMETIC: dict[str, Callable[[int, int], int]] = {
    "add": op.add,
    "substract": op.sub,  # (sic: pycep's spelling)
    "multiply": op.mul,
    "divide": _truncating_divide,
    "modulo": _truncating_modulo,
}
_COMPARISONS: dict[str, Callable[[int, int], bool]] = {
    "greater_than": op.gt,
    "greater_than_or_equals": op.ge,
    "less_than": op.lt,
    "less_than_or_equals": op.le,
}


def _to_text(value: Any) -> str:
    """Bicep's string(): booleans are 'true' / 'false'."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
