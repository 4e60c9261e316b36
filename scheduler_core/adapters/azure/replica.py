"""A region's replicated tables and its own records of replication, in Table Storage
(:class:`~scheduler_core.regions.replication.Replica`, :class:`~scheduler_core.regions.replication.Bookmarks`).

Rows are copied as the SDK reads them (typed properties kept), written whole (``UpdateMode.REPLACE``) in batches
of one partition. The peer's client is bounded (:func:`peer_tables`): the peer may be the region that is gone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import groupby, islice
from typing import TYPE_CHECKING, Any

from azure.core.exceptions import ResourceNotFoundError
from azure.data.tables import UpdateMode

from scheduler_core.adapters.azure.errors import translated
from scheduler_core.regions.replication import ReplicationState, Row
from scheduler_core.settings import Settings, StorageAccount
from scheduler_core.storage.names import REGIONS_TABLE

if TYPE_CHECKING:
    from azure.data.tables import TableServiceClient

__all__ = ["TableBookmarks", "TableReplica", "peer_tables"]

#: Operations in one batch (Table Storage's limit).
BATCH = 100
#: The peer's calls: tries after the first, and seconds to connect and to read (it may be gone: a sweep against a
#: peer that accepts connections and never answers fails within the read timeout; the next sweep is the retry).
PEER_RETRIES = 0
PEER_CONNECT_TIMEOUT = 5
PEER_READ_TIMEOUT = 10
_PARTITION = "region"


@translated
class TableReplica:
    """The replicated tables of one region: ``service``'s tables named by ``settings`` (the same names in both)."""

    def __init__(self, service: TableServiceClient, settings: Settings) -> None:
        self.service = service
        self.settings = settings

    def _table(self, table: str) -> Any:
        return self.service.get_table_client(self.settings.table_name(table))

    def changed(self, table: str, since: datetime | None) -> Iterator[Row]:
        client = self._table(table)
        found = (
            client.list_entities()
            if since is None
            else client.query_entities("Timestamp ge @since", parameters={"since": since})
        )
        for entity in found:
            yield Row(entity["PartitionKey"], entity["RowKey"], entity.metadata["timestamp"], dict(entity))

    def keys(self, table: str) -> set[tuple[str, str]]:
        rows = self._table(table).list_entities(select=["PartitionKey", "RowKey"])
        return {(row["PartitionKey"], row["RowKey"]) for row in rows}

    def put(self, table: str, rows: Iterable[Row]) -> None:
        client = self._table(table)
        ordered = sorted(rows, key=lambda row: (row.partition, row.row))
        for _, partition in groupby(ordered, key=lambda row: row.partition):
            rest = iter(list(partition))
            while chunk := list(islice(rest, BATCH)):
                client.submit_transaction([("upsert", dict(row.values), {"mode": UpdateMode.REPLACE}) for row in chunk])

    def delete(self, table: str, keys: Iterable[tuple[str, str]]) -> None:
        client = self._table(table)
        for partition, row in keys:
            try:
                client.delete_entity(partition, row)
            except ResourceNotFoundError:
                continue


@translated
class TableBookmarks:
    """A region's records in its own ``Regions`` table: the replication's state and its due index's epoch."""

    def __init__(self, service: TableServiceClient, settings: Settings) -> None:
        self.table = service.get_table_client(settings.table_name(REGIONS_TABLE))

    def _get(self, row: str) -> dict[str, Any] | None:
        try:
            return dict(self.table.get_entity(_PARTITION, row))
        except ResourceNotFoundError:
            return None

    def replication(self) -> ReplicationState:
        found = self._get("replication")
        if found is None:
            return ReplicationState()
        cursors = {table: datetime.fromisoformat(value) for table, value in json.loads(found["Cursors"]).items()}
        return ReplicationState(
            cursors,
            _instant(found.get("SweptAt")),
            int(found.get("Sweeps", 0)),
            _instant(found.get("FailedAt")),
            str(found.get("Error", "")),
        )

    def set_replication(self, state: ReplicationState) -> None:
        entity = {
            "PartitionKey": _PARTITION,
            "RowKey": "replication",
            "Cursors": json.dumps({table: value.isoformat() for table, value in state.cursors.items()}),
            "SweptAt": state.swept_at.isoformat() if state.swept_at else "",
            "Sweeps": state.sweeps,
            "FailedAt": state.failed_at.isoformat() if state.failed_at else "",
            "Error": state.error,
        }
        self.table.upsert_entity(entity, mode=UpdateMode.REPLACE)

    def due_epoch(self) -> int | None:
        found = self._get("due-index")
        return int(found["Epoch"]) if found is not None else None

    def set_due_epoch(self, epoch: int) -> None:
        self.table.upsert_entity({"PartitionKey": _PARTITION, "RowKey": "due-index", "Epoch": epoch})


def _instant(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def peer_tables(account: StorageAccount) -> TableServiceClient:
    """The peer region's Table service (a connection string, or its table endpoint reached with the app's
    identity), each call bounded: :data:`PEER_RETRIES` tries more, :data:`PEER_CONNECT_TIMEOUT` and
    :data:`PEER_READ_TIMEOUT` seconds."""
    from azure.data.tables import TableServiceClient

    from scheduler_core.adapters.azure.clients import _default_credential

    options: dict[str, Any] = {
        "retry_total": PEER_RETRIES,
        "connection_timeout": PEER_CONNECT_TIMEOUT,
        "read_timeout": PEER_READ_TIMEOUT,
    }
    if account.connection_string:
        return TableServiceClient.from_connection_string(account.connection_string, **options)
    return TableServiceClient(endpoint=account.endpoint, credential=_default_credential(), **options)
