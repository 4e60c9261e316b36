"""The contract suite: every test runs over every adapter of the ports (``memory`` and ``azurite``), the
way APScheduler's suite parametrises its data stores. A test states a rule of :mod:`scheduler_core.ports`
(or of the lease rule in :mod:`scheduler_core.model.claim`) through the ports alone, so an adapter that
passes here can stand in for the other one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core.adapters.memory import MemoryStorage, SimulatedClock, memory_storage
from scheduler_core.ports import Claims, Clock, FlowLimits, Stores


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Backend:
    """One adapter's deployment, empty: its stores, its claims and the clock its stores stamp writes with
    (``written_at``, ``modified_at``). ``slack`` is how far such a stamp may lie from ``clock`` (Azurite's
    clock is the machine's, read by another process). ``memory`` is the in-memory deployment, if that."""

    name: str
    stores: Stores
    claims: Claims
    clock: Clock
    slack: timedelta
    memory: MemoryStorage | None = None
    flow: FlowLimits | None = None

    def stamped_between(self, stamp: datetime | None, before: datetime, after: datetime) -> bool:
        """Whether a write's stamp lies between two readings of the clock taken around the write."""
        return stamp is not None and before - self.slack <= stamp <= after + self.slack


def memory_backend() -> Backend:
    storage = memory_storage(SimulatedClock(datetime(2030, 1, 1, 12, tzinfo=UTC), step=timedelta(milliseconds=1)))
    return Backend("memory", storage.stores, storage.claims, storage.clock, timedelta(0), storage, storage.flow)


def azurite_backend(request: pytest.FixtureRequest) -> Backend:
    # Imported here: the memory half of the suite runs without the Azure SDK loaded.
    from scheduler_core.adapters.azure.claims import TableClaims
    from scheduler_core.adapters.azure.clients import data_tables
    from scheduler_core.adapters.azure.flow import TableFlowLimits
    from scheduler_core.adapters.azure.provision import provision
    from scheduler_core.adapters.azure.tables import table_stores
    from scheduler_core.settings import Settings
    from scheduler_core.storage.names import CLAIMS_TABLE, FLOW_TABLE, HISTORY_TABLE

    settings: Settings = request.getfixturevalue("storage_env")  # tables of this test's own (unique prefix)
    provision(settings)
    tables = data_tables(settings)  # the client the deployed app's stores use
    claims = TableClaims(
        tables.get_table_client(settings.table_name(CLAIMS_TABLE)),
        tables.get_table_client(settings.table_name(HISTORY_TABLE)),
    )
    flow = TableFlowLimits(tables.get_table_client(settings.table_name(FLOW_TABLE)))
    return Backend("azurite", table_stores(tables, settings), claims, utcnow, timedelta(seconds=2), None, flow)


BACKENDS: dict[str, Callable[[pytest.FixtureRequest], Backend]] = {
    "memory": lambda _request: memory_backend(),
    "azurite": azurite_backend,
}


@pytest.fixture(params=["memory", pytest.param("azurite", marks=pytest.mark.azurite)])
def backend(request: pytest.FixtureRequest) -> Backend:
    """A fresh, empty deployment of one adapter per test."""
    return BACKENDS[str(request.param)](request)


@pytest.fixture
def stores(backend: Backend) -> Stores:
    return backend.stores


@pytest.fixture
def claims(backend: Backend) -> Claims:
    return backend.claims


@pytest.fixture
def flow(backend: Backend) -> FlowLimits:
    assert backend.flow is not None
    return backend.flow
