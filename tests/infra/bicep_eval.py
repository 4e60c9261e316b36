"""A small evaluator of pycep-parser's view of Bicep expressions, enough for the consistency checks.

pycep renders an identifier and a string literal the same way (``scanQueueName`` vs ``'scanQueueName'``),
so a bare string that names a parameter or variable of the template is read as a reference to it; any
other string is a literal, with ``${...}`` interpolations resolved. Parameters take their default values.
What cannot be known before deployment (``uniqueString``, module outputs...) evaluates to
:data:`UNKNOWN`, which spreads through interpolations.
"""

from __future__ import annotations

import re
from typing import Any


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()

_INTERPOLATION = re.compile(r"\$\{([^}]*)\}")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Template:
    """One parsed Bicep file (pycep result) with its parameters' defaults and variables."""

    def __init__(self, parsed: dict[str, Any]) -> None:
        self.parsed = parsed
        self.parameters: dict[str, Any] = parsed.get("parameters") or {}
        self.variables: dict[str, Any] = parsed.get("variables") or {}
        self.resources: dict[str, Any] = parsed.get("resources") or {}
        self.modules: dict[str, Any] = parsed.get("modules") or {}

    def variable(self, name: str) -> Any:
        """A variable's raw (unevaluated) value."""
        return self.variables[name]["value"]

    def evaluate(self, node: Any, depth: int = 0) -> Any:
        if depth > 50:
            raise RecursionError("Bicep expression too deep")
        if isinstance(node, bool | int | float) or node is None:
            return node
        if isinstance(node, list):
            return [self.evaluate(item, depth + 1) for item in node]
        if isinstance(node, str):
            return self._string(node, depth)
        if isinstance(node, dict):
            if "function" in node:
                return self._function(node["function"], depth)
            if "operator" in node:
                return self._operator(node["operator"], depth)
            return {key: self.evaluate(value, depth + 1) for key, value in node.items()}
        return UNKNOWN

    def _reference(self, name: str, depth: int) -> Any:
        if name in self.parameters:
            parameter = self.parameters[name]
            return self.evaluate(parameter["default"], depth + 1) if "default" in parameter else UNKNOWN
        if name in self.variables:
            return self.evaluate(self.variables[name]["value"], depth + 1)
        return None  # not a reference

    def _string(self, text: str, depth: int) -> Any:
        if _IDENTIFIER.match(text):
            value = self._reference(text, depth)
            return text if value is None else value
        parts: list[str] = []
        position = 0
        for match in _INTERPOLATION.finditer(text):
            parts.append(text[position : match.start()])
            inner = match.group(1).strip()
            value = self._reference(inner, depth) if _IDENTIFIER.match(inner) else UNKNOWN
            if value is None or value is UNKNOWN or isinstance(value, dict | list):
                return UNKNOWN
            parts.append(_to_text(value))
            position = match.end()
        parts.append(text[position:])
        return "".join(parts)

    def _function(self, function: dict[str, Any], depth: int) -> Any:
        arguments = [self.evaluate(value, depth + 1) for value in (function.get("parameters") or {}).values()]
        if any(argument is UNKNOWN for argument in arguments):
            return UNKNOWN
        kind = function.get("type")
        if kind == "string" and len(arguments) == 1:
            return _to_text(arguments[0])
        if kind == "union" and all(isinstance(a, dict) for a in arguments):
            merged: dict[str, Any] = {}
            for argument in arguments:
                merged.update(argument)
            return merged
        return UNKNOWN

    def _operator(self, operator: dict[str, Any], depth: int) -> Any:
        operands = operator.get("operands") or {}
        if operator.get("type") == "conditional":
            condition = self.evaluate(operands.get("condition"), depth + 1)
            if isinstance(condition, bool):
                branch = "true_value" if condition else "false_value"
                return self.evaluate(operands.get(branch), depth + 1)
        return UNKNOWN


def _to_text(value: Any) -> str:
    """Bicep's string(): booleans are 'true' / 'false'."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
