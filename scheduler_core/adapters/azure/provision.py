"""Create the service's tables and queues if they do not exist (idempotent)."""

from __future__ import annotations

import contextlib

from azure.core.exceptions import ResourceExistsError

from scheduler_core.adapters.azure.clients import queue_service, table_service
from scheduler_core.settings import Settings
from scheduler_core.storage.names import HISTORY_TABLES, POISON_SUFFIX, TABLES, execution_queue_names, queue_names


def all_queue_names(settings: Settings) -> list[str]:
    """Every queue the service uses, poison queues included: ``queue_names`` and the cleanup queue (named
    here until ``storage/names.py`` lists it; never twice)."""
    names = queue_names(settings)
    return names + [q for q in (settings.cleanup_queue, settings.cleanup_queue + POISON_SUFFIX) if q not in names]


def provision(settings: Settings) -> None:
    """Create every table and queue the service uses, each in its account (the history tables and the execution
    queues in their own when the settings give them one). Safe to run any number of times."""
    tables = table_service(settings)
    history = table_service(settings, settings.history_storage) if settings.history_storage else tables
    for base in TABLES:
        with contextlib.suppress(ResourceExistsError):
            (history if base in HISTORY_TABLES else tables).create_table(settings.table_name(base))
    queues = queue_service(settings)
    executions = queue_service(settings, settings.execution_storage) if settings.execution_storage else queues
    in_executions = set(execution_queue_names(settings))
    for name in all_queue_names(settings):
        with contextlib.suppress(ResourceExistsError):
            (executions if name in in_executions else queues).create_queue(name)
