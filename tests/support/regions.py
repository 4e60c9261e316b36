"""Two regions' deployments for the regions' end-to-end tests (docs/regions.md): each region's tables, queues and
timers its own (on an Azurite of its own, or on one shared with the other), the witness's blob shared."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from local_host.azurite import DEV_ACCOUNT, DEV_KEY, Azurite
from scheduler_core import settings, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.azure.witness import BlobWitness, blob_witness
from scheduler_core.model import CLAIM_LEASE
from scheduler_core.pipeline.ticks import last_tick
from scheduler_core.ports import Stores
from scheduler_core.settings import Settings, StorageAccount
from scheduler_core.wiring import Services
from tests.conftest import private_azurite, sample_settings
from tests.e2e import fault_host
from tests.support.fault_proxy import FaultProxy, fault_proxy
from tests.support.http_target import HttpTarget, Received
from tests.support.waiting import wait_until


def region_environ(azurite: Azurite, region: str, witness_blob: str, witness: str = "") -> dict[str, str]:
    """The environment of region ``region``'s deployment: tables and queues of its own, the shared witness (the
    connection string ``witness``, by default Azurite's)."""
    suffix = f"{region}{uuid.uuid4().hex[:6]}"
    return {
        **os.environ,
        **sample_settings(),
        "AzureWebJobsStorage": azurite.connection_string,
        "AzureFunctionsJobHost__id": f"region-{suffix}",  # each region's timers are singletons of their own
        "SCHEDULER_TABLE_PREFIX": f"t{suffix}",
        "SCHEDULER_SCAN_QUEUE": f"scan-{suffix}",
        "SCHEDULER_EXECUTION_QUEUE": f"exec-{suffix}",
        "SCHEDULER_CLEANUP_QUEUE": f"cleanup-{suffix}",
        "SCHEDULER_DISPATCH_SCHEDULE": "*/5 * * * * *",
        "SchedulerWitness": witness or azurite.connection_string,
        "SCHEDULER_REGION_NAME": region,
        "SCHEDULER_WITNESS_BLOB": witness_blob,
    }


def ticks(stores: Stores, seen: list[datetime]) -> None:
    """Note the region's last tick when it moved."""
    tick = last_tick(stores)
    if tick is not None and (not seen or tick > seen[-1]):
        seen.append(tick)


def tables_at(port: int) -> str:
    """A connection string of Azurite's account whose table endpoint is ``port`` (a fault proxy in front of it)."""
    return (
        f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
        f"TableEndpoint=http://127.0.0.1:{port}/{DEV_ACCOUNT};"
    )


def header(call: Received, name: str) -> str:
    """A request header of ``call`` by its name in any case."""
    return next(value for key, value in call.headers.items() if key.lower() == name)


def calls_by_job(received: list[Received]) -> dict[str, list[Received]]:
    """The calls a target received, by the job that made them (``x-ms-scheduler-jobid``'s last part)."""
    found: dict[str, list[Received]] = {}
    for call in received:
        found.setdefault(header(call, "x-ms-scheduler-jobid").rsplit("/", 1)[-1], []).append(call)
    return found


@dataclass
class TwoRegions:
    """Regions ``a`` and ``b`` each over an Azurite of its own, the witness's blob in a third; ``b`` reads ``a``'s
    tables through ``link`` (the fault proxy: cutting it is ``a``'s storage lost to ``b``), ``a`` reads ``b``'s
    directly. ``services`` are this process's view of each region's storage (built as the hosts build theirs);
    :meth:`start` runs a region's host process, logging to ``logs``."""

    environs: dict[str, dict[str, str]]
    configs: dict[str, Settings]
    witness: BlobWitness
    link: FaultProxy
    services: dict[str, Services]
    logs: Path
    hosts: dict[str, subprocess.Popen[str]] = field(default_factory=dict)

    def start(self, region: str) -> None:
        self.hosts[region] = fault_host.spawn(
            CLAIM_LEASE.total_seconds(), self.environs[region], self.logs / f"{region}.log"
        )


@contextmanager
def two_regions(witness_azurite: Azurite, logs: Path, **extra: str) -> Iterator[TwoRegions]:
    """:class:`TwoRegions` with the settings ``extra`` in both regions (the same table names in both, each in its
    own account); on failure, the hosts' logs are printed; the hosts are stopped in every case."""
    witness_blob = f"witness-{uuid.uuid4().hex[:8]}/active"
    with (
        private_azurite() as storage_a,
        private_azurite() as storage_b,
        fault_proxy(("127.0.0.1", storage_a.ports.table)) as link,
    ):
        common = {"SCHEDULER_TABLE_PREFIX": f"t{uuid.uuid4().hex[:8]}", **extra}
        environs = {
            "a": {
                **region_environ(storage_a, "a", witness_blob, witness_azurite.connection_string),
                "SchedulerPeer": storage_b.connection_string,
                **common,
            },
            "b": {
                **region_environ(storage_b, "b", witness_blob, witness_azurite.connection_string),
                "SchedulerPeer": tables_at(link.port),
                **common,
            },
        }
        configs = {region: settings.load(environ) for region, environ in environs.items()}
        for config in configs.values():
            provision(config)
        witness = blob_witness(StorageAccount(witness_azurite.connection_string), *configs["a"].witness_blob)
        services = {region: wiring.build(config) for region, config in configs.items()}
        regions = TwoRegions(environs, configs, witness, link, services, logs)
        try:
            yield regions
        except BaseException:
            for region in regions.hosts:
                print(fault_host.log_tail(logs / f"{region}.log", 80))
            raise
        finally:
            for host in regions.hosts.values():
                fault_host.stop(host)


def wait_for_jobs(target: HttpTarget, names: set[str], until: datetime, slack: float) -> None:
    """Wait until ``target`` has had a call of each job of ``names`` (a job calls ``/<its name>``), at most until
    ``until`` and ``slack`` seconds more (a job called twice does not stand for another)."""
    timeout = max(0.0, (until - datetime.now(UTC)).total_seconds()) + slack
    wait_until(lambda: names <= {call.path.lstrip("/") for call in list(target.received)}, timeout, f"calls of {names}")
