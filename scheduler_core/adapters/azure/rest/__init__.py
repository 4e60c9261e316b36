"""Storage clients of the app's own for its hot path: :class:`RestTableService` (the subset of the SDK's
``TableClient`` the adapters use; see :mod:`.table`) and :class:`RestQueue` (a queue's messages;
:mod:`.queue`). :data:`Table` and :data:`TableService` name either Table client."""

from azure.data.tables import TableClient, TableServiceClient

from scheduler_core.adapters.azure.rest.queue import RestQueue
from scheduler_core.adapters.azure.rest.table import RestTable, RestTableService

#: A table, through the app's own client or the SDK's (the adapters call only what both have).
Table = RestTable | TableClient
#: A Table service, through either client (``get_table_client``).
TableService = RestTableService | TableServiceClient

__all__ = ["RestQueue", "RestTable", "RestTableService", "Table", "TableService"]
