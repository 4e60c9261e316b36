"""``python -m scheduler_core region status|demote|promote`` against a witness on Azurite (docs/regions.md): the
state read from the witness, a demotion kept there and undone by a promotion, and clear errors without a witness,
without a region's name, or with the witness out of reach."""

from __future__ import annotations

import json
import uuid

import pytest

from local_host.azurite import DEV_ACCOUNT, DEV_KEY, Azurite, free_port
from scheduler_core.adapters.azure.witness import blob_witness
from scheduler_core.cli import main
from scheduler_core.regions import RegionRole
from scheduler_core.settings import StorageAccount

pytestmark = [pytest.mark.azurite]


@pytest.fixture
def witness_env(azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """The witness's settings as a deployment has them: Azurite's connection string and a blob of this test's."""
    blob = f"witness-{uuid.uuid4().hex[:8]}/active"
    monkeypatch.setenv("SchedulerWitness", azurite.connection_string)
    monkeypatch.setenv("SCHEDULER_WITNESS_BLOB", blob)
    monkeypatch.delenv("SchedulerWitness__blobServiceUri", raising=False)
    monkeypatch.delenv("SCHEDULER_REGION_NAME", raising=False)
    return azurite.connection_string, blob


#: ``region status -o json`` while westeurope holds the lease in epoch 1.
HELD = {"active": "westeurope", "epoch": 1, "lastHolder": "westeurope", "demoted": [], "handingBack": None}


def status(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["region", "status", "--output", "json"]) == 0
    document: dict[str, object] = json.loads(capsys.readouterr().out)
    return document


def test_status_demote_and_promote(witness_env: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    connection, blob = witness_env
    assert status(capsys) == {"active": None, "epoch": 0, "lastHolder": None, "demoted": [], "handingBack": None}
    container, name = blob.split("/", 1)
    region_a = RegionRole("westeurope", blob_witness(StorageAccount(connection), container, name))
    assert region_a.beat()
    assert status(capsys) == HELD

    assert main(["region", "demote", "--region", "westeurope"]) == 0
    shown = capsys.readouterr().out
    assert "region westeurope demoted" in shown and "demoted: westeurope" in shown
    assert not region_a.beat()  # its instances stop renewing at their next beat
    assert status(capsys)["demoted"] == ["westeurope"]

    assert main(["region", "promote", "--region", "westeurope"]) == 0
    shown = capsys.readouterr().out
    assert "region westeurope promoted" in shown and "active region: westeurope (epoch 1)" in shown
    assert status(capsys) == HELD

    assert region_a.beat() and region_a.hand_back()  # the automatic hand-back, as status shows it
    assert status(capsys)["handingBack"] == "westeurope"
    assert main(["region", "status"]) == 0
    assert "handing back: westeurope" in capsys.readouterr().out


def test_errors_say_what_is_missing(
    witness_env: tuple[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["region", "demote"]) == 2
    assert "--region NAME" in capsys.readouterr().err
    monkeypatch.setenv("SCHEDULER_REGION_NAME", "West Europe")
    assert main(["region", "status"]) == 2
    assert "SCHEDULER_REGION_NAME" in capsys.readouterr().err
    monkeypatch.delenv("SCHEDULER_REGION_NAME")
    monkeypatch.setenv(
        "SchedulerWitness",
        f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
        f"BlobEndpoint=http://127.0.0.1:{free_port()}/{DEV_ACCOUNT};",
    )
    assert main(["region", "status"]) == 3
    assert "the witness did not answer" in capsys.readouterr().err
    monkeypatch.delenv("SchedulerWitness")
    assert main(["region", "status"]) == 2
    assert "no witness" in capsys.readouterr().err
