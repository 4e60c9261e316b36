"""infra/regions.bicep, the two-region deployment (docs/regions.md): main.bicep in the primary and in the standby
region (the same template: the same hardening), each app's settings naming its region, the witness's blob endpoint,
the other region's table endpoint (main.bicep's account name for that region) and the primary region; a hardened
witness account in a third region; and, beyond its own region, each app may read the other region's tables and keep
the witness's lease, nothing more."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.infra.bicep_eval import ModuleOutput, Template
from tests.infra.conftest import INFRA

GIVEN = {
    "environmentName": "sched",
    "location": "westeurope",
    "standbyRegion": "northeurope",
    "witnessRegion": "swedencentral",
}


@pytest.fixture(scope="module")
def regions(bicep: dict[str, dict[str, Any]]) -> Template:
    return Template(bicep["regions.bicep"], GIVEN)


def _variable_text(path: str, name: str) -> str:
    match = re.search(rf"^var {name} = (.+)$", (INFRA / path).read_text(), re.MULTILINE)
    assert match, f"{path}: var {name}"
    return match.group(1).strip()


def test_each_region_is_main_bicep_with_its_role_and_its_peer(regions: Template, bicep: dict[str, Any]) -> None:
    deployed = regions.deployed_modules("main.bicep")
    assert set(deployed) == {"primary", "standby"}
    primary, standby = deployed["primary"], deployed["standby"]
    assert (primary["location"], standby["location"]) == ("westeurope", "northeurope")
    assert (primary["regionName"], standby["regionName"]) == ("westeurope", "northeurope")
    assert primary["primaryRegion"] == standby["primaryRegion"] == "westeurope"
    assert primary["resourceGroupName"] != standby["resourceGroupName"]
    assert primary["witnessBlobServiceUri"] == standby["witnessBlobServiceUri"]
    main = Template(bicep["main.bicep"])
    assert {"regionName", "primaryRegion", "witnessBlobServiceUri", "peerTableServiceUri"} <= set(main.parameters)
    # Each names the other's account as main.bicep names an account: 'st' + its resource token for that region.
    token = _variable_text("main.bicep", "resourceToken")
    assert _variable_text("main.bicep", "storageAccountName") == "'st${resourceToken}'"
    assert _variable_text("regions.bicep", "primaryStorage") == f"'st${{{token}}}'"
    assert _variable_text("regions.bicep", "standbyStorage") == f"'st${{{token.replace('location', 'standbyRegion')}}}'"
    source = (INFRA / "regions.bicep").read_text()
    assert "peerTableServiceUri: 'https://${standbyStorage}.table.${storageSuffix}'" in source
    assert "peerTableServiceUri: 'https://${primaryStorage}.table.${storageSuffix}'" in source


def test_the_witness_account_is_hardened_like_the_apps_and_in_a_third_region(regions: Template) -> None:
    [witness] = regions.deployed_modules("modules/storage.bicep").values()
    assert witness["location"] == "swedencentral"
    assert witness["tableNames"] == [] and witness["queueNames"] == []  # a blob lease, nothing else


def test_beyond_its_region_each_app_reads_the_others_tables_and_keeps_the_witness_lease(regions: Template) -> None:
    grants = regions.deployed_modules("modules/peerroles.bicep")
    found = set()
    for params in grants.values():
        principal = params["principalId"]
        assert isinstance(principal, ModuleOutput) and principal.output == "SCHEDULER_PRINCIPAL_ID"
        found.add((principal.module, params["access"], str(params["storageAccountName"])))
    primary_account, standby_account = (
        regions.evaluate(regions.variable(name)) for name in ("primaryStorage", "standbyStorage")
    )
    witness_account = regions.evaluate(regions.variable("witnessStorage"))
    assert found == {
        ("primary", "tables", str(standby_account)),
        ("standby", "tables", str(primary_account)),
        ("primary", "blobs", str(witness_account)),
        ("standby", "blobs", str(witness_account)),
    }
