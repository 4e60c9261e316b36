"""Export and import of a job whose target URI carries credentials in its query: the export holds the URI with
``***`` in their place and lists it in ``secretsToReenter`` (required); an import without the full URI is
refused (the dry run says so), and with it the job is restored with its credentials."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scheduler_core.adapters.azure import connect
from scheduler_core.model.actions import HttpAction
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.cli.conftest import RG, SUB, Cli

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

SIG = "trigger-SIG-0123456789abcdef"
URI = f"https://prod-01.westus.logic.azure.com/workflows/1/triggers/manual/paths/invoke?api-version=1&sv=1.0&sig={SIG}"
OTHER_RG = "rg-restored"


def put(cli: Cli, path: str, body: dict[str, object]) -> None:
    answer = cli.api.call(
        "PUT", f"subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/{path}", body
    )
    assert answer.status_code in (200, 201), answer.text


def test_a_uri_credential_is_listed_to_reenter_and_restored_by_import(cli: Cli, tmp_path: Path) -> None:
    put(cli, "source", {"location": "westeurope", "properties": {"sku": {"name": "Standard"}}})
    put(
        cli,
        "source/jobs/trigger",
        {"properties": {"action": {"type": "Https", "request": {"uri": URI, "method": "POST"}}}},
    )
    export_file = tmp_path / "export.json"
    assert cli("export", str(export_file), "-o", "json").code == 0
    text = export_file.read_text(encoding="utf-8")
    assert SIG not in text
    document = json.loads(text)
    [job] = document["collections"][0]["jobs"]
    assert job["properties"]["action"]["request"]["uri"] == URI.replace(SIG, "***")
    [slot] = document["secretsToReenter"]
    assert slot["path"] == "properties.action.request.uri" and slot["required"] is True and slot["value"] is None

    target = ["--collection", "restored", "-g", OTHER_RG]
    dry = cli("import", str(export_file), *target, "--dry-run", "-o", "json")
    assert dry.code == 1
    failed = next(r for r in dry.json()["results"] if r["name"] == "trigger")
    assert failed["outcome"] == "fail" and failed["message"].startswith("properties.action.request.uri: ")

    slot["value"] = URI
    export_file.write_text(json.dumps(document), encoding="utf-8")
    assert cli("import", str(export_file), *target, "--dry-run", "-o", "json").code == 0
    real = cli("import", str(export_file), *target, "-o", "json")
    assert real.code == 0, real.out
    stored = connect(cli.api.settings).stores.jobs.get(JobRef(CollectionRef(SUB, OTHER_RG, "restored"), "trigger"))
    assert stored is not None and isinstance(stored.definition.action.main, HttpAction)
    assert stored.definition.action.main.uri == URI
