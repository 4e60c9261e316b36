"""The Azure Storage adapters: Table Storage stores and claims, Storage queues, the clients they share and
the app's own credential. :func:`connect` builds them all from the settings."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler_core.adapters.azure.claims import TableClaims
from scheduler_core.adapters.azure.clients import data_tables, queue_client
from scheduler_core.adapters.azure.flow import TableFlowLimits
from scheduler_core.adapters.azure.queues import MessageQueue, message_queue
from scheduler_core.adapters.azure.tables import table_stores
from scheduler_core.ports import Stores
from scheduler_core.settings import Settings
from scheduler_core.storage.names import CLAIMS_TABLE, FLOW_TABLE, HISTORY_TABLE

__all__ = ["AzureStorage", "connect", "execution_queue"]


@dataclass(frozen=True)
class AzureStorage:
    """Every storage adapter of one deployment."""

    stores: Stores
    claims: TableClaims
    scans: MessageQueue
    executions: MessageQueue
    flow: TableFlowLimits


def connect(config: Settings) -> AzureStorage:
    """The adapters for ``config`` (clients are built, nothing is called yet). The history tables and the
    execution queues are in their own accounts when the settings give them one (``SchedulerHistoryStorage``,
    ``SchedulerExecutionStorage``)."""
    tables = data_tables(config)
    history = data_tables(config, config.history_storage) if config.history_storage else tables
    return AzureStorage(
        stores=table_stores(tables, config, history),
        claims=TableClaims(
            history.get_table_client(config.table_name(CLAIMS_TABLE)),
            history.get_table_client(config.table_name(HISTORY_TABLE)),
        ),
        scans=message_queue(queue_client(config, config.scan_queue)),
        executions=execution_queue(config, config.execution_queue),
        flow=TableFlowLimits(tables.get_table_client(config.table_name(FLOW_TABLE))),
    )


def execution_queue(config: Settings, name: str) -> MessageQueue:
    """An execution queue, in the execution queues' account: it sends base64 text, and peeks
    (:meth:`MessageQueue.behind`) through a client that does not decode, so that a message that is not base64
    cannot make the peek fail."""
    account = config.execution_storage
    return message_queue(
        queue_client(config, name, account=account), queue_client(config, name, decoded=False, account=account)
    )
