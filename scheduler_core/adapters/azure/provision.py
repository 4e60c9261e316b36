"""Create the service's tables and queues if they do not exist (idempotent)."""

from __future__ import annotations

import contextlib

from azure.core.exceptions import ResourceExistsError

from scheduler_core.adapters.azure.clients import queue_service, table_service
from scheduler_core.settings import Settings
from scheduler_core.storage.names import POISON_SUFFIX, queue_names, table_names


def all_queue_names(settings: Settings) -> list[str]:
    """Every queue the service uses, poison queues included: ``queue_names`` and the cleanup queue (named
    here until ``storage/names.py`` lists it; never twice)."""
    names = queue_names(settings)
    return names + [q for q in (settings.cleanup_queue, settings.cleanup_queue + POISON_SUFFIX) if q not in names]


def provision(settings: Settings) -> None:
    """Create every table and queue the service uses. Safe to run any number of times."""
    tables = table_service(settings)
    for name in table_names(settings):
        with contextlib.suppress(ResourceExistsError):
            tables.create_table(name)
    queues = queue_service(settings)
    for name in all_queue_names(settings):
        with contextlib.suppress(ResourceExistsError):
            queues.create_queue(name)
