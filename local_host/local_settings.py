"""Read ``local.settings.json`` the way Azure Functions Core Tools does.

``Values`` become environment variables of the process. A variable already set in the environment wins,
so tests and shells can override any value without editing the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import MutableMapping
from pathlib import Path

from scheduler_core.errors import ConfigurationError


def apply_local_settings(path: Path, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Load ``Values`` from ``path`` into the environment (without overriding). Returns what was applied."""
    env = os.environ if environ is None else environ
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{path}: not valid JSON ({exc})") from None
    values = data.get("Values", {})
    if not isinstance(values, dict):
        raise ConfigurationError(f"{path}: 'Values' must be an object of strings")
    applied: dict[str, str] = {}
    for name, value in values.items():
        if name not in env:
            env[name] = applied[name] = str(value)
    return applied
