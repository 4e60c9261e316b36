"""The Azure SDK's per-request log lines are quieted by the app itself, not by the host: the Functions Python
worker runs with its root logger at INFO, where azure-core's HttpLoggingPolicy would format and ship every
storage request's URL and headers. On Azurite, through the services the app builds."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from scheduler_core import telemetry, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef

pytestmark = pytest.mark.azurite

COLLECTION = {"location": "westus", "properties": {"sku": {"name": "Standard"}}}


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def worker_logging() -> Iterator[Records]:
    """Logging as the Functions Python worker sets it: the root logger at INFO, the libraries' loggers unset."""
    root = logging.getLogger()
    saved = (root.level, {name: logging.getLogger(name).level for name in telemetry.QUIETED_LIBRARIES})
    records = Records()
    root.addHandler(records)
    root.setLevel(logging.INFO)
    for name in telemetry.QUIETED_LIBRARIES:
        logging.getLogger(name).setLevel(logging.NOTSET)
    yield records
    root.removeHandler(records)
    root.setLevel(saved[0])
    for name, level in saved[1].items():
        logging.getLogger(name).setLevel(level)


def sdk_lines(records: Records) -> list[str]:
    return [f"{r.name}: {r.getMessage()[:80]}" for r in records.records if r.name.split(".")[0] in ("azure", "urllib3")]


def test_storage_calls_log_no_request_lines_once_the_app_has_built_its_services(
    storage_env: Settings, worker_logging: Records
) -> None:
    provision(storage_env)
    # Before the app quiets them, the SDK does log each request at INFO here (what the app must prevent).
    wiring.build(storage_env).service.put_collection(CollectionRef("sub1", "rg", "before"), COLLECTION)
    assert any("Request URL" in line for line in sdk_lines(worker_logging)), sdk_lines(worker_logging)[:3]
    worker_logging.records.clear()

    services = wiring.services()
    services.service.put_collection(CollectionRef("sub1", "rg", "after"), COLLECTION)
    assert services.service.get_collection(CollectionRef("sub1", "rg", "after")) is not None
    assert sdk_lines(worker_logging) == []
    assert logging.getLogger("azure").getEffectiveLevel() == logging.WARNING


def test_a_level_someone_set_is_left_as_it_is(storage_env: Settings, worker_logging: Records) -> None:
    logging.getLogger("azure").setLevel(logging.DEBUG)
    telemetry.quiet_libraries()
    assert logging.getLogger("azure").level == logging.DEBUG
    assert logging.getLogger("urllib3").level == logging.WARNING
