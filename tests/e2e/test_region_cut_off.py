"""A region cut off from the witness alone (docs/regions.md): two regions' deployments as real host processes on one
Azurite, region ``a``'s path to the witness's blob endpoint through the fault proxy; a partition there, ``a`` still
up: ``a`` stops ticking by its fence (40 s after its last renewal that landed), and ``b``'s first tick comes after
``a``'s last, once the lease has run out."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from local_host.azurite import DEV_ACCOUNT, DEV_KEY, Azurite
from scheduler_core import settings, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.azure.witness import blob_witness
from scheduler_core.model import CLAIM_LEASE
from scheduler_core.pipeline.ticks import last_tick
from scheduler_core.regions import BEAT, FENCE, LEASE
from tests.e2e import fault_host
from tests.support.fault_proxy import fault_proxy
from tests.support.regions import region_environ, ticks
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e, pytest.mark.long(75)]


def test_a_region_cut_off_from_the_witness_stops_ticking_before_the_other_starts(
    azurite: Azurite, tmp_path: Path
) -> None:
    witness_blob = f"witness-{uuid.uuid4().hex[:8]}/active"
    with fault_proxy(("127.0.0.1", azurite.ports.blob)) as proxy:
        through_proxy = (
            f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
            f"BlobEndpoint=http://127.0.0.1:{proxy.port}/{DEV_ACCOUNT};"
        )
        environs = {
            "a": region_environ(azurite, "a", witness_blob, through_proxy),
            "b": region_environ(azurite, "b", witness_blob),
        }
        configs = {region: settings.load(environ) for region, environ in environs.items()}
        for config in configs.values():
            provision(config)
        stores = {region: wiring.build(config).stores for region, config in configs.items()}
        witness = blob_witness(settings.StorageAccount(azurite.connection_string), *configs["a"].witness_blob)
        hosts = {}
        seen: dict[str, list[datetime]] = {"a": [], "b": []}
        try:
            hosts["a"] = fault_host.spawn(CLAIM_LEASE.total_seconds(), environs["a"], tmp_path / "a.log")
            wait_until(lambda: witness.read().held_by("a"), timeout=30, what="region a holding the witness")
            hosts["b"] = fault_host.spawn(CLAIM_LEASE.total_seconds(), environs["b"], tmp_path / "b.log")
            wait_until(lambda: last_tick(stores["a"]) is not None, timeout=30, what="region a's first tick")
            proxy.set_mode("blackhole")  # a partition between region a and the witness; a itself runs on
            cut = datetime.now(UTC)
            deadline = time.monotonic() + LEASE.total_seconds() + BEAT + 40
            while time.monotonic() < deadline and not (seen["b"] and len(seen["b"]) >= 3):
                for region in ("a", "b"):
                    ticks(stores[region], seen[region])
                time.sleep(0.5)
            assert witness.read().held_by("b") and witness.read().epoch == 2
            assert seen["b"], "region b never ticked"
            last_a, first_b = seen["a"][-1], seen["b"][0]
            assert last_a < first_b, (seen["a"][-3:], seen["b"][:3])  # never both dispatching
            assert (last_a - cut).total_seconds() <= FENCE + 5, (cut, last_a)  # a stopped by its fence (5 s: ticks)
            print(
                f"region a's last tick {(last_a - cut).total_seconds():.1f} s after the cut, region b's first "
                f"{(first_b - cut).total_seconds():.1f} s after it"
            )
        except BaseException:
            for region in ("a", "b"):
                print(fault_host.log_tail(tmp_path / f"{region}.log", 60))
            raise
        finally:
            proxy.set_mode("pass")
            for host in hosts.values():
                fault_host.stop(host)
