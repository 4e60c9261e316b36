"""The Storage queues of a deployment besides the adapters' own (the further execution queues, the cleanup
queue) and the probes that read their depths: one cheap properties call per queue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from azure.core.exceptions import AzureError, ResourceNotFoundError

from scheduler_core import settings
from scheduler_core.ports import MessageSender
from scheduler_core.queue_depths import DUE_PEEK, ExecutionDepths, ExecutionQueueDepth


def poison_queue_name(execution_queue: str) -> str:
    """The queue the Functions host moves an execution message to after its last dequeue."""
    return f"{execution_queue}-poison"


def azure_execution_queues(config: settings.Settings, first: MessageSender) -> tuple[MessageSender, ...]:
    """The senders of every execution queue: ``first`` (the adapters' own, queue 0), then one Storage queue
    per further name of ``config.execution_queues``, on the same pooled transport."""
    from scheduler_core.adapters.azure import execution_queue

    return (first, *(execution_queue(config, name) for name in config.execution_queues[1:]))


def azure_execution_depths(config: settings.Settings) -> ExecutionDepths:
    """Approximate message counts of every execution queue and its poison queue, in the execution queues'
    account (see :func:`_azure_depths`)."""
    return _azure_depths(config, config.execution_queues, config.execution_storage)


def _azure_depths(
    config: settings.Settings, names: Sequence[str], account: settings.StorageAccount | None
) -> ExecutionDepths:
    """Approximate message counts of the queues ``names`` of ``account`` (None: AzureWebJobsStorage's) and of
    their poison queues (a missing poison queue counts 0: the host creates it with the first poison message; a
    count that cannot be read, a missing queue included, is None), and how many of a queue's messages are due
    (visible: one peek, at most :data:`~scheduler_core.queue_depths.DUE_PEEK`). Cheap calls, not tried again (a
    probe that fails answers at once: the queue client's own retries wait 15 s and more)."""
    from scheduler_core.adapters.azure.clients import queue_client

    clients = [
        (
            name,
            queue_client(config, name, account=account, retries=0),
            queue_client(config, poison_queue_name(name), account=account, retries=0),
        )
        for name in names
    ]

    def due(client: Any) -> int | None:
        try:
            return len(list(client.peek_messages(max_messages=DUE_PEEK)))
        except AzureError:
            return None

    def count(client: Any, missing_is_empty: bool) -> int | None:
        try:
            return int(client.get_queue_properties().approximate_message_count or 0)
        except ResourceNotFoundError:
            return 0 if missing_is_empty else None
        except AzureError:
            return None

    return lambda: [
        ExecutionQueueDepth(name, count(queue, False), count(poison, True), due(queue))
        for name, queue, poison in clients
    ]


def azure_cleanup_queue(config: settings.Settings) -> MessageSender:
    """The sender of the cleanup queue (``SCHEDULER_CLEANUP_QUEUE``)."""
    from scheduler_core.adapters.azure.clients import queue_client
    from scheduler_core.adapters.azure.queues import MessageQueue

    return MessageQueue(queue_client(config, config.cleanup_queue))


def azure_cleanup_depth(config: settings.Settings) -> Callable[[], ExecutionQueueDepth]:
    """Approximate message counts of the cleanup queue and of its poison queue."""
    probe = _azure_depths(config, [config.cleanup_queue], None)  # in AzureWebJobsStorage's account
    return lambda: probe()[0]
