"""Split brain (docs/regions.md, "Split brain"): the link between the regions cut with both up. Three Azurites
(``a``'s storage, ``b``'s, the witness's) and two host processes; ``b`` reads ``a``'s tables through the fault proxy,
and the proxy drops that traffic (a partition: packets go unanswered) for longer than the witness's lease.

Both regions still reach the witness, so ``a`` keeps the lease and dispatches, ``b`` stays the standby: one-shot jobs
due every few seconds through the partition fire once each, all from ``a``; ``b``'s ``/health`` says its copy is
behind; once the link is back, ``b``'s copy has the jobs ``a`` took meanwhile."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from local_host.azurite import Azurite
from scheduler_core import health, settings, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.azure.witness import blob_witness
from scheduler_core.model import CLAIM_LEASE
from scheduler_core.pipeline.ticks import last_tick
from scheduler_core.regions import BEAT, LEASE
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.conftest import private_azurite
from tests.e2e import fault_host
from tests.support.fault_proxy import fault_proxy
from tests.support.harness import STANDARD_PLAN
from tests.support.http_target import http_target
from tests.support.jobs import http_action, job_body
from tests.support.regions import region_environ, tables_at
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

COLLECTION = CollectionRef("sub-regions", "rg", "jc")
#: How long the link stays cut: past the lease and a beat, when a standby could take a lease that ran out.
CUT = LEASE + timedelta(seconds=BEAT + 5)


def test_with_the_link_cut_the_lease_holder_alone_dispatches_and_the_standby_says_it_is_behind(
    azurite: Azurite, tmp_path: Path
) -> None:
    witness_blob = f"witness-{uuid.uuid4().hex[:8]}/active"
    with (
        private_azurite() as storage_a,
        private_azurite() as storage_b,
        fault_proxy(("127.0.0.1", storage_a.ports.table)) as link,
        http_target() as target,
    ):
        tables = f"t{uuid.uuid4().hex[:8]}"
        environs = {
            "a": {
                **region_environ(storage_a, "a", witness_blob, azurite.connection_string),
                "SchedulerPeer": storage_b.connection_string,
                "SCHEDULER_TABLE_PREFIX": tables,
            },
            "b": {
                **region_environ(storage_b, "b", witness_blob, azurite.connection_string),
                "SchedulerPeer": tables_at(link.port),
                "SCHEDULER_TABLE_PREFIX": tables,
            },
        }
        configs = {region: settings.load(environ) for region, environ in environs.items()}
        for config in configs.values():
            provision(config)
        witness = blob_witness(settings.StorageAccount(azurite.connection_string), *configs["a"].witness_blob)
        a, b = (wiring.build(configs[region]) for region in ("a", "b"))
        hosts = {}
        try:
            hosts["a"] = fault_host.spawn(CLAIM_LEASE.total_seconds(), environs["a"], tmp_path / "a.log")
            wait_until(lambda: witness.read().held_by("a"), timeout=30, what="region a holding the witness")
            hosts["b"] = fault_host.spawn(CLAIM_LEASE.total_seconds(), environs["b"], tmp_path / "b.log")
            a.service.put_collection(COLLECTION, STANDARD_PLAN)
            wait_until(lambda: b.stores.collections.get(COLLECTION) is not None, timeout=30, what="b's first copy")

            link.set_mode("blackhole")
            cut = datetime.now(UTC).replace(microsecond=0)
            due = {f"job{index}": cut + timedelta(seconds=15 + 10 * index) for index in range(6)}
            for name, when in due.items():
                a.service.put_job(JobRef(COLLECTION, name), job_body(when, http_action(f"{target.base_url}/{name}")))
            time.sleep(max(0.0, (cut + CUT - datetime.now(UTC)).total_seconds()))

            assert witness.read().held_by("a") and witness.read().epoch == 1  # b never took the lease
            assert last_tick(b.stores) is None  # and never ticked
            status, report = health.check(lambda: b)
            assert status == 200 and report["region"]["active"] is False, report
            assert any(warning.startswith("replication: behind") for warning in report["warnings"]), report
            assert report["region"]["replication"]["age_seconds"] > 60, report
            assert all(b.stores.jobs.get(JobRef(COLLECTION, name)) is None for name in due)  # not copied

            link.set_mode("pass")
            wait_until(
                lambda: all(b.stores.jobs.get(JobRef(COLLECTION, name)) is not None for name in due),
                timeout=30,
                what="b's copy once the link is back",
            )
            target.wait_for(len(due), timeout=max(0.0, (max(due.values()) - datetime.now(UTC)).total_seconds()) + 15)
            time.sleep(2)
            fired = [call.path.lstrip("/") for call in target.received]
            assert sorted(fired) == sorted(due), fired  # each once
            late = [call.at - due[call.path.lstrip("/")].timestamp() for call in target.received]
            assert max(late) < 5, late  # by a, on time
            status, report = health.check(lambda: b)
            assert not any(warning.startswith("replication") for warning in report["warnings"]), report
            print(f"link cut for {CUT.total_seconds():.0f} s: a kept the lease, b stood by; lateness {late}")
        except BaseException:
            for region in ("a", "b"):
                print(fault_host.log_tail(tmp_path / f"{region}.log", 60))
            raise
        finally:
            for host in hosts.values():
                fault_host.stop(host)
