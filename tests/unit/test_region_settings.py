"""The regions' settings (docs/regions.md): a witness needs the region's name, names and the witness's blob are
checked, and the region's 15-s timer is declared only when a witness is set (a deployment without one pays for
no timer that wakes it)."""

from __future__ import annotations

import azure.functions as func
import pytest

from local_host.app_index import index_app
from scheduler_core import settings
from scheduler_core.errors import ConfigurationError
from tests.support.function_apps import fresh_function_app

BASE = {"AzureWebJobsStorage": "UseDevelopmentStorage=true"}
WITNESS = "DefaultEndpointsProtocol=https;AccountName=witness;AccountKey=a2V5;EndpointSuffix=core.windows.net"


def test_without_a_witness_the_app_is_active_alone() -> None:
    loaded = settings.load(BASE)
    assert loaded.witness is None and loaded.region_name == ""
    assert loaded.witness_blob == ("scheduler-witness", "active")


def test_a_witness_with_the_regions_name_and_blob() -> None:
    loaded = settings.load(
        {
            **BASE,
            "SchedulerWitness": WITNESS,
            "SCHEDULER_REGION_NAME": "westeurope",
            "SCHEDULER_WITNESS_BLOB": "wit/x/y",
        }
    )
    assert loaded.witness is not None and loaded.witness.connection_string == WITNESS
    assert (loaded.region_name, loaded.witness_blob) == ("westeurope", ("wit", "x/y"))
    by_identity = settings.load(
        {
            **BASE,
            "SchedulerWitness__blobServiceUri": "https://witness.blob.core.windows.net",
            "SCHEDULER_REGION_NAME": "northeurope",
        }
    )
    assert by_identity.witness is not None and by_identity.witness.endpoint == "https://witness.blob.core.windows.net"


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"SchedulerWitness": WITNESS}, "SCHEDULER_REGION_NAME"),  # a witness needs the region's name
        ({"SCHEDULER_REGION_NAME": "West Europe"}, "SCHEDULER_REGION_NAME"),
        ({"SCHEDULER_REGION_NAME": "-westeurope"}, "SCHEDULER_REGION_NAME"),
        ({"SCHEDULER_REGION_NAME": "w" * 41}, "SCHEDULER_REGION_NAME"),
        ({"SCHEDULER_WITNESS_BLOB": "noblob"}, "SCHEDULER_WITNESS_BLOB"),
        ({"SCHEDULER_WITNESS_BLOB": "UPPER/active"}, "SCHEDULER_WITNESS_BLOB"),
        ({"SCHEDULER_WITNESS_BLOB": "ab/active"}, "SCHEDULER_WITNESS_BLOB"),
        ({"SchedulerWitness__blobServiceUri": "http://witness.blob.core.windows.net"}, "SchedulerWitness"),
        ({"SchedulerPeer": WITNESS}, "SchedulerPeer needs a witness"),  # only a standby copies
        (
            {"SchedulerWitness": WITNESS, "SCHEDULER_REGION_NAME": "a", "SchedulerPeer__tableServiceUri": "x"},
            "SchedulerPeer__tableServiceUri",
        ),
    ],
)
def test_a_bad_region_setting_is_a_clear_error(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        settings.load({**BASE, **environ})


def load_function_app(monkeypatch: pytest.MonkeyPatch, environ: dict[str, str]) -> func.FunctionApp:
    """function_app.py imported afresh with ``environ`` set, as the Functions worker imports it."""
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    return fresh_function_app()


def test_a_peer_by_connection_string_or_by_its_table_endpoint() -> None:
    paired = {**BASE, "SchedulerWitness": WITNESS, "SCHEDULER_REGION_NAME": "westeurope"}
    assert settings.load(paired).peer is None
    loaded = settings.load({**paired, "SchedulerPeer": WITNESS})
    assert loaded.peer is not None and loaded.peer.connection_string == WITNESS
    endpoint = "https://peer.table.core.windows.net"
    by_identity = settings.load({**paired, "SchedulerPeer__tableServiceUri": endpoint})
    assert by_identity.peer is not None and by_identity.peer.endpoint == endpoint


def test_the_copys_timer_is_declared_only_with_a_witness_and_a_peer(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "SchedulerWitness",
        "SchedulerWitness__blobServiceUri",
        "SchedulerPeer",
        "SchedulerPeer__tableServiceUri",
    ):
        monkeypatch.delenv(name, raising=False)
    witness_only = index_app(load_function_app(monkeypatch, {"SchedulerWitness": WITNESS}))
    assert "region_replicate" not in {timer.name for timer in witness_only.timers}
    paired = index_app(load_function_app(monkeypatch, {"SchedulerWitness": WITNESS, "SchedulerPeer": WITNESS}))
    [copy] = [timer for timer in paired.timers if timer.name == "region_replicate"]
    assert copy.schedule == "*/10 * * * * *" and not copy.run_on_startup


def test_the_regions_timer_is_declared_only_with_a_witness(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SchedulerWitness", raising=False)
    monkeypatch.delenv("SchedulerWitness__blobServiceUri", raising=False)
    alone = index_app(load_function_app(monkeypatch, {}))
    assert "region_beat" not in {timer.name for timer in alone.timers}
    paired = index_app(load_function_app(monkeypatch, {"SchedulerWitness": WITNESS}))
    [beat] = [timer for timer in paired.timers if timer.name == "region_beat"]
    assert beat.schedule == "*/15 * * * * *" and beat.run_on_startup
