"""Names of the tables and queues the service uses (before the configurable table prefix)."""

from __future__ import annotations

from scheduler_core.settings import Settings

#: Job collections: PartitionKey = subscription id, RowKey = resource group + collection name.
COLLECTIONS_TABLE = "JobCollections"
#: Job definitions, state and status: PartitionKey = collection identity, RowKey = job name.
JOBS_TABLE = "Jobs"
#: Due index: PartitionKey = shard, RowKey = due time + job identity + generation.
DUE_INDEX_TABLE = "DueIndex"
#: Execution history: PartitionKey = job identity, RowKey = inverted time + execution id.
HISTORY_TABLE = "JobHistory"

#: Execution claims: PartitionKey = job identity, RowKey = occurrence | action | attempt.
CLAIMS_TABLE = "Executions"

#: Flow control state (``action.flowControl``): PartitionKey = a digest of subscription and key, RowKey = rate,
#: slot or waiting attempt (``adapters/azure/flow.py``).
FLOW_TABLE = "FlowControl"

#: A region's own records (docs/regions.md): PartitionKey = "region", RowKey = "replication" (the standby's copy)
#: or "due-index" (the epoch its due index was built for).
REGIONS_TABLE = "Regions"

TABLES: tuple[str, ...] = (
    COLLECTIONS_TABLE,
    JOBS_TABLE,
    DUE_INDEX_TABLE,
    HISTORY_TABLE,
    CLAIMS_TABLE,
    FLOW_TABLE,
    REGIONS_TABLE,
)
#: The tables kept in the history tables' own account when it has one (``SchedulerHistoryStorage``).
HISTORY_TABLES: tuple[str, ...] = (HISTORY_TABLE, CLAIMS_TABLE)

POISON_SUFFIX = "-poison"


def table_names(settings: Settings) -> list[str]:
    """The real (prefixed) names of every table."""
    return [settings.table_name(base) for base in TABLES]


def execution_queue_names(settings: Settings) -> list[str]:
    """The execution queues and their poison queues: kept in the execution queues' own account when it has one
    (``SchedulerExecutionStorage``)."""
    return [*settings.execution_queues, *(name + POISON_SUFFIX for name in settings.execution_queues)]


def queue_names(settings: Settings) -> list[str]:
    """Every queue the service reads or writes, poison queues included."""
    queues = [settings.scan_queue, *settings.execution_queues, settings.cleanup_queue]
    return queues + [name + POISON_SUFFIX for name in queues]
