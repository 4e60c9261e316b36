"""Two regions' deployments and a witness (docs/regions.md), as real host processes (the function app on the local
host: its timers, among them ``region_beat``, and its queue triggers): region ``a`` starts first and is active
(it ticks), region ``b`` is standby (it never ticks); ``a``'s host is killed (SIGKILL), and ``b`` takes the
witness's lease within the lease, a beat and 5 s of the kill, then ticks and fires its job at its due second.

What is simulated: the two regions' storage are tables and queues of their own (their own prefix and names) on
one Azurite, and the witness is a blob there too (three Azurites are the issue's end state); replication is not
built, so ``b``'s job is written to ``b`` directly."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from local_host.azurite import Azurite
from scheduler_core import settings, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.azure.witness import blob_witness
from scheduler_core.model import CLAIM_LEASE
from scheduler_core.pipeline.ticks import last_tick
from scheduler_core.regions import BEAT, LEASE
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.e2e import fault_host
from tests.support.http_target import http_target
from tests.support.jobs import http_action, job_body
from tests.support.regions import region_environ
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

COLLECTION = CollectionRef("sub-regions", "rg", "jc")


def test_the_standby_takes_over_within_the_lease_and_a_beat_of_the_active_regions_loss_and_fires_on_time(
    azurite: Azurite, tmp_path: Path
) -> None:
    witness_blob = f"witness-{uuid.uuid4().hex[:8]}/active"
    environs = {region: region_environ(azurite, region, witness_blob) for region in ("a", "b")}
    configs = {region: settings.load(environ) for region, environ in environs.items()}
    for config in configs.values():
        provision(config)
    witness = blob_witness(settings.StorageAccount(azurite.connection_string), *configs["a"].witness_blob)
    b_services = wiring.build(configs["b"])
    hosts = {}
    with http_target() as target:
        try:
            hosts["a"] = fault_host.spawn(CLAIM_LEASE.total_seconds(), environs["a"], tmp_path / "a.log")
            wait_until(lambda: witness.read().held_by("a"), timeout=30, what="region a holding the witness")
            hosts["b"] = fault_host.spawn(CLAIM_LEASE.total_seconds(), environs["b"], tmp_path / "b.log")
            a_stores = wiring.build(configs["a"]).stores
            wait_until(lambda: last_tick(a_stores) is not None, timeout=30, what="region a's first tick")

            # b's job is due after the latest takeover (the lease and a beat after the kill) and a tick
            killed_at = datetime.now(UTC) + timedelta(seconds=5)
            due = (killed_at + LEASE + timedelta(seconds=BEAT + 15)).replace(microsecond=0)
            b_services.service.put_collection(
                COLLECTION, {"location": "westus", "properties": {"sku": {"name": "Standard"}}}
            )
            body = job_body(due, http_action(f"{target.base_url}/b"))
            b_services.service.put_job(JobRef(COLLECTION, "after-takeover"), body)

            time.sleep(max(0.0, (killed_at - datetime.now(UTC)).total_seconds()))
            assert witness.read().held_by("a") and last_tick(b_services.stores) is None  # b stands by: no tick
            hosts["a"].kill()
            hosts["a"].wait(timeout=10)
            killed = time.monotonic()

            wait_until(
                lambda: witness.read().held_by("b"), timeout=LEASE.total_seconds() + BEAT + 15, what="b's takeover"
            )
            took_over = time.monotonic() - killed
            assert took_over <= LEASE.total_seconds() + BEAT + 5, took_over  # 5 s: a loaded machine's timer lateness
            assert witness.read().epoch == 2
            wait_until(lambda: last_tick(b_services.stores) is not None, timeout=20, what="region b's first tick")

            target.wait_for(1, timeout=(due - datetime.now(UTC)).total_seconds() + 30)
            [call] = target.received
            assert call.path == "/b"
            late = call.at - due.timestamp()
            assert -1 < late < 5, late  # at its due second, from the region that took over
            print(f"region b took over {took_over:.1f} s after region a was killed; its job fired {late:+.2f} s late")
        except BaseException:
            for region in ("a", "b"):
                print(fault_host.log_tail(tmp_path / f"{region}.log", 60))
            raise
        finally:
            for host in hosts.values():
                fault_host.stop(host)
