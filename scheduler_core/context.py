"""The process-wide services the triggers use, created lazily on first use.

``function_app.py`` is imported by the Functions worker to index functions, so nothing here runs at import
time: storage clients and settings are built on the first invocation and reused (clients are thread-safe
and keep their connection pools).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from azure.data.tables import TableServiceClient

from scheduler_core import auth, settings
from scheduler_core.storage.clients import table_service

_lock = threading.Lock()


@dataclass(frozen=True)
class Services:
    settings: settings.Settings
    tables: TableServiceClient
    api_keys: tuple[auth.ApiKey, ...]


_current: list[Services] = []  # at most one element: the services of this process


def services() -> Services:
    """The services for this process (built once, from the settings in the environment)."""
    if not _current:
        with _lock:
            if not _current:
                config = settings.load()
                _current.append(Services(config, table_service(config), auth.parse_keys(config.api_keys)))
    return _current[0]


def reset() -> None:
    """Forget the services, so the next call re-reads the settings (tests change the environment)."""
    with _lock:
        _current.clear()
