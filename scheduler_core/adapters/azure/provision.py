"""Create the service's tables and queues if they do not exist (idempotent)."""

from __future__ import annotations

import contextlib

from azure.core.exceptions import ResourceExistsError

from scheduler_core.adapters.azure.clients import queue_service, table_service
from scheduler_core.settings import Settings
from scheduler_core.storage.names import queue_names, table_names


def provision(settings: Settings) -> None:
    """Create every table and queue the service uses. Safe to run any number of times."""
    tables = table_service(settings)
    for name in table_names(settings):
        with contextlib.suppress(ResourceExistsError):
            tables.create_table(name)
    queues = queue_service(settings)
    for name in queue_names(settings):
        with contextlib.suppress(ResourceExistsError):
            queues.create_queue(name)
