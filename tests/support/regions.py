"""Two regions' deployments for the regions' end-to-end tests (docs/regions.md): each region's tables, queues and
timers its own (on an Azurite of its own, or on one shared with the other), the witness's blob shared."""

from __future__ import annotations

import os
import uuid
from datetime import datetime

from local_host.azurite import DEV_ACCOUNT, DEV_KEY, Azurite
from scheduler_core.pipeline.ticks import last_tick
from scheduler_core.ports import Stores
from tests.conftest import sample_settings
from tests.support.http_target import Received


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
