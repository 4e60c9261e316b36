"""Read ``local.settings.json`` the way Azure Functions Core Tools does.

``Values`` become environment variables of the process. A variable already set in the environment wins,
so tests and shells can override any value without editing the file. ``Host.LocalHttpPort`` is the HTTP
port when none is given on the command line (``func start --port`` and ``make run PORT=...`` override it).

With ``make run`` the local host starts Azurite itself, on ``AZURITE_PORTS``: the settings that name the
local Azurite's address then follow those ports (:func:`follow_azurite`), unless set in the environment.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, MutableMapping
from pathlib import Path
from typing import Any

from scheduler_core.errors import ConfigurationError

#: The HTTP port of Core Tools and of the local host when neither the command line nor the file names one.
DEFAULT_HTTP_PORT = 7071
#: Where Storage queue actions send (``http://127.0.0.1:10001/{account}`` for an Azurite on its default ports).
STORAGE_QUEUE_ENDPOINT = "SCHEDULER_STORAGE_QUEUE_ENDPOINT"
#: A Storage queue endpoint that names a local Azurite by its port: it follows the Azurite this run starts.
_LOCAL_AZURITE_QUEUE = re.compile(r"^http://(?:127\.0\.0\.1|localhost):[0-9]{1,5}/\{account\}/?$")


def read_local_settings(path: Path) -> dict[str, Any]:
    """The parsed file, ``{}`` when it does not exist."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path}: must be a JSON object with 'Values'")
    return data


def apply_local_settings(path: Path, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Load ``Values`` from ``path`` into the environment (without overriding). Returns what was applied."""
    env = os.environ if environ is None else environ
    values = read_local_settings(path).get("Values", {})
    if not isinstance(values, dict):
        raise ConfigurationError(f"{path}: 'Values' must be an object of strings")
    applied: dict[str, str] = {}
    for name, value in values.items():
        if name not in env:
            env[name] = applied[name] = str(value)
    return applied


def binding_defaults(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Give the settings that trigger bindings name as ``%NAME%`` (the queues and schedules: each setting's
    documentation says where it is referenced so) their defaults when unset, so that a ``local.settings.json``
    written before a setting existed (``SCHEDULER_CLEANUP_QUEUE``) still indexes. Returns what was set."""
    from scheduler_core.settings import SETTINGS

    env = os.environ if environ is None else environ
    applied: dict[str, str] = {}
    for spec in SETTINGS:
        bound = f"%{spec.name}%" in spec.doc
        if bound and spec.default is not None and spec.name not in env:
            env[spec.name] = applied[spec.name] = spec.default
    return applied


def local_http_port(path: Path) -> int:
    """``Host.LocalHttpPort`` of the file, :data:`DEFAULT_HTTP_PORT` when the file or the entry is missing."""
    host = read_local_settings(path).get("Host") or {}
    value = host.get("LocalHttpPort") if isinstance(host, dict) else None
    if value is None:
        return DEFAULT_HTTP_PORT
    try:
        port = int(str(value))
    except ValueError:
        port = -1
    if not 0 < port < 65536:
        raise ConfigurationError(f"{path}: Host.LocalHttpPort must be a TCP port (1 to 65535), got {value!r}")
    return port


def follow_azurite(env: MutableMapping[str, str], queue_endpoint: str, set_by_user: Collection[str]) -> None:
    """Point :data:`STORAGE_QUEUE_ENDPOINT` at the Azurite this run started (``queue_endpoint``) when it is
    unset, empty, or the address of a local Azurite (``http://127.0.0.1:<port>/{account}``, as the sample
    and ``make run`` write it): an Azurite on other ports may answer there, or nothing. A value in
    ``set_by_user`` (the names the environment held before ``local.settings.json`` was applied) or any other
    address (a real account, another host) is kept."""
    if STORAGE_QUEUE_ENDPOINT in set_by_user:
        return
    current = env.get(STORAGE_QUEUE_ENDPOINT, "").strip()
    if not current or _LOCAL_AZURITE_QUEUE.match(current):
        env[STORAGE_QUEUE_ENDPOINT] = queue_endpoint


def new_local_settings(sample: Path, api_keys: str, http_port: int, azurite_queue_endpoint: str | None) -> str:
    """The text of a new ``local.settings.json``: the sample with ``api_keys`` and the ports of this run."""
    data = json.loads(sample.read_text(encoding="utf-8"))
    data["Values"]["SCHEDULER_API_KEYS"] = api_keys
    if azurite_queue_endpoint is not None:
        data["Values"][STORAGE_QUEUE_ENDPOINT] = azurite_queue_endpoint
    data.setdefault("Host", {})["LocalHttpPort"] = http_port
    return json.dumps(data, indent=2) + "\n"
