"""The stored definition a PUT or PATCH replaces, for keeping the secrets it omits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Prior", "same_text", "sub"]


@dataclass(frozen=True)
class Prior:
    """A stored definition (canonical output) and its secrets (dotted paths relative to ``output``),
    used to keep a secret that a PUT or PATCH omitted while its identity is unchanged."""

    output: Mapping[str, Any]
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)

    def sub(self, key: str) -> Prior | None:
        """The prior of the object at ``key`` (None when the stored definition has none there)."""
        value = self.output.get(key)
        if not isinstance(value, Mapping):
            return None
        prefix = key + "."
        return Prior(value, {k[len(prefix) :]: v for k, v in self.secrets.items() if k.startswith(prefix)})


def sub(prior: Prior | None, key: str) -> Prior | None:
    """``prior.sub(key)``, or None without a prior."""
    return prior.sub(key) if prior is not None else None


def same_text(a: object, b: object) -> bool:
    """Both are text and equal without regard to case (tenants, namespaces, thumbprints)."""
    return isinstance(a, str) and isinstance(b, str) and a.lower() == b.lower()
